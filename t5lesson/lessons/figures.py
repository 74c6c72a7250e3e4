"""Static figures for the lessons: a pyplot-free matplotlib Figure, and its PNG for a notebook cell.

Lessons draw static figures on plain `Figure` objects (no pyplot: nothing global, nothing shown
twice by the inline backend) and display them with `as_image`.
"""
from __future__ import annotations

import io

__all__ = ["new_figure", "as_image"]


def new_figure(width, height, dpi=80):
    """A `Figure` of width x height inches with an Agg canvas and constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def as_image(fig):
    """The figure as an IPython PNG image (what a notebook cell shows)."""
    from IPython.display import Image

    buffer = io.BytesIO()
    fig.canvas.print_png(buffer)
    return Image(buffer.getvalue())
