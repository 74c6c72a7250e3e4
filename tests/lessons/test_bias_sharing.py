"""Which layers own a bias table, read off transformers' T5 and UMT5 built offline."""
import pytest
from torch import nn

from t5lesson import ArgumentError
from t5lesson.lessons.bias_sharing import attention_modules, owners_by_kind, reference_models


@pytest.fixture(scope="module")
def models():
    return reference_models()


def test_t5_shares_one_table_per_stack_and_cross_attention_has_none(models):
    assert owners_by_kind(models["T5"]) == {"encoder self": [0], "decoder self": [0], "decoder cross": []}
    owners = [m for m in attention_modules(models["T5"]) if m.owns_table]
    assert [m.table_shape for m in owners] == [(32, 2), (32, 2)]  # [num_buckets, heads]


def test_umt5_gives_every_self_attention_layer_its_own(models):
    assert owners_by_kind(models["UMT5"]) == {"encoder self": [0, 1, 2], "decoder self": [0, 1, 2],
                                              "decoder cross": []}


def test_bad_models():
    with pytest.raises(ArgumentError, match="must be a torch.nn.Module"):
        attention_modules("t5-small")
    with pytest.raises(ArgumentError, match="no T5-style attention modules"):
        attention_modules(nn.Linear(2, 2))
