"""Inside the learner's kernel: run their beam search on exercise 7's cases, and check how it decoded.

Exercise 7's code question (`t5lesson.exercises.ex07_tiny_t5`) hands this file's text to the
harvesting code (`t5lesson.grading.harvest`), which runs it in a fresh namespace and calls
`adapt(the learner's function)`. The function it returns is called once per case with plain
data (a seed, digit strings, a token budget, an end-token scale, a `shift`): it builds the
case's model (`t5lesson.seq2seq.structured_model`) behind lesson 7's encode/decode interface
(`t5lesson.seq2seq.StepModel`), calls the learner's `beam_decode(model, input_ids,
attention_mask, max_new_tokens)`, checks the answer's form and the model's call log, and returns
the tokens, filled with -1 to the width of the token budget. Nothing is compared here: the
grader compares them with `generate(num_beams=2)` in its own process.

Why the logits must come from `decode`, and the checks that hold it:

- the model's `decode` adds an offset to each decoder position's logits, drawn here from the
  case's `shift` (`logit_offset`); the grader's generate() adds the same. Logits computed any
  other way (a full forward pass of the transformers model underneath, `generate` reached
  around the blocking) lack it, and give other tokens on the grading cases, which are drawn so
  that they do (`ex07_tiny_t5`'s recipe). The offset depends on the position, so a decoder that
  drops the cache, and sees every token at position 0, gets it wrong as well;
- each call after the first must be handed a cache made of rows of the cache the previous call
  returned (row by row, exactly), one token more than the calls so far, and fed one token per
  row; each token fed must be one of the four best of the logits the previous call returned for
  the row its cache came from (beam search never goes on with a worse one), or a filler some
  decoders feed a string that is done: PAD, EOS, or that row's last token again. Tokens worked
  out elsewhere and replayed through `decode` to fill the log break that rule as soon as they
  differ from what the logits say;
- after a row's EOS only padding may follow (rule 5 of the question: PAD; EOS, which generate()
  writes there, is taken too).

This is deterrence inside a kernel that runs the learner's code: a notebook that sets out to can
read the offset off the model object, or rewrite the log. What it stops is the shortcut that
computes the answer without the cache or without the decode calls the log shows.

Self-contained: standard library only at import time, no relative imports, because it is run
with `exec` from its source text; there the harvest hands it `GradingSetupError`, which a plain
import takes from `t5lesson.grading.harvest`.
"""

BEAMS = 2
SHORT = -1  # stands where a returned row has no token: the grader pads generate()'s tokens alike
OFFSET_POSITIONS = 64  # decoder positions with an offset of their own; later ones share the last
OFFSET_STEPS = 32  # the offsets are multiples of 1/16 in [-2, 2]: exact in float32 on every machine


try:  # run from its source by the harvest (in the kernel, or by check()): the harvest's own class is given
    GradingSetupError  # noqa: B018  # pyright: ignore[reportUnboundVariable] (given by the harvest)
except NameError:  # imported as a module (by the exercise, by tests): the same class, from the engine
    from t5lesson.grading.harvest import GradingSetupError


def logit_offset(shift, vocab):
    """The offset added to each decoder position's logits, [OFFSET_POSITIONS, vocab] float32, from `shift`.

    Drawn with the standard library's integer generator and divided by 16, so that every machine
    (the kernel's, the grader's) gets the very same numbers."""
    import random

    import torch

    draw = random.Random(int(shift))
    steps = [[draw.randint(-OFFSET_STEPS, OFFSET_STEPS) for _ in range(vocab)] for _ in range(OFFSET_POSITIONS)]
    return torch.tensor(steps, dtype=torch.float32) / 16


def _check_form(out, batch, max_new_tokens, torch):
    """The returned tensor: [batch, at most 1 + max_new_tokens]."""
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != batch:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise GradingSetupError(f"beam_decode should return a tensor [batch={batch}, tokens], got {shape}")
    if out.shape[1] > 1 + max_new_tokens:
        raise GradingSetupError(f"beam_decode returned {out.shape[1]} tokens per row for at most "
                                f"{max_new_tokens} new tokens: the start token, then at most {max_new_tokens}")


def _check_padding(out):
    """Only padding after a row's EOS (rule 5): PAD, or EOS, which transformers' generate() writes there."""
    from t5lesson.seq2seq import EOS, PAD

    for row, tokens in enumerate(out.tolist()):
        if EOS in tokens[1:]:
            end = tokens.index(EOS, 1)
            after = [t for t in tokens[end + 1:] if t not in (PAD, EOS)]
            if after:
                raise GradingSetupError(f"row {row} of your answer goes on after its EOS (position {end}) with token "
                                        f"{after[0]}: a hypothesis ends with its EOS, and the rest of its row is "
                                        "PAD (0)")


def _check_calls(model, batch, max_new_tokens, torch):
    """What the call log says about the decoding: one token per beam, the cache, at most the budget."""
    from t5lesson.seq2seq import PAD

    if not model.calls:
        raise GradingSetupError("beam_decode never called model.decode")
    if len(model.calls) > max_new_tokens:
        raise GradingSetupError(f"model.decode was called {len(model.calls)} times for at most {max_new_tokens} "
                                "new tokens: one call per new token")
    for step, ((fed, had_cache), held) in enumerate(zip(model.calls, model.held, strict=True)):
        if fed.ndim != 2 or fed.shape[1] != 1:
            raise GradingSetupError(f"decode call {step + 1} was fed {tuple(fed.shape)} tokens: with the cache, "
                                    "feed only the newest token of each beam, [rows, 1]")
        if step == 0 and not torch.all(fed == PAD):
            raise GradingSetupError("decode call 1 was fed tokens other than the start token (PAD)")
        if fed.shape[0] not in (batch, BEAMS * batch):
            raise GradingSetupError(f"decode call {step + 1} was fed {fed.shape[0]} rows for {batch} strings: one "
                                    f"row per beam, {BEAMS} beams per string ({BEAMS * batch} rows)")
        if step and not had_cache:
            raise GradingSetupError(f"decode call {step + 1} got no cache: pass back the cache the previous call "
                                    "returned (its rows picked for the beams you keep)")
        if step and held != step:
            raise GradingSetupError(f"decode call {step + 1} got a cache of {held} tokens; after {step} calls it "
                                    f"holds {step}: pass back the cache the previous call returned")
        if step:
            _check_followed(model, step, batch, torch)


def _rows(cache, torch):
    """A cache as one flat tensor per row, so that rows compare with one torch.equal."""
    return torch.cat([t.reshape(t.shape[0], -1).float() for block in cache for t in block], dim=1)


def _check_followed(model, step, batch, torch):
    """Call step + 1 was handed rows of the cache call `step` returned, and fed tokens its logits rank
    among the best four of their row (or fillers for a string that is done, see the module docstring)."""
    from t5lesson.seq2seq import EOS, PAD

    logits, returned = model.returned[step - 1]
    given = model.given[step]
    try:
        before, now = _rows(returned, torch), _rows(given, torch)
    except (RuntimeError, TypeError, AttributeError, IndexError):
        raise GradingSetupError(f"decode call {step + 1} got a cache that is not made like the one decode "
                                "returns (a tuple of blocks, each four tensors [rows, heads, tokens, d_kv])") from None
    if now.shape[1] != before.shape[1]:
        raise GradingSetupError(f"decode call {step + 1} got a cache of another size than the one call {step} "
                                "returned: pass back that cache, its rows picked with tensor[rows]")
    fourth_best = logits[:, -1].float().topk(2 * BEAMS, dim=-1).values[:, -1]
    fed, fed_before = model.calls[step][0][:, 0], model.calls[step - 1][0][:, 0]
    for row in range(now.shape[0]):
        sources = [r for r in range(before.shape[0]) if torch.equal(now[row], before[r])]
        if not sources:
            raise GradingSetupError(f"decode call {step + 1} got a cache whose row {row} is none of the rows call "
                                    f"{step} returned: pass back the cache decode returned, its rows picked with "
                                    "tensor[rows] for the beams you keep")
        token = int(fed[row])
        if token in (PAD, EOS, int(fed_before[sources[0]])) or _among_best(logits, fourth_best, sources[0], token):
            continue  # a beam's next token, or a filler: PAD, EOS, or its last token again (a string that is done)
        string, per_string = row // (now.shape[0] // batch), before.shape[0] // batch
        siblings = range(string * per_string, (string + 1) * per_string)  # the rows of the same string
        if torch.equal(now, before) and any(_among_best(logits, fourth_best, r, token) for r in siblings):
            raise GradingSetupError(f"decode call {step + 1} got the cache call {step} returned with its rows unmoved, "
                                    f"but row {row} now holds a beam that came from another row: pick the cache "
                                    "rows of the beams you keep, tensor[rows]")
        raise GradingSetupError(f"decode call {step + 1} was fed token {token} in row {row}, none of the four best "
                                f"next tokens of the logits call {step} returned for that row: take each step's "
                                "tokens from decode's logits")


def _among_best(logits, fourth_best, row, token):
    """Whether `token` is one of the four best next tokens of `row` in a decode call's logits."""
    return 0 <= token < logits.shape[-1] and bool(logits[row, -1, token].float() >= fourth_best[row])


def adapt(function):
    """The function the harvesting code calls for each case of the decoding question."""
    import torch
    import transformers.models.t5.modeling_t5  # noqa: F401  (imported once, before the timed cases)

    from t5lesson.seq2seq import CONFIG, StepModel, padded, structured_model

    def run(seed, prompts, max_new_tokens, eos_scale=1.0, shift=None, **_ignored):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the model is tiny: on busy cores a thread pool makes each call many times slower
        try:
            offset = None if shift is None else logit_offset(shift, CONFIG["vocab_size"])
            model = StepModel(structured_model(seed, eos_scale), offset)
            input_ids, attention_mask = padded(prompts)
            with torch.no_grad():
                out = function(model, input_ids, attention_mask, max_new_tokens)
        finally:
            torch.set_num_threads(threads)
        _check_form(out, len(prompts), max_new_tokens, torch)
        _check_calls(model, len(prompts), max_new_tokens, torch)
        _check_padding(out)
        short = torch.full((len(prompts), 1 + max_new_tokens - out.shape[1]), SHORT)  # one width for every answer
        return torch.cat([out.cpu().long(), short], dim=1).double()

    return run
