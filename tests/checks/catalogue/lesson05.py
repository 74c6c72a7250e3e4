"""Lesson 5's your-turn cells (pairs_behind, training_step) and exercise 5's code question (q5).

pairs_behind: slips in the count (sharing, the -1 entries, which distances train). training_step:
slips in the loss and the four calls of a step; a loss multiplied by a constant is right (AdamW
takes the same steps, see t5lesson/lengthgen/step_check.py). q5: slips in the clipped bias matrix.
"""
from __future__ import annotations

import numpy as np
import torch
from harness import QuestionCheck, TurnCheck, solution_answer, your_turn_answer
from torch.nn import functional as F

from t5lesson._validate import ArgumentError
from t5lesson.exercises.ex05_length_generalisation import reference_clipped_bias
from t5lesson.lengthgen import IGNORE, SCHEMES, Config
from t5lesson.lengthgen import training_step as course_training_step
from t5lesson.lengthgen.counts import pairs_behind as course_pairs_behind
from t5lesson.lengthgen.step_check import _first_difference, _trace

STEM = "05_length_generalisation"

# --- pairs_behind ------------------------------------------------------------------------------


def _random_parameter(rng, n, train_len):
    """One parameter table of n entries: a lesson scheme, random shared ids with -1, or -1 only."""
    kind = rng.integers(4)
    if kind == 0:
        name = str(rng.choice(sorted(SCHEMES)))
        try:
            return SCHEMES[name].parameter_of_offset(n, train_len).astype(np.intp)
        except ArgumentError:  # a scheme that needs a longer training length (clipped at 32)
            kind = 1
    if kind == 1:
        return np.full(n, -1, dtype=np.intp)
    ids = rng.integers(-1, int(rng.integers(1, n + 2)), size=n)
    if kind == 2:  # sorted: buckets that widen with distance, -1 only at the far end
        ids = np.sort(np.abs(ids))
        ids[n - int(rng.integers(0, max(n - train_len, 0) + 1)):] = -1
    return ids.astype(np.intp)


def differs_pairs_behind(function, seed):
    """Many tables: every scheme at odd and even lengths, n from train_len up, shared ids, -1s."""
    rng = np.random.default_rng(seed)
    for _ in range(300):
        train_len = int(rng.integers(2, 70))
        n = train_len + int(rng.choice([0, 1, int(rng.integers(0, 3 * train_len))]))
        parameter = _random_parameter(rng, n, train_len)
        got = np.asarray(function(parameter.copy(), train_len))
        want = course_pairs_behind(parameter, train_len)
        if got.shape != want.shape or not np.array_equal(got, want):
            return (f"pairs_behind({parameter.tolist()[:12]}..., {train_len}) = {got.tolist()[:12]}, "
                    f"expected {want.tolist()[:12]}")
    return None


def behind(pairs: str, seen: str, totals: str, result: str) -> str:
    """A pairs_behind whose four lines are these (indented four spaces)."""
    return f"def pairs_behind(parameter, train_len):\n{pairs}\n{seen}\n{totals}\n{result}\n"


PAIRS = "    pairs = train_len - np.arange(train_len)"
SEEN = "    seen = parameter[:train_len]"
TOTALS = ("    totals = np.zeros(parameter.max() + 1 if parameter.max() >= 0 else 1, dtype=int)\n"
          "    np.add.at(totals, seen[seen >= 0], pairs[seen >= 0])")
RESULT = "    return np.where(parameter >= 0, totals[np.maximum(parameter, 0)], 0)"

WRONG_PAIRS = {
    "each distance's own count, no sharing (the newcomer's first attempt)": behind(
        "    pairs = np.maximum(train_len - np.arange(len(parameter)), 0)", "", "",
        "    return np.where(parameter >= 0, pairs, 0)"),
    "-1 wraps round to the last parameter (the newcomer's second attempt)": behind(
        PAIRS, SEEN, TOTALS, "    return np.where(parameter >= -1, totals[parameter], 0)"),
    "the old hint 2 followed: minlength parameter.max() + 1, empty for a table of -1": behind(
        PAIRS, SEEN,
        "    keep = seen >= 0\n"
        "    totals = np.bincount(seen[keep], weights=pairs[keep], minlength=parameter.max() + 1)",
        "    return np.where(parameter >= 0, totals[np.maximum(parameter, 0)], 0).astype(int)"),
    "n - d pairs: the table's length taken for the training length": behind(
        "    pairs = len(parameter) - np.arange(train_len)", SEEN, TOTALS, RESULT),
    "one pair too few at every distance": behind(
        "    pairs = train_len - 1 - np.arange(train_len)", SEEN, TOTALS, RESULT),
    "every distance counted, past training too": behind(
        "    pairs = np.maximum(train_len - np.arange(len(parameter)), 1)", "    seen = parameter",
        "    totals = np.zeros(max(parameter.max() + 1, 1), dtype=int)\n"
        "    np.add.at(totals, seen[seen >= 0], pairs[seen >= 0])", RESULT),
    "-1 distances given parameter 0's total": behind(
        PAIRS, SEEN, TOTALS, "    return totals[np.maximum(parameter, 0)]"),
    "totals sized by the training distances' parameters only": behind(
        PAIRS, SEEN,
        "    totals = np.zeros(max(seen.max() + 1, 1), dtype=int)\n"
        "    np.add.at(totals, seen[seen >= 0], pairs[seen >= 0])", RESULT),
    "the totals per parameter, not per distance": behind(PAIRS, SEEN, TOTALS, "    return totals"),
    "the -1 entries overwritten in place with 0, then looked up": behind(
        PAIRS, "    parameter[parameter < 0] = 0\n" + SEEN, TOTALS, "    return totals[parameter]"),
}

RIGHT_PAIRS = {
    "pair by pair, as section 2 counts them": '''
def pairs_behind(parameter, train_len):
    tally = {}
    for query in range(train_len):
        for key in range(query + 1):
            p = int(parameter[query - key])
            if p >= 0:
                tally[p] = tally.get(p, 0) + 1
    return np.array([tally.get(int(p), 0) if p >= 0 else 0 for p in parameter])
''',
    "Mesh TF's way: a one-hot of the parameter ids, contracted with an einsum": '''
def pairs_behind(parameter, train_len):
    ids = np.arange(max(parameter.max() + 1, 1))
    one_hot = (parameter[:, None] == ids[None, :]).astype(int)  # [n, parameters]; -1 matches none
    pairs = np.zeros(len(parameter), dtype=int)
    pairs[:train_len] = train_len - np.arange(train_len)
    totals = np.einsum("d,dp->p", pairs, one_hot)
    return np.einsum("dp,p->d", one_hot, totals)
''',
    "the lesson's hint 3, followed literally": '''
def pairs_behind(parameter, train_len):
    pairs = train_len - np.arange(train_len)
    seen = parameter[:train_len]
    keep = seen >= 0
    totals = np.bincount(seen[keep], weights=pairs[keep], minlength=max(parameter.max() + 1, 1)).astype(int)
    return np.where(parameter >= 0, totals[np.maximum(parameter, 0)], 0)
''',
}

# --- training_step ---------------------------------------------------------------------------


def differs_training_step(function, seed):
    """Random settings: scheme, 1 to 3 models, odd and even lengths, both tasks' kind of targets
    (a fixed or a varying number of real targets), fresh models or ones the course trained first."""
    rng = np.random.default_rng(seed)
    for _ in range(2):
        config = Config(train_len=int(rng.integers(8, 41)), batch=int(rng.integers(1, 5)), steps=8,
                        warmup=int(rng.integers(0, 3)), lr=float(rng.choice([1e-2, 3e-2])))
        seeds = tuple(int(s) for s in rng.choice(50, size=int(rng.integers(1, 4)), replace=False))
        scheme = str(rng.choice(["t5", "per-offset-A", "per-offset-32", "t5-far"]))
        warm = int(rng.integers(0, 3))  # updates by the course's step first: norm gains no longer 1
        setting = ("a random setting", scheme, seeds, config, bool(rng.integers(2)), warm)
        problem = _first_difference(_trace(function, setting, 3), _trace(course_training_step, setting, 3))
        if problem:
            return f"{scheme}, models {seeds}, {config.train_len} tokens, {warm} course updates first: {problem}"
    return None


STEP_HEAD = '''
def per_position_loss(logits, targets):
    return F.cross_entropy(logits.flatten(0, 2), targets.flatten(), ignore_index=IGNORE,
                           reduction="none").view(targets.shape)


def training_step(model, optimizer, schedule, tokens, targets):
    logits, _ = model(tokens)
    per_position = per_position_loss(logits, targets)
'''
REAL = "    real_targets = (targets != IGNORE).flatten(1).sum(1)\n"
PER_MODEL = "    per_model = per_position.flatten(1).sum(1) / real_targets\n"
CALLS = "    optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()\n    schedule.step()\n    return loss\n"


def step(loss_lines: str, calls: str = CALLS) -> str:
    return STEP_HEAD + loss_lines + calls


WRONG_STEP = {
    "a plain mean over every position, IGNORE included (the newcomer's first attempt)": step(
        "    loss = per_position.mean()\n"),
    "no schedule step (the newcomer's second attempt)": step(
        REAL + PER_MODEL + "    loss = per_model.sum()\n",
        "    optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()\n    return loss\n"),
    "one mean over all the models' real targets at once": step(
        "    loss = per_position.sum() / (targets != IGNORE).sum()\n"),
    "each model's mean over all its positions, IGNORE included": step(
        "    loss = per_position.mean((1, 2)).sum()\n"),
    "the sum of the losses, not divided at all": step("    loss = per_position.sum()\n"),
    "gradients left to pile up: no zero_grad": step(
        REAL + PER_MODEL + "    loss = per_model.sum()\n",
        "    loss.backward()\n    optimizer.step()\n    schedule.step()\n    return loss\n"),
    "the gradients cleared after backward, before the step": step(
        REAL + PER_MODEL + "    loss = per_model.sum()\n",
        "    loss.backward()\n    optimizer.zero_grad()\n    optimizer.step()\n    schedule.step()\n    return loss\n"),
    "the schedule stepped before the optimiser": step(
        REAL + PER_MODEL + "    loss = per_model.sum()\n",
        "    optimizer.zero_grad()\n    loss.backward()\n    schedule.step()\n    optimizer.step()\n    return loss\n"),
    "the lesson's two models written in": step(
        "    per_model = per_position.view(2, -1).sum(1) / (targets != IGNORE).view(2, -1).sum(1)\n"
        "    loss = per_model.sum()\n"),
    "the loss not returned": step(
        REAL + PER_MODEL + "    loss = per_model.sum()\n",
        "    optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()\n    schedule.step()\n"),
}

RIGHT_STEP = {
    "the mean over the models, not the sum (the issue: a constant factor, the same AdamW steps)": step(
        REAL + PER_MODEL + "    loss = per_model.mean()\n"),
    "transformers' Trainer order: one mean cross-entropy per model, step, schedule, then zero_grad": '''
def per_position_loss(logits, targets):
    return F.cross_entropy(logits.flatten(0, 2), targets.flatten(), ignore_index=IGNORE,
                           reduction="none").view(targets.shape)


def training_step(model, optimizer, schedule, tokens, targets):
    logits, _ = model(tokens)
    loss = sum(F.cross_entropy(logits[m].flatten(0, 1), targets[m].flatten(), ignore_index=IGNORE)
               for m in range(len(targets)))
    loss.backward()
    optimizer.step()
    schedule.step()
    model.zero_grad(set_to_none=True)
    return loss.item()
''',
    "the per-position losses masked by hand, summed over the models": step(
        "    mask = (targets != IGNORE).float()\n"
        "    loss = ((per_position * mask).sum((1, 2)) / mask.sum((1, 2))).sum()\n"),
}

# --- exercise 5, q5 ---------------------------------------------------------------------------


_solution_source = solution_answer


def differs_q5(function, seed):
    """Random tables, lengths from 1 up, clip anywhere from 0 to the last entry, signs mixed."""
    rng = np.random.default_rng(seed)
    for _ in range(300):
        size = int(rng.integers(1, 20))
        table = [float(v) for v in np.round(rng.standard_normal(size), 3)]
        length, clip = int(rng.integers(1, 30)), int(rng.integers(0, size))
        got = np.asarray(function(list(table), length, clip), dtype=float)
        want = reference_clipped_bias(table, length, clip)
        if got.shape != want.shape or not np.allclose(got, want, rtol=0, atol=1e-9):
            return f"clipped_bias_matrix({table}, {length}, {clip}) differs from the reference"
    return None


def matrix(body: str) -> str:
    return f"def clipped_bias_matrix(table, length, clip):\n    table = np.asarray(table, dtype=float)\n{body}"


D = "    d = np.arange(length)[:, None] - np.arange(length)[None, :]\n"

WRONG_Q5 = {
    "the sign flipped: j - i (the newcomer's first answer)": matrix(
        "    d = np.arange(length)[None, :] - np.arange(length)[:, None]\n"
        "    return np.where(d >= 0, table[np.clip(d, 0, clip)], 0.0)\n"),
    "clipped at the last entry, whatever clip says (the newcomer's second answer)": matrix(
        D + "    return np.where(d >= 0, table[np.clip(d, 0, len(table) - 1)], 0.0)\n"),
    "clip one too early": matrix(D + "    return np.where(d >= 0, table[np.clip(d, 0, max(clip - 1, 0))], 0.0)\n"),
    "future keys given the bias of their distance too": matrix(D + "    return table[np.minimum(np.abs(d), clip)]\n"),
    "the diagonal (d = 0) left out": matrix(D + "    return np.where(d > 0, table[np.clip(d, 0, clip)], 0.0)\n"),
    "future keys masked with -1e9 instead of 0.0": matrix(
        D + "    return np.where(d >= 0, table[np.clip(d, 0, clip)], -1e9)\n"),
    "the matrix transposed: rows are keys": matrix(
        D + "    return np.where(d >= 0, table[np.clip(d, 0, clip)], 0.0).T\n"),
    "no clipping: the table read at every distance": matrix(
        D + "    return np.where(d >= 0, table[np.maximum(d, 0)], 0.0)\n"),
}

RIGHT_Q5 = {
    "two loops and nested lists": '''
def clipped_bias_matrix(table, length, clip):
    rows = []
    for i in range(length):
        rows.append([float(table[min(i - j, clip)]) if j <= i else 0.0 for j in range(length)])
    return rows
''',
    "the transformers way: memory minus context positions, the offset negated, then a clamp": '''
def clipped_bias_matrix(table, length, clip):
    context_position = np.arange(length)[:, None]
    memory_position = np.arange(length)[None, :]
    relative_position = memory_position - context_position  # j - i, as transformers computes it
    n = np.minimum(np.maximum(-relative_position, 0), clip)
    values = np.asarray(table, dtype=float)[n]
    return np.tril(values)
''',
}

CHECKS = [
    TurnCheck(id="your turn pairs_behind", answer=your_turn_answer(STEM, "pairs_behind"), wrong=WRONG_PAIRS,
              right=RIGHT_PAIRS, differs=differs_pairs_behind, namespace=lambda: {"np": np},
              entry="pairs_behind", max_mutants=30),
    TurnCheck(id="your turn training_step", answer=your_turn_answer(STEM, "training_step"), wrong=WRONG_STEP,
              right=RIGHT_STEP, differs=differs_training_step,
              namespace=lambda: {"np": np, "torch": torch, "F": F, "IGNORE": IGNORE},
              entry="training_step", mutate=("training_step",), max_mutants=12),
    QuestionCheck(id="exercise 05 q5", answer=_solution_source(STEM, "clipped_bias_matrix"), wrong=WRONG_Q5,
                  right=RIGHT_Q5, differs=differs_q5, namespace=lambda: {"np": np}, entry="clipped_bias_matrix",
                  max_mutants=25, exercise=STEM, question="q5"),
]
