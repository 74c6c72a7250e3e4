# Answers to the your-turn cells of notebooks/00_start_here.ipynb, one block per cell.
# Try each cell yourself first: the lesson's check tells you where your version differs.

# %% your_turn: weight_of_b
# Your turn (weight_of_b): key B's softmax weight when its score is `gap` above key A's.
import numpy as np

from t5lesson.lessons.your_turn import your_turn
from t5lesson.scores import softmax


def weight_of_b(gap):
    return np.exp(gap) / (1 + np.exp(gap))


def course_weight_of_b(gap):
    return float(softmax(np.array([0.0, gap]))[1])


weight_of_b = your_turn("weight_of_b", weight_of_b, reference=course_weight_of_b,
                        cases=[(0.0,), (3.0,), (6.0,), (-2.0,)])
