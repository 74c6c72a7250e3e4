"""The length-generalisation experiment of lesson 5.

Train a one-layer, attention-only causal model on length L and test it at L, 2L, 4L and 8L,
with the position scheme as the only thing that changes:

    from t5lesson.lengthgen import Config, run_experiment
    results = run_experiment(["t5", "per-offset-A"], ["copy-k"], seeds=[0, 1, 2])
    results.mean("t5", "copy-k", 512)

Modules: tasks (the synthetic tasks), schemes (the position biases), model (the tiny model),
run (training, evaluation, the results table), counts (pairs per offset and per parameter),
variants (cached T5 runs for the explorer), stored (the full grid, run once and stored as
JSON), figures (the lesson's plots).
"""
from .model import TinyAttentionModel
from .run import Config, Results, evaluate, run_experiment, train, warmup_cosine
from .schemes import SCHEMES, PositionBias, Scheme, alibi_slopes, get_scheme, t5_scheme
from .tasks import IGNORE, TASKS, Task, get_task, make_batch
from .variants import Variant, t5_variants

__all__ = ["Config", "Results", "evaluate", "run_experiment", "train", "warmup_cosine", "SCHEMES", "Scheme",
           "PositionBias", "alibi_slopes", "get_scheme", "t5_scheme", "TASKS", "Task", "IGNORE", "get_task",
           "make_batch", "TinyAttentionModel", "Variant", "t5_variants"]
