"""Lessons 0 to 2 and exercise 1: the your-turn cells weight_of_b, row_jacobians, train_step, and q7, q9."""
from __future__ import annotations

import json
import math

import numpy as np
import torch
from harness import ROOT, QuestionCheck, TurnCheck, your_turn_answer

import t5lesson as t5
from t5lesson.exercises.ex01_unscaled_scores import reference_entropy, reference_scores
from t5lesson.lessons import folding
from t5lesson.lessons.start_here import weight_of_b as course_weight_of_b
from t5lesson.saturation import row_jacobians as course_row_jacobians


def solution_answer(stem: str, name: str) -> str:
    """The course's answer to an exercise code question: its answer cell in solutions/, markers dropped."""
    cells = json.loads((ROOT / "solutions" / f"{stem}.ipynb").read_text())["cells"]
    for cell in cells:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and text.startswith(f"def {name}("):
            return "\n".join(line for line in text.splitlines() if "### " not in line) + "\n"
    raise KeyError(f"no answer cell defining {name} in solutions/{stem}.ipynb")


# --- lesson 0: weight_of_b ------------------------------------------------------------------------

def differs_weight_of_b(function, seed):
    """Gaps over both signs, whole and fractional, up to where key B takes all but 1e-13 of the weight."""
    rng = np.random.default_rng(seed)
    gaps = np.concatenate([rng.uniform(-30, 30, 300), rng.integers(-12, 13, 25), [0.0]])
    for gap in gaps:
        got, want = function(float(gap)), course_weight_of_b(float(gap))
        if np.shape(got) != () or not abs(float(got) - want) <= 1e-7:
            return f"weight_of_b({gap:g}) = {got!r}, expected {want:.9g}"
    return None


def body(code: str) -> str:
    return "def weight_of_b(gap):\n" + "".join(f"    {line}\n" for line in code.splitlines())


WRONG_WEIGHT = {
    "key A's weight (the sign flip the newcomer tried)": body("return 1 / (1 + np.exp(gap))"),
    "the unnormalised e^gap": body("return np.exp(gap)"),
    "no exponential: gap / (1 + gap)": body("return gap / (1 + gap)"),
    "rounded to three decimals, as the readout prints it": body(
        "return round(float(np.exp(gap) / (1 + np.exp(gap))), 3)"),
    "as a percent": body("return 100 * np.exp(gap) / (1 + np.exp(gap))"),
    "the whole softmax row instead of key B's entry": body("e = np.exp(np.array([0.0, gap]))\nreturn e / e.sum()"),
    "1 - e^-gap, right only far out": body("return 1 - np.exp(-gap)"),
    "key A's score taken as 1, not 0": body("return np.exp(gap) / (np.e + np.exp(gap))"),
}

RIGHT_WEIGHT = {
    "the logistic sigmoid": body("return 1 / (1 + np.exp(-gap))"),
    "math.exp with the larger score subtracted first": "import math\n\n\n" + body(
        "top = max(0.0, gap)\na, b = math.exp(-top), math.exp(gap - top)\nreturn b / (a + b)"),
    "the transformers way: torch.softmax over the two scores, in float64": "import torch\n\n\n" + body(
        "scores = torch.tensor([0.0, gap], dtype=torch.float64)\nreturn torch.softmax(scores, dim=-1)[1].item()"),
}


# --- lesson 1: row_jacobians ----------------------------------------------------------------------

def differs_row_jacobians(function, seed):
    """Rows of every size from 1 to 20 keys and d, multipliers 1, 1/sqrt(d) and anything else (negative
    too), and queries long enough to saturate the row, logits up to about 1500."""
    rng = np.random.default_rng(seed)
    for _ in range(150):
        d, n_keys = int(rng.integers(1, 21)), int(rng.integers(1, 21))
        multiplier = float(rng.choice([1.0, 1 / math.sqrt(d), rng.uniform(-3, 3)]))
        q = rng.standard_normal(d) * float(rng.choice([1.0, 4.0, 20.0, 80.0]))
        keys = rng.standard_normal((n_keys, d))
        got, want = function(q, keys, multiplier), course_row_jacobians(q, keys, multiplier)
        for name, a, b in zip(("dp/ds", "dp/dq"), got, want, strict=True):
            a = np.asarray(a)
            if a.shape != b.shape or not np.all(np.abs(a - b) <= 1e-7):
                return f"{name} differs on d = {d}, {n_keys} keys, multiplier {multiplier:.3g}"
    return None


ROW_ANSWER = your_turn_answer("01_unscaled_scores", "row_jacobians")
SIGNATURE = "def row_jacobians(q, keys, multiplier=1.0):\n"


def rows(code: str) -> str:
    return SIGNATURE + "".join(f"    {line}\n" for line in code.splitlines())


WRONG_ROWS = {
    "the multiplier missing from ds/dq (the newcomer's slip)": rows(
        "p = t5.softmax(multiplier * keys @ q)\nJ = np.diag(p) - np.outer(p, p)\nreturn J, J @ keys"),
    "J from the unscaled logits": rows(
        "p = t5.softmax(keys @ q)\nJ = np.diag(p) - np.outer(p, p)\nreturn J, J @ (multiplier * keys)"),
    "dp/dq transposed": rows(
        "p = t5.softmax(multiplier * keys @ q)\nJ = np.diag(p) - np.outer(p, p)\nreturn J, (multiplier * keys).T @ J"),
    "the diagonal p(1 - p) only": rows(
        "p = t5.softmax(multiplier * keys @ q)\nJ = np.diag(p * (1 - p))\nreturn J, J @ (multiplier * keys)"),
    "the multiplier read as a flag: 1/sqrt(d) whenever it is not 1": rows(
        "c = 1 / np.sqrt(q.shape[0]) if multiplier != 1 else 1.0\np = t5.softmax(c * keys @ q)\n"
        "J = np.diag(p) - np.outer(p, p)\nreturn J, J @ (c * keys)"),
    "a softmax that does not subtract the largest logit (overflows near 1000)": rows(
        "e = np.exp(multiplier * keys @ q)\np = e / e.sum()\nJ = np.diag(p) - np.outer(p, p)\n"
        "return J, J @ (multiplier * keys)"),
    "the multiplier applied twice in dp/dq": rows(
        "p = t5.softmax(multiplier * keys @ q)\nJ = np.diag(p) - np.outer(p, p)\n"
        "return J, multiplier * J @ (multiplier * keys)"),
    "diag(p) + p p^T: the sign of the outer product": rows(
        "p = t5.softmax(multiplier * keys @ q)\nJ = np.diag(p) + np.outer(p, p)\nreturn J, J @ (multiplier * keys)"),
    "the size of the multiplier only (abs)": rows(
        "p = t5.softmax(abs(multiplier) * keys @ q)\nJ = np.diag(p) - np.outer(p, p)\n"
        "return J, J @ (abs(multiplier) * keys)"),
}

RIGHT_ROWS = {
    "einsum, with the quotient rule written entry by entry": rows(
        "s = multiplier * np.einsum('kd,d->k', keys, q)\np = np.exp(s - s.max())\np /= p.sum()\n"
        "J = np.einsum('a,ab->ab', p, np.eye(len(p))) - np.einsum('a,b->ab', p, p)\n"
        "return J, np.einsum('ab,bd->ad', J, keys) * multiplier"),
    "torch autograd, as a transformers user would check it": "import torch\n\n\n" + rows(
        "qt = torch.tensor(q, dtype=torch.float64)\nkt = torch.tensor(keys, dtype=torch.float64)\n"
        "s = multiplier * kt @ qt\n"
        "dp_ds = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), s)\n"
        "dp_dq = torch.autograd.functional.jacobian(lambda x: torch.softmax(multiplier * kt @ x, -1), qt)\n"
        "return dp_ds.numpy(), dp_dq.numpy()"),
    "loops over the entries": rows(
        "s = [multiplier * float(np.dot(k, q)) for k in keys]\ntop = max(s)\n"
        "e = [math.exp(x - top) for x in s]\np = [x / sum(e) for x in e]\nn = len(p)\n"
        "J = np.array([[p[a] * ((a == b) - p[b]) for b in range(n)] for a in range(n)])\n"
        "return J, J @ keys * multiplier"),
}


# --- lesson 2: train_step -------------------------------------------------------------------------

def differs_train_step(function, seed):
    """Random heads: every variant, both optimizers, head sizes, slots, symbols, batches, learning rates,
    fresh and moved weights, three updates each; the losses and every weight compared."""
    rng = np.random.default_rng(seed)
    for _ in range(8):
        n_symbols = int(rng.integers(2, 21))
        setting = folding.StepSetting(
            str(rng.choice(folding.OPTIMIZERS)), str(rng.choice(folding.VARIANTS)), d_kv=int(rng.integers(2, 70)),
            n_memory=int(rng.integers(2, n_symbols + 1)), n_symbols=n_symbols, d_model=int(rng.integers(2, 70)),
            batch=int(rng.integers(1, 13)), moved=bool(rng.integers(2)), lr=float(rng.choice([1e-3, 3e-3, 1e-2])))
        problem = folding._first_gap(setting.label(), folding._run_steps(function, setting, 3),
                                     folding._run_steps(folding.train_step, setting, 3), 1e-5)
        if problem:
            return problem
    return None


STEP_ANSWER = your_turn_answer("02_where_sqrt_d_went", "train_step")
STEP_SIGNATURE = "def train_step(model, opt, query, memory, answer):\n"
FORWARD = ("q, k, v = model.q(query), model.k(memory), model.v(memory)\n"
           "logits = torch.einsum('bd,bmd->bm', q, k) * model.multiplier\n")
READ = ("weights = logits.softmax(-1)\n"
        "answer_logits = model.readout(torch.einsum('bm,bmd->bd', weights, v))\n"
        "loss = F.cross_entropy(answer_logits, answer)\n")
UPDATE = "opt.zero_grad()\nloss.backward()\nopt.step()\nreturn loss.item()"


def step(code: str) -> str:
    return STEP_SIGNATURE + "".join(f"    {line}\n" for line in code.splitlines())


WRONG_STEP = {
    "no zero_grad (gradients pile up)": step(FORWARD + READ + "loss.backward()\nopt.step()\nreturn loss.item()"),
    "no multiplier (the scaled head unscaled)": step(FORWARD.replace(" * model.multiplier", "") + READ + UPDATE),
    "always / sqrt(d_kv)": step(FORWARD.replace(" * model.multiplier", " / math.sqrt(q.shape[-1])") + READ + UPDATE),
    "softmax over the batch (dim 0)": step(FORWARD + READ.replace("softmax(-1)", "softmax(0)") + UPDATE),
    "1/8 written in for the scaled head (d_kv = 64 assumed)": step(
        FORWARD.replace(" * model.multiplier", "\nif model.multiplier != 1:\n    logits = logits / 8") + READ + UPDATE),
    "the loss returned after the step, recomputed": step(
        FORWARD + READ + "opt.zero_grad()\nloss.backward()\nopt.step()\n"
        "return F.cross_entropy(model(query, memory)[0], answer).item()"),
    "a softmax before the cross-entropy (which has its own)": step(
        FORWARD + READ.replace("F.cross_entropy(answer_logits,", "F.cross_entropy(answer_logits.softmax(-1),")
        + UPDATE),
    "divided by the multiplier": step(FORWARD.replace(" * model.multiplier", " / model.multiplier") + READ + UPDATE),
    "step before backward": step(FORWARD + READ + "opt.zero_grad()\nopt.step()\nloss.backward()\nreturn loss.item()"),
}

RIGHT_STEP = {
    "the transformers way: matmul with the keys transposed, softmax in float32 cast back": step(
        "q = model.q(query).unsqueeze(1)\nk, v = model.k(memory), model.v(memory)\n"
        "scores = torch.matmul(q, k.transpose(-1, -2)).squeeze(1) * model.multiplier\n"
        "weights = F.softmax(scores.float(), dim=-1).type_as(scores)\n"
        "read = torch.matmul(weights.unsqueeze(1), v).squeeze(1)\n"
        "loss = F.cross_entropy(model.readout(read), answer)\n"
        "opt.zero_grad(set_to_none=True)\nloss.backward()\nopt.step()\nreturn loss.detach().item()"),
    "bmm, log_softmax and nll_loss, returning the tensor": step(
        "q, k, v = model.q(query), model.k(memory), model.v(memory)\n"
        "logits = torch.bmm(k, q.unsqueeze(-1)).squeeze(-1) * model.multiplier\n"
        "read = torch.bmm(torch.softmax(logits, dim=1).unsqueeze(1), v).squeeze(1)\n"
        "loss = F.nll_loss(F.log_softmax(model.readout(read), dim=-1), answer)\n"
        "for p in model.parameters():\n    p.grad = None\nloss.backward()\nopt.step()\nreturn loss.detach()"),
}


# --- exercise 1: q7 (my_entropy) and q9 (my_scores) -----------------------------------------------

def differs_entropy(function, seed):
    """Rows of 1 to 40 keys, some entries 0 (masked keys), some nearly one-hot, on a fine grid and not."""
    rng = np.random.default_rng(seed)
    for _ in range(300):
        n = int(rng.integers(1, 41))
        row = rng.dirichlet(np.full(n, float(rng.choice([0.1, 1.0, 10.0]))))
        row[rng.random(n) < float(rng.choice([0.0, 0.3]))] = 0.0
        if row.sum() == 0:
            row[0] = 1.0
        row = (row / row.sum()).tolist()
        got, want = function(row), reference_entropy(row)
        if not abs(float(got) - want) <= 1e-6 + 1e-6 * abs(want):
            return f"my_entropy of a row of {n} = {got!r}, expected {want:.9g}"
    return None


ENTROPY_ANSWER = solution_answer("01_unscaled_scores", "my_entropy")


def entropy(code: str) -> str:
    return "def my_entropy(weights):\n" + "".join(f"    {line}\n" for line in code.splitlines())


WRONG_ENTROPY = {
    "log2 instead of the natural logarithm (the newcomer's slip)": entropy(
        "p = np.asarray(weights, dtype=float)\np = p[p > 0]\nreturn float(-(p * np.log2(p)).sum())"),
    "0 log 0 computed (nan on masked keys)": entropy(
        "p = np.asarray(weights, dtype=float)\nreturn float(-(p * np.log(p)).sum())"),
    "the minus sign dropped": entropy(
        "p = np.asarray(weights, dtype=float)\np = p[p > 0]\nreturn float((p * np.log(p)).sum())"),
    "log10": entropy("p = np.asarray(weights, dtype=float)\np = p[p > 0]\nreturn float(-(p * np.log10(p)).sum())"),
    "mean over the keys instead of the sum": entropy(
        "p = np.asarray(weights, dtype=float)\nterms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1)), 0)\n"
        "return float(terms.mean())"),
    "divided by log n (normalised entropy)": entropy(
        "p = np.asarray(weights, dtype=float)\nn = len(p)\np = p[p > 0]\n"
        "return float(-(p * np.log(p)).sum() / np.log(n))"),
    "the top key's term only": entropy("p = max(weights)\nreturn float(-p * np.log(p))"),
    "perplexity e^H instead of H": entropy(
        "p = np.asarray(weights, dtype=float)\np = p[p > 0]\nreturn float(np.exp(-(p * np.log(p)).sum()))"),
}

RIGHT_ENTROPY = {
    "nansum of p log p (0 log 0 is nan, and left out)": entropy(
        "p = np.asarray(weights, dtype=float)\nwith np.errstate(divide='ignore', invalid='ignore'):\n"
        "    return float(-np.nansum(p * np.log(p)))"),
    "plain Python with math.log": "import math\n\n\n" + entropy(
        "return -sum(w * math.log(w) for w in weights if w > 0)"),
    "torch.special.entr, as a torch user writes it": "import torch\n\n\n" + entropy(
        "return float(torch.special.entr(torch.tensor(weights, dtype=torch.float64)).sum())"),
}


def differs_scores(function, seed):
    """Random sizes (1 to 9 queries and keys, d from 1 to 17) and masks (full, causal, padded, random)."""
    rng = np.random.default_rng(seed)
    for _ in range(200):
        n_q, n_k, d = int(rng.integers(1, 10)), int(rng.integers(1, 10)), int(rng.integers(1, 18))
        q, k, bias = (np.round(rng.standard_normal(s) * 2, 3) for s in ((n_q, d), (n_k, d), (n_q, n_k)))
        mask = (rng.random((n_q, n_k)) < float(rng.choice([1.0, 0.7, 0.4]))).astype(int)
        args = [a.tolist() for a in (q, k, bias, mask)]
        got, want = np.asarray(function(*args), dtype=float), reference_scores(*args)
        live = mask == 1
        if got.shape != want.shape or not np.all(np.abs(got[live] - want[live]) <= 1e-6 + 1e-6 * np.abs(want[live])) \
                or not np.all(got[~live] <= -1e8):
            return f"my_scores differs on {n_q} queries, {n_k} keys, d = {d}"
    return None


SCORES_ANSWER = solution_answer("01_unscaled_scores", "my_scores")


def scores(code: str) -> str:
    return ("def my_scores(q, k, bias, mask):\n    q, k, bias, mask = (np.asarray(a, dtype=float) for a in "
            "(q, k, bias, mask))\n" + "".join(f"    {line}\n" for line in code.splitlines()))


WRONG_SCORES = {
    "q.k divided by sqrt(d) (the newcomer's slip)": scores(
        "return np.where(mask == 1, q @ k.T / np.sqrt(q.shape[1]) + bias, -1e9)"),
    "the mask multiplied in (the newcomer's slip)": scores("return (q @ k.T + bias) * mask"),
    "the bias left out": scores("return np.where(mask == 1, q @ k.T, -1e9)"),
    "the mask inverted": scores("return np.where(mask == 0, q @ k.T + bias, -1e9)"),
    "masked entries set to 0": scores("return np.where(mask == 1, q @ k.T + bias, 0.0)"),
    "masked entries at -100, not far enough down": scores("return np.where(mask == 1, q @ k.T + bias, -100.0)"),
    "the whole score divided by sqrt(d)": scores(
        "return np.where(mask == 1, (q @ k.T + bias) / np.sqrt(q.shape[1]), -1e9)"),
    "keys against queries (k q^T, transposed)": scores("return np.where(mask.T == 1, k @ q.T + bias.T, -1e9).T.T"),
    "the bias subtracted": scores("return np.where(mask == 1, q @ k.T - bias, -1e9)"),
}

RIGHT_SCORES = {
    "the transformers way: masked_fill with the dtype's most negative value": "import torch\n\n\n" + scores(
        "s = torch.matmul(torch.tensor(q), torch.tensor(k).transpose(-1, -2)) + torch.tensor(bias)\n"
        "s = s.masked_fill(torch.tensor(mask) == 0, torch.finfo(s.dtype).min)\nreturn s.numpy()"),
    "the Mesh TensorFlow way: -1e9 added where the mask is 0": scores("return q @ k.T + bias + (1.0 - mask) * -1e9"),
    "einsum and -inf, as nested lists": scores(
        "s = np.einsum('id,jd->ij', q, k) + bias\ns[mask == 0] = -np.inf\nreturn s.tolist()"),
}

CHECKS = [
    TurnCheck(id="your turn weight_of_b", answer=your_turn_answer("00_start_here", "weight_of_b"), wrong=WRONG_WEIGHT,
              right=RIGHT_WEIGHT, differs=differs_weight_of_b, namespace=lambda: {"np": np}, entry="weight_of_b"),
    TurnCheck(id="your turn row_jacobians", answer=ROW_ANSWER, wrong=WRONG_ROWS, right=RIGHT_ROWS,
              differs=differs_row_jacobians, namespace=lambda: {"np": np, "t5": t5, "math": math},
              entry="row_jacobians"),
    TurnCheck(id="your turn train_step", answer=STEP_ANSWER, wrong=WRONG_STEP, right=RIGHT_STEP,
              differs=differs_train_step,
              namespace=lambda: {"torch": torch, "F": torch.nn.functional, "math": math}, entry="train_step",
              max_mutants=25),
    QuestionCheck(id="exercise 01 q7", answer=ENTROPY_ANSWER, wrong=WRONG_ENTROPY, right=RIGHT_ENTROPY,
                  differs=differs_entropy, namespace=lambda: {"np": np}, entry="my_entropy",
                  exercise="01_unscaled_scores", question="q7"),
    QuestionCheck(id="exercise 01 q9", answer=SCORES_ANSWER, wrong=WRONG_SCORES, right=RIGHT_SCORES,
                  differs=differs_scores, namespace=lambda: {"np": np}, entry="my_scores",
                  exercise="01_unscaled_scores", question="q9"),
]
