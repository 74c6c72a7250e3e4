"""What a run writes: gradebook, grades.json, the class page, progress."""
