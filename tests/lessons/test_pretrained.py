"""t5lesson.lessons.pretrained: bias tables read from checkpoints saved here, in temporary folders (nothing
downloaded)."""
import numpy as np
import pytest
import torch

from t5lesson import ArgumentError, relative_bias
from t5lesson.lessons.pretrained import BiasTables, WeightsNotAvailable, load_bias_tables, tables_from_model
from t5lesson.lessons.pretrained_figures import bias_curves_figure, toy_tables

TINY = dict(vocab_size=32, d_model=16, d_kv=4, d_ff=32, num_heads=3, num_layers=3, num_decoder_layers=2,
            dropout_rate=0.0, relative_attention_num_buckets=12, relative_attention_max_distance=40)


def _save(tmp_path, model):
    folder = tmp_path / type(model).__name__
    model.save_pretrained(folder)
    return folder


def _table(model, stack, layer=0):
    return getattr(model, stack).block[layer].layer[0].SelfAttention.relative_attention_bias.weight.detach().numpy()


@pytest.fixture(scope="module")
def t5_folder(tmp_path_factory):
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(1)
    model = T5ForConditionalGeneration(T5Config(**TINY)).eval()
    return _save(tmp_path_factory.mktemp("t5"), model), model


def test_t5_tables_equal_the_saved_weights_exactly(t5_folder):
    folder, model = t5_folder
    tables = load_bias_tables(folder, local_files_only=True)
    assert tables.model_type == "t5" and not tables.per_layer
    for stack, bidirectional in (("encoder", True), ("decoder", False)):
        loaded = getattr(tables, stack)
        assert loaded.table.dtype == np.float32 and loaded.table.shape == (12, 3)  # [num_buckets, heads]
        np.testing.assert_array_equal(loaded.table, _table(model, stack))
        assert (loaded.num_buckets, loaded.max_distance, loaded.bidirectional) == (12, 40, bidirectional)
        assert loaded.layers == (0,)
        np.testing.assert_array_equal(loaded.layer(2), loaded.table)  # later layers reuse layer 0's table
    assert "one table, in layer 0" in tables.summary()


def test_loaded_table_reproduces_the_models_own_bias(t5_folder):
    """The table plus its bucketing config gives exactly the bias transformers adds (compute_bias)."""
    folder, model = t5_folder
    tables = load_bias_tables(str(folder), local_files_only=True)
    for stack in ("encoder", "decoder"):
        loaded = getattr(tables, stack)
        ours = relative_bias(loaded.table, 7, 9, bidirectional=loaded.bidirectional, max_distance=loaded.max_distance)
        with torch.no_grad():
            theirs = getattr(model, stack).block[0].layer[0].SelfAttention.compute_bias(7, 9)[0].numpy()
        np.testing.assert_array_equal(ours, theirs)


def test_umt5_gives_one_table_per_layer_and_says_so(tmp_path):
    from transformers import UMT5Config, UMT5ForConditionalGeneration

    torch.manual_seed(2)
    model = UMT5ForConditionalGeneration(UMT5Config(**TINY)).eval()
    tables = load_bias_tables(_save(tmp_path, model), local_files_only=True)
    assert tables.model_type == "umt5" and tables.per_layer
    assert tables.encoder.layers == (0, 1, 2) and tables.decoder.layers == (0, 1)
    for stack in ("encoder", "decoder"):
        for n, table in zip(getattr(tables, stack).layers, getattr(tables, stack).tables, strict=True):
            np.testing.assert_array_equal(table, _table(model, stack, n))
    with pytest.raises(ArgumentError, match="one table per layer"):
        _ = tables.encoder.table
    with pytest.raises(ArgumentError, match="tables for layers"):
        tables.decoder.layer(5)
    assert "one table per layer, 3 layers (UMT5 style)" in tables.summary()


def test_mt5_and_an_encoder_only_checkpoint(tmp_path):
    from transformers import MT5Config, MT5Model, T5Config, T5EncoderModel

    mt5 = MT5Model(MT5Config(**TINY)).eval()
    tables = load_bias_tables(_save(tmp_path, mt5), local_files_only=True)
    assert tables.model_type == "mt5"
    np.testing.assert_array_equal(tables.decoder.table, _table(mt5, "decoder"))

    encoder_only = T5EncoderModel(T5Config(**TINY)).eval()
    tables = load_bias_tables(_save(tmp_path, encoder_only), local_files_only=True)
    assert tables.decoder is None and "decoder: none" in tables.summary()
    np.testing.assert_array_equal(tables.encoder.table, _table(encoder_only, "encoder"))


def test_tables_from_a_model_in_memory_match_loading_it(t5_folder):
    folder, model = t5_folder
    in_memory = tables_from_model(model)
    loaded = load_bias_tables(folder, local_files_only=True)
    np.testing.assert_array_equal(in_memory.encoder.table, loaded.encoder.table)


def test_missing_weights_say_how_to_get_them(tmp_path):
    with pytest.raises(WeightsNotAvailable, match="internet") as error:
        load_bias_tables("google/no-such-t5-checkpoint-for-tests", local_files_only=True)
    assert isinstance(error.value, OSError) and "save_pretrained" in str(error.value)
    with pytest.raises(WeightsNotAvailable, match="no folder"):
        load_bias_tables("./no/such/folder")
    (tmp_path / "config_only").mkdir()
    (tmp_path / "config_only" / "config.json").write_text('{"model_type": "t5"}')
    with pytest.raises(WeightsNotAvailable, match="not its weights"):
        load_bias_tables(tmp_path / "config_only", local_files_only=True)


def test_bad_arguments(tmp_path):
    from transformers import BertConfig, BertModel

    for bad in (None, 3, ["t5-small"]):
        with pytest.raises(ArgumentError, match="hub id"):
            load_bias_tables(bad)
    with pytest.raises(ArgumentError, match="must not be empty"):
        load_bias_tables("  ")
    with pytest.raises(ArgumentError, match="local_files_only must be True or False"):
        load_bias_tables("t5-small", local_files_only="yes")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ArgumentError, match="no config.json"):
        load_bias_tables(tmp_path / "empty")
    (tmp_path / "file.bin").write_bytes(b"")
    with pytest.raises(ArgumentError, match="is a file"):
        load_bias_tables(tmp_path / "file.bin")
    bert = BertModel(BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32))
    with pytest.raises(ArgumentError, match="only t5, mt5, umt5"):
        load_bias_tables(_save(tmp_path, bert), local_files_only=True)
    with pytest.raises(ArgumentError, match="transformers T5"):
        tables_from_model("t5-small")


def test_figure_draws_every_head_of_both_stacks(t5_folder):
    folder, _ = t5_folder
    fig = bias_curves_figure(load_bias_tables(folder, local_files_only=True))
    encoder, decoder = fig.axes
    assert len(encoder.get_lines()) >= 3 and encoder.get_legend() is None and decoder.get_legend() is not None
    assert encoder.get_xlim()[1] > 0 >= decoder.get_xlim()[1] - 0.5  # the decoder stops at offset 0
    toy = toy_tables()
    assert isinstance(toy, BiasTables) and toy.encoder.table.shape == (32, 4)
    bias_curves_figure(toy, head_names=["a", "b", "c", "d"])
    with pytest.raises(ArgumentError, match="one name per head"):
        bias_curves_figure(toy, head_names=["a"])
    with pytest.raises(ArgumentError, match="BiasTables"):
        bias_curves_figure(np.zeros((32, 4)))
