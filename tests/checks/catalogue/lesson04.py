"""Lesson 4's your-turn cell (bias_from_table) and exercise 4's code questions (q5 the bias of every call of
decoding with a cache, q6 the causal mask): slips in positions, offsets, buckets and axes."""
from __future__ import annotations

import numpy as np
from harness import QuestionCheck, TurnCheck, solution_answer, your_turn_answer

import t5lesson as t5
from t5lesson.bias import relative_bias
from t5lesson.exercises.ex04_bias_heatmaps import reference_step_biases
from t5lesson.scores import causal_mask

ANSWER = your_turn_answer("04_bias_heatmaps", "bias_from_table")
HEAD = "def bias_from_table(table, q_len, k_len, bidirectional=True, max_distance=128, query_offset=0):\n"


def differs(function, seed):
    """Random tables (odd and even bucket counts, 1 to 4 heads), lengths, settings and cache offsets."""
    rng = np.random.default_rng(seed)
    for _ in range(150):
        bidirectional = bool(rng.integers(2))
        num_buckets = int(rng.integers(4, 40))
        max_distance = int(rng.integers(num_buckets // 2 + 2, 60))
        table = rng.normal(size=(num_buckets, int(rng.integers(1, 5))))
        q_len, k_len = int(rng.integers(1, 12)), int(rng.integers(1, 40))
        query_offset = int(rng.choice([0, int(rng.integers(0, 40))]))
        got = np.asarray(function(table, q_len, k_len, bidirectional, max_distance, query_offset))
        want = relative_bias(table, q_len, k_len, bidirectional=bidirectional, max_distance=max_distance,
                             query_offset=query_offset)
        if got.shape != want.shape or not np.allclose(got, want):
            return (f"bias_from_table(a [{num_buckets}, {table.shape[1]}] table, {q_len}, {k_len}, {bidirectional}, "
                    f"{max_distance}, {query_offset}) differs")
    return None


def body(*lines: str) -> str:
    return HEAD + "".join(f"    {line}\n" for line in lines)


BUCKETS = "buckets = t5.relative_position_bucket(offsets, bidirectional, table.shape[0], max_distance)"
WRONG = {
    "query_offset forgotten (the review's 'no offset')": body(
        "offsets = np.arange(k_len)[None, :] - np.arange(q_len)[:, None]", BUCKETS,
        "return table[buckets].transpose(2, 0, 1)"),
    "query minus key (the review's sign slip)": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = queries[:, None] - np.arange(k_len)[None, :]", BUCKETS, "return table[buckets].transpose(2, 0, 1)"),
    "32 buckets written in": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = np.arange(k_len)[None, :] - queries[:, None]",
        "buckets = t5.relative_position_bucket(offsets, bidirectional, 32, max_distance)",
        "return table[np.minimum(buckets, table.shape[0] - 1)].transpose(2, 0, 1)"),
    "the offset added to the keys too": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = (query_offset + np.arange(k_len))[None, :] - queries[:, None]", BUCKETS,
        "return table[buckets].transpose(2, 0, 1)"),
    "head axis moved with the wrong transpose ([heads, k_len, q_len])": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = np.arange(k_len)[None, :] - queries[:, None]", BUCKETS, "return table[buckets].T"),
    "always the encoder's buckets": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = np.arange(k_len)[None, :] - queries[:, None]",
        "buckets = t5.relative_position_bucket(offsets, True, table.shape[0], max_distance)",
        "return table[buckets].transpose(2, 0, 1)"),
    "max_distance left at its default": body(
        "queries = query_offset + np.arange(q_len)",
        "offsets = np.arange(k_len)[None, :] - queries[:, None]",
        "buckets = t5.relative_position_bucket(offsets, bidirectional, table.shape[0])",
        "return table[buckets].transpose(2, 0, 1)"),
    "the offset subtracted from the queries": body(
        "queries = np.arange(q_len) - query_offset",
        "offsets = np.arange(k_len)[None, :] - queries[:, None]", BUCKETS, "return table[buckets].transpose(2, 0, 1)"),
    "a square bias built for k_len, its last q_len rows kept (right only when the queries end the keys)": body(
        "offsets = np.arange(k_len)[None, :] - np.arange(k_len)[:, None]", BUCKETS,
        "return table[buckets].transpose(2, 0, 1)[:, k_len - q_len:]"),
}

RIGHT = {
    "transformers' compute_bias: a memory and a context position, torch": HEAD + '''    import torch

    context_position = torch.arange(q_len, dtype=torch.long)[:, None] + query_offset
    memory_position = torch.arange(k_len, dtype=torch.long)[None, :]
    relative_position = memory_position - context_position
    bucket = t5.relative_position_bucket(relative_position, bidirectional=bidirectional,
                                         num_buckets=table.shape[0], max_distance=max_distance)
    values = torch.nn.functional.embedding(bucket, torch.as_tensor(table))
    return values.permute([2, 0, 1]).numpy()
''',
    "a loop over the pairs with einsum-free indexing, head axis built first": HEAD + '''    heads = table.shape[1]
    bias = np.zeros((heads, q_len, k_len), dtype=table.dtype)
    for i in range(q_len):
        for j in range(k_len):
            b = t5.relative_position_bucket(j - (query_offset + i), bidirectional, table.shape[0], max_distance)
            bias[:, i, j] = table[int(b)]
    return bias
''',
}

CHECKS = [TurnCheck(id="your turn bias_from_table", answer=ANSWER, wrong=WRONG, right=RIGHT, differs=differs,
                    namespace=lambda: {"np": np, "t5": t5}, entry="bias_from_table", max_mutants=30)]


# --- exercise 4: q5, the bias of every call of decoding with a cache; q6, the causal mask ------------

STEM = "04_bias_heatmaps"
Q5_ANSWER = solution_answer(STEM, "my_step_biases")
Q6_ANSWER = solution_answer(STEM, "my_causal_mask")


def differs_q5(function, seed):
    """Random causal tables (odd and even bucket counts, 1 to 3 heads), prompts, steps and max_distance."""
    rng = np.random.default_rng(seed)
    for _ in range(60):
        num_buckets = int(rng.integers(4, 33))
        table = rng.normal(size=(num_buckets, int(rng.integers(1, 4))))
        prompt_len, new_tokens = int(rng.integers(1, 9)), int(rng.integers(0, 8))
        max_distance = int(rng.integers(num_buckets // 2 + 1, 60))
        got = function(table, prompt_len, new_tokens, max_distance)
        want = reference_step_biases(table, prompt_len, new_tokens, max_distance)
        if len(got) != len(want) or any(np.shape(g) != np.shape(w) or not np.allclose(g, w)
                                        for g, w in zip(got, want, strict=True)):
            return f"my_step_biases(a [{num_buckets}, {table.shape[1]}] table, {prompt_len}, {new_tokens}, " \
                   f"{max_distance}) differs"
    return None


def q5_slip(old: str, new: str) -> str:
    assert old in Q5_ANSWER, old
    return Q5_ANSWER.replace(old, new)


Q5_WRONG = {
    "the cache forgotten: each new token's query at position 0": q5_slip(
        "biases.append(full[:, k - 1:k, :k])", "biases.append(full[:, 0:1, :k])"),
    "query minus key": q5_slip("offsets = positions[None, :] - positions[:, None]",
                               "offsets = positions[:, None] - positions[None, :]"),
    "the decoder bucketed as an encoder": q5_slip("(offsets, False,", "(offsets, True,"),
    "heads last": q5_slip("full = table[buckets].transpose(2, 0, 1)", "full = table[buckets]"),
    "the prompt's call left out": q5_slip("biases = [full[:, :prompt_len, :prompt_len]]", "biases = []"),
    "one call short: the last new token never decoded": q5_slip(
        "range(prompt_len + 1, prompt_len + new_tokens + 1)", "range(prompt_len + 1, prompt_len + new_tokens)"),
    "each step's row cut one key short (the new token does not see itself)": q5_slip(
        "biases.append(full[:, k - 1:k, :k])", "biases.append(full[:, k - 1:k, :k - 1])"),
    "the default max_distance 128 written in": q5_slip(
        "table.shape[0], max_distance)", "table.shape[0], 128)"),
}

Q5_RIGHT = {
    "one bias per call from its own positions, with a cache_position (transformers' way)": '''
def my_step_biases(table, prompt_len, new_tokens, max_distance=128):
    table = np.asarray(table, dtype=float)

    def bias(cache_position, k_len):  # the queries' positions, and how many keys exist
        relative = np.arange(k_len)[None, :] - np.asarray(cache_position)[:, None]
        buckets = t5.relative_position_bucket(relative, bidirectional=False, num_buckets=table.shape[0],
                                              max_distance=max_distance)
        return np.moveaxis(table[buckets], -1, 0).tolist()

    calls = [bias(np.arange(prompt_len), prompt_len)]
    for step in range(1, new_tokens + 1):
        position = prompt_len + step - 1
        calls.append(bias([position], position + 1))
    return calls
''',
    "a loop over every pair, in torch, the bias laid out per call": '''
import torch


def my_step_biases(table, prompt_len, new_tokens, max_distance=128):
    table = torch.as_tensor(np.asarray(table, dtype=float))
    def one_call(queries, k_len):
        rows = []
        for i in queries:
            keys = torch.arange(k_len)
            buckets = t5.relative_position_bucket(keys - i, False, table.shape[0], max_distance)
            rows.append(table[torch.as_tensor(buckets)].T)
        return torch.stack(rows, dim=1).tolist()
    out = [one_call(range(prompt_len), prompt_len)]
    for step in range(1, new_tokens + 1):
        out.append(one_call([prompt_len + step - 1], prompt_len + step))
    return out
''',
}


def differs_q6(function, seed):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        q_len, k_len = int(rng.integers(1, 12)), int(rng.integers(1, 20))
        query_offset = int(rng.choice([0, int(rng.integers(0, 15))]))
        got = np.asarray(function(q_len, k_len, query_offset))
        want = causal_mask(q_len, k_len, query_offset)
        if got.shape != want.shape or not (got.astype(bool) == want).all():
            return f"my_causal_mask({q_len}, {k_len}, {query_offset}) differs"
    return None


def q6_slip(body: str) -> str:
    return ('def my_causal_mask(q_len, k_len, query_offset=0):\n'
            + "".join(f"    {line}\n" for line in body.splitlines()))


Q6_WRONG = {
    "query_offset ignored": q6_slip("return np.arange(k_len)[None, :] <= np.arange(q_len)[:, None]"),
    "strictly before (a query cannot see itself)": q6_slip(
        "queries = query_offset + np.arange(q_len)\nreturn np.arange(k_len)[None, :] < queries[:, None]"),
    "the mask the other way (True where a key is in the future)": q6_slip(
        "queries = query_offset + np.arange(q_len)\nreturn np.arange(k_len)[None, :] > queries[:, None]"),
    "np.tril without the offset": q6_slip("return np.tril(np.ones((q_len, k_len), dtype=bool))"),
    "the offset added to the keys": q6_slip(
        "queries = np.arange(q_len)\nreturn (query_offset + np.arange(k_len))[None, :] <= queries[:, None]"),
    "the offset subtracted": q6_slip(
        "queries = np.arange(q_len) - query_offset\nreturn np.arange(k_len)[None, :] <= queries[:, None]"),
    "transposed ([k_len, q_len])": q6_slip(
        "queries = query_offset + np.arange(q_len)\nreturn (np.arange(k_len)[None, :] <= queries[:, None]).T"),
}

Q6_RIGHT = {
    "np.tril with the diagonal moved by the offset (numpy's k argument)": q6_slip(
        "return np.tril(np.ones((q_len, k_len), dtype=bool), k=query_offset)"),
    "transformers' way: a cache_position column against key positions, in torch": q6_slip(
        "import torch\ncache_position = torch.arange(q_len) + query_offset\n"
        "return (torch.arange(k_len)[None, :] <= cache_position[:, None]).numpy()"),
}

CHECKS += [
    QuestionCheck(id="exercise 04 q5", answer=Q5_ANSWER, wrong=Q5_WRONG, right=Q5_RIGHT, differs=differs_q5,
                  namespace=lambda: {"np": np, "t5": t5}, entry="my_step_biases",
                  exercise=STEM, question="q5", max_mutants=25),
    QuestionCheck(id="exercise 04 q6", answer=Q6_ANSWER, wrong=Q6_WRONG, right=Q6_RIGHT, differs=differs_q6,
                  namespace=lambda: {"np": np}, entry="my_causal_mask", exercise=STEM, question="q6", max_mutants=20),
]
