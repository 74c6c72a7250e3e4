"""Inside the learner's kernel: run their greedy decoding on exercise 7's hidden cases.

Exercise 7's code question (`t5lesson.exercises.ex07_tiny_t5`) hands this file's text to the
harvesting code (`t5lesson.grading.harvest`), which runs it in a fresh namespace and calls
`adapt(the learner's function)`. The function it returns is called once per case with plain
data (a seed, digit strings, a token budget): it builds a seeded transformers T5 behind lesson
7's encode/decode interface (`t5lesson.seq2seq.StepModel`), calls the learner's
`greedy_decode(model, input_ids, attention_mask, max_new_tokens)`, checks from the model's call
log that it decoded with the cache (one new token per call, the cache passed back), and returns
the tokens. Nothing is compared here: the grader compares them with `generate()` in its own
process.

Self-contained: standard library only at import time, no relative imports, because it is run
with `exec` from its source text.
"""


class GradingSetupError(Exception):
    """The learner's function does not meet the contract (no cache used, a wrong result type, ...)."""


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
            raise GradingSetupError(f"greedy_decode should return a tensor [batch={len(prompts)}, tokens], "
                                    f"got {shape}")
        if not model.calls:
            raise GradingSetupError("greedy_decode never called model.decode")
        for step, (fed, had_cache) in enumerate(model.calls):
            if fed.shape[1] != 1:
                raise GradingSetupError(f"decode call {step + 1} was fed {fed.shape[1]} tokens: with the cache, "
                                        "feed only the newest token")
            if step and not had_cache:
                raise GradingSetupError(f"decode call {step + 1} got no cache: pass back the cache the previous "
                                        "call returned")
            if step < out.shape[1] and not torch.equal(fed[:, 0], out[:, step].to(fed.dtype)):
                raise GradingSetupError(f"decode call {step + 1} was not fed token {step} of the result (the "
                                        "start token first, then each new token)")
        return out.double()

    return run
