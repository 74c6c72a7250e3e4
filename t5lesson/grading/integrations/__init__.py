"""Shards, LMS export and Gradescope."""
