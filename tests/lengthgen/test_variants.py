"""The explorer's stored T5 runs: what training gives, consistent with the grid, readable without torch."""
import json

import numpy as np
import pytest

from t5lesson import ArgumentError
from t5lesson.buckets import bucket_ids
from t5lesson.lengthgen import t5_scheme
from t5lesson.lengthgen.counts import pairs_per_parameter
from t5lesson.lengthgen.stored import load_stored
from t5lesson.lengthgen.variants import MAX_DISTANCES, VARIANTS_PATH, load_variants, t5_variants, variants_to_json


@pytest.fixture(scope="module")
def stored():
    return load_variants()


def test_stored_variants_are_what_training_gives(stored):
    """Retrain two stops (one whose far buckets are trained, one whose are not) and compare."""
    fresh = t5_variants([32, 256])
    for max_distance, v in fresh.items():
        kept = stored[max_distance]
        np.testing.assert_allclose(kept.accuracy, v.accuracy, atol=1e-6)
        np.testing.assert_allclose(kept.weight_on_key, v.weight_on_key, atol=1e-6)
        np.testing.assert_allclose(kept.table, v.table, atol=1e-6)
        assert kept.untrained_buckets == v.untrained_buckets


def test_stored_variants_agree_with_the_grid_and_the_bucket_counts(stored):
    assert tuple(stored) == MAX_DISTANCES
    default = load_stored()["default"]
    same = stored[32]  # max_distance 32 is the grid's "t5" scheme, seed 0: the same training
    np.testing.assert_allclose(same.accuracy, [default.values("t5", "copy-k", n)[0] for n in same.lengths], atol=1e-6)
    np.testing.assert_allclose(same.bias[:, :128], default.biases[("t5", "copy-k", 0)], atol=1e-4)
    for max_distance, v in stored.items():
        pairs = pairs_per_parameter(t5_scheme(max_distance), v.train_len)
        assert v.untrained_buckets == int((pairs == 0).sum())
        d = np.arange(max(v.lengths))
        np.testing.assert_array_equal(v.bias, v.table[bucket_ids(-d, False, 16, max_distance)].T)
        untrained = pairs == 0
        assert np.all(v.table[untrained] == 0)  # never reached by a training pair: still the start value
    assert [stored[m].untrained_buckets for m in MAX_DISTANCES] == [0, 0, 0, 2, 3, 4]


def test_round_trip(tmp_path, stored):
    path = tmp_path / "variants.json"
    path.write_text(json.dumps(variants_to_json(stored)))
    again = load_variants(path)
    for m in MAX_DISTANCES:
        np.testing.assert_array_equal(again[m].table, stored[m].table)
        assert again[m].accuracy == stored[m].accuracy
    assert VARIANTS_PATH.is_file()


def test_variants_check_their_arguments(tmp_path):
    with pytest.raises(ArgumentError, match="max_distance must be >= 9"):
        t5_variants([8])
    with pytest.raises(ArgumentError, match="at least one value"):
        t5_variants([])
    with pytest.raises(ArgumentError, match="task must be one of"):
        t5_variants([32], task="copy")
    with pytest.raises(ArgumentError, match="no stored explorer variants"):
        load_variants(tmp_path / "missing.json")
