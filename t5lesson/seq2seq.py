"""A tiny T5 configuration and a transformers T5 behind lesson 7's encode/decode interface.

Shared by lesson 7 (`t5lesson.lessons.tiny_t5`) and exercise 7's decoding question (its grader
and the driver that runs in the learner's kernel), so it sits in the core, which both may import.

    CONFIG, PAD, EOS                      the tiny T5's configuration and special tokens
    from_text("1234"), padded([...])      digit strings -> token ids (and an attention mask)
    t5_config(config)                     the matching transformers `T5Config`
    random_model(seed, eos_scale)         a seeded, untrained T5ForConditionalGeneration
    structured_model(seed, eos_scale)     the same, its decoder made to depend on earlier tokens and
                                          positions (exercise 7's grading and self-test models)
    StepModel(model, offset)              that model behind encode/decode, with a call log (and, for
                                          grading, an offset added to each decoder position's logits)
    generate_beams(model, ids, mask, n)   exercise 7's beam search as transformers' generate() does it,
                                          each row PAD after its EOS (for the learner's self-test)

transformers is imported only when a model is built.
"""
from __future__ import annotations

import threading
from typing import Any

import torch

from ._validate import ArgumentError, check_int

__all__ = ["PAD", "EOS", "FIRST_DIGIT", "CONFIG", "from_text", "padded", "t5_config", "random_model",
           "structured_model", "StepModel", "BEAM_SEARCH", "generate_beams"]

PAD, EOS, FIRST_DIGIT = 0, 1, 2
CONFIG = {"vocab_size": 12, "d_model": 32, "num_heads": 4, "d_kv": 8, "d_ff": 64, "layers": 2,
          "num_buckets": 16, "max_distance": 24}
# 16 buckets and max_distance 24: a bucketing with no ties (offsets where the float32 log lands
# exactly on a bucket edge), in the encoder and the decoder, so our bias equals transformers'
# on every CPU (see t5lesson.buckets).


def from_text(digits: str) -> torch.Tensor:
    """'3141' -> tensor [1, 5]: the digits as token ids, then EOS."""
    if not isinstance(digits, str) or not digits or not digits.isdigit() or not digits.isascii():
        raise ArgumentError(f"digits must be a non-empty string of the digits 0-9, got {digits!r}")
    return torch.tensor([[FIRST_DIGIT + int(c) for c in digits] + [EOS]])


def t5_config(config=CONFIG):
    """transformers' T5Config for our configuration: ReLU feed-forward (the original T5), no dropout."""
    from transformers import T5Config

    make: Any = T5Config  # takes its base class's keyword arguments (attn_implementation), which its signature omits
    return make(vocab_size=config["vocab_size"], d_model=config["d_model"], d_kv=config["d_kv"],
                d_ff=config["d_ff"], num_layers=config["layers"], num_decoder_layers=config["layers"],
                num_heads=config["num_heads"], relative_attention_num_buckets=config["num_buckets"],
                relative_attention_max_distance=config["max_distance"], dropout_rate=0.0,
                feed_forward_proj="relu", layer_norm_epsilon=1e-6, pad_token_id=PAD, eos_token_id=EOS,
                decoder_start_token_id=PAD, attn_implementation="eager")


def padded(strings) -> tuple[torch.Tensor, torch.Tensor]:
    """Digit strings -> (input_ids [n, longest + 1], attention_mask): each string, EOS, then padding."""
    if isinstance(strings, str) or not strings:
        raise ArgumentError(f"strings must be a non-empty list of digit strings, got {strings!r}")
    rows = [from_text(s)[0] for s in strings]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), PAD)
    for n, row in enumerate(rows):
        ids[n, :len(row)] = row
    return ids, (ids != PAD).long()


_SEEDING = threading.Lock()  # held while a model's weights are drawn from torch's global generator


def random_model(seed, eos_scale=1.0, config=CONFIG):
    """transformers' T5ForConditionalGeneration for `config`, its weights drawn as transformers
    initialises them from `torch.manual_seed(seed)` (the global random state is left as it was).

    Two rows of the tied embedding are then changed, so that an untrained model writes something
    worth comparing: the start/padding token's row is set to zero (otherwise the model, whose
    output layer is its input embedding, keeps writing the start token back), and the end
    token's row is multiplied by `eos_scale` (a negative scale, -3 or -6, makes some or all rows
    end at the first step).
    """
    from transformers import T5ForConditionalGeneration

    seed = check_int("seed", seed, minimum=0)
    # torch's generator is one for the process: a second thread that seeds it meanwhile (the grader
    # draws cases and computes expected results in threads) would change these weights
    with _SEEDING, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = T5ForConditionalGeneration(t5_config(config)).eval()
    with torch.no_grad():
        model.shared.weight[PAD] = 0.0
        model.shared.weight[EOS] *= float(eos_scale)
    return model


# structured_model's factors (see there), measured on 40 batches of four digit strings, 12 new tokens,
# no offset: a decoder that drops the cache gets other tokens in 121 of the 160 rows (37 of the 40
# batches), against 29 rows (18 batches) with random_model; 3.2 distinct tokens a row against 1.1,
# and 93 rows end before the budget against 34
SELF_BIAS_FACTOR, SELF_VALUE_FACTOR = 20.0, 4.0


def structured_model(seed, eos_scale=1.0, config=CONFIG):
    """`random_model(seed, eos_scale)` whose next token depends on the tokens before it and on where they are.

    An untrained T5 writes one token again and again: its decoder self-attention is too weak to
    matter, so each row's tokens hardly depend on what came before, and a decoder that forgets
    the cache still gets them right. Here every decoder block's self-attention is made strong:
    the relative-position table (decoder block 0's, which every block adds) is multiplied by
    SELF_BIAS_FACTOR, so each query looks at particular offsets, and the value and output
    projections by SELF_VALUE_FACTOR, so what it reads there moves the next token. The tokens
    then vary along a row, and a row ends (EOS) within a dozen tokens on many prompts.
    """
    model = random_model(seed, eos_scale, config)
    with torch.no_grad():
        blocks: Any = model.decoder.block  # an nn.ModuleList, which torch's stubs see as a plain Module
        blocks[0].layer[0].SelfAttention.relative_attention_bias.weight *= SELF_BIAS_FACTOR
        for block in blocks:
            attention = block.layer[0].SelfAttention
            attention.v.weight *= SELF_VALUE_FACTOR
            attention.o.weight *= SELF_VALUE_FACTOR
    return model


# exercise 7's beam search: transformers' generate() with these settings
BEAM_SEARCH = {"num_beams": 2, "do_sample": False, "early_stopping": True, "length_penalty": 0.0}


@torch.no_grad()
def generate_beams(model, input_ids, attention_mask, max_new_tokens) -> torch.Tensor:
    """`model.generate(..., **BEAM_SEARCH)`, each row's tokens after its EOS set to PAD.

    Exercise 7's rule 5 fills a row that ends sooner with PAD, as T5 pads; transformers 5.24's
    beam search writes EOS there instead (it takes a pad token of id 0 for none), so this puts
    PAD back, for comparing a beam search with generate() token for token."""
    tokens = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens,
                            **BEAM_SEARCH)
    ended = (tokens == EOS) & (torch.arange(tokens.shape[1]) > 0)
    after_end = (ended.cumsum(dim=1) - ended.long()) > 0  # positions after a row's first EOS
    return tokens.masked_fill(after_end, PAD)


class StepModel:
    """A transformers T5 behind lesson 7's interface, for exercise 7's decoding question.

        encoder_out = model.encode(input_ids, attention_mask)
        logits, cache = model.decode(decoder_ids, encoder_out, attention_mask, cache=None)

    `decode` returns the logits of every position fed [batch, fed, vocab] and the cache to pass to
    the next call: a tuple with one entry per decoder block, (self-attention keys, values,
    cross-attention keys, values), each [batch, heads, tokens, d_kv]. The self-attention ones grow
    by the tokens fed; the cross-attention ones are computed once. Plain tensors, so that beam
    search can pick a cache's rows (`tensor[rows]`) to follow its beams. `calls` lists, for each
    decode call, (the decoder ids fed, whether a cache was passed); `held`, the tokens each call's
    cache held (0 without one); `given`, copies of the caches passed (None without one), and
    `returned`, copies of what each call returned (logits, cache), so the exercise's driver can
    check that each call was handed the previous call's cache.

    `offset` ([positions, vocab], or None) is added to the logits of each decoder position (the
    position counts the tokens the cache held before it, so a decoder that drops the cache gets
    position 0's offset at every step). Exercise 7's grading adds one drawn from the case, and the
    grader's generate() the same, so that logits computed anywhere but in `decode` are wrong.
    """

    def __init__(self, model, offset=None):
        self._model = model.eval()
        self._offset = offset
        self.calls: list[tuple[torch.Tensor, bool]] = []
        self.held: list[int] = []
        self.given: list = []
        self.returned: list = []

    @torch.no_grad()
    def encode(self, input_ids, attention_mask):
        return self._model.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    @torch.no_grad()
    def decode(self, decoder_ids, encoder_out, attention_mask, cache=None):
        from transformers import EncoderDecoderCache

        held = 0 if cache is None else int(cache[0][0].shape[2])
        self.calls.append((torch.as_tensor(decoder_ids).clone(), cache is not None))
        self.held.append(held)
        self.given.append(None if cache is None else _copied(cache))
        out = self._model.decoder(input_ids=decoder_ids, encoder_hidden_states=encoder_out,
                                  encoder_attention_mask=attention_mask, use_cache=True,
                                  cache=None if cache is None else EncoderDecoderCache(list(cache)))
        hidden = out.last_hidden_state * self._model.model_dim ** -0.5  # T5's rescaling before the tied head
        logits = self._model.lm_head(hidden)
        if self._offset is not None:
            positions = (held + torch.arange(logits.shape[1])).clamp(max=self._offset.shape[0] - 1)
            logits = logits + self._offset[positions]
        blocks = zip(out.cache.self_attention_cache.layers, out.cache.cross_attention_cache.layers, strict=True)
        new_cache = tuple((s.keys, s.values, c.keys, c.values) for s, c in blocks)
        self.returned.append((logits.clone(), _copied(new_cache)))
        return logits, new_cache


def _copied(cache):
    """A copy of a cache's tensors, so that what the caller later does to theirs leaves the log as it was."""
    return tuple(tuple(torch.as_tensor(t).clone() for t in block) for block in cache)
