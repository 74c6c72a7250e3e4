"""The checks of lesson 7's two your-turn steps, `block_forward` and `greedy` (its `TURNS` use them).

block_forward is run on blocks of both stacks built here from the course's attention layer, with
weights drawn as T5 draws them and then nudged (norm gains away from 1, larger bias tables), so
that a step left out changes the numbers:

- encoder block 0, which owns the table, and encoder block 1, handed the bias block 0 returned,
  on a padded batch of three (odd lengths) and on an unpadded batch of two;
- decoder blocks 0 and 1 on a whole prefix at once (no cache), then decoding with the cache:
  two tokens, then one, then one, each step handed the caches the course's block returned the
  step before, so that each step is judged alone.

Each output is compared with the course's: the new x, the bias the block returns, and in the
decoder both caches. A decoder block must also hand its cross-attention the cross-attention cache
it was given: reusing it or recomputing the encoder's keys gives the same numbers, so the check
watches what `block.cross` is called with.

greedy is run on a transformers T5 behind lesson 7's encode/decode interface (`StepModel` over
`structured_model`: an untrained T5 made so that its next token depends on the tokens before it),
on batches whose rows end at different steps, one cut by the token budget, one of one new token.
Besides the tokens, it reads the model's log of decode calls: with the cache, every call feeds the
newest token alone and is handed the cache the previous call returned; without it, every call
feeds the whole prefix and no cache. A greedy that never uses the cache gives the same tokens both
ways, and is caught only by the log.
"""
from __future__ import annotations

import inspect

import torch
from torch import nn

from ..seq2seq import CONFIG, EOS, PAD, padded
from .tiny_t5 import BLOCK_FORWARD_HINTS, GREEDY_HINTS, block_forward, greedy, t5_init_

__all__ = ["block_forward_check", "greedy_check", "check_blocks", "WatchedModel"]

TOL = 1e-5  # a block's outputs: the same operations, summed in another order, differ by about 1e-7


class _RMSNorm(nn.Module):
    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d_model)), eps

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class _FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.wi, self.wo = nn.Linear(d_model, d_ff, bias=False), nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.wo(torch.relu(self.wi(x)))


class _Block(nn.Module):
    """The lesson's Block, built from the course's layer: the parts block_forward reads."""

    def __init__(self, c, decoder, owns_bias):
        from ..layer import T5SelfAttention

        super().__init__()
        self.self_attention = T5SelfAttention(c["d_model"], c["num_heads"], c["d_kv"], causal=decoder,
                                              has_relative_bias=owns_bias, num_buckets=c["num_buckets"],
                                              max_distance=c["max_distance"])
        self.norm_self = _RMSNorm(c["d_model"])
        self.cross = T5SelfAttention(c["d_model"], c["num_heads"], c["d_kv"], has_relative_bias=False) \
            if decoder else None
        self.norm_cross = _RMSNorm(c["d_model"]) if decoder else None
        self.ff, self.norm_ff = _FeedForward(c["d_model"], c["d_ff"]), _RMSNorm(c["d_model"])


def check_blocks(config, seed=0):
    """Two encoder blocks and two decoder blocks (block 0 of each owns the table), drawn from `seed`
    and nudged: every norm gain 1 + 0.4 * N(0, 1), the feed-forward and tables three times T5's scale."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        blocks = [_Block(config, decoder, i == 0).eval() for decoder in (False, True) for i in range(2)]
        with torch.no_grad():
            for block in blocks:
                for name, parameter in block.named_parameters():
                    if name.endswith("norm_self.weight") or "norm_" in name:
                        parameter.copy_(1 + 0.4 * torch.randn_like(parameter))
                    elif "relative_attention_bias" in name or ".wi." in name or ".wo." in name:
                        parameter.mul_(3.0)
    return blocks[:2], blocks[2:]


# --- block_forward ---

def _parts(result) -> tuple | str:
    """(x, position_bias, self cache, cross cache) of a block's result, or a sentence on its form."""
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        return ("block_forward should return (x, position_bias, (self-attention cache, cross-attention "
                f"cache)), got {_kind(result)}")
    caches = result[2]
    if not isinstance(caches, (tuple, list)) or len(caches) != 2:
        return f"the third item block_forward returns should be the pair of caches, got {_kind(caches)}"
    return result[0], result[1], caches[0], caches[1]


def _kind(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {list(value.shape)}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return "None" if value is None else f"a {type(value).__name__}"


def _compare(what: str, got, want) -> str | None:
    """Where a tensor (or a cache: (keys, values)) differs from the course's, in words."""
    from .your_turn import compare_values

    if want is None or got is None:
        return None if got is None and want is None else f"{what} is {_kind(got)}, expected {_kind(want)}"
    if isinstance(want, tuple):
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return f"{what} is {_kind(got)}, expected its (keys, values)"
        return (compare_values(got[0], want[0], TOL, f"{what} (keys)")
                or compare_values(got[1], want[1], TOL, f"{what} (values)"))
    return compare_values(got, want, TOL, what)


def _block_problem(got, want, decoder: bool) -> str | None:
    """The first output of a block that differs: x, the bias, then (decoder) the two caches."""
    parts = _parts(got)
    if isinstance(parts, str):
        return parts
    names = ["the output x", "the position bias it returns", "its self-attention cache",
             "its cross-attention cache"]
    pairs = list(zip(names, parts, _parts(want), strict=True))
    for what, mine, course in pairs if decoder else pairs[:2]:  # an encoder's caches are never used
        problem = _compare(what, mine, course)
        if problem:
            return problem
    return None


class _CrossCalls:
    """Records the cache (past_key_value) each call of a decoder block's cross-attention is handed."""

    def __init__(self, block):
        self.block, self.given, self.hook = block, [], None

    def __enter__(self):
        if self.block.cross is None:
            return self
        signature = inspect.signature(self.block.cross.forward)

        def record(module, args, kwargs):
            bound = signature.bind_partial(*args, **kwargs).arguments
            self.given.append(bound.get("past_key_value"))

        self.hook = self.block.cross.register_forward_pre_hook(record, with_kwargs=True)
        return self

    def __exit__(self, *exc):
        if self.hook is not None:
            self.hook.remove()


def _same_cache(given, cache) -> bool:
    """Whether `given` holds the very tensors of `cache` (a tuple of tensors), equal in shape and value."""
    return (isinstance(given, (tuple, list)) and len(given) == len(cache)
            and all(isinstance(g, torch.Tensor) and g.shape == c.shape and torch.equal(g, c)
                    for g, c in zip(given, cache, strict=True)))


def _run_block(learner, reference, block, label, args, decoder):
    """One call of both versions on the same inputs: (the course's result, where the learner's differs)."""
    from .your_turn import case

    with torch.no_grad():
        want = reference(block, *args)
        with case(label), _CrossCalls(block) as calls:
            got = learner(block, *args)
    problem = _block_problem(got, want, decoder)
    past = args[3]
    if not problem and decoder and past is not None:
        if not calls.given:
            problem = "its cross-attention was never called"
        elif not _same_cache(calls.given[0], past[1]):
            problem = ("its cross-attention was not handed the cross-attention cache from past, so it computed "
                       "the encoder's keys and values again (the same numbers, the work the cache saves)")
    return want, (f"{label}: {problem}" if problem else None)


def _encoder_runs(generator, config):
    d = config["d_model"]
    x3, x2 = torch.randn(3, 7, d, generator=generator), torch.randn(2, 6, d, generator=generator)
    mask3 = torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1] + [0] * 6])
    return [("a padded batch of 3 strings", x3, mask3), ("a batch of 2 without padding", x2, None)]


def _stack(learner, reference, blocks, label, x, mask, extra=(), decoder=False, past=(None, None)):
    """Both blocks of a stack on one input: block 1 handed the bias block 0 returned (the course's)."""
    bias, results = None, []
    for i, block in enumerate(blocks):
        owns = "owns the table" if i == 0 else "handed block 0's bias"
        name = f"{'decoder' if decoder else 'encoder'} block {i} ({owns}), {label}"
        want, problem = _run_block(learner, reference, block, name, (x, mask, bias, past[i], *extra), decoder)
        if problem:
            return problem, None
        x, bias = want[0], want[1]
        results.append(want[2])
    return None, results


def block_forward_check(config, seed=0):
    """check(learner, reference) for `your_turn`: None when the learner's block_forward agrees everywhere."""

    def check(learner, reference):
        encoders, decoders = check_blocks(config, seed)
        generator = torch.Generator().manual_seed(seed)
        for label, x, mask in _encoder_runs(generator, config):
            problem, _ = _stack(learner, reference, encoders, label, x, mask)
            if problem:
                return problem
        encoder_out = torch.randn(3, 7, config["d_model"], generator=generator)
        encoder_mask = torch.tensor([[1] * 7, [1] * 5 + [0] * 2, [1] * 2 + [0] * 5])
        y = torch.randn(3, 4, config["d_model"], generator=generator)
        extra = (encoder_out, encoder_mask)
        problem, _ = _stack(learner, reference, decoders, "4 tokens at once, no cache", y, None, extra, True)
        past, cached = (None, None), 0
        for step, fed in enumerate((2, 1, 1), 1):
            x = torch.randn(3, fed, config["d_model"], generator=generator)
            label = f"decoding step {step} ({fed} new token{'s' * (fed > 1)}, {cached} cached)"
            problem = problem or _stack(learner, reference, decoders, label, x, None, extra, True, past)[0]
            past = _stack(reference, reference, decoders, label, x, None, extra, True, past)[1]
            cached += fed
        return problem

    return check


# --- greedy ---

class WatchedModel(nn.Module):
    """Lesson 7's TinyT5, built from the course's blocks, its decode calls logged for greedy's check.

    Drawn from `seed` as `t5_init_` draws, then made so that its next token depends on the tokens
    before it (as `t5lesson.seq2seq.structured_model` does to a transformers T5): decoder block 0's
    table times 20, the decoder self-attentions' value and output projections times 4; the start
    token's embedding is zero and the end token's is scaled by `eos_scale` (negative: rows end
    sooner). `calls` lists (tokens fed, whether a cache was passed) per decode call; `given` the
    cache each call was handed, `returned` the cache it gave back.
    """

    def __init__(self, config, seed, eos_scale):
        super().__init__()
        self.c = config
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.shared = nn.Embedding(config["vocab_size"], config["d_model"])
            self.encoder = nn.ModuleList(_Block(config, False, i == 0) for i in range(config["layers"]))
            decoder = [_Block(config, True, i == 0) for i in range(config["layers"])]
            self.decoder = nn.ModuleList(decoder)
            self.encoder_norm, self.decoder_norm = _RMSNorm(config["d_model"]), _RMSNorm(config["d_model"])
            t5_init_(self)
        with torch.no_grad():
            self.shared.weight[PAD] = 0.0
            self.shared.weight[EOS] *= float(eos_scale)
            decoder[0].self_attention.relative_attention_bias.weight *= 20.0
            for block in decoder:
                block.self_attention.v.weight *= 4.0
                block.self_attention.o.weight *= 4.0
        self.eval()
        self.calls, self.given, self.returned = [], [], []

    @torch.no_grad()
    def encode(self, input_ids, attention_mask):
        x, bias = self.shared(input_ids), None
        for block in self.encoder:
            x, bias, _ = block_forward(block, x, attention_mask, bias)
        return self.encoder_norm(x)

    @torch.no_grad()
    def decode(self, decoder_ids, encoder_out, encoder_mask, cache=None):
        self.calls.append((torch.as_tensor(decoder_ids).clone(), cache is not None))
        self.given.append(cache)
        x, bias, new_cache = self.shared(decoder_ids), None, []
        for block, past in zip(self.decoder, cache or [None] * len(self.decoder), strict=True):
            x, bias, present = block_forward(block, x, None, bias, past, encoder_out, encoder_mask)
            new_cache.append(present)
        logits = self.decoder_norm(x) * self.c["d_model"] ** -0.5 @ self.shared.weight.T
        self.returned.append(new_cache)
        return logits, new_cache

    def forward(self, input_ids, attention_mask, decoder_ids):
        """The lesson's model(input_ids, mask, decoder_ids) -> logits, through the same logged decode."""
        return self.decode(decoder_ids, self.encode(input_ids, attention_mask), attention_mask)[0]


def _flat(cache) -> list | None:
    """A cache's tensors in order (None for a structure with anything else in it)."""
    if isinstance(cache, torch.Tensor):
        return [cache]
    if not isinstance(cache, (tuple, list)):
        return None
    out = []
    for item in cache:
        inner = _flat(item)
        if inner is None:
            return None
        out += inner
    return out


def _same(given, returned) -> bool:
    """Whether the cache a call was handed holds what the previous call returned, tensor for tensor."""
    a, b = _flat(given), _flat(returned)
    return a is not None and b is not None and len(a) == len(b) and all(x.shape == y.shape and torch.equal(x, y)
                                                      for x, y in zip(a, b, strict=True))


# (model seed, end token's scale, prompts, token budget, use_cache), each way: rows that end at different
# steps (at the first, the ninth, the tenth and last) and a row the budget cuts (4 strings); every row
# ending before the budget (3 strings); one new token; one string
GREEDY_CASES = (
    (3, 1.0, ("31415", "27", "9999999", "8"), 10, True),
    (3, 1.0, ("31415", "27", "9999999", "8"), 10, False),
    (6, 2.0, ("31415", "27", "8"), 8, True),
    (6, 2.0, ("31415", "27", "8"), 8, False),
    (3, 1.0, ("31415", "27", "9999999", "8"), 1, True),
    (7, -1.0, ("4071952",), 9, False),
)


def _case_label(seed, eos_scale, prompts, budget, use_cache) -> str:
    way = "with the cache" if use_cache else "use_cache=False"
    return f"{len(prompts)} string{'s' * (len(prompts) > 1)}, max_new_tokens={budget}, {way}"


def _greedy_call(function, spec):
    """Run `function` on a case's fresh model: (its tokens, the model with its log)."""
    seed, eos_scale, prompts, budget, use_cache = spec
    model = WatchedModel(CONFIG, seed, eos_scale)
    ids, mask = padded(list(prompts))
    with torch.no_grad():
        out = function(model, ids, mask, budget) if use_cache else function(model, ids, mask, budget, use_cache=False)
    return out, model


def _token_problem(got, want) -> str | None:
    """Where the learner's tokens first differ from the course's, in tokens and positions."""
    if not isinstance(got, torch.Tensor) or got.ndim != 2:
        return f"greedy should return a tensor [batch, 1 + steps], got {_kind(got)}"
    if got.shape[0] != want.shape[0]:
        return f"greedy returned {got.shape[0]} rows for {want.shape[0]} strings"
    width = min(got.shape[1], want.shape[1])
    wrong = (got[:, :width].long() != want[:, :width]).nonzero()
    if len(wrong):
        row, position = (int(i) for i in wrong[0])
        return (f"row {row} first differs at position {position} (position 0 is the start token): token "
                f"{_token(got[row, position])}, expected {_token(want[row, position])}")
    if got.shape[1] != want.shape[1]:
        ended = " (every row had ended)" if got.shape[1] > want.shape[1] else ""
        return f"greedy returned {_tokens(got.shape[1] - 1)} per row, expected {want.shape[1] - 1}{ended}"
    return None


def _tokens(n: int) -> str:
    return f"{n} new token{'s' * (n != 1)}"


def _token(token) -> str:
    token = int(token)
    return {PAD: "0 (PAD)", EOS: "1 (EOS)"}.get(token, str(token))


def _log_problem(model, out, use_cache) -> str | None:
    """What the decode log says against the way the case asked for: the newest token with the previous
    call's cache, or the whole prefix without a cache."""
    steps = out.shape[1] - 1
    if len(model.calls) != steps:
        return f"decode was called {len(model.calls)} times for {steps} new tokens: one call per new token"
    for step, (fed, had_cache) in enumerate(model.calls):
        if use_cache:
            if fed.shape[1] != 1 or (step and not had_cache):
                given = "with" if had_cache else "without"
                return (f"decode call {step + 1} was fed {fed.shape[1]} token{'s' * (fed.shape[1] > 1)} per row "
                        f"{given} a cache: with the cache, feed only the newest token, and pass the cache the "
                        "previous call returned")
            if step and not _same(model.given[step], model.returned[step - 1]):
                return f"decode call {step + 1} was not handed the cache call {step} returned"
        elif had_cache or fed.shape[1] != step + 1 or not torch.equal(fed, out[:, :step + 1].to(fed.dtype)):
            return (f"with use_cache=False, decode call {step + 1} was fed {fed.shape[1]} token"
                    f"{'s' * (fed.shape[1] > 1)} per row {'with' if had_cache else 'without'} a cache: without "
                    f"the cache, feed the whole prefix (here {step + 1} tokens) every step, and no cache")
    return None


def greedy_check(learner, reference):
    """check(learner, reference) for `your_turn`: None when the learner's greedy gives the course's tokens
    and decodes the way each case asks (its log of decode calls); else where it does not."""
    from .your_turn import case

    for k, spec in enumerate(GREEDY_CASES, 1):
        label = f"case {k} of {len(GREEDY_CASES)} ({_case_label(*spec)})"
        want, _ = _greedy_call(reference, spec)
        with case(label):
            got, model = _greedy_call(learner, spec)
        problem = _token_problem(got, want)
        if not problem or "differs at position" in problem:  # how it decoded says why the tokens differ
            problem = _log_problem(model, got, spec[-1]) or problem
        if problem:
            return f"{label}: {problem}"
    return None


def _lesson_7_turns():
    from .your_turn import Turn  # here, not at the top: your_turn names this module in its table

    return {"block_forward": Turn(reference=block_forward, check=block_forward_check(CONFIG),
                                  hints=BLOCK_FORWARD_HINTS),
            "greedy": Turn(reference=greedy, check=greedy_check, hints=GREEDY_HINTS)}


TURNS = _lesson_7_turns()
