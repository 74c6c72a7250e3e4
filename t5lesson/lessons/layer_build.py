"""Lesson 6 and exercise 6: build T5 self-attention step by step and compare each step with transformers.

    cmp("scores", ours, theirs)        # prints one line: matches, or where it differs
    add_to_class(MyT5Attention)        # a decorator: add the next step's method to a class
    check_steps(MyT5Attention)         # every step of a learner's class against T5Attention

`cmp` is in the spirit of the `cmp()` of Karpathy's nn-zero-to-hero notebooks: one line per
tensor, "matches" or "differs ... at [index]". It prints the tolerance, never the difference
itself, so stored notebook outputs read the same on every machine.

The class a learner builds follows the contract of exercise 6 (see
`t5lesson.exercises.t5_layer_driver`): parameters named q, k, v, o and relative_attention_bias as
in transformers' `T5Attention`, and the step methods split_heads, scores, compute_bias,
allowed, attend, merge_heads, then forward.
"""
from __future__ import annotations

import torch

from ..layer import init_stds
from ..reference import reference_mask, t5_attention

__all__ = ["cmp", "add_to_class", "check_steps", "reference_for", "config_of", "STEP_CONFIG", "save_for_lesson_7",
           "lesson_6_layer", "class_source", "LESSON_7_FILE", "TURNS"]

STEP_CONFIG = {"d_model": 32, "num_heads": 4, "d_kv": 8, "num_buckets": 32, "max_distance": 128}


def cmp(label: str, ours, theirs, tol: float = 1e-5) -> None:
    """Print whether two tensors agree within `tol`, and where they first differ if not (one line)."""
    _compare(label, ours, theirs, tol)


def _compare(label: str, ours, theirs, tol: float = 1e-5) -> bool:
    """`cmp`, returning whether the tensors agree (for `check_steps`)."""
    ours, theirs = torch.as_tensor(ours).detach(), torch.as_tensor(theirs).detach()
    if ours.shape != theirs.shape:
        print(f"{label}: shapes differ, ours {tuple(ours.shape)} vs transformers {tuple(theirs.shape)}")
        return False
    close = (ours.double() - theirs.double()).abs() <= tol
    if bool(close.all()):
        print(f"{label}: {'identical' if tol == 0 else f'matches (max |diff| <= {tol:g})'}")
        return True
    index = [int(i) for i in (~close).nonzero()[0]]
    print(f"{label}: differs by more than {tol:g} at {index}")
    return False


def add_to_class(cls):
    """Decorator: attach the function below to `cls` as a method (so a class can grow cell by cell)."""

    def register(function):
        setattr(cls, function.__name__, function)
        return function

    return register


def config_of(module) -> dict:
    """The configuration a learner's layer was built with, read back from its attributes."""
    names = ("d_model", "num_heads", "d_kv", "causal", "num_buckets", "max_distance")
    config = {name: getattr(module, name) for name in names if hasattr(module, name)}
    config.setdefault("d_model", module.q.in_features)
    config["has_relative_bias"] = hasattr(module, "relative_attention_bias")
    return config


def reference_for(module, config: dict | None = None):
    """transformers' T5Attention with the configuration and the very weights of `module`."""
    return t5_attention(config or config_of(module), module.state_dict())


def _step(label, run):
    """Run one step's comparison; a step not written yet (or failing) prints one line, never a traceback."""
    try:
        return run(label)
    except NotImplementedError:
        print(f"{label}: not written yet")
    except Exception as exc:  # a learner's bug: one line, so the other steps still run
        print(f"{label}: raised {type(exc).__name__}: {str(exc)[:120]}")
    return False


def check_steps(cls, seed: int = 0, cross: bool = False) -> bool:
    """Build `cls` for a small encoder and decoder and compare each step with transformers' T5Attention.

    Prints one line per step; returns True when every step matches. cross=True adds step 10,
    cross-attention (`key_value_states=`) in one pass and token by token with the cache, every
    call passing the encoder's states (lesson 6 teaches it; exercise 6 leaves it to the learner).
    """
    bench = _StepBench(cls, seed)
    steps = [("step 1, projections", _projections), ("step 2, split heads", _split),
             ("step 3, unscaled scores", _scores), ("step 4, the bias", _bias), ("step 5, masks", _masks),
             ("step 6, softmax and weighted sum", _attend), ("step 7, merge heads and W_o", _output),
             ("step 8, token by token with the cache vs one pass", _cache),
             ("step 9, layer 1 reusing layer 0's bias", _shared)]
    if cross:
        steps.append(("step 10, cross-attention", _cross_attention))
    results = [_step(label, lambda label, run=run: run(bench, label)) for label, run in steps]
    return all(results)


class _StepBench:
    """What every step of `check_steps` shares: the input, its padding, and each layer built once."""

    def __init__(self, cls, seed: int):
        # The global generator, not a local one: a learner's class draws its initial weights from it
        # (nothing can hand its constructor a generator), so seeding it makes every run build the same
        # layers, and the lesson's stored outputs the same.
        torch.manual_seed(seed)
        self.cls, self.seed, self.c = cls, seed, STEP_CONFIG
        self.x = torch.randn(2, 7, self.c["d_model"])
        self.padding = torch.ones(2, 7, dtype=torch.long)
        self.padding[1, -2:] = 0  # row 1 ends with 2 padding tokens
        self.built = {}

    def layer(self, causal, has_relative_bias=True):
        """(the learner's layer, transformers' T5Attention with its weights), built on first use."""
        key = (causal, has_relative_bias)
        if key not in self.built:
            c = self.c
            module = self.cls(c["d_model"], c["num_heads"], c["d_kv"], causal=causal,
                              has_relative_bias=has_relative_bias, num_buckets=c["num_buckets"],
                              max_distance=c["max_distance"])
            config = {**c, "causal": causal, "has_relative_bias": has_relative_bias}
            self.built[key] = (module.eval(), reference_for(module, config))
        return self.built[key]

    def allowed(self, causal, q_len=7, k_len=7, offset=0):
        """The bool mask t5lesson computes: padding, and in a decoder the causal mask."""
        from ..scores import causal_mask

        mask = self.padding[:, None, None, :k_len].bool()
        return mask & torch.from_numpy(causal_mask(q_len, k_len, offset)) if causal else mask

    def real(self, output):
        """Outputs of padded queries set to 0: no model defines them, so they are not compared."""
        return output * self.padding[:, :, None]


def _projections(bench, label):
    ours, _ = bench.layer(False)
    c = bench.c
    want = init_stds(c["d_model"], c["num_heads"], c["d_kv"])
    no_bias = all(getattr(ours, n).bias is None for n in "qkvo")
    stds_ok = all(abs(getattr(ours, n).weight.std().item() - s) <= 0.15 * s for n, s in want.items())
    print(f"{label}: no bias terms {'✓' if no_bias else '✗'}, "
          f"T5's initial std (within 15%) {'✓' if stds_ok else '✗'}")
    return no_bias and stds_ok


def _split(bench, label):
    ours, ref = bench.layer(False)
    theirs = ref.q(bench.x).view(2, 7, -1, bench.c["d_kv"]).transpose(1, 2)
    return _compare(label, ours.split_heads(ours.q(bench.x)), theirs)


def _scores(bench, label):
    ours, ref = bench.layer(False)
    q, k = ours.split_heads(ours.q(bench.x)), ours.split_heads(ours.k(bench.x))
    return _compare(label, ours.scores(q, k), torch.matmul(q, k.transpose(2, 3)) * ref.scaling)


def _bias(bench, label):
    ok = True
    for causal, name in ((False, "encoder"), (True, "decoder")):
        ours, ref = bench.layer(causal)
        ok &= _compare(f"{label}, {name}", ours.compute_bias(7, 7), ref.compute_bias(7, 7))
    ours, ref = bench.layer(True)
    ok &= _compare(f"{label}, decoder, 1 new token after 6 cached", ours.compute_bias(1, 7, query_offset=6),
                   ref.compute_bias(1, 7, past_seen_tokens=6))
    return ok


def _masks(bench, label):
    ok = True
    for causal, name in ((False, "encoder"), (True, "decoder")):
        ours, _ = bench.layer(causal)
        got = ours.allowed(7, 7, attention_mask=bench.padding)
        ok &= _compare(f"{label}, {name} (against t5lesson's masks)", got.expand(2, 1, 7, 7).int(),
                       bench.allowed(causal).expand(2, 1, 7, 7).int(), tol=0)
    return ok


def _attend(bench, label):
    from transformers.models.t5.modeling_t5 import eager_attention_forward

    ours, ref = bench.layer(False)
    q, k, v = (ours.split_heads(getattr(ours, n)(bench.x)) for n in "qkv")
    position_bias = ref.compute_bias(7, 7)
    mine = ours.attend(ours.scores(q, k) + position_bias, ours.allowed(7, 7, attention_mask=bench.padding), v)
    theirs, _ = eager_attention_forward(ref, q, k, v, reference_mask(bench.allowed(False)), scaling=ref.scaling,
                                        position_bias=position_bias)
    return _compare(label, mine, theirs.transpose(1, 2))


def _output(bench, label):
    ok = True
    for causal, name in ((False, "encoder"), (True, "decoder")):
        ours, ref = bench.layer(causal)
        with torch.no_grad():
            theirs, _, _ = ref(bench.x, mask=reference_mask(bench.allowed(causal)))
            mine = ours(bench.x, attention_mask=bench.padding)[0]
        ok &= _compare(f"{label}, {name}", bench.real(mine), bench.real(theirs))
    return ok


def _cache(bench, label):
    ours, ref = bench.layer(True)
    x, padding = bench.x, bench.padding
    past, steps = None, []
    with torch.no_grad():
        for t in range(7):
            out, _, past = ours(x[:, t:t + 1], attention_mask=padding[:, :t + 1], past_key_value=past,
                                use_cache=True)
            steps.append(out)
        theirs, _, _ = ref(x, mask=reference_mask(bench.allowed(True)))
    return _compare(label, bench.real(torch.cat(steps, dim=1)), bench.real(theirs))


def _shared(bench, label):
    ours0, ref0 = bench.layer(True)
    ours1, ref1 = bench.layer(True, has_relative_bias=False)
    x, padding, mask = bench.x, bench.padding, reference_mask(bench.allowed(True))
    x1 = torch.randn(2, 7, bench.c["d_model"], generator=torch.Generator().manual_seed(bench.seed + 1))
    with torch.no_grad():
        _, bias0, _ = ours0(x, attention_mask=padding)
        mine = ours1(x1, attention_mask=padding, position_bias=bias0)[0]
        _, ref_bias0, _ = ref0(x, mask=mask)
        theirs, _, _ = ref1(x1, mask=mask, position_bias=ref_bias0)
    return _compare(label, bench.real(mine), bench.real(theirs))


def _cross_attention(bench, label):
    ours, ref = bench.layer(True, has_relative_bias=False)
    c, x = bench.c, bench.x
    states = torch.randn(2, 5, c["d_model"], generator=torch.Generator().manual_seed(bench.seed + 2))
    encoder_padding = torch.ones(2, 5, dtype=torch.long)
    encoder_padding[0, -1] = 0  # the encoder's row 0 ends with one padding token
    with torch.no_grad():
        encoder_mask = reference_mask(encoder_padding[:, None, None, :].bool())
        theirs, _, _ = ref(x, key_value_states=states, mask=encoder_mask)
        mine = ours(x, attention_mask=encoder_padding, key_value_states=states)[0]
        steps, past, recomputed = _cross_steps(ours, x, states, encoder_padding)
    one_pass = _compare(f"{label}, one pass", mine, theirs)
    cached = past is not None and tuple(past[0].shape) == (2, c["num_heads"], 5, c["d_kv"])
    if not cached:
        print(f"{label}, token by token: the cache should hold the encoder's 5 keys per head, got "
              f"{None if past is None else tuple(past[0].shape)}")
        return False
    if recomputed:
        print(f"{label}, token by token: W_k and W_v ran {recomputed} times after the first step; the encoder's "
              "keys and values do not change while the decoder writes, so later steps should use the cached "
              "ones as they are")
        return False
    return _compare(f"{label}, token by token with the cache", torch.cat(steps, dim=1), theirs) and one_pass


def _cross_steps(layer, x, states, encoder_padding):
    """Cross-attention token by token, every call passing the encoder's states and, from the second on, the
    cache: (the outputs, the last cache, how often W_k and W_v ran after the first step). The outputs are the
    same whether or not a layer recomputes the keys, so the projections' calls are counted (forward hooks)."""
    calls = []
    hooks = [getattr(layer, name).register_forward_hook(lambda *_: calls.append(1)) for name in "kv"]
    past, steps, after_first = None, [], 0
    try:
        for t in range(x.shape[1]):
            calls.clear()
            out, _, past = layer(x[:, t:t + 1], attention_mask=encoder_padding, key_value_states=states,
                                 past_key_value=past, use_cache=True)
            after_first += len(calls) if t else 0
            steps.append(out)
    finally:
        for hook in hooks:
            hook.remove()
    return steps, past, after_first


# --- handing the learner's finished class to lesson 7 ---

LESSON_7_FILE = "my_t5_layer.py"  # written next to lesson 6's notebook (its working folder), git-ignored
STEP_METHODS = ("split_heads", "scores", "compute_bias", "allowed", "attend", "merge_heads", "forward")
_HEADER = '''"""T5Layer as you finished it in lesson 6, saved there for lesson 7 (which builds its T5 from it).

Lesson 6 writes this file when your class passes every step of check_steps, cross-attention
included, and removes it when a later run does not. Edit the lesson, not this file.
"""
import math

import torch
from torch import nn

import t5lesson as t5
'''


def class_source(cls) -> str:
    """A module's text defining `cls` from the source of its __init__ and step methods (cell by cell)."""
    import inspect
    import textwrap

    methods = []
    for name in ("__init__", *STEP_METHODS):
        lines = textwrap.dedent(inspect.getsource(cls.__dict__[name])).splitlines()
        start = next(k for k, line in enumerate(lines) if line.startswith("def "))  # drop @add_to_class(...)
        methods.append(textwrap.indent("\n".join(lines[start:]), "    "))
    doc = f'    """{cls.__doc__.strip()}"""\n\n' if cls.__doc__ else ""
    return f"{_HEADER}\n\nclass {cls.__name__}(nn.Module):\n{doc}" + "\n\n".join(methods) + "\n"


def _quietly(function, *args, **kwargs):
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return function(*args, **kwargs)


def _load_class(path, name="T5Layer"):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"lesson6_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path} as a module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def save_for_lesson_7(cls, every_step_matches: bool, yours=("compute_bias", "attend"), course=None,
                      folder=".") -> bool:
    """Write `cls` to LESSON_7_FILE in `folder` when it passed check_steps and its your-turn steps are
    the learner's own (not the course's versions that a your-turn cell falls back to); else remove
    the file. Prints one line; returns whether the file was written."""
    from pathlib import Path

    from ..layer import T5SelfAttention

    course = course or T5SelfAttention
    path = Path(folder) / LESSON_7_FILE
    not_yours = [name for name in yours if cls.__dict__.get(name) is course.__dict__.get(name)]
    problem = None
    if not_yours:
        problem = f"{', '.join(not_yours)} {'is' if len(not_yours) == 1 else 'are'} still the course's version"
    elif not every_step_matches:
        problem = "a step above does not match transformers yet"
    else:
        try:  # the saved file must define the class on its own, and pass again
            path.write_text(class_source(cls))
            if not _quietly(check_steps, _load_class(path, cls.__name__), cross=True):
                problem = "the saved class did not pass check_steps on its own"
        except Exception as exc:  # e.g. a method that uses a name defined elsewhere in the notebook
            problem = f"saving it failed ({type(exc).__name__}: {str(exc)[:100]})"
    if problem:
        path.unlink(missing_ok=True)
        print(f"Nothing saved for lesson 7: {problem}.\n  Lesson 7 will build its T5 from the course's layer.")
        return False
    print(f"Saved your {cls.__name__} to {LESSON_7_FILE}, next to this notebook.\n  Lesson 7 builds its T5 from it.")
    return True


def lesson_6_layer(folder=".") -> tuple[type, str]:
    """The attention class lesson 7 builds its model from, and one line saying which it is.

    The learner's T5Layer when lesson 6 saved it in `folder` and it passes check_steps (cross-attention
    included) again now; else the course's t5lesson.layer.T5SelfAttention, with the reason.
    """
    from pathlib import Path

    from ..layer import T5SelfAttention

    course = "Attention layer: the course's t5lesson.layer.T5SelfAttention\n  "
    path = Path(folder) / LESSON_7_FILE
    if not path.exists():
        return T5SelfAttention, course + "(lesson 6 has saved no finished T5Layer of yours next to this notebook)."
    try:
        cls = _load_class(path)
        passes = _quietly(check_steps, cls, cross=True)
    except Exception as exc:
        return T5SelfAttention, course + f"({LESSON_7_FILE} did not load: {type(exc).__name__})."
    if not passes:
        return T5SelfAttention, course + f"(the T5Layer in {LESSON_7_FILE} no longer passes check_steps)."
    return cls, (f"Attention layer: your T5Layer from lesson 6 ({LESSON_7_FILE})\n"
                 "  It passed every step of check_steps again just now.")


from .layer_turns import TURNS  # noqa: E402  (lesson 6's your-turn cells: compute_bias and attend)
