"""The length-generalisation experiment of lesson 5: tasks, schemes, model, training, results.

The slow test (`test_ranking_at_8L`, about 15-25 s) trains the lesson's five schemes on copy-k
with three seeds and asserts, at 8x the training length, the ranking that lesson 5 reports.
"""
import numpy as np
import pytest
import torch

from t5lesson import ArgumentError, attention_scores, causal_mask, relative_bias, softmax
from t5lesson.lengthgen import (
    IGNORE,
    SCHEMES,
    Config,
    PositionBias,
    Results,
    TinyAttentionModel,
    alibi_slopes,
    evaluate,
    get_scheme,
    make_batch,
    run_experiment,
    t5_scheme,
    train,
    warmup_cosine,
)
from t5lesson.lengthgen.counts import (
    offset_counts,
    pairs_behind,
    pairs_behind_cases,
    pairs_per_parameter,
    training_pairs_behind_offset,
)
from t5lesson.lengthgen.stored import LESSON_SCHEMES, load_stored
from t5lesson.lengthgen.tasks import COPY_K, N_MARKERS

# --- tasks -------------------------------------------------------------------------------------

def test_copy_k_targets_are_the_token_k_back():
    tokens, targets = make_batch("copy-k", 5, 40, np.random.default_rng(0))
    assert tokens.shape == targets.shape == (5, 40) and tokens.dtype == np.int64
    assert (targets[:, :COPY_K] == IGNORE).all()
    np.testing.assert_array_equal(targets[:, COPY_K:], tokens[:, :-COPY_K])


def test_last_marker_targets_are_the_most_recent_marker():
    tokens, targets = make_batch("last-marker", 20, 60, np.random.default_rng(1))
    for row_tokens, row_targets in zip(tokens, targets, strict=True):
        for i in range(60):
            markers = [t for t in row_tokens[:i + 1] if t < N_MARKERS]
            assert row_targets[i] == (markers[-1] if markers else IGNORE)


def test_batches_are_reproducible_from_the_generator():
    a = make_batch("last-marker", 3, 30, np.random.default_rng(7))
    b = make_batch("last-marker", 3, 30, np.random.default_rng(7))
    assert all((x == y).all() for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("args, message", [
    (("copy", 2, 10, np.random.default_rng(0)), "task must be one of"),
    (("copy-k", 0, 10, np.random.default_rng(0)), "batch must be >= 1"),
    (("copy-k", 2, 3, np.random.default_rng(0)), "length must be >= 4"),
    (("copy-k", 2, 10, 0), "rng must be a numpy.random.Generator"),
])
def test_make_batch_checks_its_arguments(args, message):
    with pytest.raises(ArgumentError, match=message):
        make_batch(*args)


# --- schemes and counts ------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(SCHEMES))
def test_bias_matrix_depends_only_on_the_offset(name):
    torch.manual_seed(0)
    position = PositionBias(name, 4, 64, models=2)
    with torch.no_grad():
        for p in position.parameters():
            p.normal_()
        bias = position(100)
        curve = position.curve(100)
    assert curve.shape == (2, 4, 100)
    if bias is None:
        assert name == "none" and not curve.any()
        return
    assert bias.shape == (2, 4, 100, 100)
    i, j = np.tril_indices(100)
    np.testing.assert_allclose(bias.numpy()[:, :, i, j], curve[:, :, i - j], rtol=1e-6)


def test_t5_scheme_is_t5lessons_causal_bias():
    position = PositionBias("t5-far", 4, 64, models=3)
    with torch.no_grad():
        position.t5.table.normal_()
        expected = relative_bias(position.t5.table, 70, 70, bidirectional=False, max_distance=256)  # 12 "heads"
        assert torch.equal(position(70), expected.view(3, 4, 70, 70))


def test_per_offset_tables_at_unseen_offsets():
    a, never, inside = (PositionBias(s, 2, 64) for s in ("per-offset-A", "per-offset-0", "per-offset-32"))
    for p in (a, never, inside):
        with torch.no_grad():
            p.table.copy_(torch.arange(p.table.numel(), dtype=torch.float32).view_as(p.table) + 1)
    d = np.arange(200)
    np.testing.assert_array_equal(a.curve(200)[0, 0], 2 * np.minimum(d, 63) + 1)  # clipped to offset 63
    np.testing.assert_array_equal(never.curve(200)[0, 0], np.where(d < 64, 2 * d + 1, 0))  # start value 0
    np.testing.assert_array_equal(inside.curve(200)[0, 0], 2 * np.minimum(d, 32) + 1)
    assert a.table.shape == (64, 2) and inside.table.shape == (33, 2)


def test_alibi_slopes_and_bias():
    np.testing.assert_allclose(alibi_slopes(4), [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8])
    curve = PositionBias("alibi", 4, 64, models=2).curve(10)
    np.testing.assert_allclose(curve, np.broadcast_to(-alibi_slopes(4)[:, None] * np.arange(10), (2, 4, 10)),
                               rtol=1e-6)


def test_offset_and_parameter_counts():
    np.testing.assert_array_equal(offset_counts(5), [5, 4, 3, 2, 1])
    total = 64 * 65 // 2
    for name in ("t5", "per-offset-A", "per-offset-0", "per-offset-32", "t5-far"):
        assert pairs_per_parameter(name, 64).sum() == total  # every causal pair trains one parameter
    assert pairs_per_parameter("per-offset-32", 64)[32] == sum(64 - d for d in range(32, 64))
    behind = training_pairs_behind_offset("per-offset-A", 512, 64)
    assert behind[3] == 61 and behind[63] == 1 and (behind[64:] == 1).all()
    assert (training_pairs_behind_offset("per-offset-0", 512, 64)[64:] == 0).all()
    t5 = training_pairs_behind_offset("t5", 512, 64)
    assert t5[100] == sum(64 - d for d in range(27, 64))  # the last bucket starts at 27 (16 buckets, 32)
    assert (training_pairs_behind_offset("t5-far", 512, 64)[166:] == 0).all()  # buckets never reached
    assert not training_pairs_behind_offset("alibi", 20, 64).any()


def _pairs_behind_by_counting(parameter, train_len):
    """Lesson 5's your-turn count, pair by pair: every causal pair (i, j) of one training sequence adds
    one to the parameter of its offset i - j; each offset then reads its parameter's tally."""
    tally = {}
    for i in range(train_len):
        for j in range(i + 1):
            if parameter[i - j] >= 0:
                tally[parameter[i - j]] = tally.get(parameter[i - j], 0) + 1
    return np.array([tally.get(p, 0) if p >= 0 else 0 for p in parameter])


def test_pairs_behind_counts_every_pair_and_its_cases_cover_the_traps():
    cases = pairs_behind_cases()
    for case in cases:
        np.testing.assert_array_equal(pairs_behind(**case), _pairs_behind_by_counting(**case))
        # the browser's NumPy (32-bit WebAssembly) indexes with int32, and bucket ids are int64
        np.testing.assert_array_equal(pairs_behind(case["parameter"].astype(np.int32), case["train_len"]),
                                      pairs_behind(case["parameter"].astype(np.int64), case["train_len"]))
        assert case["parameter"].dtype == np.intp
    np.testing.assert_array_equal(pairs_behind(**cases[0]), [4, 5, 5, 1, 1, 1])
    assert any(len(c["parameter"]) == c["train_len"] for c in cases), "train_len equal to n"
    assert any(c["train_len"] % 2 for c in cases), "an odd training length"
    assert any((c["parameter"] == -1).all() for c in cases[:5]), "a small table of -1 only"
    assert any((c["parameter"] == -1).any() for c in cases), "a distance with no learned parameter"
    assert (pairs_behind(**cases[-1]) == 0).all(), "ALiBi: no learned parameter anywhere"
    far = cases[-2]["parameter"]
    assert far.max() > far[:64].max(), "t5-far: buckets that no training distance reaches, which got 0 pairs"
    for name in ("t5", "per-offset-A", "per-offset-0"):
        np.testing.assert_array_equal(pairs_behind(SCHEMES[name].parameter_of_offset(512, 64), 64),
                                      training_pairs_behind_offset(name, 512, 64))


@pytest.mark.parametrize("parameter, message", [
    (np.zeros((4, 2), dtype=int), "1-d integer array"),
    (np.zeros(3, dtype=int), "at least train_len = 4"),
    (np.zeros(6), "1-d integer array"),
])
def test_pairs_behind_says_what_is_wrong_with_its_input(parameter, message):
    with pytest.raises(ArgumentError, match=message):
        pairs_behind(parameter, 4)


@pytest.mark.parametrize("call, message", [
    (lambda: get_scheme("t6"), "scheme must be a Scheme or one of"),
    (lambda: t5_scheme(8), "max_distance must be > max_exact = 8"),
    (lambda: PositionBias("t5", 0, 64), "num_heads must be >= 1"),
    (lambda: PositionBias("per-offset-32", 2, 16), "clip must be <= train_len - 1 = 15"),
    (lambda: offset_counts(0), "length must be >= 1"),
    (lambda: PositionBias("t5", 2, 64).curve(0), "n must be >= 1"),
])
def test_schemes_check_their_arguments(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()


# --- model and training ------------------------------------------------------------------------

def test_model_is_causal_unscaled_and_normalised():
    model = TinyAttentionModel(16, 32, 4, "t5", 64, seeds=(0, 1))
    tokens = torch.randint(0, 16, (2, 3, 12))
    logits, weights = model(tokens)
    assert logits.shape == (2, 3, 12, 16) and weights.shape == (2, 3, 4, 12, 12)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 4, 12))
    assert (weights.triu(1) == 0).all()
    # The logits are q.k + bias with no 1/sqrt(d_kv): recompute them with the package's scorer.
    with torch.no_grad():
        model.position.t5.table.normal_()
        h = model._norm(model.embed[torch.arange(2)[:, None, None], tokens], model.norm_weight, model.norm_bias)
        q, k = (model._split(model._linear(h, w)) for w in (model.q, model.k))
        allowed = torch.from_numpy(causal_mask(12, 12))
        scores = attention_scores(q, k, bias=model.position(12).unsqueeze(1), mask=allowed, scale=1.0)
        torch.testing.assert_close(model(tokens)[1], softmax(scores))
    with pytest.raises(ArgumentError, match="tokens must be a long tensor"):
        model(tokens.float())
    with pytest.raises(ArgumentError, match="models=2"):
        model(tokens[:1])


def test_models_side_by_side_equal_models_alone():
    """Training seeds together gives each seed the model it would get alone."""
    config = Config(steps=20)
    together = train("per-offset-A", "last-marker", (3, 5), config)
    alone = train("per-offset-A", "last-marker", 5, config)
    for (name, x), (_, y) in zip(together.state_dict().items(), alone.state_dict().items(), strict=True):
        if name.startswith("position."):
            x, y = x[:, 4:], y  # columns are model-major: model 1's heads are columns 4..7
        else:
            x, y = x[1], y[0]
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5, msg=name)
    a, b = evaluate(together, "last-marker", [32, 64])[5], evaluate(alone, "last-marker", [32, 64])[5]
    np.testing.assert_allclose(a, b, atol=1e-3)


def test_training_is_deterministic_and_leaves_the_caller_alone():
    config = Config(steps=5, eval_lens=(16, 32))
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a = train("per-offset-A", "copy-k", (4, 7), config)
    after = torch.rand(3)
    b = train("per-offset-A", "copy-k", (4, 7), config)
    assert torch.equal(before, after)  # the caller's random stream is untouched
    assert torch.get_num_threads() == threads
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(x, y), name
    assert evaluate(a, "copy-k", [16, 32]) == evaluate(b, "copy-k", [16, 32])


def test_schemes_share_the_start():
    """For a seed, every scheme starts from the same weights and tables of zeros."""
    models = [TinyAttentionModel(16, 32, 4, scheme, 64, seeds=(0, 1)) for scheme in SCHEMES]
    shared = lambda model: {k: v for k, v in model.state_dict().items() if not k.startswith("position.")}
    for model in models[1:]:
        for (name, x), (_, y) in zip(shared(model).items(), shared(models[0]).items(), strict=True):
            assert torch.equal(x, y), name
        assert not any(p.any() for p in model.position.parameters())  # every table starts at zero
    alone = TinyAttentionModel(16, 32, 4, "t5", 64, seeds=(1,))
    assert torch.equal(alone.q[0], models[0].q[1])  # a model's start depends on its seed only


def test_warmup_cosine():
    assert warmup_cosine(0, 300, 30) == pytest.approx(1 / 30)
    assert warmup_cosine(29, 300, 30) == 1.0 and warmup_cosine(30, 300, 30) == 1.0
    assert warmup_cosine(165, 300, 30) == pytest.approx(0.5)
    assert warmup_cosine(299, 300, 30) < 1e-3


@pytest.mark.parametrize("changes, message", [
    (dict(steps=0), "steps must be >= 1"),
    (dict(lr=0), "lr must be a positive number"),
    (dict(bias_lr="fast"), "bias_lr must be a positive number"),
    (dict(eval_lens=[64]), "eval_lens must be a non-empty tuple"),
    (dict(weight_decay=-1.0), "weight_decay must be a number >= 0"),
])
def test_config_checks_its_fields(changes, message):
    with pytest.raises(ArgumentError, match=message):
        Config(**changes)


def test_run_functions_check_their_arguments():
    with pytest.raises(ArgumentError, match="config must be a lengthgen Config"):
        train("t5", "copy-k", 0, {"steps": 3})
    with pytest.raises(ArgumentError, match="seed must be >= 0"):
        train("t5", "copy-k", -1)
    with pytest.raises(ArgumentError, match="seeds must be distinct"):
        train("t5", "copy-k", (1, 1))
    with pytest.raises(ArgumentError, match="model must be a TinyAttentionModel"):
        evaluate(None, "copy-k", (64,))
    with pytest.raises(ArgumentError, match="lengths must be a non-empty sequence"):
        evaluate(TinyAttentionModel(16, 32, 4, "t5", 64), "copy-k", ())
    with pytest.raises(ArgumentError, match="at least one entry"):
        run_experiment([], ["copy-k"], [0])


def test_results_table_and_json_round_trip():
    results = run_experiment(["t5", "none"], ["copy-k"], [0, 1], Config(steps=3, eval_lens=(16, 32)),
                             bias_offsets=40)
    assert len(results.rows) == 2 * 2 * 2 and results.lengths() == [16, 32] and results.seeds() == [0, 1]
    assert set(results.rows[0]) == {"scheme", "task", "length", "seed", "accuracy", "weight_on_key"}
    assert results.biases[("t5", "copy-k", 1)].shape == (4, 40)
    assert not results.biases[("none", "copy-k", 1)].any()
    assert results.mean("t5", "copy-k", 16) == pytest.approx(np.mean(results.values("t5", "copy-k", 16)))
    again = Results.from_json(results.to_json())
    assert again.rows == results.rows and again.labels == results.labels
    np.testing.assert_allclose(again.biases[("t5", "copy-k", 0)], results.biases[("t5", "copy-k", 0)], atol=1e-4)
    with pytest.raises(ArgumentError, match="no column"):
        results.select(model="t5")
    with pytest.raises(ArgumentError, match="no rows for scheme='alibi'"):
        results.mean("alibi", "copy-k", 16)


# --- the claim of the lesson -------------------------------------------------------------------

@pytest.fixture(scope="module")
def lesson_run():
    return run_experiment(LESSON_SCHEMES, ["copy-k"], [0, 1, 2])


def test_ranking_at_8L(lesson_run):
    """Lesson 5's ranking at 8x the training length, copy-k, mean of 3 seeds."""
    at_8l = {s: lesson_run.mean(s, "copy-k", 512) for s in LESSON_SCHEMES}
    assert at_8l["t5"] > at_8l["per-offset-A"] + 0.05 > at_8l["per-offset-0"] + 0.1  # T5 > Model A > never trained
    assert abs(at_8l["per-offset-32"] - at_8l["t5"]) < 0.05  # clipping inside L is about as good as T5
    assert at_8l["t5-far"] < at_8l["t5"] - 0.3  # max_distance 4x L: far worse
    for s in LESSON_SCHEMES:  # all of them solve the task at the training length
        assert lesson_run.mean(s, "copy-k", 64) > 0.99


def test_stored_results_match_a_fresh_run(lesson_run):
    """The lesson loads the rest of the grid from a file; it must come from the same code."""
    stored = load_stored()["default"]
    for row in lesson_run.rows:
        (twin,) = stored.select(scheme=row["scheme"], task=row["task"], length=row["length"], seed=row["seed"])
        assert twin["accuracy"] == pytest.approx(row["accuracy"], abs=0.02), row
    np.testing.assert_allclose(stored.biases[("t5", "copy-k", 0)], lesson_run.biases[("t5", "copy-k", 0)][:, :128],
                               atol=0.02)


def test_stored_grid_is_complete_and_ranks_last_marker_like_the_course():
    sets = load_stored()
    default = sets["default"]
    assert len(default.rows) == 7 * 2 * 4 * 3
    at_8l = {s: default.mean(s, "last-marker", 512) for s in SCHEMES}
    assert max(at_8l, key=at_8l.get) in ("alibi", "per-offset-32")  # recency-friendly schemes lead
    assert at_8l["t5"] > at_8l["per-offset-0"] and at_8l["t5"] > at_8l["t5-far"]
    harder = sets["bias_lr_0.3"]
    gap = default.mean("t5", "copy-k", 512) - default.mean("per-offset-A", "copy-k", 512)
    assert harder.mean("t5", "copy-k", 512) - harder.mean("per-offset-A", "copy-k", 512) < gap  # the gap narrows
