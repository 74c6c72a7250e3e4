"""Position schemes: how a tiny causal model turns "the key is d steps back" into a logit bias.

This module says which learned parameter serves which offset, with NumPy alone, so that the pair
counts of lesson 5 run in the browser too; `position_bias.PositionBias` is the PyTorch module.

Offsets here are d = i - j >= 0 (query i, key j, causal so j <= i): how many steps back the key
is. In the package's convention (relative_position = key - query = j - i) that is -d; T5's
bucket function is called with -d and bidirectional=False.

Every learned table starts at zero, so each offset starts with the same bias and only training
can tell them apart. The schemes:

t5              T5 buckets: 16 causal buckets, max_distance 32 (exact for d < 8, then
                logarithmic; every d >= the last bucket's start shares one parameter)
per-offset-A    one parameter per offset 0..L-1 (L = training length); longer offsets reuse the
                parameter of offset L-1, the largest trained one ("Model A")
per-offset-0    one parameter per offset 0..L-1; offsets >= L keep their start value 0 because
                they never occurred in training, so they were never trained
per-offset-32   one parameter per offset 0..32; every d >= 32 shares the offset-32 parameter,
                which is clipping *inside* the training length
alibi           no learned bias: head h adds -m_h * d with fixed slopes m_h = 2^(-8 (h+1) / H)
                (Press et al., 2022)
none            no position information at all
t5-far          T5 buckets with max_distance 256 = 4x the training length: the last buckets
                cover only offsets that never occur in training
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validate import ArgumentError, check_int
from ..buckets import bucket_config, bucket_ids

__all__ = ["Scheme", "SCHEMES", "get_scheme", "t5_scheme", "alibi_slopes"]


@dataclass(frozen=True)
class Scheme:
    """A position scheme. kind: "t5", "per-offset", "alibi" or "none".

    t5:         num_buckets, max_distance (causal buckets, as T5's decoder).
    per-offset: clip = the last offset with its own parameter (None: L - 1, the largest offset
                seen in training); unseen = "clip" (longer offsets reuse the clip parameter) or
                "zero" (offsets >= L were never trained and keep the start value 0).
    """

    name: str
    label: str
    kind: str
    num_buckets: int = 16
    max_distance: int = 32
    clip: int | None = None
    unseen: str = "clip"

    def __post_init__(self):
        for field_name in ("name", "label"):
            if not isinstance(getattr(self, field_name), str):
                raise ArgumentError(f"{field_name} must be a string, got {getattr(self, field_name)!r}")
        if self.kind not in ("t5", "per-offset", "alibi", "none"):
            raise ArgumentError(f'kind must be "t5", "per-offset", "alibi" or "none", got {self.kind!r}')
        if self.kind == "t5":
            bucket_config(False, self.num_buckets, self.max_distance)
        if self.kind == "per-offset":
            if self.unseen not in ("clip", "zero"):
                raise ArgumentError(f'unseen must be "clip" or "zero", got {self.unseen!r}')
            if self.clip is not None:
                check_int("clip", self.clip, minimum=0)


    def parameter_of_offset(self, n, train_len) -> np.ndarray:
        """For offsets d = 0..n-1, the index of the learned parameter that gives their bias.

        -1 where no learned parameter is used: offsets a "zero" table never trained, and every
        offset of "alibi" and "none". T5 indices are bucket ids (relative_position = -d).
        """
        n = check_int("n", n, minimum=1)
        train_len = check_int("train_len", train_len, minimum=2)
        d = np.arange(n)
        if self.kind == "t5":
            index = np.asarray(bucket_ids(-d, False, self.num_buckets, self.max_distance))  # checked in __post_init__
        elif self.kind == "per-offset":
            last = self.last_own_offset(train_len)
            index = np.where(d <= last, d, -1) if self.unseen == "zero" else np.minimum(d, last)
        else:
            index = np.full(n, -1)
        # The platform's index type: in the browser (32-bit WebAssembly) np.bincount and np.add.at
        # refuse int64 indices, and bucket ids are int64.
        return index.astype(np.intp)

    def last_own_offset(self, train_len) -> int:
        """per-offset schemes: the largest offset with its own parameter (train_len - 1 unless clipped)."""
        train_len = check_int("train_len", train_len, minimum=2)
        if self.kind != "per-offset":
            raise ArgumentError(f"last_own_offset is defined for per-offset schemes only, not {self.kind!r}")
        if self.clip is None:
            return train_len - 1
        if self.clip > train_len - 1:
            raise ArgumentError(f"clip must be <= train_len - 1 = {train_len - 1} (the largest trained offset), "
                                f"got {self.clip}")
        return self.clip


def t5_scheme(max_distance=32, num_buckets=16) -> Scheme:
    """T5 causal buckets with the given max_distance (name "t5-md<max_distance>"); checked by `Scheme`."""
    return Scheme(f"t5-md{max_distance}", f"T5 buckets, max_distance {max_distance}", "t5",
                  num_buckets=num_buckets, max_distance=max_distance)


SCHEMES = {s.name: s for s in (
    Scheme("t5", "T5 buckets (16, max_distance 32)", "t5"),
    Scheme("per-offset-A", "per-offset, clipped at L-1 (Model A)", "per-offset", clip=None, unseen="clip"),
    Scheme("per-offset-0", "per-offset, unseen offsets never trained", "per-offset", clip=None, unseen="zero"),
    Scheme("per-offset-32", "per-offset, clipped at 32 (inside L)", "per-offset", clip=32),
    Scheme("alibi", "ALiBi (fixed slopes)", "alibi"),
    Scheme("none", "no position information", "none"),
    Scheme("t5-far", "T5 buckets, max_distance 256 (4L)", "t5", max_distance=256),
)}


def get_scheme(scheme) -> Scheme:
    """A Scheme, given one or the name of one in SCHEMES."""
    if isinstance(scheme, Scheme):
        return scheme
    if scheme not in SCHEMES:
        raise ArgumentError(f"scheme must be a Scheme or one of {list(SCHEMES)}, got {scheme!r}")
    return SCHEMES[scheme]


def alibi_slopes(num_heads) -> np.ndarray:
    """ALiBi's fixed per-head slopes 2^(-8 (h+1) / H), h = 0..H-1 (Press et al., 2022, section 3)."""
    num_heads = check_int("num_heads", num_heads, minimum=1)
    return 2.0 ** (-8.0 * np.arange(1, num_heads + 1) / num_heads)
