"""Train on length L, evaluate at L, 2L, 4L, 8L: the experiment itself.

`run_experiment(schemes, tasks, seeds, config)` trains one tiny model per (scheme, task, seed)
(the seeds of a scheme side by side, see `model.py`) and returns a `Results`: a plain table
(one row per scheme x task x length x seed, with the accuracy and the attention weight on the
right key) plus each model's learned bias as a function of offset.

Determinism: for a seed, the training batches, the evaluation batches and the initial weights
are the same for every scheme (all tables start at zero), so the schemes differ only in how
they map offsets to biases. Each run uses one thread (restored afterwards) and its own seeded
generators, so it neither depends on nor disturbs the caller's random state.
"""
from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch.nn import functional as F

from .._validate import ArgumentError, check_int
from ..common.determinism import one_thread_forked_rng
from ..common.progress import Progress
from ..perturbation import perturb_
from .model import TinyAttentionModel
from .schemes import get_scheme
from .tasks import COPY_K, IGNORE, N_MARKERS, get_task, make_batch

__all__ = ["COLUMNS", "Config", "Results", "train", "evaluate", "run_experiment", "warmup_cosine", "new_model",
           "new_optimizer", "warmup_cosine_schedule", "training_batches", "training_step", "per_model_loss", "record",
           "refill", "check_config"]


@dataclass(frozen=True)
class Config:
    """Everything but the scheme, task and seed. Defaults: the lesson's experiment.

    Two learning rates: the weights get 1e-2 and the position table 3e-2 (`bias_lr`). With 3e-2
    everywhere, the unscaled logits made last-marker training stall for most seeds (about 0.6
    accuracy even at the training length), while the position table still needs the larger rate
    to move in 300 steps.
    """

    train_len: int = 64
    eval_lens: tuple = (64, 128, 256, 512)
    steps: int = 300
    batch: int = 16
    lr: float = 1e-2  # embeddings, projections, LayerNorms
    bias_lr: float = 3e-2  # the position table (raise it to "train the biases harder")
    warmup: int = 30
    weight_decay: float = 0.01
    d_model: int = 32
    num_heads: int = 4
    eval_batch: int = 8

    def __post_init__(self):
        check_int("train_len", self.train_len, minimum=COPY_K + 1)
        check_int("steps", self.steps, minimum=1)
        check_int("batch", self.batch, minimum=1)
        check_int("warmup", self.warmup, minimum=0)
        check_int("d_model", self.d_model, minimum=1)
        check_int("num_heads", self.num_heads, minimum=1)
        check_int("eval_batch", self.eval_batch, minimum=1)
        if not isinstance(self.eval_lens, tuple) or not self.eval_lens:
            raise ArgumentError(f"eval_lens must be a non-empty tuple of lengths, got {self.eval_lens!r}")
        for n in self.eval_lens:
            check_int("each of eval_lens", n, minimum=COPY_K + 1)
        for name in ("lr", "bias_lr"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise ArgumentError(f"{name} must be a positive number, got {value!r}")
        if isinstance(self.weight_decay, bool) or not isinstance(self.weight_decay, (int, float)) \
                or not 0 <= self.weight_decay < math.inf:
            raise ArgumentError(f"weight_decay must be a number >= 0, got {self.weight_decay!r}")


def check_config(config):
    """`config` itself when it is a lengthgen Config; a clear error for anything else."""
    if not isinstance(config, Config):
        raise ArgumentError(f"config must be a lengthgen Config, got {type(config).__name__}")
    return config


def warmup_cosine(step, steps, warmup):
    """Learning-rate factor: linear warm-up over `warmup` steps, then cosine decay to 0."""
    step = check_int("step", step, minimum=0)
    steps = check_int("steps", steps, minimum=1)
    warmup = check_int("warmup", warmup, minimum=0)
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def _task_index(task):
    return sorted(("copy-k", "last-marker")).index(task)


def _rng(seed, task, purpose, length=0):
    """A NumPy Generator for (seed, task, purpose): training data is shared by all schemes."""
    return np.random.default_rng([seed, _task_index(task), purpose, length])


def _check_seeds(seeds):
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        seeds = (seeds,)
    if not isinstance(seeds, (tuple, list, range)) or not seeds:
        raise ArgumentError(f"seeds must be a seed or a non-empty sequence of seeds, got {seeds!r}")
    seeds = tuple(check_int("each seed", s, minimum=0) for s in seeds)
    if len(set(seeds)) != len(seeds):
        raise ArgumentError(f"seeds must be distinct, got {seeds}")
    return seeds


def new_model(scheme, task, seeds, config=Config()):
    """A fresh TinyAttentionModel, one per seed side by side, for `task` (plumbing for the training loop).

    Model m starts from torch.manual_seed(seeds[m]) and every position table at zero; with
    `T5LESSON_PERTURB` set, every weight is nudged (see `t5lesson.perturbation`).
    """
    scheme, task, seeds, config = get_scheme(scheme), get_task(task), _check_seeds(seeds), check_config(config)
    return perturb_(TinyAttentionModel(task.vocab_size, config.d_model, config.num_heads, scheme, config.train_len,
                                       seeds=seeds))


def new_optimizer(model, config=Config()):
    """AdamW with two parameter groups: the weights (lr, weight decay) and the position table
    (bias_lr, no weight decay, so its start value 0 stays the reference point)."""
    if not isinstance(model, TinyAttentionModel):
        raise ArgumentError(f"model must be a TinyAttentionModel (from new_model), got {type(model).__name__}")
    config = check_config(config)
    table = [p for name, p in model.named_parameters() if name.startswith("position.")]
    rest = [p for name, p in model.named_parameters() if not name.startswith("position.")]
    groups = [{"params": rest, "lr": config.lr}]
    if table:
        groups.append({"params": table, "lr": config.bias_lr, "weight_decay": 0.0})
    return torch.optim.AdamW(groups, weight_decay=config.weight_decay, foreach=True)


def warmup_cosine_schedule(optimizer, config=Config()):
    """A LambdaLR scheduler: every group's learning rate times `warmup_cosine(step, steps, warmup)`."""
    config = check_config(config)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: warmup_cosine(step, config.steps, config.warmup))


def training_batches(task, seeds, config=Config()):
    """An endless stream of (tokens, targets), two long tensors [models, batch, train_len].

    Model m's sequences come from its seed's own generator, so for a seed they are the same
    whatever the scheme.
    """
    task, seeds, config = get_task(task).name, _check_seeds(seeds), check_config(config)
    streams = [_rng(seed, task, 0) for seed in seeds]
    while True:
        batches = [make_batch(task, config.batch, config.train_len, rng) for rng in streams]
        yield (torch.from_numpy(np.stack([b[0] for b in batches])),
               torch.from_numpy(np.stack([b[1] for b in batches])))


def train(scheme, task, seeds, config=Config(), on_step=None):
    """One TinyAttentionModel per seed, trained side by side on `task` at config.train_len.

    The same lines as lesson 5's training loop: AdamW (`new_optimizer`) with linear warm-up and
    cosine decay, the loss the sum over models of each model's mean cross-entropy (so every
    model gets exactly the gradient it would get alone). `on_step`, if given, is called after
    every step (a progress bar's `update`). One thread, a private random stream.
    """
    config = check_config(config)
    with one_thread_forked_rng():
        model = new_model(scheme, task, seeds, config)
        optimizer = new_optimizer(model, config)
        schedule = warmup_cosine_schedule(optimizer, config)
        batches = training_batches(task, seeds, config)
        for _ in range(config.steps):
            tokens, targets = next(batches)
            training_step(model, optimizer, schedule, tokens, targets)
            if on_step is not None:
                on_step()
    return model.eval()


def training_step(model, optimizer, schedule, tokens, targets):
    """One update of the side-by-side models on one batch (lesson 5's your-turn step); returns the loss.

    Forward, each model's mean cross-entropy summed over the models (`per_model_loss`), then
    backward, one optimiser step and one step of the learning-rate schedule.
    """
    logits, _ = model(tokens)
    loss = per_model_loss(logits, targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    schedule.step()
    return loss


def per_model_loss(logits, targets):
    """Sum over the side-by-side models of each model's mean cross-entropy (IGNORE targets left out)."""
    losses = F.cross_entropy(logits.flatten(0, 2), targets.flatten(), ignore_index=IGNORE, reduction="none")
    valid = (targets != IGNORE).flatten(1).sum(1)  # [models]
    return (losses.view(len(valid), -1).sum(1) / valid).sum()


def _right_key(task, tokens, targets):
    """Index of the key that holds the answer, same shape as tokens (-1 where there is no target)."""
    positions = np.broadcast_to(np.arange(tokens.shape[-1]), tokens.shape)
    if task == "copy-k":
        key = positions - COPY_K
    else:
        key = np.maximum.accumulate(np.where(tokens < N_MARKERS, positions, -1), axis=-1)
    return np.where(targets != IGNORE, key, -1)


EVAL_CHUNK = 4  # sequences per forward pass at evaluation: bounds the memory of [models, chunk, heads, L, L]


def evaluate(model, task, lengths, eval_batch=8):
    """{seed: [(accuracy, weight on the right key) per length]} for every model in `model`.

    Each seed gets its own evaluation sequences (the same for every scheme). weight on the right
    key: the largest of the heads' attention weights on the key that holds the answer, averaged
    over the positions that have a target.
    """
    if not isinstance(model, TinyAttentionModel):
        raise ArgumentError(f"model must be a TinyAttentionModel (from lengthgen.train), got {type(model).__name__}")
    task = get_task(task).name
    eval_batch = check_int("eval_batch", eval_batch, minimum=1)
    if not isinstance(lengths, (tuple, list)) or not lengths:
        raise ArgumentError(f"lengths must be a non-empty sequence of evaluation lengths, got {lengths!r}")
    lengths = [check_int("each of lengths", n, minimum=COPY_K + 1) for n in lengths]
    out = {seed: [] for seed in model.seeds}
    with one_thread_forked_rng(), torch.no_grad():
        for length in lengths:
            data = [make_batch(task, eval_batch, length, _rng(seed, task, 1, length)) for seed in model.seeds]
            tokens, targets = np.stack([d[0] for d in data]), np.stack([d[1] for d in data])
            right, on_key = [], []
            for start in range(0, eval_batch, EVAL_CHUNK):
                part = slice(start, start + EVAL_CHUNK)
                logits, weights = model(torch.from_numpy(tokens[:, part]))
                right.append(logits.argmax(-1).numpy() == targets[:, part])
                key = torch.from_numpy(np.maximum(_right_key(task, tokens[:, part], targets[:, part]), 0))
                index = key[:, :, None, :, None].expand(-1, -1, weights.shape[2], -1, 1)
                on_key.append(torch.gather(weights, 4, index)[..., 0].amax(dim=2).numpy())  # [models, chunk, L]
            right, on_key = np.concatenate(right, axis=1), np.concatenate(on_key, axis=1)
            valid = targets != IGNORE
            for m, seed in enumerate(model.seeds):
                out[seed].append((float(right[m][valid[m]].mean()), float(on_key[m][valid[m]].mean())))
    return out


COLUMNS = ("scheme", "task", "length", "seed", "accuracy", "weight_on_key")


@dataclass
class Results:
    """The experiment's output: a plain table and the learned biases.

    rows: one dict per scheme x task x length x seed with the keys of COLUMNS (accuracy: share of
    positions predicted right; weight_on_key: the largest head's attention on the key holding
    the answer, averaged over positions). biases: (scheme, task, seed) -> array [heads, offsets],
    the bias at offsets d = 0, 1, ... labels: scheme name -> label for plots. config: the Config.
    """

    rows: list = field(default_factory=list)
    biases: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)

    def select(self, **where):
        """The rows whose fields equal the given values, e.g. select(task="copy-k", length=512)."""
        unknown = sorted(set(where) - set(COLUMNS))
        if unknown:
            raise ArgumentError(f"rows have no column {', '.join(unknown)}; the columns are {', '.join(COLUMNS)}")
        return [r for r in self.rows if all(r[k] == v for k, v in where.items())]

    def values(self, scheme, task, length, column="accuracy"):
        """One number per seed, in seed order."""
        if column not in ("accuracy", "weight_on_key"):
            raise ArgumentError(f'column must be "accuracy" or "weight_on_key", got {column!r}')
        rows = sorted(self.select(scheme=scheme, task=task, length=length), key=lambda r: r["seed"])
        if not rows:
            raise ArgumentError(f"no rows for scheme={scheme!r}, task={task!r}, length={length!r}; "
                                f"schemes: {self.schemes()}, tasks: {self.tasks()}, lengths: {self.lengths()}")
        return [r[column] for r in rows]

    def mean(self, scheme, task, length, column="accuracy"):
        """Mean of a column over seeds."""
        return float(np.mean(self.values(scheme, task, length, column)))

    def mean_table(self, task, column="accuracy"):
        """[(scheme, [mean at each length])] for one task, schemes in the order they were run."""
        return [(s, [self.mean(s, task, n, column) for n in self.lengths()]) for s in self.schemes()
                if self.select(scheme=s, task=task)]

    def schemes(self):
        return list(dict.fromkeys(r["scheme"] for r in self.rows))

    def tasks(self):
        return list(dict.fromkeys(r["task"] for r in self.rows))

    def lengths(self):
        return sorted({r["length"] for r in self.rows})

    def seeds(self):
        return sorted({r["seed"] for r in self.rows})

    def to_json(self):
        """A JSON-able dict (biases rounded to 4 decimals)."""
        return {"config": self.config, "labels": self.labels, "rows": self.rows,
                "biases": {"|".join(map(str, k)): np.round(v, 4).tolist() for k, v in self.biases.items()}}

    @classmethod
    def from_json(cls, data):
        """The Results that `to_json` wrote."""
        if not isinstance(data, dict) or not {"config", "labels", "rows", "biases"} <= set(data):
            raise ArgumentError("data must be a dict with config, labels, rows and biases, as written by to_json")
        biases = {}
        for key, value in data["biases"].items():
            scheme, task, seed = key.split("|")
            biases[(scheme, task, int(seed))] = np.asarray(value)
        return cls([dict(r) for r in data["rows"]], biases, dict(data["labels"]), dict(data["config"]))


def refill(model, scheme):
    """A copy of a trained per-offset `model` that fills the offsets beyond its table by `scheme`'s rule.

    "per-offset-A" (reuse the last trained parameter) and "per-offset-0" (keep the start value 0)
    train identically: inside the training length both have one parameter per offset. They differ
    only at offsets never seen in training, so one trained table serves both.
    """
    if not isinstance(model, TinyAttentionModel):
        raise ArgumentError(f"model must be a TinyAttentionModel (from train), got {type(model).__name__}")
    scheme, trained = get_scheme(scheme), model.position.scheme
    if scheme.kind != "per-offset" or trained.kind != "per-offset" \
            or scheme.last_own_offset(model.position.train_len) != model.position.last_own:
        raise ArgumentError(f"refill needs two per-offset schemes with the same table; got {trained.name!r} "
                            f"trained and {scheme.name!r} asked")
    twin = copy.deepcopy(model)
    twin.position.scheme = scheme
    return twin


def record(results, scheme, task, model, config=Config(), bias_offsets=None):
    """Evaluate a trained `model` at config.eval_lens and add its rows and learned curves to `results`
    under the name of `scheme`; returns `results`."""
    if not isinstance(results, Results):
        raise ArgumentError(f"results must be a lengthgen Results, got {type(results).__name__}")
    scheme, task, config = get_scheme(scheme), get_task(task).name, check_config(config)
    n_offsets = check_int("bias_offsets", bias_offsets if bias_offsets is not None else max(config.eval_lens),
                          minimum=1)
    scores = evaluate(model, task, config.eval_lens, config.eval_batch)
    curves = model.position.curve(n_offsets)
    results.labels[scheme.name] = scheme.label
    results.config = results.config or asdict(config)
    for m, seed in enumerate(model.seeds):
        for length, (accuracy, on_key) in zip(config.eval_lens, scores[seed], strict=True):
            results.rows.append(dict(scheme=scheme.name, task=task, length=length, seed=seed,
                                     accuracy=round(accuracy, 6), weight_on_key=round(on_key, 6)))
        results.biases[(scheme.name, task, seed)] = curves[m]
    return results


def run_experiment(schemes, tasks, seeds, config=Config(), bias_offsets=None):
    """Train and evaluate every (scheme, task) for all seeds; return Results.

    bias_offsets: how many offsets of each learned bias to keep (default: the longest eval length).
    """
    schemes = [get_scheme(s) for s in schemes]
    tasks = [get_task(t).name for t in tasks]
    config = check_config(config)
    if not schemes or not tasks:
        raise ArgumentError("schemes and tasks must each list at least one entry")
    seeds = _check_seeds(seeds)
    if bias_offsets is not None:
        check_int("bias_offsets", bias_offsets, minimum=1)
    results = Results(labels={s.name: s.label for s in schemes}, config=asdict(config))
    runs = len(tasks) * len(schemes)
    bar = Progress(runs * config.steps, f"training {runs} x {len(seeds)} models, {config.steps} steps each")
    for task in tasks:
        for scheme in schemes:
            record(results, scheme, task, train(scheme, task, seeds, config, on_step=bar.update), config, bias_offsets)
    bar.close()
    return results
