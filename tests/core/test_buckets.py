"""Bucketing: equal to transformers over every offset in [-5000, 5000] and many configs, exact at ties."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from t5lesson import ArgumentError, bucket_ranges, relative_position_bucket
from t5lesson.buckets import bucket_config
from t5lesson.reference import reference_bucket

OFFSETS = np.arange(-5000, 5001)
MAX_DISTANCES = [2, 3, 5, 7, 9, 10, 13, 16, 20, 31, 32, 33, 50, 64, 100, 127, 128, 129, 200, 255,
                 256, 300, 500, 512, 777, 1000, 1024, 2048, 4096, 5000]


def valid_configs():
    for num_buckets in range(2, 131):
        for bidirectional in (True, False):
            max_exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
            if max_exact < 1:
                continue
            for max_distance in MAX_DISTANCES:
                if max_distance > max_exact:
                    yield bidirectional, num_buckets, max_distance


def exact_ties(bidirectional, num_buckets, max_distance):
    """{offset: exact bucket} where the log formula's real value is exactly an integer k.

    Written independently of the package: for each k, the only candidate is
    n = m * (D / m) ** (k / (B - m)); integers then decide whether it is exact.
    """
    per = num_buckets // 2 if bidirectional else num_buckets
    m, width = per // 2, per - per // 2
    ties = {}
    for k in range(1, width):
        n = round(m * (max_distance / m) ** (k / width))
        if m < n < max_distance and n ** width * m ** k == max_distance ** k * m ** width:
            ties[-n] = m + k
            if bidirectional:
                ties[n] = per + m + k
    return ties


def test_equal_to_reference_except_at_ties_where_it_is_exact():
    """Everywhere but at ties: equal to transformers. At a tie: the exact bucket, and the
    reference gives it or the one below (its float32 rounding, which depends on the CPU)."""
    configs = list(valid_configs())
    assert len(configs) > 5000
    torch_offsets = torch.from_numpy(OFFSETS)
    tie_count = 0
    for config in configs:
        ours = relative_position_bucket(OFFSETS, *config)
        np.testing.assert_array_equal(relative_position_bucket(torch_offsets, *config).numpy(), ours,
                                      err_msg=str(config))
        reference = reference_bucket(OFFSETS, *config)
        ties = exact_ties(*config)
        at_tie = np.isin(OFFSETS, list(ties))
        np.testing.assert_array_equal(ours[~at_tie], reference[~at_tie], err_msg=str(config))
        for offset, exact in ties.items():
            i = offset + 5000
            assert ours[i] == exact, (config, offset)
            assert reference[i] in (exact, exact - 1), (config, offset, reference[i])
        assert sorted(ties) == list(bucket_ranges(*config).ties), config
        tie_count += len(ties)
    assert tie_count > 100  # 680 tied offsets over this grid; on the machine that wrote this, the reference
    # landed one below the exact bucket at 6 of them


def test_known_ties():
    assert bucket_ranges(True, 32, 128).ties == (-64, -32, -16, 16, 32, 64)
    assert bucket_ranges(False, 32, 128).ties == ()
    assert relative_position_bucket(-30, False, 36, 50) == 27  # log(30/18) / log(50/18) * 18 = 9 exactly
    assert relative_position_bucket(-12, False, 17, 27) == 11  # exactly 3
    assert relative_position_bucket(np.array([-16, -32, -64, 16, 32, 64])).tolist() == [10, 12, 14, 26, 28, 30]


def test_float64_log_would_disagree():
    """The float32 recipe matters: the same formula in float64 moves boundary offsets."""
    disagreements = 0
    for bidirectional, num_buckets, max_distance in valid_configs():
        per = num_buckets // 2 if bidirectional else num_buckets
        max_exact = per // 2
        n = np.abs(OFFSETS) if bidirectional else np.maximum(-OFFSETS, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            large = max_exact + (np.log(n / max_exact) / math.log(max_distance / max_exact)
                                 * (per - max_exact)).astype(np.int64)
        naive = np.where(n < max_exact, n, np.minimum(large, per - 1))
        if bidirectional:
            naive = naive + np.where(OFFSETS > 0, per, 0)
        disagreements += int((naive != reference_bucket(OFFSETS, bidirectional, num_buckets, max_distance)).sum())
    assert disagreements > 0  # 63 (offset, config) pairs over this grid, measured with NumPy 2.4


def test_same_kind_out():
    assert relative_position_bucket(-10) == 8 and type(relative_position_bucket(-10)) is int
    assert relative_position_bucket(np.int32(10)) == 24
    assert isinstance(relative_position_bucket(np.int32(10)), np.integer)
    out = relative_position_bucket(np.array([[0, -1], [1, 200]], dtype=np.int32))
    assert isinstance(out, np.ndarray) and out.shape == (2, 2) and out.tolist() == [[0, 1], [17, 31]]
    t = relative_position_bucket(torch.tensor([0, -1, 1, 200], dtype=torch.int32))
    assert isinstance(t, torch.Tensor) and t.dtype == torch.long and t.tolist() == [0, 1, 17, 31]


def test_default_encoder_table():
    table = bucket_ranges(True, 32, 128)
    expected = {0: "0", 8: "-11..-8", 9: "-15..-12", 10: "-22..-16", 11: "-31..-23", 12: "-45..-32",
                13: "-63..-46", 14: "-90..-64", 15: "<= -91", 24: "8..11", 25: "12..15", 26: "16..22",
                27: "23..31", 28: "32..45", 29: "46..63", 30: "64..90", 31: ">= 91"}
    expected.update({b: str(-b) for b in range(1, 8)})
    expected.update({b: str(b - 16) for b in range(17, 24)})
    assert {b: str(table[b]) for b in expected} == expected
    assert table.unused == (16,) and table[16] is None
    assert table.last_bucket_start == 91
    assert (table.per_direction, table.max_exact) == (16, 8) == bucket_config(True, 32, 128)


def test_default_decoder_table():
    table = bucket_ranges(False, 32, 128)
    expected = {0: ">= 0", 16: "-18..-16", 17: "-20..-19", 18: "-23..-21", 19: "-26..-24", 20: "-30..-27",
                21: "-34..-31", 22: "-39..-35", 23: "-45..-40", 24: "-51..-46", 25: "-58..-52",
                26: "-66..-59", 27: "-76..-67", 28: "-86..-77", 29: "-98..-87", 30: "-112..-99",
                31: "<= -113"}
    expected.update({b: str(-b) for b in range(1, 16)})
    assert {b: str(table[b]) for b in range(32)} == expected
    assert table.unused == () and table.last_bucket_start == 113
    assert (table.per_direction, table.max_exact) == (32, 16) == bucket_config(False, 32, 128)


@pytest.mark.parametrize("num_buckets", [5, 9, 33, 65])
def test_odd_bidirectional_leaves_two_buckets_unused(num_buckets):
    table = bucket_ranges(True, num_buckets, 128)
    assert table.unused == (num_buckets // 2, num_buckets - 1)


@pytest.mark.parametrize("config", [(True, 8, 20), (False, 16, 32), (True, 32, 128), (True, 130, 4096)])
def test_ranges_agree_with_buckets(config):
    """Every bucket covers one contiguous run of offsets, and the table says which."""
    table = bucket_ranges(*config)
    offsets = np.arange(-3 * config[2], 3 * config[2] + 1)
    buckets = relative_position_bucket(offsets, *config)
    for r in table.ranges:
        lo = r.lo if r.lo is not None else -np.inf
        hi = r.hi if r.hi is not None else np.inf
        inside = (offsets >= lo) & (offsets <= hi)
        np.testing.assert_array_equal(buckets == r.bucket, inside)


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_buckets=32, max_distance=8), "max_distance must be > max_exact = 8"),
    (dict(num_buckets=32, max_distance=7), "max_distance must be > max_exact = 8"),
    (dict(num_buckets=3), "num_buckets must be >= 4 for bidirectional"),
    (dict(num_buckets=1, bidirectional=False), "num_buckets must be >= 2 for causal"),
    (dict(num_buckets=-4), "num_buckets must be >= 4"),
    (dict(num_buckets=32.0), "num_buckets must be an integer"),
    (dict(max_distance=128.5), "max_distance must be an integer"),
    (dict(bidirectional="yes"), "bidirectional must be True or False"),
])
def test_bad_configs_raise_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        relative_position_bucket(np.arange(5), **kwargs)
    with pytest.raises(ValueError, match=message):
        bucket_ranges(**{"bidirectional": True, "num_buckets": 32, "max_distance": 128, **kwargs})


@pytest.mark.parametrize("position, message", [
    (np.array([1.0, 2.0]), "must hold integers, got an array of dtype float64"),
    (np.array([True]), "must hold integers, got an array of dtype bool"),
    (True, "got the bool True"),
    (1.5, "got float"),
    ("3", "got str"),
    ([1, 2], "got list"),
    (torch.tensor([1.0]), "got a tensor of dtype torch.float32"),
    (torch.tensor([True]), "got a bool tensor"),
])
def test_bad_positions_raise_clear_errors(position, message):
    with pytest.raises(ArgumentError, match=message):
        relative_position_bucket(position)


configs = st.sampled_from(list(valid_configs())[::7])
offsets = st.lists(st.integers(-100_000, 100_000), min_size=1, max_size=50)


@settings(max_examples=200, deadline=None)
@given(config=configs, rel=offsets)
def test_properties(config, rel):
    bidirectional, num_buckets, _ = config
    rel = np.array(rel)
    b = relative_position_bucket(rel, *config)
    assert ((0 <= b) & (b < num_buckets)).all()
    np.testing.assert_array_equal(relative_position_bucket(torch.from_numpy(rel), *config).numpy(), b)
    # monotone in |offset| within each direction
    for side in (rel[rel <= 0], rel[rel > 0]):
        order = np.argsort(np.abs(side), kind="stable")
        assert (np.diff(relative_position_bucket(side[order], *config)) >= 0).all()
    if not bidirectional:
        assert (relative_position_bucket(np.abs(rel), *config) == 0).all()
