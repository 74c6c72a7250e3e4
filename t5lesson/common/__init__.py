"""The course's shared tools, used by the lessons, the length experiment and the explorers alike.

`figures` (the one figure style, PNG writing and alt text), `progress` (progress bars for long
cells) and `determinism` (reproducible training on one thread). They import only the core; every
room of the course may import them (`tests/test_layout.py`); the grading engine does not.
"""
