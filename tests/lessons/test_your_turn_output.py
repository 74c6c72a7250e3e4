"""What a your-turn check prints fits a notebook page, and a large array argument is named by its shape."""
import numpy as np

from t5lesson.lessons import your_turn as yt


def _first(table, n):
    return table[:n]


def test_every_printed_line_fits_the_page(capsys):
    def mine(table, n):
        raise NotImplementedError("Your turn")

    yt.your_turn("a_rather_long_step_name", mine, _first, [(np.zeros(4), 2)], hints=["x " * 80])
    yt.your_turn("a_rather_long_step_name", lambda table, n: table[:n] + 1, _first, [(np.zeros(4), 2)],
                 hints=["x " * 80])
    yt.hint("a_rather_long_step_name")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 4 and all(len(line) <= yt.WIDTH for line in lines), lines


def test_a_large_array_argument_is_named_by_its_shape(capsys):
    yt.your_turn("first", lambda table, n: table[:n] + 1, _first, [dict(table=np.zeros((32, 4)), n=3)])
    out = " ".join(capsys.readouterr().out.split())
    assert "table=an array of shape [32, 4], n=3" in out and "1, expected 0." in out
    yt.your_turn("first", lambda table, n: table[:n] + 1, _first, [(np.arange(3.0), 1)])
    assert "([0. 1. 2.], 1)" in " ".join(capsys.readouterr().out.split())


def test_a_module_argument_is_named_by_its_class_not_its_repr(capsys):
    torch = __import__("pytest").importorskip("torch")
    layer = torch.nn.Sequential(torch.nn.Linear(64, 64, bias=False), torch.nn.Linear(64, 64, bias=False))
    for module, name in ((layer, "a Sequential"), (torch.nn.Linear(2, 2), "a Linear")):
        yt.your_turn("first", lambda table, n, model: table[:n] + 1, lambda table, n, model: table[:n],
                     [dict(table=np.zeros(4), n=2, model=module)])
        out = " ".join(capsys.readouterr().out.split())
        assert f"model={name}" in out and "in_features" not in out, out
