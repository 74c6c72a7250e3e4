"""Authoring: the notebook format, solutions -> exercises."""
