"""An explorer's frames (t5lesson.explorers.frames): its own figure at each setting of a small grid."""
import io

import numpy as np
import pytest
from PIL import Image

from t5lesson.explorers.bias_heatmap import BiasHeatmapExplorer
from t5lesson.explorers.frames import control_values, display_size, frames, grid
from t5lesson.explorers.warmup import SoftmaxOfTwo


def test_grid_varies_the_last_control_fastest():
    assert grid({"a": [1, 2], "b": ["x", "y"]}) == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"},
                                                   {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]


def test_control_values_add_the_start_value_and_sort():
    explorer = BiasHeatmapExplorer()
    assert control_values(explorer, {"content": [4, 0]}) == {"content": [0.0, 1.0, 4.0]}  # starts at 1
    assert control_values(explorer, {"attention": ["encoder"]})["attention"] == ["encoder", "decoder"]
    with pytest.raises(ValueError):
        control_values(explorer, {"no_such": [1]})


def test_each_frame_is_the_explorers_own_picture_and_description():
    explorer = SoftmaxOfTwo()
    made = frames(explorer, {"gap": [0.0, 6.0]})
    assert [f.values for f in made] == [{"gap": 0.0}, {"gap": 1.0}, {"gap": 6.0}]
    assert explorer.values == {"gap": 1.0}, "the explorer is left as it was"
    for frame in made:
        fresh = SoftmaxOfTwo(gap=frame.values["gap"])  # drawn afresh at that setting
        assert frame.alt == fresh.alt_text() and frame.readout == fresh.readout()
        shown = np.asarray(Image.open(io.BytesIO(frame.png)).convert("RGB"), dtype=int)
        exact = fresh.pixels()[..., :3].astype(int)
        assert shown.shape == exact.shape
        # 256 colours for a chart's flat fills and antialiased edges: the same picture to the eye
        assert np.abs(shown - exact).mean() < 0.5 and np.mean(np.abs(shown - exact).max(-1) > 24) < 0.001
    assert made[0].alt != made[2].alt
    assert display_size(made[0].png) == (explorer.display_width, exact.shape[0] // 2)
