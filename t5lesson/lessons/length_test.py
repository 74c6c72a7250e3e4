"""Lesson 7, section 6: the tiny T5 on inputs longer than any it was trained on, as an experiment.

    per_position_accuracy(decode, length, n, seed)  how often answer token t is right, t = 1..L, and how
                                                    often the answer ended too early
    untrained_buckets / untrained_pairs / untrained_table
                                                    per stack: the buckets no training pair reached, and the
                                                    (query, key) pairs of a longer input that read them
    patch_untrained(model, train_tokens, config)    the control: a copy whose untrained buckets hold their
                                                    nearest trained bucket's values, nothing retrained
    run_lines(results, patched), run_figure(losses, results)
                                                    what the lesson shows of its own run: numbers, a figure
    train_reversal(config, lengths, seed, recipe)   the lesson's training loop on transformers' T5 (section 2
                                                    shows it computes what the lesson's model computes)
    SETTINGS, run_seed(seed)                        the stored experiment: the lesson's bucketing at 150 and
                                                    400 steps, each also patched, and a bucketing whose
                                                    every bucket training reaches
    load_intervention(), intervention_lines(data), findings(data)
                                                    the stored runs (benchmarks/length_intervention.py writes
                                                    and checks length_intervention.json)

A decode function takes (input_ids, attention_mask, max_new_tokens) and returns the tokens it
produced, the start token first, as the lesson's `greedy` and transformers' `generate()` do.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from .._validate import ArgumentError, check_int
from ..common.determinism import one_thread_forked_rng
from ..common.figures import COLORS, SMALL, WIDTH, describe, new_figure, series_style, styled
from ..seq2seq import CONFIG, EOS
from .pair_counts import bucket_pair_counts
from .tiny_t5 import reverse_batch

__all__ = ["LENGTHS", "STRINGS", "LengthResult", "per_position_accuracy", "accuracy_at_lengths",
           "untrained_buckets", "untrained_pairs", "untrained_table", "nearest_trained", "patch_untrained",
           "run_lines", "run_figure", "RECIPE", "train_reversal", "generate_decoder", "SETTINGS", "SEEDS",
           "INTERVENTION_PATH", "run_seed", "load_intervention", "mean_results",
           "intervention_lines", "findings"]

LENGTHS = (8, 9, 10, 16, 32)  # the longest trained length, one and two digits more, 2x and 4x
STRINGS = 500  # strings per length in the stored runs
EVAL_SEED = 11


class LengthResult(NamedTuple):
    length: int  # digits in each input string
    whole: float  # share of strings whose whole answer (digits and end token) is right
    per_position: np.ndarray  # [length]: share of strings whose answer token t (1-based) is right
    early: float  # share of strings whose answer ended (end token or nothing) before its last digit


def per_position_accuracy(decode, length, n=STRINGS, seed=EVAL_SEED) -> LengthResult:
    """Greedy-decode n random strings of `length` digits; how often each answer token is right.

    Answer token t must equal input digit L + 1 - t (1-based). A decoder that stops early has
    its missing tokens counted wrong.
    """
    length = check_int("length", length, minimum=1)
    n = check_int("n", n, minimum=1)
    batch = reverse_batch(n, length, torch.Generator().manual_seed(seed))
    got = torch.as_tensor(decode(batch.input_ids, batch.attention_mask, length + 1))
    if got.ndim != 2 or got.shape[0] != n:
        raise ArgumentError(f"decode must return [n, tokens] with n = {n} rows (the start token first), "
                            f"got shape {tuple(got.shape)}")
    got, want = got[:, 1:], batch.labels  # want [n, length + 1]: the reversed digits, then EOS
    got = torch.cat([got, torch.full((n, max(0, want.shape[1] - got.shape[1])), -1, dtype=got.dtype)], 1)
    got = got[:, :want.shape[1]]
    right = (got == want).numpy()
    early = ((got[:, :length] == EOS) | (got[:, :length] < 0)).any(1).numpy()
    return LengthResult(length, float(right.all(1).mean()), right[:, :length].mean(0), float(early.mean()))


def accuracy_at_lengths(decode, lengths=LENGTHS, n=STRINGS, seed=EVAL_SEED) -> list[LengthResult]:
    return [per_position_accuracy(decode, length, n, seed) for length in lengths]


def _bucket_pairs(tokens, bidirectional, config):
    return bucket_pair_counts(tokens, bidirectional, config["num_buckets"], config["max_distance"])


def untrained_buckets(train_tokens, bidirectional, config) -> list[int]:
    """The buckets some offset uses but no (query, key) pair of a training sequence reaches.

    Training sequences are at most `train_tokens` long, and a shorter one reaches a subset of
    the offsets of the longest, so the longest decides. A sequence of 4 * max_distance tokens
    reaches every bucket any offset uses.
    """
    train_tokens = check_int("train_tokens", train_tokens, minimum=1)
    used = _bucket_pairs(4 * config["max_distance"], bidirectional, config) > 0
    trained = _bucket_pairs(train_tokens, bidirectional, config) > 0
    return [int(b) for b in np.nonzero(used & ~trained)[0]]


def untrained_pairs(tokens, train_tokens, config) -> dict:
    """{"encoder": (pairs in untrained buckets, all pairs), "decoder": (...)} of one sequence of `tokens`.

    The encoder counts all tokens x tokens pairs; the decoder only those its causal mask lets
    through, tokens * (tokens + 1) / 2.
    """
    tokens = check_int("tokens", tokens, minimum=1)
    out = {}
    for stack, bidirectional in (("encoder", True), ("decoder", False)):
        counts = _bucket_pairs(tokens, bidirectional, config)
        out[stack] = (int(counts[untrained_buckets(train_tokens, bidirectional, config)].sum()), int(counts.sum()))
    return out


def untrained_table(lengths, train_tokens, config) -> str:
    """The untrained buckets of both stacks, then per input length the pairs that read them.

    An input of L digits is L + 1 tokens in the encoder (the end token) and in the decoder (the
    start token, then L answer digits; the end token is predicted, not fed).
    """
    lines = ["buckets no training pair reached:",
             f"  encoder {untrained_buckets(train_tokens, True, config)}, "
             f"decoder {untrained_buckets(train_tokens, False, config)}",
             f"{'digits':>6}  {'encoder pairs in them':>22}  {'decoder pairs in them':>22}"]
    for n in lengths:
        pairs = untrained_pairs(n + 1, train_tokens, config)
        cells = [f"{u} of {a} ({u / a:.0%})" for u, a in pairs.values()]
        lines.append(f"{n:>6}  {cells[0]:>22}  {cells[1]:>22}")
    return "\n".join(lines)


def nearest_trained(train_tokens, bidirectional, config) -> dict[int, int]:
    """{untrained bucket: the trained bucket whose values it gets}: the nearest one below it on its side.

    A higher bucket holds longer offsets, so the nearest trained bucket below an untrained one
    holds the longest offsets training saw on that side (encoder 6, 7 <- 5 and 14, 15 <- 13,
    decoder 9-15 <- 8 in the lesson's model).
    """
    untrained = untrained_buckets(train_tokens, bidirectional, config)
    half = config["num_buckets"] // 2 if bidirectional else 0
    source = {}
    for b in untrained:
        first = half if bidirectional and b >= half else 0
        below = [t for t in range(first, b) if t not in untrained]
        if not below:
            raise ArgumentError(f"bucket {b} has no trained bucket below it on its side")
        source[b] = below[-1]
    return source


@torch.no_grad()
def patch_untrained(model, train_tokens, config):
    """A copy of `model` whose untrained bias buckets hold their nearest trained bucket's values.

    Nothing is retrained, and only the bias tables change: a pair that reads a trained bucket
    sees exactly what it saw before. Works on any model whose tables are named
    `encoder...relative_attention_bias.weight` and `decoder...` ([num_buckets, heads]), as
    transformers' T5 and the lesson's TinyT5 are.
    """
    patched = copy.deepcopy(model)
    tables = [(name, weight) for name, weight in patched.named_parameters()
              if name.endswith("relative_attention_bias.weight")]
    if not tables:
        raise ArgumentError("the model has no parameter named ...relative_attention_bias.weight")
    for name, weight in tables:
        for target, source in nearest_trained(train_tokens, name.startswith("encoder"), config).items():
            weight[target] = weight[source]
    return patched


def run_lines(results, patched=None) -> str:
    """Per length: whole answers right, answers ended too early, answer token 1 right; beside each, if
    `patched` is given, the same measured on the patched model."""
    columns = ("whole answer right", "ended too early", "answer token 1 right")
    if patched is None:
        lines = [f"{'digits':>6}  " + "  ".join(f"{c:>20}" for c in columns)]
        for r in results:
            lines.append(f"{r.length:>6}  " + "  ".join(f"{v:>20.2f}" for v in (r.whole, r.early, r.per_position[0])))
        return "\n".join(lines)
    lines = [f"{'':>6}  " + "  ".join(f"{c:^20}" for c in columns),
             f"{'digits':>6}  " + "  ".join([f"{'trained':>10}{'patched':>10}"] * 3)]
    for r, p in zip(results, patched, strict=True):
        pairs = ((r.whole, p.whole), (r.early, p.early), (r.per_position[0], p.per_position[0]))
        lines.append(f"{r.length:>6}  " + "  ".join(f"{a:>10.2f}{b:>10.2f}" for a, b in pairs))
    return "\n".join(lines)


def _accuracy_axes(ax, results, chance=0.1):
    for i, r in enumerate(results):
        ax.plot(np.arange(1, r.length + 1), r.per_position, lw=1.5, ms=3.5, markevery=max(1, r.length // 8),
                label=f"{r.length} digits", **series_style(i))
    ax.axhline(chance, color="0.5", lw=1.0, ls=(0, (4, 2)))
    ax.text(0.8, chance - 0.025, "chance (1 in 10)", ha="left", va="top", fontsize=SMALL, color="0.3")
    ax.set_ylim(-0.02, 1.04)
    ax.set_xlabel("answer token t (t = 1: the last input digit)")


@styled
def run_figure(losses, results):
    """The training loss per step (log scale) beside the per-position accuracy at each length."""
    losses = np.asarray(losses, dtype=float)
    if losses.ndim != 1 or not len(losses):
        raise ArgumentError("losses must be a non-empty list of per-step losses")
    fig = new_figure(WIDTH, 3.4)
    left, right = fig.subplots(1, 2, width_ratios=(1, 1.9))
    left.plot(np.arange(len(losses)), losses, color=COLORS["blue"], lw=1.3)
    left.axhline(np.log(12), color="0.5", lw=1.0, ls=(0, (4, 2)))
    left.text(len(losses) - 1, np.log(12) * 1.1, "ln 12", ha="right", va="bottom", fontsize=SMALL, color="0.3")
    left.set_yscale("log")
    left.set_xlabel("training step")
    left.set_ylabel("training loss (log scale)")
    left.set_title("training (strings of 3 to 8 digits)", fontsize=SMALL + 1)
    _accuracy_axes(right, results)
    right.set_ylabel("share of strings right")
    right.set_title("per-position accuracy at each input length", fontsize=SMALL + 1)
    right.legend(fontsize=SMALL, loc="upper right")
    shown = ", ".join(str(r.length) for r in results)
    return describe(fig, f"Left: the training loss against the step on a log scale, with ln 12 dashed. Right: "
                         f"the share of strings whose answer token t is right, against t, one line per input "
                         f"length ({shown} digits), chance (0.1) dashed grey.")


# The lesson's training recipe (section 3's cell), for the benchmark's runs.
RECIPE = {"steps": 150, "batch": 64, "lr": 1.5e-2, "bias_lr": 7.5e-2, "pct_start": 0.1, "clip": 1.0}


def train_reversal(config, lengths, seed, recipe=RECIPE):
    """transformers' T5 of `config`, trained by the lesson's recipe on strings of `lengths` digits.

    Returns (model in eval mode, per-step losses). The model starts from transformers' own
    initialisation, which is the distribution lesson 7's classes draw from; the seed sets the
    weights (torch's global stream, forked) and the data (seed + 1).
    """
    from transformers import T5ForConditionalGeneration

    from ..seq2seq import t5_config

    F = torch.nn.functional
    with one_thread_forked_rng(seed):
        model = T5ForConditionalGeneration(t5_config(config))
        data = torch.Generator().manual_seed(seed + 1)
        named = list(model.named_parameters())
        groups = [{"params": [p for name, p in named if ("relative_attention_bias" in name) == table], "lr": lr}
                  for table, lr in ((False, recipe["lr"]), (True, recipe["bias_lr"]))]
        optimizer = torch.optim.AdamW(groups, weight_decay=0.0)
        schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, [recipe["lr"], recipe["bias_lr"]],
                                                       total_steps=recipe["steps"], pct_start=recipe["pct_start"])
        losses = []
        model.train()
        for _ in range(recipe["steps"]):
            batch = reverse_batch(recipe["batch"], lengths, data)
            logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                           decoder_input_ids=batch.decoder_input_ids).logits
            loss = F.cross_entropy(logits.flatten(0, 1), batch.labels.flatten(), ignore_index=-100)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["clip"])
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
    return model.eval(), losses


def generate_decoder(model):
    """transformers' greedy `generate()` behind the decode interface, on one thread."""
    @torch.no_grad()
    def decode(input_ids, attention_mask, max_new_tokens):
        with one_thread_forked_rng():
            return model.generate(input_ids=input_ids, attention_mask=attention_mask,
                                  max_new_tokens=max_new_tokens, do_sample=False, num_beams=1)
    return decode


# The stored experiment. Each setting: (what it is, bucketing overrides, training steps, whether
# the untrained buckets are patched after training). A patched setting decodes the very models
# of the setting above it, so the two differ only in the untrained buckets' values.
#
# With 16 buckets the decoder's exact region alone spans offsets 0 to -7, and its last bucket
# starts at -21: no bucketing with 16 buckets lets strings of 8 digits (9 tokens, offsets up to
# 8) reach every bucket. With 8 buckets and max_distance 10, every bucket an offset uses is
# reached in both stacks by training offsets up to 8 (and no offset sits on a float32 bucket
# edge); but that bucketing is also much coarser, so it changes two things at once. The patch
# changes one.
#
# The lesson trains 150 steps, which leaves some seeds short of learning even the training
# lengths; 400 steps, the one-cycle schedule stretched to match, let every run learn them, so
# that what fails at longer lengths is length.
SETTINGS = {
    "150 steps": ("the lesson's model and loop (16 buckets, max_distance 24)", {}, 150, False),
    "150 steps, patched": ("those models, each untrained bucket set to its nearest trained one",
                           {}, 150, True),
    "400 steps": ("the lesson's model, trained longer", {}, 400, False),
    "400 steps, patched": ("those models, patched the same way", {}, 400, True),
    "all buckets trained": ("8 buckets and max_distance 10, every one trained; 400 steps",
                            {"num_buckets": 8, "max_distance": 10}, 400, False),
}
SEEDS = (0, 1, 2, 3, 4)
TRAIN_LENGTHS = (3, 8)
TRAIN_TOKENS = TRAIN_LENGTHS[1] + 1  # the longest training sequence: 8 digits and the end token
INTERVENTION_PATH = Path(__file__).with_name("length_intervention.json")


def _row(name, seed, losses, results) -> dict:
    return {"setting": name, "seed": seed, "final_loss": round(float(np.mean(losses[-20:])), 4),
            "whole": {str(r.length): round(r.whole, 4) for r in results},
            "early": {str(r.length): round(r.early, 4) for r in results},
            "per_position": {str(r.length): [round(float(a), 4) for a in r.per_position] for r in results}}


def run_seed(seed, config=CONFIG, n=STRINGS, settings=SETTINGS):
    """Train each distinct (bucketing, steps) of `settings` once with this seed, and measure each setting.

    Yields one JSON-ready row per setting: the final loss, and per length of LENGTHS the whole,
    early and per-position accuracies. A patched setting reuses the trained model of its
    unpatched twin and only patches a copy.
    """
    trained = {}
    for name, (_, overrides, steps, patched) in settings.items():
        key = (tuple(sorted(overrides.items())), steps)
        setting_config = {**config, **overrides}
        if key not in trained:
            trained[key] = train_reversal(setting_config, TRAIN_LENGTHS, seed, {**RECIPE, "steps": steps})
        model, losses = trained[key]
        if patched:
            model = patch_untrained(model, TRAIN_TOKENS, setting_config)
        yield _row(name, seed, losses, accuracy_at_lengths(generate_decoder(model), n=n))


def load_intervention(path=INTERVENTION_PATH) -> dict:
    """The stored runs, checked: {"settings": {...}, "lengths": [...], "strings": n, "runs": [row, ...]}."""
    path = Path(path)
    if not path.exists():
        raise ArgumentError(f"{path.name} is missing: python benchmarks/length_intervention.py writes it")
    data = json.loads(path.read_text())
    missing = {"settings", "lengths", "strings", "runs"} - set(data)
    if missing:
        raise ArgumentError(f"{path.name} lacks {sorted(missing)}: "
                            "write it again with benchmarks/length_intervention.py")
    return data


def mean_results(data, setting) -> list[LengthResult]:
    """Per length, the mean over the stored seeds of one setting, as LengthResults."""
    runs = [r for r in data["runs"] if r["setting"] == setting]
    if not runs:
        stored = sorted({r["setting"] for r in data["runs"]})
        raise ArgumentError(f"no stored runs for setting {setting!r}; stored: {stored}")

    def mean(key, n):
        return np.mean([r[key][str(n)] for r in runs], axis=0)
    return [LengthResult(n, float(mean("whole", n)), mean("per_position", n), float(mean("early", n)))
            for n in data["lengths"]]


def _runs(data, setting) -> list[dict]:
    return sorted((r for r in data["runs"] if r["setting"] == setting), key=lambda r: r["seed"])


def intervention_lines(data) -> str:
    """The stored settings as a table: per length, whole answers, early stops and token 1, means over runs;
    then the 400-step runs one by one at 9 and 10 digits, as trained and patched."""
    seeds = [r["seed"] for r in _runs(data, next(iter(data["settings"])))]
    width = 27  # the row labels' column
    lines = [f"{len(seeds)} runs per setting (seeds {seeds[0]}-{seeds[-1]}), {data['strings']} strings per length:"]
    lines += [f"  {name}: {description}" for name, (description, *_) in data["settings"].items()]
    lines += ["", "means over the runs" + " " * (width - 19) + "".join(f"{n:>6}" for n in data["lengths"])
              + "  digits"]
    for title, value in (("whole answer right", lambda r: r.whole), ("ended too early", lambda r: r.early),
                         ("answer token 1 right", lambda r: r.per_position[0])):
        lines.append(title)
        for name in data["settings"]:
            lines.append(f"  {name:<{width - 2}}" + "".join(f"{value(r):>6.2f}" for r in mean_results(data, name)))
    lines += ["", "each run" + " " * (width - 8) + "".join(f"{s:>6}" for s in seeds) + "  seed"]
    for title, rows in (("whole answer right", ((8, "150 steps"), (9, "400 steps"), (10, "400 steps"),
                                                (10, "400 steps, patched"))),
                        ("answer token 1 right at 32 digits", ((32, "150 steps"), (32, "400 steps")))):
        lines.append(title)
        for n, name in rows:
            label = name if n == 32 else f"{n} digits, {name}".replace(" steps, patched", ", patched")
            values = [r["per_position"][str(n)][0] if n == 32 else r["whole"][str(n)] for r in _runs(data, name)]
            lines.append(f"  {label:<{width - 2}}" + "".join(f"{v:>6.2f}" for v in values))
    return "\n".join(lines)


def findings(data) -> list[tuple[str, bool]]:
    """What lesson 7 says about the stored runs, each with whether the data bear it out.

    benchmarks/length_intervention.py --check recomputes the runs and checks these on the new
    numbers: on another CPU the runs differ in their digits, and these statements must not.
    """
    mean = {name: {r.length: r for r in mean_results(data, name)} for name in data["settings"]}
    runs = {name: _runs(data, name) for name in data["settings"]}
    return _patch_findings(mean, runs) + _long_input_findings(mean, runs)


LONG = ("400 steps", "400 steps, patched", "all buckets trained")  # the settings whose runs learn 8 digits


def _whole(runs, name, n) -> list[float]:
    return [r["whole"][str(n)] for r in runs[name]]


def _patch_findings(mean, runs) -> list[tuple[str, bool]]:
    """8 to 10 digits: what training length and the patch do."""
    learned_9 = [i for i, w in enumerate(_whole(runs, "400 steps", 9)) if w > 0.5]
    before, after = _whole(runs, "400 steps", 10), _whole(runs, "400 steps, patched", 10)
    unchanged = all(a["whole"][n] == b["whole"][n] and a["per_position"][n] == b["per_position"][n]
                    for steps in ("150", "400") for n in ("8", "9")
                    for a, b in zip(runs[f"{steps} steps"], runs[f"{steps} steps, patched"], strict=True))
    return [
        ("at 400 steps every run learns the training lengths: over 95% of 8-digit answers right",
         all(min(_whole(runs, name, 8)) > 0.95 for name in LONG)),
        ("at 150 steps none has yet: under 90% of 8-digit answers right in every run",
         max(_whole(runs, "150 steps", 8)) < 0.9),
        ("patching changes no answer at 8 and 9 digits (no pair of those inputs reads an untrained bucket)",
         unchanged),
        ("at 9 digits every bucket trained (8 buckets) does better than the lesson's bucketing at 400 steps",
         mean["all buckets trained"][9].whole > mean["400 steps"][9].whole),
        ("at 10 digits the patch at least doubles the mean share of whole answers right, at 150 and 400 steps",
         all(mean[f"{s} steps, patched"][10].whole >= 2 * mean[f"{s} steps"][10].whole for s in ("150", "400"))),
        ("at 10 digits the patch at least doubles it in every 400-step run with most 9-digit answers right",
         bool(learned_9) and all(after[i] >= 2 * before[i] for i in learned_9)),
        ("the 400-step runs with most 9-digit answers wrong get under 5% of 10-digit answers right, patched or not",
         all(max(before[i], after[i]) < 0.05 for i in range(len(before)) if i not in learned_9)),
        ("at 10 digits training every bucket (8 buckets) gives about what the patch gives: within 0.15",
         abs(mean["all buckets trained"][10].whole - mean["400 steps, patched"][10].whole) < 0.15),
        ("at 9 and 10 digits the 400-step runs get answer tokens 1 to 8 right in over 95% of strings",
         all(mean[name][n].per_position[:8].mean() > 0.95 for name in LONG for n in (9, 10))),
    ]


def _long_input_findings(mean, runs) -> list[tuple[str, bool]]:
    """16 and 32 digits: no rescue, early stops, the first answer token."""
    first_at_32 = [r["per_position"]["32"][0] for rs in runs.values() for r in rs]
    return [
        ("at 16 and 32 digits every setting gets under 1% of whole answers right",
         all(m[n].whole < 0.01 for m in mean.values() for n in (16, 32))),
        ("at 16 and 32 digits most 400-step answers stop too early, and over 90% once the untrained "
         "buckets hold trained values (patched, or all trained)",
         all(mean[name][n].early > 0.5 for name in LONG for n in (16, 32))
         and all(mean[name][n].early > max(0.9, mean["400 steps"][n].early) for name in LONG[1:] for n in (16, 32))),
        ("at 16 digits the 400-step runs get answer token 1 right in over 85% of strings",
         all(mean[name][16].per_position[0] > 0.85 for name in LONG)),
        ("at 32 digits no setting gets answer token 1 right in 75% of strings, and some runs in under 20%",
         all(m[32].per_position[0] < 0.75 for m in mean.values()) and min(first_at_32) < 0.2),
        ("at 16 and 32 digits answer tokens 13 on are right in under 10% of strings in every setting",
         all(m[n].per_position[12:].mean() < 0.1 for m in mean.values() for n in (16, 32))),
    ]
