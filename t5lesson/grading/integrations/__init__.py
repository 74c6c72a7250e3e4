"""Grades into an LMS: Canvas and Moodle."""
