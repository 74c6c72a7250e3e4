"""Inside the learner's kernel: run their beam search on exercise 7's hidden cases.

Exercise 7's code question (`t5lesson.exercises.ex07_tiny_t5`) hands this file's text to the
harvesting code (`t5lesson.grading.harvest`), which runs it in a fresh namespace and calls
`adapt(the learner's function)`. The function it returns is called once per case with plain
data (a seed, digit strings, a token budget): it builds a seeded transformers T5 behind lesson
7's encode/decode interface (`t5lesson.seq2seq.StepModel`), calls the learner's
`beam_decode(model, input_ids, attention_mask, max_new_tokens)`, checks from the model's call
log that it decoded with the cache (one new token per row and call, the cache of the previous
call passed back) and returns the tokens, filled with -1 to the width of the token budget. Nothing is compared here: the
grader compares them with `generate(num_beams=2)` in its own process.

Self-contained: standard library only at import time, no relative imports, because it is run
with `exec` from its source text.
"""

BEAMS = 2
SHORT = -1  # stands where a returned row has no token: the grader pads generate()'s tokens alike


class GradingSetupError(Exception):
    """The learner's function does not meet the contract (no cache used, a wrong result type, ...)."""


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


def adapt(function):
    """The function the harvesting code calls for each case of the decoding question."""
    import torch
    import transformers.models.t5.modeling_t5  # noqa: F401  (imported once, before the timed cases)

    from t5lesson.seq2seq import StepModel, padded, random_model

    def run(seed, prompts, max_new_tokens, eos_scale=1.0, **_ignored):
        model = StepModel(random_model(seed, eos_scale))
        input_ids, attention_mask = padded(prompts)
        with torch.no_grad():
            out = function(model, input_ids, attention_mask, max_new_tokens)
        if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != len(prompts):
            shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise GradingSetupError(f"beam_decode should return a tensor [batch={len(prompts)}, tokens], "
                                    f"got {shape}")
        if out.shape[1] > 1 + max_new_tokens:
            raise GradingSetupError(f"beam_decode returned {out.shape[1]} tokens per row for at most "
                                    f"{max_new_tokens} new tokens: the start token, then at most {max_new_tokens}")
        _check_calls(model, len(prompts), max_new_tokens, torch)
        short = torch.full((len(prompts), 1 + max_new_tokens - out.shape[1]), SHORT)  # one width for every answer
        return torch.cat([out.cpu().long(), short], dim=1).double()

    return run
