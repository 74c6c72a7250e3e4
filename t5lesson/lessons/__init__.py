"""The lessons' helpers: the numbers, toy models and static figures each lesson shows.

Nothing in the core (`buckets`, `bias`, `scores`, `layer`, `saturation`, `reference`) imports
from here. The lesson notebooks do, and so do the rooms above this one (`tests/test_layout.py`):
`lengthgen/` (`figures`, `progress`, `determinism`, `pair_counts`, `your_turn`) and `explorers/`
(`figures`, `toy_heads`, `dot_products`). The exercise bank imports nothing from here (it only names
some functions here, to block them while answers are graded).
"""
