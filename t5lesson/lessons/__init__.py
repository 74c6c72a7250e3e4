"""The lessons' helpers: the numbers, toy models and static figures each lesson shows.

Nothing in the core (`buckets`, `bias`, `scores`, `layer`, `saturation`, `reference`) imports
from here. The lesson notebooks do, and so do the rooms that show the same lessons in other
forms (`tests/test_layout.py`): `lengthgen/` (`pair_counts`, `your_turn`), the explorers
(`toy_heads`, `dot_products`) and the learner's `t5lesson.check` (`your_turn`). The
exercise bank imports nothing from here (it only names some functions here, to block them while
answers are graded). The tools every room shares (figures, progress bars, determinism) live in
`t5lesson.common`.
"""
