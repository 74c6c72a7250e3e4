"""Exercise 07: lesson 7, a whole tiny T5 (where the bias is, the cache, reading learned tables,
beam search with the cache).

Notebook: solutions/07_tiny_t5.ipynb (source), exercises/07_tiny_t5.ipynb.
Keys are salted hashes (`t5lesson.grading.questions.kinds.answer_hash`); to change an answer, recompute its
hash with `t5grade hash QUESTION ANSWER --exercise 07_tiny_t5`.

The code question (q5) goes one step beyond lesson 7's greedy decoding: beam search with two
beams, the learner's `beam_decode(model, input_ids, attention_mask, max_new_tokens)`. It is
graded like exercise 6's module question, in two processes:

- in the learner's kernel, `t5lesson.exercises.tiny_t5_driver` builds each case's model, a
  `structured_model` (an untrained T5 whose next token depends on the tokens before it and on
  their positions) behind lesson 7's encode/decode interface, whose `decode` adds an offset,
  drawn from the case, to each position's logits; it runs the learner's function and checks
  from the call log that it decoded with the cache decode returned and with decode's logits
  (the driver's docstring says how);
- here, `reference_beams` runs transformers' `generate(num_beams=2)` on the same weights, the
  same offset added to the logits of each step, and the tokens up to each row's end token must
  agree exactly.

The grader runs cases drawn from the instructor's seed (`hidden_cases`, the recipe of
`Code.hidden`); `check()` runs the fixed `CASE_SPECS`, made by the same recipe. Each topic is
drawn again until its case does what the topic says (`TOPICS`: rows that end early must end
early, ...) and is robust and telling (`unfit`):

- every score that decides a beam is more than MARGIN (1e-3) from the next one
  (`beam_search(..., gaps=...)` lists them), hundreds of times float32's rounding of sums of
  this size, so the answer is the same on every CPU;
- the usual shortcuts give other tokens on the case itself, not only a failed log check: a
  decoder that drops the cache (the newest token alone, no cache: every step at position 0),
  one that feeds the whole prefix with the cache (positions shifted, keys twice), logits taken
  anywhere but from decode (the model underneath, or generate reached around the blocking: no
  offset), and greedy decoding (lesson 7's, pasted). Cases of one new token need no cache, and
  are the same greedily: they are exempt from all but the offset.

The recipe decodes in float64 (`draw_case` says why), the kernel and the reference in float32.

The public cases ship with the package, so their tokens can be pasted; the drawn ones exist
only in the grader's process, and their seeds are drawn from another range (from 1000 on) than
the public ones' (below 1000), so no public case comes back.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..grading.questions.kinds import Case, FreeText, MultipleChoice, Numeric
from ..grading.questions.module import Expected, ModuleCode
from ..grading.verdict import NOT_ATTEMPTED
from ..seq2seq import BEAM_SEARCH
from . import Exercise, id_of_module, one_torch_thread
from .tiny_t5_driver import SHORT, logit_offset

__all__ = ["EXERCISE", "GENERATE", "MARGIN", "TOPICS", "CASE_SPECS", "reference_beams", "reference_greedy",
           "diagnose", "beam_search", "grading_model", "hidden_cases", "draw_case", "unfit"]

GENERATE = BEAM_SEARCH  # what the question's beam search is: transformers' generate() with these settings
BEAMS = 2
MARGIN = 1e-3  # the least gap between two scores that decide a beam (see the module docstring)
PUBLIC_SEEDS, DRAWN_SEEDS = (0, 1000), (1000, 10 ** 6)  # the ranges of model seeds: public cases, drawn ones


# --- the case's model, as the kernel and the grader build it ---

def grading_model(seed, eos_scale=1.0, shift=None, exact=False):
    """The case's model behind lesson 7's interface, as the driver builds it in the kernel; `exact`: in
    float64, as the recipe decodes (see `draw_case`)."""

    from ..seq2seq import CONFIG, StepModel, structured_model

    offset = None if shift is None else logit_offset(shift, CONFIG["vocab_size"])
    model = structured_model(seed, eos_scale)
    if exact:
        model, offset = model.double(), None if offset is None else offset.double()
    return StepModel(model, offset)


def _add_offset(model, offset) -> None:
    """Make `model`'s generate() see the logits StepModel.decode gives: generate() calls the tied head
    once per step, on one token per row, the step's position; the hook adds that position's offset."""
    steps = []

    def hook(module, inputs, logits):
        if logits.shape[1] != 1:
            raise RuntimeError("generate() computed the logits of more than one position in one step")
        steps.append(min(len(steps), offset.shape[0] - 1))
        return logits + offset[steps[-1]]

    model.lm_head.register_forward_hook(hook)


def _generate(seed, prompts, max_new_tokens, eos_scale=1.0, shift=None, **settings):
    import torch

    from ..seq2seq import CONFIG, padded, structured_model

    with torch.no_grad(), one_torch_thread():
        model = structured_model(seed, eos_scale)
        if shift is not None:
            _add_offset(model, logit_offset(shift, CONFIG["vocab_size"]))
        input_ids, attention_mask = padded(prompts)
        # transformers' own annotation of generate's `self` does not admit T5ForConditionalGeneration
        tokens = model.generate(  # pyright: ignore[reportAttributeAccessIssue]
            input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=max_new_tokens, **settings)
    return tokens.double().numpy()


def _up_to_end(tokens: np.ndarray, max_new_tokens: int) -> np.ndarray:
    """One width for every answer (the driver fills a learner's rows alike), and NaN after each row's end
    token: what follows it is padding, and not compared (the driver checks that the learner's is PAD)."""
    from ..seq2seq import EOS

    out = np.full((tokens.shape[0], 1 + max_new_tokens), float(SHORT))
    out[:, :tokens.shape[1]] = tokens
    for row in out:
        ends = np.flatnonzero(row[1:] == EOS)
        if ends.size:
            row[ends[0] + 2:] = np.nan
    return out


def reference_beams(seed, prompts, max_new_tokens, eos_scale=1.0, shift=None) -> Expected:
    """What `generate(num_beams=2)` gives on the case's model, up to each row's end token, exactly."""
    tokens = _generate(seed, prompts, max_new_tokens, eos_scale, shift, **GENERATE)
    return Expected(_up_to_end(tokens, max_new_tokens), rtol=0.0, atol=0.0)


def reference_greedy(seed, prompts, max_new_tokens, eos_scale=1.0, shift=None) -> np.ndarray:
    """Greedy decoding (one beam) on the same model, up to each row's end token."""
    return _greedy_tokens(seed, tuple(prompts), max_new_tokens, eos_scale, shift).copy()


@lru_cache(maxsize=64)
def _greedy_tokens(seed, prompts, max_new_tokens, eos_scale, shift) -> np.ndarray:
    """Computed once per case in a grading run: `diagnose` asks for it on every answer that fails the case."""
    tokens = _generate(seed, prompts, max_new_tokens, eos_scale, shift, do_sample=False, num_beams=1)
    return _up_to_end(tokens, max_new_tokens)


# --- the question's rules, and what its usual slips give ---

def _decision(candidates, last: bool, eos: int):
    """What a string's step decides from its candidates (score, beam, token), best first: the ones
    that finish (among the best two, ending in EOS, or any at the last step) and the two that go on."""
    ends = frozenset((k, t) for _, k, t in candidates[:BEAMS] if last or t == eos)
    going = frozenset((k, t) for _, k, t in [c for c in candidates[:2 * BEAMS] if c[2] != eos][:BEAMS])
    return ends, going


def _deciding_gaps(candidates, last: bool, eos: int) -> list[float]:
    """The gaps between neighbouring candidates whose order changes the step's decision (swapping two
    non-EOS candidates that both go on, say, changes nothing, and their gap does not count)."""
    decided = _decision(candidates, last, eos)
    gaps = []
    for r in range(2 * BEAMS):
        swapped = candidates[:r] + [candidates[r + 1], candidates[r]] + candidates[r + 2:]
        if _decision(swapped, last, eos) != decided:
            gaps.append(candidates[r][0] - candidates[r + 1][0])
    return gaps


EOS_RANKS = {"any_rank": 2 * BEAMS}  # how far down the candidates an end token finishes, by beam_search's rule


def beam_search(model, input_ids, attention_mask, max_new_tokens, feed="newest", gaps=None, firsts=None,
                against=None, rule="generate") -> list[list[int]]:
    """The question's five rules on a StepModel: each string's best finished hypothesis, start token
    first, up to its EOS. Equal to generate(num_beams=2) (tests/exercises/test_beam_question.py).

    feed: "newest", the newest token of each beam with the cache (right); "uncached", the newest
    token without a cache (a slip: every token at position 0, nothing before it seen); "prefix", every
    token so far with the cache (a slip: positions shifted, the earlier tokens' keys twice).
    gaps: one list per string, each extended with every gap between two of its scores whose order
    decides something: two neighbouring candidates while the string is not done, at a step where
    swapping them changes what finishes or goes on, and two neighbouring finished hypotheses as it
    ranks them. firsts: a list extended with each string's most likely first token (greedy's).
    against: answers to compare with; the search stops once a string is done with another answer,
    and returns the answers as they stand (the recipe asks only whether a slip's answers differ).
    rule: "generate", the question's rules; three slips of them, for the recipe: "first", a string is
    done at its first finished hypothesis; "no_last", no last-step rule (a string that has not
    finished by the budget takes its best open beam, one that has, its finished hypothesis);
    "any_rank", an end token finishes a hypothesis at any rank of the 2 * BEAMS candidates.
    Blocked while the learner's answer runs, and its steps below with it (see the question's `blocked`).
    """
    from ..seq2seq import PAD

    batch = input_ids.shape[0]
    encoder_out = model.encode(input_ids, attention_mask).repeat_interleave(BEAMS, 0)
    mask = attention_mask.repeat_interleave(BEAMS, 0)  # row b * BEAMS + k: beam k of string b
    # both beams start from the start token; the second's -inf makes the first step expand one beam only
    running = [[(0.0, [PAD]), (-math.inf, [PAD])] for _ in range(batch)]  # (score, tokens) of each beam
    finished: list[list] = [[] for _ in range(batch)]  # (score, tokens) of each finished hypothesis
    cache, needed = None, 1 if rule == "first" else BEAMS
    for step in range(max_new_tokens):
        log_p, returned = _next_log_probs(model, running, encoder_out, mask, cache, feed)
        last = step == max_new_tokens - 1
        kept = []  # the rows of the beams that go on, in the new beams' order: the cache follows them
        for b in range(batch):
            candidates = _candidates(running[b], log_p[b * BEAMS:(b + 1) * BEAMS])
            if step == 0 and firsts is not None:
                firsts.append(candidates[0][2])
            if len(finished[b]) < needed:  # with BEAMS finished, a string is done
                finished[b] = _finished_after(finished[b], running[b], candidates, last and rule != "no_last",
                                              None if gaps is None else gaps[b], EOS_RANKS.get(rule, BEAMS))
                if against is not None and len(finished[b]) == BEAMS and finished[b][0][1] != against[b]:
                    return _answers(finished, running)
            going = _going_on(candidates)
            kept += [b * BEAMS + k for _, k, _ in going]
            running[b] = [(s, running[b][k][1] + [t]) for s, k, t in going]
        if last or all(len(f) >= needed for f in finished):
            break
        cache = _cache_rows(returned, kept)
    return _answers(finished, running)


def _answers(finished, running) -> list[list[int]]:
    """Each string's best finished hypothesis, or its best open beam where none finished."""
    return [f[0][1] if f else beams[0][1] for f, beams in zip(finished, running, strict=True)]


def _next_log_probs(model, running, encoder_out, mask, cache, feed: str):
    """One decode call for every beam of every string (fed as `beam_search`'s `feed` says): each row's
    log-probabilities of the next token, as float64 Python floats, and the cache decode returned."""
    import torch

    histories = torch.tensor([tokens for beams in running for _, tokens in beams])
    fed = histories if feed == "prefix" else histories[:, -1:]
    logits, returned = model.decode(fed, encoder_out, mask, None if feed == "uncached" else cache)
    return torch.log_softmax(logits[:, -1].double(), dim=-1).tolist(), returned


def _candidates(beams, log_p) -> list[tuple[float, int, int]]:
    """Every one-token extension of a string's beams, (score, beam, token), best first. `log_p`: the
    string's rows, one per beam. The sort is stable: equal scores stay in beam, then token, order."""
    return sorted(((score + log_p[k][t], k, t) for k, (score, _) in enumerate(beams) for t in range(len(log_p[0]))),
                  key=lambda c: -c[0])


def _finished_after(finished, beams, candidates, last: bool, gaps: list[float] | None, ranks: int = BEAMS) -> list:
    """A string's best finished hypotheses after this step: the ones it had and the candidates among
    the best BEAMS that end in EOS (at the last step, the best BEAMS whatever they end in), ranked.
    `gaps`, when given, is extended with the gaps that decided this step and that ranking. `ranks`:
    how far down the candidates an end token finishes a hypothesis (BEAMS; more for a slip)."""
    from ..seq2seq import EOS

    ended = [(s, beams[k][1] + [t]) for r, (s, k, t) in enumerate(candidates[:2 * BEAMS])
             if (last and r < BEAMS) or (t == EOS and r < ranks)]
    ranked = sorted(finished + ended, key=lambda h: -h[0])
    if gaps is not None:
        gaps.extend(_deciding_gaps(candidates, last, EOS))
        gaps.extend(ranked[r][0] - ranked[r + 1][0] for r in range(len(ranked) - 1))
    return ranked[:BEAMS]


def _going_on(candidates) -> list[tuple[float, int, int]]:
    """The string's new beams: the best BEAMS candidates that do not end in EOS. Each beam has one EOS
    candidate, so at most BEAMS of the best 2 * BEAMS end in EOS (generate() looks no further either)."""
    from ..seq2seq import EOS

    return [(s, k, t) for s, k, t in candidates[:2 * BEAMS] if t != EOS][:BEAMS]


def _cache_rows(cache, rows: list[int]):
    """The cache decode returned, its rows picked to follow the new beams: a beam that two new ones
    extend is copied, one that none extends is dropped."""
    import torch

    picked = torch.tensor(rows)
    return tuple(tuple(t[picked] for t in block) for block in cache)


# beam_search's steps: blocked with it, or a learner could call them in the same order
BEAM_STEPS = ("_next_log_probs", "_candidates", "_finished_after", "_going_on", "_cache_rows")


def _greedy(model, input_ids, attention_mask, max_new_tokens) -> list[list[int]]:
    """Greedy decoding (lesson 7's): each string's most likely next token, step by step, up to its EOS."""
    import torch

    from ..seq2seq import EOS, PAD

    encoder_out = model.encode(input_ids, attention_mask)
    answers = [[PAD] for _ in range(input_ids.shape[0])]
    fed, cache = torch.full((input_ids.shape[0], 1), PAD), None
    for _ in range(max_new_tokens):
        logits, cache = model.decode(fed, encoder_out, attention_mask, cache)
        fed = logits[:, -1:].argmax(-1)
        for answer, token in zip(answers, fed[:, 0].tolist(), strict=True):
            if answer[-1] != EOS:
                answer.append(token)
        if all(a[-1] == EOS for a in answers):
            break
    return answers


# --- the topics of the cases, and the recipe that draws them ---

def _ends_at(answer: list[int]) -> int | None:
    """How many new tokens an answer has when it ends with EOS, else None (it reached the budget)."""
    from ..seq2seq import EOS

    return len(answer) - 1 if answer[-1] == EOS else None


class Row(NamedTuple):
    """One string of a case: how many digits its prompt has, and what its answer must show,
    `shows(answer, first choice, token budget)` (the first choice: greedy decoding's first token)."""

    digits: tuple[int, int]
    shows: Callable[[list[int], int, int], bool]


def _any(answer, first, budget):
    return True


def _anyhow(answers, budget):
    return True


class Topic(NamedTuple):
    """One case's kind: its name (the feedback's), its rows, its token budget, the range the end token's
    embedding scale is drawn from, what the rows' answers must show together, `together(answers,
    budget)`, whether the case needs the cache (more than one new token), the slips of the question's
    rules that must give other tokens on it, how many prompts to try per row, and what the case is worth."""

    name: str
    rows: tuple[Row, ...]
    max_new_tokens: int
    eos_scales: tuple[float, float]
    together: Callable[[list, int], bool] = _anyhow
    needs_cache: bool = True
    slips: tuple[str, ...] = ()  # beam_search rules (its `rule`) that must give other tokens on the case
    candidates: int = 8  # prompts tried for each row, in one batch, before the next draw
    weight: int = 1  # the case's share of the points (CASE_WEIGHTS)


def _long(at_least):
    return lambda answer, first, budget: len(answer) - 1 >= at_least


def _ends_between(low, high):
    return lambda answer, first, budget: _ends_at(answer) is not None and low <= _ends_at(answer) <= high


def _ends_at_once(answer, first, budget):
    return _ends_at(answer) == 1


def _ends_at_once_against_greedy(answer, first, budget):
    """The answer is EOS alone, though EOS was not the most likely first token: greedy decoding goes on."""
    from ..seq2seq import EOS

    return _ends_at(answer) == 1 and first != EOS


def _ends_early(answer, first, budget):
    return _ends_at(answer) is not None and _ends_at(answer) < budget


def _three_lengths(answers, budget):
    return len({len(a) for a in answers}) >= 3


def _two_lengths(answers, budget):
    return len({len(a) for a in answers}) >= 2


TOPICS = (
    Topic("one string", (Row((3, 8), _long(5)),), 12, (0.0, 2.0)),
    Topic("a padded batch of two", (Row((5, 8), _long(3)), Row((1, 3), _long(3))), 12, (-2.0, 0.0)),
    Topic("rows whose hypotheses end after a few tokens", (Row((1, 8), _ends_between(2, 11)),) * 4, 12, (-2.0, 0.0)),
    Topic("an end after one token beats every longer hypothesis",
          (Row((1, 8), _ends_at_once_against_greedy), Row((1, 8), _long(3)), Row((1, 8), _any)), 12, (2.0, 4.0)),
    Topic("one string ends at once, three go on",
          (Row((1, 8), _ends_at_once),) + (Row((1, 8), _long(8)),) * 3, 12, (-2.0, 0.0)),
    Topic("one new token only", (Row((10, 12), _any),), 1, (-2.0, 2.0), needs_cache=False),
    Topic("a longer answer", (Row((1, 3), _long(13)), Row((1, 3), _any), Row((1, 3), _any)), 16, (-2.0, 0.0)),
    Topic("four strings, their ends at different steps",
          (Row((1, 8), _ends_early),) * 2 + (Row((1, 8), _any),) * 2, 12, (-2.0, 4.0), _three_lengths),
    # rules 3 and 4 (what finishes, and when a string is done): on each of these cases three slips of
    # them give other tokens, each on at least one row: a string done at its first finished hypothesis
    # (a later one may beat it), no last-step rule (the last step's open beams may beat what finished
    # before), an end token finishing a hypothesis at any rank of the four. With a budget of 12 such
    # rows are rare (about one in a hundred); with a short budget, common enough to draw. The rows end
    # at different steps, so that the padding after an end token counts here too
) + tuple(Topic(f"rules 3 and 4 decide ({budget} new tokens)", (Row((1, 8), _any),) * rows, budget, (0.0, 3.0),
                _two_lengths, slips=("first", "no_last", "any_rank"), candidates=16, weight=5) for budget, rows in
          ((2, 3), (3, 3), (4, 3), (6, 4)))
# what each case is worth: the four cases of rules 3 and 4 hold 20 of the 28 points, so a beam search
# that breaks one of those rules, and gets every other case right, earns 8 / 28, under a third; no one
# case holds more than 5
CASE_WEIGHTS = tuple(topic.weight for topic in TOPICS)


def _digits(rng, low: int, high: int) -> str:
    return "".join(str(d) for d in rng.integers(0, 10, size=int(rng.integers(low, high + 1))))


class Decoded(NamedTuple):
    """What the recipe reads off beam_search for each string: its answer, its first choice (greedy
    decoding's first token) and the least gap between two scores that decided it."""

    answers: list
    firsts: list
    least_gaps: list


def _decoded(model, prompts, budget) -> Decoded:
    from ..seq2seq import padded

    ids, mask = padded(prompts)
    gaps: list[list[float]] = [[] for _ in prompts]
    firsts: list[int] = []
    answers = beam_search(model, ids, mask, budget, gaps=gaps, firsts=firsts)
    return Decoded(answers, firsts, [min(g, default=math.inf) for g in gaps])


def _slips_differ(topic: Topic, model, prompts, answers) -> list[set[int]]:
    """For each of the topic's slips, the prompts whose answer it changes (decoded in one batch)."""
    from ..seq2seq import padded

    ids, mask = padded(list(prompts))
    out = []
    for slip in topic.slips:
        theirs = beam_search(model, ids, mask, topic.max_new_tokens, rule=slip)
        out.append({i for i, (a, b) in enumerate(zip(answers, theirs, strict=True)) if a != b})
    return out


def unfit(topic: Topic, kwargs: dict, model=None, decoded: Decoded | None = None) -> str:
    """Why a case cannot be kept ("" when it can): a margin under MARGIN, a row that does not show what
    the topic says, or a shortcut that gets it right (the module docstring says which). `model` and
    `decoded`: the case's float64 `grading_model` and what it decodes, when `draw_case` has them."""
    import torch

    from ..seq2seq import StepModel, padded

    prompts, budget = kwargs["prompts"], kwargs["max_new_tokens"]
    with torch.no_grad(), one_torch_thread():
        model = model or grading_model(kwargs["seed"], kwargs["eos_scale"], kwargs["shift"], exact=True)
        answers, firsts, least_gaps = decoded or _decoded(model, prompts, budget)
        if min(least_gaps) <= MARGIN:
            return f"two scores {min(least_gaps):.2g} apart"
        if len(prompts) != len(topic.rows) or not topic.together(answers, budget) or not all(
                row.shows(a, f, budget) for row, a, f in zip(topic.rows, answers, firsts, strict=True)):
            return "a row does not show what the topic says"
        ids, mask = padded(prompts)
        if topic.needs_cache and _greedy(model, ids, mask, budget) == answers:
            return "greedy decoding gives the same tokens"
        if beam_search(StepModel(model._model), ids, mask, budget, against=answers) == answers:
            return "logits without the offset give the same tokens"
        for slip in ("uncached", "prefix") if topic.needs_cache else ():
            if beam_search(model, ids, mask, budget, feed=slip, against=answers) == answers:
                return f"the {slip} slip gives the same tokens"
        if not all(_slips_differ(topic, model, prompts, answers)):
            return "a slip of the last rules gives the same tokens"
    return ""


def draw_case(topic: Topic, rng, seeds=DRAWN_SEEDS, tries: int = 100) -> Case:
    """A case of `topic` drawn from `rng`: a model (seed, end scale, shift) and, for each row, `topic.candidates`
    prompts decoded in one batch, the first whose answers show what the rows need, alone and together,
    and are decided by gaps over MARGIN; kept if `unfit` finds nothing against it, else drawn again.

    The recipe decodes in float64: the draw then depends on no rounding of float32 sums (a gap, a
    near tie of two scores), and is the same on every machine, as a regrade with the same seed needs."""
    import torch

    with torch.no_grad(), one_torch_thread():
        for _ in range(tries):
            kwargs = {"seed": int(rng.integers(*seeds)), "max_new_tokens": topic.max_new_tokens,
                      "eos_scale": round(float(rng.uniform(*topic.eos_scales)), 2),
                      "shift": int(rng.integers(1, 2 ** 31))}
            size = topic.candidates
            pool = [_digits(rng, *row.digits) for row in topic.rows for _ in range(size)]
            model = grading_model(kwargs["seed"], kwargs["eos_scale"], kwargs["shift"], exact=True)
            decoded = _decoded(model, pool, topic.max_new_tokens)
            differ = _slips_differ(topic, model, pool, decoded.answers)
            fitting = [[i for i in range(number * size, (number + 1) * size)
                        if decoded.least_gaps[i] > MARGIN
                        and row.shows(decoded.answers[i], decoded.firsts[i], topic.max_new_tokens)]
                       for number, row in enumerate(topic.rows)]
            together = (c for c in itertools.product(*fitting)
                        if topic.together([decoded.answers[i] for i in c], topic.max_new_tokens)
                        and all(any(i in rows for i in c) for rows in differ))
            picked = next(together, None)
            if picked is None:
                continue
            kwargs["prompts"] = tuple(pool[i] for i in picked)
            subset = Decoded(*([column[i] for i in picked] for column in decoded))
            if not unfit(topic, kwargs, model, subset):
                return Case((), tuple(sorted(kwargs.items())), topic.name)
    raise RuntimeError(f"no case for {topic.name!r} in {tries} draws: the topic's ranges do not fit the model")


_DRAWS: dict[str, tuple] = {}  # generator state -> (the cases drawn from it, the state after)


def hidden_cases(rng) -> tuple[Case, ...]:
    """The grading cases (`Code.hidden`'s recipe): one per topic, in TOPICS' order, drawn from `rng`.

    Drawn once per generator state in a process (a draw takes seconds; a grader or a test that asks
    again for a seed's cases gets the same ones, and `rng` is left where the draw would leave it)."""
    key = repr(rng.bit_generator.state)
    if key not in _DRAWS:
        if len(_DRAWS) >= 64:
            _DRAWS.clear()
        _DRAWS[key] = (tuple(draw_case(topic, rng) for topic in TOPICS), rng.bit_generator.state)
    cases, after = _DRAWS[key]
    rng.bit_generator.state = after
    return cases


# --- feedback ---

def diagnose(kwargs, got: np.ndarray, expected: Expected) -> list[tuple[tuple, str]]:
    """One sentence: a missing or wrong start token, greedy decoding's answer, or the first token that differs."""
    from ..seq2seq import PAD

    want = expected.values
    care = np.isfinite(want)
    starts = got[:, 0]
    if (starts != PAD).any():
        row = int(np.flatnonzero(starts != PAD)[0])
        shifted = all(np.array_equal(got[r, :care[r].sum() - 1], want[r, 1:care[r].sum()]) for r in range(len(got)))
        what = ("your rows begin with the first new token" if shifted else
                f"row {row} begins with {'no token' if starts[row] == SHORT else f'token {int(starts[row])}'}")
        return [(("start",), f"{what}: every row of the answer starts with the start token PAD (0), then the "
                             "new tokens, as generate() returns them.")]
    greedy = reference_greedy(**dict(kwargs))
    if np.array_equal(got[np.isfinite(greedy)], greedy[np.isfinite(greedy)]):
        return [(("greedy",), "these are greedy decoding's tokens (one beam): keep the two best continuations at "
                              "every step, and return the best finished hypothesis.")]
    bad = np.argwhere(care & (got != np.where(care, want, 0)))
    row, token = (int(i) for i in bad[0])
    yours = "no token (the row is shorter)" if got[row, token] == SHORT else f"token {int(got[row, token])}"
    return [(("token",), f"row {row} first differs at position {token} (position 0 holds the start token, so "
                         f"this is new token {token}): generate(num_beams=2) gives token {int(want[row, token])}, "
                         f"your function {yours}.")]


@dataclass(frozen=True)
class DecodingCode(ModuleCode):
    """A function that decodes with a model's encode/decode; run in the kernel by a driver, compared here."""

    answer_kind = "a function"

    def not_attempted(self):
        return self.outcome(NOT_ATTEMPTED, 0, f"write the body of {self.name} in the answer cell.")


# the cases check() runs: drawn once by the recipe (`draw_case(topic, numpy.random.default_rng(2026),
# PUBLIC_SEEDS)` for each topic in turn) and written out, so that they stay as they are
CASE_SPECS = (
    (dict(seed=851, prompts=("40363",), max_new_tokens=12, eos_scale=1.28, shift=384259586), "one string"),
    (dict(seed=606, prompts=("9989621", "02"), max_new_tokens=12, eos_scale=-0.45, shift=894579330),
     "a padded batch of two"),
    (dict(seed=562, prompts=("2304", "6779", "2411678", "24717281"), max_new_tokens=12, eos_scale=-1.74,
          shift=1435792080), "rows whose hypotheses end after a few tokens"),
    (dict(seed=57, prompts=("189887", "125", "03"), max_new_tokens=12, eos_scale=4.0, shift=2013821959),
     "an end after one token beats every longer hypothesis"),
    (dict(seed=178, prompts=("63657", "855", "2575", "92321794"), max_new_tokens=12, eos_scale=-0.02,
          shift=1709426984), "one string ends at once, three go on"),
    (dict(seed=147, prompts=("2905157718",), max_new_tokens=1, eos_scale=0.63, shift=737114172),
     "one new token only"),
    (dict(seed=846, prompts=("45", "513", "6"), max_new_tokens=16, eos_scale=-1.82, shift=501808014),
     "a longer answer"),
    (dict(seed=45, prompts=("715", "06", "69206908", "37113"), max_new_tokens=12, eos_scale=-1.9, shift=745607256),
     "four strings, their ends at different steps"),
    (dict(seed=287, prompts=("222234", "8012", "36"), max_new_tokens=2, eos_scale=1.37, shift=1847246971),
     "rules 3 and 4 decide (2 new tokens)"),
    (dict(seed=943, prompts=("614", "0", "672641"), max_new_tokens=3, eos_scale=1.24, shift=2131627779),
     "rules 3 and 4 decide (3 new tokens)"),
    (dict(seed=626, prompts=("04853", "57716741", "02033282"), max_new_tokens=4, eos_scale=2.46, shift=1174152236),
     "rules 3 and 4 decide (4 new tokens)"),
    (dict(seed=830, prompts=("6073", "541474", "2", "6"), max_new_tokens=6, eos_scale=2.12, shift=1095625326),
     "rules 3 and 4 decide (6 new tokens)"),
)


def _cases() -> tuple[Case, ...]:
    return tuple(Case((), tuple(sorted(kwargs.items())), topic) for kwargs, topic in CASE_SPECS)


EXERCISE = Exercise(
    id=id_of_module(__name__),
    title="Exercise 7: a whole tiny T5",
    questions=(
        MultipleChoice(
            id="q1", points=2, objectives=(7,), name="answer_q1", multiple=True,
            options="ABCDE", key="38da52be0c8c5d7df47ccacc",
            hints=(
                "go through one encoder block and one decoder block sub-layer by sub-layer: which of them "
                "compare two positions of the same sequence?",
                "a block that owns no table still adds a bias: the one block 0 computed and handed up.",
            ),
            feedback={
                "58db55ba23e4d4ce1354f915": "the decoder's upper blocks are like the encoder's: they own no "
                                            "table, and still add a bias.",
                "9cb1ccdc7d498269411aa3f0": "cross-attention compares a decoder position with an encoder "
                                            "position: no offset between them is defined.",
                "10158681c1be3bd96a19bcae": "owning a table and adding a bias are not the same thing.",
            },
        ),
        Numeric(
            id="q2", points=1, objectives=(7,), name="answer_q2",
            key="2b304520d20e0166d502680c",
            hints=(
                "count the tables first: how many blocks own one?",
                "each table is [num_buckets, num_heads].",
            ),
            feedback={
                "7936a0ceff0ef97e270a5d59": "that counts one table per self-attention layer (UMT5); T5 has one "
                                            "per stack.",
                "eff16f199627d37bcc64ef37": "that counts a table for every attention, cross-attention too.",
                "3c8f09889054a591880f6760": "one stack only: the decoder has its own table.",
            },
        ),
        Numeric(
            id="q3", points=1, objectives=(7,), name="answer_q3",
            key="41bb76488450ff67be490052",
            hints=(
                "the cache holds keys of shape [batch, heads, tokens so far, d_kv].",
                "after the step, the new token's key is in the cache too.",
            ),
            feedback={
                "a3002f571cd89727118e384a": "that is the cache before the step: the new token's key is appended.",
                "a0a6f5c10a91521095828a8e": "count the tokens: six cached, plus the one fed in this step.",
                "d3d4a0f860bb8af3373ed3a1": "that is one token's keys; the cache keeps every token's.",
            },
        ),
        MultipleChoice(
            id="q4", points=2, objectives=(6, 7), name="answer_q4", multiple=True,
            options="ABCD", key="10f34b4755a03cb3fdab1b9a",
            hints=(
                "the offset is key minus query: where is the key of offset +1?",
                "lesson 5: a bucket no training pair reached keeps its starting value.",
            ),
            feedback={
                "8bd86948900fd02dc3dfe05a": "also ask which buckets a 20-token input uses that 9-token training "
                                            "inputs never reached.",
                "9bd68612f1f53f7b9e3dcc8d": "read the sign of the offset again: key position minus query position.",
                "4dbfc476187f317faab9819d": "which table would cross-attention read? It has none.",
            },
        ),
        DecodingCode(
            id="q5", points=3, objectives=(7,), name="beam_decode",
            reference="t5lesson.exercises.ex07_tiny_t5:reference_beams",
            diagnose="t5lesson.exercises.ex07_tiny_t5:diagnose",
            driver="t5lesson.exercises.tiny_t5_driver",
            cases=_cases(), case_weights=CASE_WEIGHTS, hidden="t5lesson.exercises.ex07_tiny_t5:hidden_cases",
            case_timeout=20.0,
            what="generate(num_beams=2)",
            blocked=("transformers.generation.utils:GenerationMixin.generate",
                     "transformers.generation.utils:GenerationMixin._beam_search", "t5lesson.lessons.tiny_t5:greedy",
                     "t5lesson.exercises.ex07_tiny_t5:beam_search", "t5lesson.exercises.ex07_tiny_t5:_greedy")
            + tuple(f"t5lesson.exercises.ex07_tiny_t5:{step}" for step in BEAM_STEPS),
            hints=(
                "repeat each string's encoder output and mask twice (repeat_interleave), one row per beam; "
                "both beams start from the start token, the second with score -inf, so the first step "
                "expands one beam only.",
                "each step: log_softmax of the last logits plus the beam's score, flattened to [batch, 2 * vocab]; "
                "topk(4) gives the candidates, and index // vocab the beam each extends. The best two that do not "
                "end in EOS are the new beams: pick their cache rows, tensor[rows], for the next call.",
                "a candidate ending in EOS is finished only when it ranks first or second; at the last step the "
                "best two are finished whatever they end in. A string with two finished hypotheses is done: "
                "return the higher-scoring one, start token first.",
            ),
        ),
        FreeText(
            id="q6", points=3, objectives=(6, 7), name="q6-answer",
            rubric=(
                ("measured kept apart from inferred, with what was measured at each length: whole answers fail "
                 "from 9 digits on, where no pair reads an untrained bucket; at 16 and 32 digits no whole answer is "
                 "right and most answers stop too early, and at 32 digits even answer token 1 is often wrong; the "
                 "untrained buckets (encoder 6, 7, 14, 15; decoder 9 to 15) are read by no pair at 9 digits, a few "
                 "at 10, about a fifth at 16 and half at 32", 1),
                ("the controls read right: patching the untrained buckets changes nothing at 9 digits, more than "
                 "doubles whole answers at 10 (so there they cause much of the failure) and rescues nothing at 16 "
                 "and 32; every bucket trained agrees at 10 and does better at 9, which it owes to its coarser "
                 "bucketing, not to bucket values. Calling the untrained buckets the main cause at every length, or "
                 "only a minor cause at every length, earns nothing here; so does saying cross-attention finds "
                 "positions 'by content alone': it reads the position the self-attention biases wrote into the "
                 "hidden states", 1),
                ("a concrete further change with a predicted effect: train on a mix of lengths up to the test "
                 "length, with what it would and would not fix (lengths beyond the new training range), or "
                 "another test that separates the causes, with what each outcome would mean", 1),
            ),
            checklist=(
                "Does your answer say what section 6 measured, at which lengths, and which buckets those inputs "
                "read, keeping each measurement apart from what you infer from it?",
                "Does it say what the patch and the runs with every bucket trained showed, at which lengths, "
                "and what that tells you about how much the untrained buckets explain?",
                "Does it propose one further change or test, and say what you expect it to do, and what it "
                "would leave unexplained?",
            ),
        ),
    ),
)
