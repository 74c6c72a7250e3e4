"""Every matplotlib figure of the course: a pyplot-free `Figure`, and its PNG for a notebook cell.

Lessons, explorers and the length experiment draw on plain `Figure` objects made by
`new_figure` (no pyplot: nothing global, nothing shown twice by the inline backend), and the
lessons display static ones with `as_image` (imported from here, and only from here).
"""
from __future__ import annotations

import io

__all__ = ["new_figure", "as_image"]


def new_figure(width, height, dpi=80, layout="constrained"):
    """A `Figure` of width x height inches with an Agg canvas (`fig.canvas`) and the given layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=dpi, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def as_image(fig):
    """The figure as an IPython PNG image (what a notebook cell shows)."""
    from IPython.display import Image

    buffer = io.BytesIO()
    fig.canvas.print_png(buffer)
    return Image(buffer.getvalue())
