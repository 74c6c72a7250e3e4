"""Helpers used only by the lesson notebooks: the numbers, toy models and static figures each lesson shows.

Nothing in the core (`buckets`, `bias`, `scores`, `layer`, `saturation`, `reference`) imports
from here; the lessons, the explorers and the exercise bank do.
"""
