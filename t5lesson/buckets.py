"""Relative positions -> buckets, exactly as T5 does it.

Sign convention used everywhere in this package (and in the reference code):

    relative_position = key_position - query_position          (j - i)

so a key *before* the query has a negative offset. The T5 paper (section 2.1) writes no formula
for it; it speaks of "the offset between the 'key' and 'query' being compared". We take the
sign the reference code takes, j - i, so our numbers can be compared with transformers, Mesh TF
and T5X.

The bucket of an offset (transformers `T5Attention._relative_position_bucket`, itself a port of
Mesh TF `_relative_position_bucket`):

1. bidirectional (encoder): halve num_buckets; keys after the query (offset > 0) use the upper
   half; then n = |offset|.  causal (decoder): n = max(-offset, 0), so every future key lands in
   bucket 0 (the causal mask removes those keys anyway).
2. max_exact = num_buckets // 2 (after halving). n < max_exact gets its own bucket, n.
3. Otherwise the bucket grows with log(n):
       max_exact + trunc( log(n / max_exact) / log(max_distance / max_exact) * (num_buckets - max_exact) )
   clamped to num_buckets - 1, so every n beyond the last boundary shares one bucket.

The reference evaluates step 3 in float32; so do we (see `_log_bucket_numpy`), with one
deliberate difference, at *ties*. For some offsets the real number in step 3 is exactly an
integer k: for T5's default encoder (32 buckets, max_distance 128) that happens at |offset| =
16, 32 and 64, where it is exactly 2, 4 and 6. In float32 the quotient of two rounded
logarithms may then land on k or just below it, and which one depends on the log
implementation: torch's vectorised float32 log is not correctly rounded and differs between
CPUs, so at a tie the reference itself can give k on one machine and k - 1 on another. This
package returns the exact mathematical bucket at every tie (found with integer arithmetic, so
no rounding is involved), and the reference's float32 result everywhere else. So: equal to the
reference at every offset that is not a tie; at a tie, equal to the reference or one above it.
"""
from __future__ import annotations

import math
import numbers
import sys
from dataclasses import dataclass

import numpy as np

from ._validate import ArgumentError, check_bool, check_int, is_torch

__all__ = ["relative_position_bucket", "bucket_ranges", "BucketRange", "BucketTable", "bucket_config", "bucket_ids",
           "exact_ties"]


def _halves(bidirectional: bool, num_buckets: int) -> tuple[int, int]:
    """(buckets per direction, max_exact) of a configuration."""
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    return per_direction, per_direction // 2


def bucket_config(bidirectional: bool, num_buckets: int, max_distance: int) -> tuple[int, int]:
    """Check a bucketing configuration; return (buckets per direction, max_exact).

    Raises a clear error for the configurations on which the reference silently breaks:
    max_exact = 0 (it divides by zero) and max_distance <= max_exact (log of a number <= 1 in a
    denominator: a division by zero, or buckets that go negative).
    """
    bidirectional = check_bool("bidirectional", bidirectional)
    smallest = 4 if bidirectional else 2
    num_buckets = check_int("num_buckets", num_buckets)
    if num_buckets < smallest:
        kind = "bidirectional (encoder)" if bidirectional else "causal (decoder)"
        raise ArgumentError(
            f"num_buckets must be >= {smallest} for {kind} attention, got {num_buckets}: "
            "with fewer there is no bucket left for the exact offsets (max_exact would be 0)"
        )
    per_direction, max_exact = _halves(bidirectional, num_buckets)
    max_distance = check_int("max_distance", max_distance)
    if max_distance <= max_exact:
        raise ArgumentError(
            f"max_distance must be > max_exact = {max_exact} (num_buckets={num_buckets}, "
            f"bidirectional={bidirectional}), got {max_distance}: the logarithmic buckets span "
            "offsets max_exact..max_distance, so that range must not be empty"
        )
    return per_direction, max_exact


def _log_bucket_numpy(n: np.ndarray, per_direction: int, max_exact: int, max_distance: int) -> np.ndarray:
    """Bucket of n >= max_exact in the logarithmic region, bit-exact with torch's float32 on CPU.

    Every step is kept in float32 on purpose. Under NumPy 2, `float32_array / np.log(x)` would
    promote to float64 and move some boundary offsets by one bucket.
    """
    ratio = n.astype(np.float32) / np.float32(max_exact)
    log_ratio = np.log(ratio.astype(np.float64)).astype(np.float32)
    scaled = log_ratio / np.float32(math.log(max_distance / max_exact))
    scaled = scaled * np.float32(per_direction - max_exact)
    bucket = max_exact + scaled.astype(np.int64)  # truncation toward zero, as torch's .to(long)
    tie_n, tie_k = exact_ties(n, per_direction, max_exact, max_distance)
    for value, k in zip(tie_n, tie_k, strict=True):
        bucket = np.where(n == value, max_exact + k, bucket)  # the exact bucket, whatever float32 made of it
    return np.minimum(bucket, per_direction - 1)


def exact_ties(n: np.ndarray, per_direction: int, max_exact: int, max_distance: int):
    """The n (>= max_exact) at which log(n / m) / log(D / m) * (B - m) is exactly an integer k.

    With m = max_exact, D = max_distance, B = per_direction, that equation says
    (n / m) ** (B - m) == (D / m) ** k, that is n ** (B - m) * m ** k == D ** k * m ** (B - m),
    which Python's integers decide exactly. Float64 only picks the candidates. Ties at or above
    the clamp (m + k >= B - 1 with nothing left to move) are skipped: there the clamp decides.
    Returns two lists: the tied n values and their k.
    """
    width = per_direction - max_exact
    values = np.unique(n[(n > max_exact) & (n < max_distance)])
    if values.size == 0:
        return [], []
    real = np.log(values / max_exact) / math.log(max_distance / max_exact) * width
    k = np.rint(real)
    near = (np.abs(real - k) < 1e-9 * np.maximum(1.0, k)) & (k >= 1) & (k <= width - 1)
    tie_n, tie_k = [], []
    for value, ki in zip(values[near].tolist(), k[near].astype(int).tolist(), strict=True):
        if value ** width * max_exact ** ki == max_distance ** ki * max_exact ** width:
            tie_n.append(value)
            tie_k.append(ki)
    return tie_n, tie_k


def _bucket_numpy(rel: np.ndarray, bidirectional, per_direction, max_exact, max_distance) -> np.ndarray:
    rel = rel.astype(np.int64, copy=False)
    if bidirectional:
        offset = np.where(rel > 0, per_direction, 0)
        n = np.abs(rel)
    else:
        offset = 0
        n = np.maximum(-rel, 0)
    # Clip before the log so n = 0 never reaches it (the reference takes log(0) and discards it).
    large = _log_bucket_numpy(np.maximum(n, max_exact), per_direction, max_exact, max_distance)
    return offset + np.where(n < max_exact, n, large)


def _bucket_torch(rel, bidirectional, per_direction, max_exact, max_distance):
    """Through the NumPy path, so the answer does not depend on the CPU's float32 log (see ties)."""
    import torch

    result = _bucket_numpy(rel.detach().cpu().numpy(), bidirectional, per_direction, max_exact, max_distance)
    return torch.from_numpy(result).to(rel.device)


def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Map relative positions (key - query) to T5 bucket ids in [0, num_buckets).

    relative_position: a Python int, a NumPy integer array/scalar, or a torch integer tensor.
    Returns the same kind: an int, an int64 array, or a long tensor on the same device.

    Equal to `transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket` at every
    offset that is not a tie (see the module docstring); at a tie, where the formula's real value
    is exactly an integer, this returns that exact bucket, and the reference returns it or the
    one below, depending on the CPU. Configurations where the reference breaks raise
    `ArgumentError` (a ValueError) here instead. NumPy and torch inputs give the same answer on
    every machine.

    >>> relative_position_bucket(-10)           # encoder: 10 tokens to the left
    8
    >>> relative_position_bucket(10)            # 10 tokens to the right: upper half
    24
    >>> relative_position_bucket(3, bidirectional=False)   # decoder: future keys -> bucket 0
    0
    """
    bucket_config(bidirectional, num_buckets, max_distance)
    return bucket_ids(relative_position, bidirectional, num_buckets, max_distance)


def bucket_ids(relative_position, bidirectional, num_buckets, max_distance):
    """`relative_position_bucket` for a configuration its caller already checked with `bucket_config`.

    The configuration is validated once, at the public boundary a call enters by; functions
    built on buckets (`relative_bias`, `bucket_ranges`, the lessons' counts) then use this.
    """
    args = (bool(bidirectional), *_halves(bidirectional, num_buckets), max_distance)

    if is_torch(relative_position):
        if relative_position.dtype.is_floating_point or relative_position.dtype.is_complex:
            raise ArgumentError(
                f"relative_position must hold integers, got a tensor of dtype {relative_position.dtype}"
            )
        if relative_position.dtype == sys.modules["torch"].bool:
            raise ArgumentError("relative_position must hold integers, got a bool tensor")
        return _bucket_torch(relative_position, *args)

    if isinstance(relative_position, (bool, np.bool_)):
        raise ArgumentError(f"relative_position must be an integer, got the bool {relative_position!r}")
    if isinstance(relative_position, numbers.Integral) and not isinstance(relative_position, np.generic):
        return int(_bucket_numpy(np.asarray(int(relative_position)), *args))
    if isinstance(relative_position, (np.ndarray, np.generic)):
        if not np.issubdtype(relative_position.dtype, np.integer):
            raise ArgumentError(
                f"relative_position must hold integers, got an array of dtype {relative_position.dtype}"
            )
        result = _bucket_numpy(np.asarray(relative_position), *args)
        return result[()] if isinstance(relative_position, np.generic) else result
    raise ArgumentError(
        "relative_position must be an int, a NumPy integer array or a torch integer tensor, "
        f"got {type(relative_position).__name__}"
    )


@dataclass(frozen=True)
class BucketRange:
    """The offsets (key - query) one bucket covers: lo..hi inclusive; None means unbounded."""

    bucket: int
    lo: int | None
    hi: int | None

    def __str__(self) -> str:
        if self.lo is None and self.hi is None:
            return "all offsets"
        if self.lo is None:
            return f"<= {self.hi}"
        if self.hi is None:
            return f">= {self.lo}"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}..{self.hi}"


@dataclass(frozen=True)
class BucketTable:
    """Which offsets each bucket covers, for one configuration (see `bucket_ranges`)."""

    bidirectional: bool
    num_buckets: int
    max_distance: int
    ranges: tuple[BucketRange, ...]  # one per used bucket, in bucket order
    unused: tuple[int, ...]  # buckets that no offset maps to
    last_bucket_start: int  # smallest |offset| in the last (open-ended) bucket
    ties: tuple[int, ...] = ()  # offsets where the log formula is exactly an integer (see the module docstring)

    @property
    def per_direction(self) -> int:
        """Buckets for each side of the query: num_buckets halved when bidirectional."""
        return _halves(self.bidirectional, self.num_buckets)[0]

    @property
    def max_exact(self) -> int:
        """Offsets with |offset| below this get a bucket of their own (see the module docstring)."""
        return _halves(self.bidirectional, self.num_buckets)[1]

    def __getitem__(self, bucket: int) -> BucketRange | None:
        """The range of `bucket`, or None if no offset maps to it."""
        for r in self.ranges:
            if r.bucket == bucket:
                return r
        if 0 <= bucket < self.num_buckets:
            return None
        raise ArgumentError(f"bucket must be in [0, {self.num_buckets - 1}], got {bucket}")

    def rows(self) -> list[tuple[int, str]]:
        """(bucket, offsets) for every bucket, unused ones included as 'never used'."""
        return [(b, str(self[b]) if self[b] is not None else "never used") for b in range(self.num_buckets)]

    def __str__(self) -> str:
        kind = "bidirectional" if self.bidirectional else "causal"
        head = f"{kind}, num_buckets={self.num_buckets}, max_distance={self.max_distance}"
        lines = [head, "bucket  offsets (key - query)"]
        lines += [f"{b:>6}  {text}" for b, text in self.rows()]
        return "\n".join(lines)


def bucket_ranges(bidirectional=True, num_buckets=32, max_distance=128) -> BucketTable:
    """The boundary table: for every bucket, the offsets (key - query) that fall into it.

    Because the bucket is monotone in |offset| on each side, each bucket covers one contiguous
    range, and every offset beyond max_distance lies in the last bucket of its side. The last
    bucket usually starts before max_distance: at 91 for T5's default encoder and 113 for its
    decoder (32 buckets, max_distance 128), because the log formula reaches num_buckets - 1
    before the clamp is needed.
    """
    per_direction, max_exact = bucket_config(bidirectional, num_buckets, max_distance)
    reach = 2 * max_distance + 2  # beyond max_distance every offset is already in the last bucket
    offsets = np.arange(-reach, reach + 1)
    buckets = bucket_ids(offsets, bidirectional, num_buckets, max_distance)

    ranges = []
    for b in np.unique(buckets):
        covered = offsets[buckets == b]
        lo, hi = int(covered.min()), int(covered.max())
        ranges.append(BucketRange(int(b), None if lo == -reach else lo, None if hi == reach else hi))
    used = {r.bucket for r in ranges}
    unused = tuple(b for b in range(num_buckets) if b not in used)

    n = np.arange(reach + 1)
    last = np.asarray(bucket_ids(-n, bidirectional, num_buckets, max_distance))
    last_bucket_start = int(n[last == last.max()].min())
    tie_n, _ = exact_ties(n, per_direction, max_exact, max_distance)
    ties = sorted([-t for t in tie_n] + (list(tie_n) if bidirectional else []))
    return BucketTable(
        bool(bidirectional), int(num_buckets), int(max_distance), tuple(ranges), unused, last_bucket_start,
        tuple(ties),
    )
