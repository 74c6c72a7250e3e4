"""The length-generalisation experiment of lessons 5 and 5b.

Train a one-layer, attention-only causal model on length L and test it at L, 2L, 4L and 8L,
with the position scheme as the only thing that changes:

    from t5lesson.lengthgen import Config, run_experiment
    results = run_experiment(["t5", "per-offset-A"], ["copy-k"], seeds=[0, 1, 2])
    results.mean("t5", "copy-k", 512)

Lesson 5 writes its training loop out in the notebook, with a training step that the learner
writes (`step_check` checks it against `training_step`); `train` holds the same lines, and the
rest of `run` is plumbing (seeded models, the optimiser, the batches, evaluation, the results
table). Modules: tasks (the synthetic tasks), schemes (which parameter serves which
offset, NumPy only), position_bias (those parameters as a PyTorch module), model (the tiny
model), run (training, evaluation, the results table), counts (pairs per offset and per
parameter), variants (the explorer's T5 runs, stored as data), stored (the full grid, run once
and stored as JSON), figures (the lessons' plots), step_check (lesson 5's your-turn check).

Names load on first use, so the stored explorer data (`variants.load_variants`) is read
without importing torch.
"""
from .. import lazy_names

_HOME = {
    "TinyAttentionModel": "model",
    "Config": "run", "Results": "run", "evaluate": "run", "run_experiment": "run", "train": "run",
    "warmup_cosine": "run", "new_model": "run", "new_optimizer": "run", "warmup_cosine_schedule": "run",
    "training_batches": "run", "training_step": "run", "per_model_loss": "run", "record": "run", "refill": "run",
    "SCHEMES": "schemes", "PositionBias": "position_bias", "Scheme": "schemes", "alibi_slopes": "schemes",
    "get_scheme": "schemes", "t5_scheme": "schemes",
    "IGNORE": "tasks", "TASKS": "tasks", "Task": "tasks", "get_task": "tasks", "make_batch": "tasks",
    "check_training_step": "step_check", "TRAINING_STEP_HINTS": "step_check",
    "Variant": "variants", "t5_variants": "variants", "load_variants": "variants",
}
__all__ = sorted(_HOME)

__getattr__, __dir__ = lazy_names(__name__, _HOME)
