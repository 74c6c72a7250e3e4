"""Lesson 7's your-turn cells (block_forward, greedy) and exercise 7's beam search (q5): their slips."""
from __future__ import annotations

import numpy as np
import torch
from harness import QuestionCheck, TurnCheck, your_turn_answer

from t5lesson.lessons.tiny_t5 import block_forward as course_block_forward
from t5lesson.lessons.tiny_t5 import greedy as course_greedy
from t5lesson.lessons.tiny_t5_checks import WatchedModel, check_blocks
from t5lesson.seq2seq import CONFIG, EOS, PAD, padded

BLOCK = your_turn_answer("07_tiny_t5", "block_forward")
GREEDY = your_turn_answer("07_tiny_t5", "greedy")


def names() -> dict:
    return {"torch": torch, "PAD": PAD, "EOS": EOS}


# --- block_forward ---

def _config(rng) -> dict:
    heads, d_kv = int(rng.integers(1, 5)), int(rng.integers(2, 9))
    return {**CONFIG, "d_model": int(rng.integers(5, 24)), "num_heads": heads, "d_kv": d_kv,
            "d_ff": int(rng.integers(3, 40)), "num_buckets": int(rng.integers(4, 20)),
            "max_distance": int(rng.integers(10, 40))}


def _mask(rng, batch, n):
    lengths = rng.integers(1, n + 1, size=batch)
    return torch.tensor(np.arange(n)[None, :] < lengths[:, None]).long()


def _first_gap(got, want, what) -> str | None:
    a, b = _flat(got), _flat(want)
    if a is None or b is None or len(a) != len(b):
        return None if a == b else f"{what}: the result has another form"
    for k, (x, y) in enumerate(zip(a, b, strict=True)):
        if x is None or y is None:
            if (x is None) != (y is None):
                return f"{what}: item {k} is {'None' if x is None else 'a tensor'}"
            continue
        if x.shape != y.shape or not torch.allclose(x, y, atol=1e-5, rtol=0):
            return f"{what}: item {k} differs"
    return None


def _flat(value):
    if value is None or isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            inner = _flat(v)
            if inner is None:
                return None
            out += inner
        return out
    return None


def _stale_cross(block, encoder_out, encoder_mask):
    """A cross-attention cache from another encoder output: a block that recomputes it instead of
    reading the cache it is handed shows it here (the course's reads the cache)."""
    with torch.no_grad():
        _, _, present = block.cross(block.norm_cross(torch.randn(encoder_out.shape[0], 1, encoder_out.shape[2])),
                                    attention_mask=encoder_mask, key_value_states=encoder_out + 1.0, use_cache=True)
    return present


def block_differs(function, seed):
    """Encoder and decoder blocks of random sizes (nudged gains), handed a bias or not, padded, with and
    without a cache; the decoder's cross-attention cache taken from another encoder output."""
    rng = np.random.default_rng(seed)
    for trial in range(12):
        config = _config(rng)
        encoders, decoders = check_blocks(config, int(rng.integers(10 ** 6)))
        batch, n = int(rng.integers(1, 5)), int(rng.integers(1, 8))
        d = config["d_model"]
        x = torch.randn(batch, n, d)
        mask = _mask(rng, batch, n) if rng.integers(2) else None
        handed = None
        for i, block in enumerate(encoders):
            with torch.no_grad():
                want = course_block_forward(block, x, mask, handed)
                got = function(block, x, mask, handed)
            problem = _first_gap(got[:2], want[:2], f"trial {trial}, encoder block {i}")
            if problem:
                return problem
            handed = want[1]
        problem = _decoder_differs(function, rng, decoders, x, mask, trial)
        if problem:
            return problem
    return None


def _decoder_differs(function, rng, decoders, encoder_out, encoder_mask, trial):
    batch, d = encoder_out.shape[0], encoder_out.shape[2]
    pasts = [None, None]
    for step, fed in enumerate((int(rng.integers(1, 4)), 1, 1)):
        y, bias = torch.randn(batch, fed, d), None
        for i, block in enumerate(decoders):
            past = pasts[i]
            if past is not None and step == 2:
                past = (past[0], _stale_cross(block, encoder_out, encoder_mask))
            with torch.no_grad():
                want = course_block_forward(block, y, None, bias, past, encoder_out, encoder_mask)
                got = function(block, y, None, bias, past, encoder_out, encoder_mask)
            problem = _first_gap(got, want, f"trial {trial}, decoder block {i}, step {step + 1}")
            if problem:
                return problem
            y, bias, pasts[i] = want
    return None


def _block(*, self_bias="position_bias", cross_past="cross_past", returned_bias="position_bias",
           cross_mask="encoder_mask", cross_norm="block.norm_cross(x)", ff="block.ff(block.norm_ff(x))",
           self_cache="decoder", caches="(self_present, cross_present)", post_norm=False):
    """The course's block_forward with one part changed (each keyword is the text written there)."""
    first = ("    x = block.norm_self(x + out)\n" if post_norm else "    x = x + out\n")
    return f'''
def block_forward(block, x, mask, position_bias, past=None, encoder_out=None, encoder_mask=None):
    self_past, cross_past = past if past is not None else (None, None)
    decoder = block.cross is not None
    out, new_bias, self_present = block.self_attention(
        block.norm_self(x), attention_mask=mask, position_bias={self_bias}, past_key_value=self_past,
        use_cache={self_cache})
{first}    position_bias_in = position_bias
    position_bias = new_bias
    cross_present = None
    if decoder:
        out, _, cross_present = block.cross({cross_norm}, attention_mask={cross_mask},
                                            key_value_states=encoder_out, past_key_value={cross_past},
                                            use_cache=True)
        x = x + out
    x = x + {ff}
    return x, {returned_bias}, {caches}
'''


BLOCK_WRONG = {
    "ignores the bias handed down from block 0 (the issue's)": _block(self_bias="None"),
    "ignores the cross-attention cache (the newcomer's)": _block(cross_past="None"),
    "returns the bias it was handed, not the one self-attention returned": _block(returned_bias="position_bias_in"),
    "cross-attention masked with the decoder's own mask": _block(cross_mask="mask"),
    "cross-attention on x without its norm": _block(cross_norm="x"),
    "the feed-forward on x without its norm": _block(ff="block.ff(x)"),
    "the decoder keeps no self-attention cache": _block(self_cache="False"),
    "the two caches swapped": _block(caches="(cross_present, self_present)"),
    "post-norm: the norm after the residual sum": _block(post_norm=True),
}

BLOCK_RIGHT = {
    "the transformers way: one function per sub-layer, outputs as tuples (T5Block, T5LayerSelfAttention)": '''
def _self_layer(block, hidden_states, attention_mask, position_bias, past_key_value, use_cache):
    normed = block.norm_self(hidden_states)
    attention_output = block.self_attention(normed, attention_mask=attention_mask, position_bias=position_bias,
                                            past_key_value=past_key_value, use_cache=use_cache)
    return (hidden_states + attention_output[0],) + tuple(attention_output[1:])


def _cross_layer(block, hidden_states, key_value_states, attention_mask, past_key_value):
    normed = block.norm_cross(hidden_states)
    attention_output = block.cross(normed, attention_mask=attention_mask, key_value_states=key_value_states,
                                   past_key_value=past_key_value, use_cache=True)
    return (hidden_states + attention_output[0],) + tuple(attention_output[1:])


def block_forward(block, x, mask, position_bias, past=None, encoder_out=None, encoder_mask=None):
    self_attn_past = past[0] if past is not None else None
    cross_attn_past = past[1] if past is not None else None
    hidden_states, position_bias, present = _self_layer(block, x, mask, position_bias, self_attn_past, True)
    cross_present = None
    if block.cross is not None:
        hidden_states, _, cross_present = _cross_layer(block, hidden_states, encoder_out, encoder_mask,
                                                       cross_attn_past)
    hidden_states = hidden_states + block.ff(block.norm_ff(hidden_states))
    return hidden_states, position_bias, (present, cross_present)
''',
    "a list of sub-layers walked in order": '''
def block_forward(block, x, mask, position_bias, past=None, encoder_out=None, encoder_mask=None):
    pasts = list(past) if past is not None else [None, None]
    presents = [None, None]
    bias = position_bias
    steps = [("self", block.norm_self, block.self_attention)]
    if block.cross is not None:
        steps.append(("cross", block.norm_cross, block.cross))
    for k, (kind, norm, attention) in enumerate(steps):
        if kind == "self":
            out, bias, presents[k] = attention(norm(x), attention_mask=mask, position_bias=bias,
                                               past_key_value=pasts[k], use_cache=block.cross is not None)
        else:
            out, _, presents[k] = attention(norm(x), attention_mask=encoder_mask, key_value_states=encoder_out,
                                            past_key_value=pasts[k], use_cache=True)
        x = out + x
    return block.ff(block.norm_ff(x)) + x, bias, tuple(presents)
''',
}


# --- greedy ---

def _greedy_log(function, seed, eos_scale, prompts, budget, use_cache):
    """(tokens, [(shape fed, had a cache)] per decode call); use_cache None: the default."""
    model = WatchedModel(CONFIG, seed, eos_scale)
    ids, mask = padded(prompts)
    with torch.no_grad():
        out = function(model, ids, mask, budget) if use_cache is None else \
            function(model, ids, mask, budget, use_cache=use_cache)
    return out, [(tuple(fed.shape), had) for fed, had in model.calls]


def greedy_differs(function, seed):
    """Random models (the end token's scale drawn), batches of 1 to 5 padded prompts, budgets 1 to 12, each
    way: the tokens and what each decode call was fed (its shape, and whether it had a cache)."""
    rng = np.random.default_rng(seed)
    for trial in range(14):
        model_seed, eos_scale = int(rng.integers(10 ** 6)), float(rng.uniform(-2.5, 2.5))
        prompts = ["".join(map(str, rng.integers(0, 10, size=int(rng.integers(1, 9)))))
                   for _ in range(int(rng.integers(1, 6)))]
        budget, use_cache = int(rng.integers(1, 13)), (None, True, False)[trial % 3]
        want = _greedy_log(course_greedy, model_seed, eos_scale, prompts, budget, use_cache)
        got = _greedy_log(function, model_seed, eos_scale, prompts, budget, use_cache)
        if not (isinstance(got[0], torch.Tensor) and got[0].shape == want[0].shape and torch.equal(got[0], want[0])):
            return f"trial {trial} ({prompts}, {budget} tokens, use_cache={use_cache}): other tokens"
        if got[1] != want[1]:
            return f"trial {trial} (use_cache={use_cache}): decode fed {got[1][:3]}, the course's {want[1][:3]}"
    return None


def _greedy(*, fed="out[:, -1:]", cached="use_cache", cache_in="cache", pick="logits[:, -1].argmax(-1)",
            token="torch.where(done, PAD, choice)", stop="done.all()", start="PAD", result="out",
            mask="attention_mask", default="True"):
    """The course's greedy with one part changed (each keyword is the text written there)."""
    return f'''
@torch.no_grad()
def greedy(model, input_ids, attention_mask, max_new_tokens, use_cache={default}):
    encoder_out = model.encode(input_ids, attention_mask)
    out = torch.full((input_ids.shape[0], 1), {start})
    done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
    cache = None
    for _ in range(max_new_tokens):
        if {cached}:
            logits, cache = model.decode({fed}, encoder_out, {mask}, {cache_in})
        else:
            logits, _ = model.decode(out, encoder_out, {mask})
        choice = {pick}
        token = {token}
        out = torch.cat([out, token[:, None]], dim=1)
        done |= token == EOS
        if {stop}:
            break
    return {result}
'''


GREEDY_WRONG = {
    "never uses the cache: the whole prefix every step, both ways (the issue's)": _greedy(cached="False"),
    "always the cache, whatever use_cache says": _greedy(cached="True"),
    "with the cache, the whole prefix fed again": _greedy(fed="out"),
    "with the cache, the cache never passed back": _greedy(cache_in="None"),
    "no padding after a row's end token": _greedy(token="choice"),
    "stops when the first row ends": _greedy(stop="done.any()"),
    "never stops early: runs to max_new_tokens": _greedy(stop="False"),
    "the first position's logits, not the last": _greedy(pick="logits[:, 0].argmax(-1)"),
    "the end token itself replaced by padding": _greedy(token="torch.where(done | (choice == EOS), PAD, choice)"),
    "no start token in the answer": _greedy(result="out[:, 1:]"),
    "the encoder's padding not passed to decode": _greedy(mask="None"),
    "use_cache off by default": _greedy(default="False"),
}

GREEDY_RIGHT = {
    "the transformers way: unfinished_sequences, padding mixed in by multiplication (generate's greedy)": '''
@torch.no_grad()
def greedy(model, input_ids, attention_mask, max_new_tokens, use_cache=True):
    encoder_outputs = model.encode(input_ids, attention_mask)
    decoder_input_ids = torch.full((input_ids.shape[0], 1), PAD, dtype=torch.long)
    unfinished_sequences = torch.ones(input_ids.shape[0], dtype=torch.long)
    past_key_values = None
    for _ in range(max_new_tokens):
        if use_cache:
            next_token_logits, past_key_values = model.decode(decoder_input_ids[:, -1:], encoder_outputs,
                                                              attention_mask, past_key_values)
        else:
            next_token_logits, _ = model.decode(decoder_input_ids, encoder_outputs, attention_mask)
        next_tokens = torch.argmax(next_token_logits[:, -1, :], dim=-1)
        next_tokens = next_tokens * unfinished_sequences + PAD * (1 - unfinished_sequences)
        decoder_input_ids = torch.cat([decoder_input_ids, next_tokens[:, None]], dim=-1)
        unfinished_sequences = unfinished_sequences & (next_tokens != EOS).long()
        if unfinished_sequences.max() == 0:
            break
    return decoder_input_ids
''',
    "a list per row, a tensor at the end": '''
@torch.no_grad()
def greedy(model, input_ids, attention_mask, max_new_tokens, use_cache=True):
    memory = model.encode(input_ids, attention_mask)
    rows = [[PAD] for _ in range(input_ids.shape[0])]
    cache = None
    for step in range(max_new_tokens):
        if use_cache:
            newest = torch.tensor([[row[-1]] for row in rows])
            logits, cache = model.decode(newest, memory, attention_mask, cache)
        else:
            logits = model.decode(torch.tensor(rows), memory, attention_mask)[0]
        best = logits[:, -1].argmax(-1).tolist()
        for row, token in zip(rows, best):
            row.append(PAD if EOS in row[1:] else token)
        if all(EOS in row[1:] for row in rows):
            break
    return torch.tensor(rows)
''',
}

CHECKS = [
    TurnCheck(id="your turn block_forward", answer=BLOCK, wrong=BLOCK_WRONG, right=BLOCK_RIGHT,
              differs=block_differs, namespace=names, entry="block_forward", max_mutants=25),
    TurnCheck(id="your turn greedy", answer=GREEDY, wrong=GREEDY_WRONG, right=GREEDY_RIGHT,
              differs=greedy_differs, namespace=names, entry="greedy", max_mutants=25),
]


# --- exercise 7 q5: beam search with two beams ---

def _solution() -> str:
    import json

    from harness import ROOT

    nb = json.loads((ROOT / "solutions" / "07_tiny_t5.ipynb").read_text(encoding="utf-8"))
    [cell] = [c for c in nb["cells"] if c["metadata"].get("t5lesson", {}).get("cell") == "q5-answer"]
    lines = [line for line in "".join(cell["source"]).splitlines() if "### " not in line]
    return "\n".join(lines) + "\n"


BEAM = _solution()


def _edit(*edits) -> str:
    source = BEAM
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new)
    return source


def _beam_trial(rng, trial):
    """One trial's model (seed, end scale, shift), budget and prompts: odd and even batches of 1 to 9
    prompts of 1 to 10 digits, budgets from 1 to 16 (short ones often: rules 3 and 4 bite there)."""
    kwargs = (int(rng.integers(10 ** 6)), round(float(rng.uniform(-2.0, 4.0)), 2), int(rng.integers(1, 2 ** 31)))
    budget = (2, 12, 3, 1, 4, 16, 2, 5)[trial % 8]
    prompts = ["".join(map(str, rng.integers(0, 10, size=int(rng.integers(1, 11)))))
               for _ in range(int(rng.integers(1, 10)))]
    return kwargs, budget, prompts


def _beam_gap(got, want, gaps, budget) -> str | None:
    """Where `got` (the function's tensor) differs from the course's answers: the tokens up to each row's
    end (rows decided by a near tie skipped), then only padding (PAD, or EOS as generate() writes)."""
    from t5lesson.exercises.ex07_tiny_t5 import MARGIN

    if not isinstance(got, torch.Tensor) or got.ndim != 2 or got.shape[0] != len(want) or got.shape[1] > 1 + budget:
        return f"a result of another form: {tuple(got.shape) if isinstance(got, torch.Tensor) else type(got)}"
    for row, (answer, gap) in enumerate(zip(want, gaps, strict=True)):
        mine = [int(t) for t in got[row].tolist()]
        if min(gap, default=1.0) > MARGIN and mine[:len(answer)] != answer:
            return f"row {row}: {mine}, expected {answer}"
        if any(t not in (PAD, EOS) for t in mine[len(answer):]):
            return f"row {row}: {mine} goes on after its answer {answer} with other tokens than padding"
    return None


def beam_differs(function, seed):
    """Random structured models (float32, the question's offset), odd and even batches, budgets 1 to 16,
    against the course's rules (the bank's beam_search, float64): the tokens of each row up to its end
    (a row decided by a near tie skipped), then the padding."""
    from t5lesson.exercises import one_torch_thread
    from t5lesson.exercises.ex07_tiny_t5 import beam_search, grading_model

    rng = np.random.default_rng(seed)
    for trial in range(16):
        kwargs, budget, prompts = _beam_trial(rng, trial)
        ids, mask = padded(prompts)
        gaps = [[] for _ in prompts]
        with torch.no_grad(), one_torch_thread():
            want = beam_search(grading_model(*kwargs, exact=True), ids, mask, budget, gaps=gaps)
            got = function(grading_model(*kwargs), ids, mask, budget)
        problem = _beam_gap(got, want, gaps, budget)
        if problem:
            return f"trial {trial} ({len(prompts)} prompts, budget {budget}), {problem}"
    return None


BEAM_WRONG = {
    "a string done at its first finished hypothesis (the issue's)": _edit(
        ("if len(finished[b]) < beams:", "if len(finished[b]) < 1:"),
        ("all(len(f) == beams for f in finished)", "all(len(f) >= 1 for f in finished)")),
    "no last-step rule: an open beam counts only when nothing finished (the newcomer's)": _edit(
        ("for r in range(beams) if last or token[b, r] == EOS]",
         "for r in range(beams) if token[b, r] == EOS]\n"
         "            if last and not finished[b] and not ended:\n"
         "                ended = [(top[b, 0].item(), torch.cat([tokens[row[b, 0]], token[b, 0:1]]))]")),
    "the second-best finished hypothesis returned": _edit(
        ("best = [max(f, key=lambda h: h[0])[1] for f in finished]",
         "best = [min(f, key=lambda h: h[0])[1] for f in finished]")),
    "an end token finishes a hypothesis at any rank of the four": _edit(
        ("for r in range(beams) if last or token[b, r] == EOS]",
         "for r in range(2 * beams) if last and r < beams or token[b, r] == EOS]")),
    "the cache dropped (the newest token at position 0 every step)": _edit(
        ("model.decode(tokens[:, -1:], encoder_out, mask, cache)", "model.decode(tokens[:, -1:], encoder_out, mask)")),
    "the whole prefix fed with the cache": _edit(
        ("model.decode(tokens[:, -1:], encoder_out, mask, cache)", "model.decode(tokens, encoder_out, mask, cache)")),
    "no padding after a row's end": _edit(
        ("out = torch.full((batch, max(len(t) for t in best)), PAD)",
         "out = torch.full((batch, max(len(t) for t in best)), -1)")),
    "both beams start at score 0 (the first step expands the same beam twice)": _edit(
        ("torch.tensor([0.0, -float(\"inf\")])", "torch.tensor([0.0, 0.0])")),
}

BEAM_RIGHT = {
    "the transformers way: a list of finished hypotheses per string (BeamHypotheses), candidates walked by "
    "rank (BeamSearchScorer.process), padded beams for done strings": '''
class BeamHypotheses:
    """One string's finished hypotheses, the best num_beams kept, as transformers' BeamHypotheses."""

    def __init__(self, num_beams, length_penalty, early_stopping):
        self.num_beams, self.length_penalty, self.early_stopping = num_beams, length_penalty, early_stopping
        self.beams, self.worst_score = [], 1e9

    def __len__(self):
        return len(self.beams)

    def add(self, hyp, sum_logprobs, generated_len):
        score = sum_logprobs / (generated_len ** self.length_penalty)
        if len(self) < self.num_beams or score > self.worst_score:
            self.beams.append((score, hyp))
            if len(self) > self.num_beams:
                sorted_next_scores = sorted([(s, idx) for idx, (s, _) in enumerate(self.beams)])
                del self.beams[sorted_next_scores[0][1]]
                self.worst_score = sorted_next_scores[1][0]
            else:
                self.worst_score = min(score, self.worst_score)

    def is_done(self):
        return len(self) >= self.num_beams and self.early_stopping is True


def _process(beam_hyps, done, decoder_input_ids, next_token_scores, next_tokens, next_indices, cur_len, last):
    batch_size, num_beams = len(beam_hyps), beam_hyps[0].num_beams
    next_beam_scores = torch.zeros(batch_size, num_beams)
    next_beam_tokens = torch.full((batch_size, num_beams), PAD)
    next_beam_indices = torch.zeros(batch_size, num_beams, dtype=torch.long)
    for batch_idx in range(batch_size):
        if done[batch_idx]:  # a done string's beams are padding from its first row
            next_beam_indices[batch_idx] = batch_idx * num_beams
            continue
        beam_idx = 0
        for beam_token_rank in range(2 * num_beams):
            next_token = next_tokens[batch_idx, beam_token_rank]
            next_score = next_token_scores[batch_idx, beam_token_rank]
            batch_beam_idx = batch_idx * num_beams + next_indices[batch_idx, beam_token_rank]
            if next_token.item() == EOS or last:  # at the last step every candidate stops
                if beam_token_rank < num_beams:
                    hyp = torch.cat([decoder_input_ids[batch_beam_idx], next_token[None]])
                    beam_hyps[batch_idx].add(hyp, next_score.item(), cur_len)
            else:
                next_beam_scores[batch_idx, beam_idx] = next_score
                next_beam_tokens[batch_idx, beam_idx] = next_token
                next_beam_indices[batch_idx, beam_idx] = batch_beam_idx
                beam_idx += 1
            if beam_idx == num_beams:
                break
        done[batch_idx] = beam_hyps[batch_idx].is_done()
    return next_beam_scores.view(-1), next_beam_tokens.view(-1), next_beam_indices.view(-1)


def beam_decode(model, input_ids, attention_mask, max_new_tokens):
    num_beams, batch_size = 2, input_ids.shape[0]
    encoder_outputs = model.encode(input_ids, attention_mask).repeat_interleave(num_beams, dim=0)
    mask = attention_mask.repeat_interleave(num_beams, dim=0)
    # generate(num_beams=2, early_stopping=True, length_penalty=0.0): raw sums of log-probabilities
    beam_hyps = [BeamHypotheses(num_beams, length_penalty=0.0, early_stopping=True) for _ in range(batch_size)]
    done = [False] * batch_size
    decoder_input_ids = torch.full((batch_size * num_beams, 1), PAD)
    beam_scores = torch.zeros(batch_size, num_beams)
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.view(-1)
    past_key_values = None
    for cur_len in range(1, max_new_tokens + 1):
        logits, past_key_values = model.decode(decoder_input_ids[:, -1:], encoder_outputs, mask, past_key_values)
        next_token_scores = torch.log_softmax(logits[:, -1, :].float(), dim=-1) + beam_scores[:, None]
        vocab_size = next_token_scores.shape[-1]
        next_token_scores, next_tokens = next_token_scores.view(batch_size, -1).topk(2 * num_beams, dim=1)
        next_indices, next_tokens = next_tokens // vocab_size, next_tokens % vocab_size
        beam_scores, beam_next_tokens, beam_idx = _process(beam_hyps, done, decoder_input_ids, next_token_scores,
                                                           next_tokens, next_indices, cur_len,
                                                           cur_len == max_new_tokens)
        if all(done) or cur_len == max_new_tokens:
            break
        decoder_input_ids = torch.cat([decoder_input_ids[beam_idx], beam_next_tokens[:, None]], dim=-1)
        past_key_values = tuple(tuple(t[beam_idx] for t in layer) for layer in past_key_values)  # _reorder_cache
    best = [max(hyps.beams, key=lambda h: h[0])[1] for hyps in beam_hyps]
    decoded = torch.full((batch_size, max(len(hypo) for hypo in best)), PAD)
    for i, hypo in enumerate(best):
        decoded[i, :len(hypo)] = hypo
    return decoded
''',
    "the candidates by a stable sort instead of topk": _edit(
        ("top, index = total.view(batch, -1).topk(2 * beams)",
         "top, index = total.view(batch, -1).sort(dim=-1, descending=True, stable=True)\n"
         "        top, index = top[:, :2 * beams], index[:, :2 * beams]")),
    "log-probabilities in float64": _edit(
        ("torch.log_softmax(logits[:, -1].float(), dim=-1)", "torch.log_softmax(logits[:, -1].double(), dim=-1)"),
        ("torch.tensor([0.0, -float(\"inf\")])", "torch.tensor([0.0, -float(\"inf\")], dtype=torch.float64)")),
}

CHECKS.append(QuestionCheck(id="exercise 07 q5", answer=BEAM, wrong=BEAM_WRONG, right=BEAM_RIGHT,
                            differs=beam_differs, namespace=names, entry="beam_decode", max_mutants=12,
                            exercise="07_tiny_t5", question="q5"))
