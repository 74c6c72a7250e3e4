"""Running one submission: intake, the run notebook, the worker."""
