"""Lesson 6's your-turn cells, compute_bias and attend: the cases they are checked on, and the hints.

Both are methods of the layer (`self` comes first), so each case hands them a layer built here:
the course's `T5SelfAttention` with *trained-looking* weights (a bias table of random non-zero
entries, not the fresh table a slip could hide behind), in several settings. A case is named in
words ("a decoder layer, 8 buckets up to distance 20, 3 queries after 9 cached, 12 keys"), never
by a module's repr.

When the learner's result differs, the check says where (the first entry, got and expected) and,
when it can tell, which slip gives that result: it recomputes the case with the course's code and
one known slip at a time (the offset left at 0, query minus key, ...). For `attend` it reads the
attention weights themselves: with the values replaced by the identity matrix, `attend` returns
its weights, so the check can say "the weights of a query do not sum to 1 over its keys" or "a
hidden key got weight" instead of only "differs".
"""
from __future__ import annotations

import math

import torch

from ..bias import relative_bias
from ..buckets import relative_position_bucket
from ..layer import RelativePositionBias, T5SelfAttention, attention_weights
from ..scores import attention
from .your_turn import Turn, case, compare_values

__all__ = ["TURNS", "trained_layer"]

TOL = 1e-5


def trained_layer(causal, num_buckets=32, max_distance=128, seed=0, d_model=16, num_heads=3, d_kv=4):
    """The course's layer with a table of random entries of about unit size (none zero) and random projections."""
    generator = torch.Generator().manual_seed(seed)
    layer = T5SelfAttention(d_model, num_heads, d_kv, causal=causal, num_buckets=num_buckets,
                            max_distance=max_distance)
    with torch.no_grad():
        for name in "qkvo":
            weight = getattr(layer, name).weight
            weight.copy_(torch.randn(weight.shape, generator=generator) * 0.5)
        table = layer.relative_attention_bias.weight
        table.copy_(torch.randn(table.shape, generator=generator).sign() * (0.3 + torch.rand(table.shape,
                                                                                            generator=generator)))
    return layer.eval()


def _layer_words(layer) -> str:
    kind = "a decoder layer" if layer.causal else "an encoder layer"
    return f"{kind} ({layer.num_buckets} buckets up to distance {layer.max_distance})"


# --- compute_bias -----------------------------------------------------------------------------------

# (causal, num_buckets, max_distance, q_len, k_len, query_offset): full passes of odd and even length, cached
# steps of one and of several tokens, offsets that reach the log buckets and the clamp of the last bucket.
BIAS_CASES = (
    (True, 32, 128, 10, 10, 0),
    (True, 32, 128, 1, 8, 7),
    (True, 32, 20, 4, 40, 30),
    (True, 8, 20, 3, 12, 9),
    (False, 32, 128, 6, 9, 2),
    (False, 11, 20, 7, 7, 0),
    (True, 8, 20, 2, 40, 38),
    (False, 8, 20, 5, 30, 20),
    (True, 9, 16, 1, 33, 32),
)


def _bias_words(layer, q_len, k_len, offset) -> str:
    if offset == 0:
        return f"{_layer_words(layer)}, a full pass of {q_len} queries over {k_len} keys"
    return f"{_layer_words(layer)}, {q_len} new quer{'y' if q_len == 1 else 'ies'} after {offset} cached, {k_len} keys"


def _bias_of(layer, q_len, k_len, offsets_of, bidirectional=None, max_distance=None):
    """The bias the table gives for the offsets `offsets_of(query positions, key positions)`: for a slip."""
    bidirectional = (not layer.causal) if bidirectional is None else bidirectional
    query, key = torch.arange(q_len)[:, None], torch.arange(k_len)[None, :]
    buckets = relative_position_bucket(offsets_of(query, key), bidirectional=bidirectional,
                                       num_buckets=layer.num_buckets,
                                       max_distance=max_distance or layer.max_distance)
    return layer.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)


def _bias_slips(layer, q_len, k_len, offset):
    """(what the slip is, the bias it gives) for the slips a learner makes in compute_bias."""
    return [
        ("that is the bias with query_offset left at 0: the new queries sit at positions query_offset, "
         "query_offset + 1, ..., so add it to the query positions",
         _bias_of(layer, q_len, k_len, lambda qp, kp: kp - qp)),
        ("that is the bias of query minus key: T5 buckets key position minus query position (j - i)",
         _bias_of(layer, q_len, k_len, lambda qp, kp: (qp + offset) - kp)),
        ("that is the bias with the offset added to the keys: query_offset moves the queries, not the keys",
         _bias_of(layer, q_len, k_len, lambda qp, kp: (kp + offset) - qp)),
        (f"that is the bias bucketed as {'an encoder' if layer.causal else 'a decoder'}'s: bidirectional is "
         "not self.causal",
         _bias_of(layer, q_len, k_len, lambda qp, kp: kp - (qp + offset), bidirectional=layer.causal)),
        ("that is the bias with the default max_distance of 128: use the layer's own (self.max_distance)",
         _bias_of(layer, q_len, k_len, lambda qp, kp: kp - (qp + offset), max_distance=128)),
    ]


def _same(got, want) -> bool:
    return (isinstance(got, torch.Tensor) and got.shape == want.shape
            and bool(torch.allclose(got.detach().double(), want.detach().double(), atol=TOL, rtol=0)))


def _which_slip(got, slips) -> str:
    """' (It equals ...)' for the first slip whose result `got` equals, else ''."""
    for words, result in slips:
        if _same(got, result):
            return f". {words[0].upper()}{words[1:]}"
    return ""


def check_compute_bias(learner, reference):
    """None when the learner's compute_bias equals the course's on every case, else where and (if known) why."""
    for k, (causal, buckets, distance, q_len, k_len, offset) in enumerate(BIAS_CASES, 1):
        layer = trained_layer(causal, buckets, distance, seed=k)
        label = f"case {k} of {len(BIAS_CASES)} ({_bias_words(layer, q_len, k_len, offset)})"
        with torch.no_grad():
            want = reference(layer, q_len, k_len, query_offset=offset)
            with case(label):
                got = learner(layer, q_len, k_len, query_offset=offset)
            problem = compare_values(got, want, TOL)
            if problem:
                return f"{label}: {problem}{_which_slip(got, _bias_slips(layer, q_len, k_len, offset))}"
    return None


BIAS_HINTS = (
    "Which position does the first new query sit at when the cache already holds query_offset tokens, and "
    "which sign does T5 give an offset: key minus query, or query minus key?",
    "Make a column of query positions that starts at query_offset and a row of key positions that starts at "
    "0; their difference, key minus query, is a table of offsets with one row per query. Bucket it with the "
    "layer's own rule (a decoder is not bidirectional) and its own number of buckets and distance, then look "
    "each bucket up in the table: that gives one number per head, and the heads go first.",
    "query = torch.arange(q_len)[:, None] + query_offset; key = torch.arange(k_len)[None, :]; buckets = "
    "t5.relative_position_bucket(key - query, bidirectional=not self.causal, num_buckets=self.num_buckets, "
    "max_distance=self.max_distance); return self.relative_attention_bias(buckets).permute(2, 0, 1).unsqueeze(0)",
)


# --- attend ---------------------------------------------------------------------------------------

# (causal, q_len, k_len, padding, score scale): padding "right" / "left" is row 1's last / first 3 keys; a
# cached step has fewer queries than keys; the large scales reach scores of hundreds and thousands.
ATTEND_CASES = (
    (True, 7, 7, "right", 1.0),
    (False, 6, 6, "none", 1.0),
    (True, 3, 10, "right", 1.0),
    (True, 8, 8, "left", 1.0),
    (False, 5, 9, "left", 1.0),
    (True, 7, 7, "right", 40.0),
    (False, 6, 6, "right", 400.0),
)


def _attend_inputs(k, causal, q_len, k_len, padding, scale):
    """(layer, scores with the bias added, allowed, v) of one case, from a trained layer."""
    layer = trained_layer(causal, 8, 20, seed=10 + k)
    generator = torch.Generator().manual_seed(20 + k)
    x = torch.randn(2, k_len, layer.d_model, generator=generator)
    mask = torch.ones(2, k_len, dtype=torch.long)
    if padding == "right":
        mask[1, -3:] = 0
    elif padding == "left":
        mask[1, :3] = 0
    offset = k_len - q_len
    with torch.no_grad():
        q = layer.split_heads(layer.q(x[:, offset:]))
        keys, v = (layer.split_heads(getattr(layer, n)(x)) for n in "kv")
        scores = scale * layer.scores(q, keys) + layer.compute_bias(q_len, k_len, query_offset=offset)
    allowed = layer.allowed(q_len, k_len, mask if padding != "none" else None, query_offset=offset)
    return layer, scores, allowed, v


def _attend_words(causal, q_len, k_len, padding, scale) -> str:
    who = "a decoder" if causal else "an encoder"
    steps = f"{q_len} queries over {k_len} keys" + (f" ({k_len - q_len} cached)" if q_len < k_len and causal else "")
    pads = {"right": ", row 1 padded on the right", "left": ", row 1 padded on the left (queries with no key "
            "to see)" if causal else ", row 1 padded on the left", "none": ", no padding"}[padding]
    large = f", scores {scale:g} times larger" if scale != 1 else ""
    return f"{who}, {steps}{pads}{large}"


def _weights_of(learner, layer, scores, allowed):
    """The learner's attention weights: attend with the values set to the identity returns them."""
    k_len = scores.shape[-1]
    eye = torch.eye(k_len).expand(scores.shape[0], scores.shape[1], k_len, k_len).contiguous()
    got = learner(layer, scores.clone(), allowed.clone(), eye)
    return got if isinstance(got, torch.Tensor) and got.shape == scores.shape else None


def _weights_slip(weights, scores, allowed) -> str:
    """Which slip the learner's weights show, in one sentence, or ''."""
    allowed = allowed.expand_as(scores)
    real = allowed.any(dim=-1)  # queries with at least one key to see
    if torch.isnan(weights[real]).any():
        return ("Some weights are nan: with scores this large an exp overflows unless each row's maximum is "
                "subtracted first (torch.softmax does that)")
    if torch.isnan(weights).any():
        return ("The weights of a query that may see no key (left padding) are nan: its scores are all hidden, "
                "and exp of minus infinity, or an exp without the row's maximum subtracted, gives 0/0 there. "
                "transformers gives such a row even weights: fill with torch.finfo(dtype).min and use torch.softmax")
    rows, columns = weights.sum(dim=-1)[real], weights.sum(dim=-2)
    hidden = float((weights.abs() * ~allowed)[real].max())
    if (rows - 1).abs().max() > 1e-4:
        if (columns - 1).abs().max() < 1e-4:
            return "The weights sum to 1 over the queries, not over the keys: the softmax runs over the last axis"
        total = float(rows.flatten()[(rows - 1).abs().argmax()])
        if hidden <= 1e-6:
            return (f"The weights of a query sum to {total:.4g} over its keys, not 1: hiding keys after the softmax "
                    "takes their weight away without handing it to the others; hide them in the scores, before")
        return f"The weights of a query sum to {total:.4g} over its keys, not 1, as a softmax over the keys would"
    if hidden > 1e-4:
        return (f"A key the query may not see got weight up to {hidden:.3g}: the mask must act on the scores "
                "before the softmax, by the most negative number, not multiply them or set them to 0")
    return _scale_slip(weights, scores, allowed, real)


def _scale_slip(weights, scores, allowed, real) -> str:
    """' The weights are those of the scores times c' when they are (a 1/sqrt(d) slip), else ''."""
    for factor, words in ((0.5, "1/sqrt(d_kv) with d_kv = 4"), (1 / math.sqrt(scores.shape[-1]), None)):
        masked = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min) * factor
        if torch.allclose(weights[real], torch.softmax(masked.float(), dim=-1)[real], atol=1e-5):
            what = words or f"{factor:.3g}"
            return (f"The weights are the softmax of the scores times {what}: T5 does not scale its scores "
                    "(the bias is added unscaled too)")
    return ""


def check_attend(learner, reference):
    """None when the learner's attend equals the course's on every case, else where and which slip it shows."""
    for k, spec in enumerate(ATTEND_CASES, 1):
        layer, scores, allowed, v = _attend_inputs(k, *spec)
        label = f"case {k} of {len(ATTEND_CASES)} ({_attend_words(*spec)})"
        with torch.no_grad():
            want = reference(layer, scores, allowed, v)
            with case(label):
                got = learner(layer, scores.clone(), allowed.clone(), v.clone())
            problem = compare_values(got, want, TOL)
            if problem:
                with case(label):
                    weights = _weights_of(learner, layer, scores, allowed)
                slip = "" if weights is None else _weights_slip(weights, scores, allowed)
                return f"{label}: {problem}" + (f". {slip}" if slip else "")
    return None


ATTEND_HINTS = (
    "What should a key the query may not see get after the softmax, and which axis holds the keys a query "
    "spreads its attention over?",
    "Set every hidden score to the most negative number the dtype holds, so that its weight comes out 0 (a "
    "query whose keys are all hidden then spreads its weight evenly, which is what transformers gives; minus "
    "infinity would give 0/0). Take the softmax over the keys, the last axis, in float32, cast the weights "
    "back to the values' dtype, and average the values with them. No scaling anywhere.",
    "scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min); weights = torch.softmax("
    "scores.float(), dim=-1).to(v.dtype); return weights @ v",
)


TURNS = {
    "compute_bias": Turn(reference=T5SelfAttention.compute_bias, check=check_compute_bias, hints=BIAS_HINTS,
                         course_versions=(relative_bias, RelativePositionBias.forward), tol=TOL),
    "attend": Turn(reference=T5SelfAttention.attend, check=check_attend, hints=ATTEND_HINTS,
                   course_versions=(attention, attention_weights), tol=TOL),
}
