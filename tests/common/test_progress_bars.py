"""Progress bars: a widget in a kernel, one line on a terminal, nothing elsewhere; no timing in text outputs."""
import io

import pytest

from t5lesson import ArgumentError
from t5lesson.common import progress as progress_module
from t5lesson.common.progress import Progress, track


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_silent_where_nobody_watches(capsys):
    with Progress(10, "work") as bar:
        for _ in range(10):
            bar.update()
    assert bar.done == 10
    assert capsys.readouterr() == ("", "")


def test_one_line_on_a_terminal(monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setattr(progress_module, "INTERVAL_S", 0.0)
    assert list(track(range(3), "counting")) == [0, 1, 2]
    text = terminal.getvalue()
    assert text.count("\r") == 4 and text.endswith("\n") and "counting [" in text and "3/3" in text


def test_switched_off(monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setenv("T5LESSON_PROGRESS", "0")
    with Progress(5, "work") as bar:
        bar.update(5)
    assert terminal.getvalue() == ""


def test_widget_text_is_fixed_and_the_bar_follows(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    widget = progress_module._Widget(4, "training 2 models")
    bundle = shown[0]._repr_mimebundle_()
    assert bundle["text/plain"] == "training 2 models (a progress bar while the cell runs)"
    assert "application/vnd.jupyter.widget-view+json" in bundle
    widget.show(4, 4, 12.3, True)
    assert widget.bar.value == 4 and widget.bar.bar_style == "success" and "done" in widget.text.value


def test_bad_arguments():
    with pytest.raises(ArgumentError, match="total must be"):
        Progress(-1, "x")
    with pytest.raises(ArgumentError, match="description"):
        Progress(3, "")
