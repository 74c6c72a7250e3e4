"""t5lesson: T5's unscaled attention with a learned relative-position bias, small, exact and fast.

Sign convention: relative_position = key_position - query_position (j - i).

Names are loaded on first use, so `import t5lesson` is instant and the NumPy-only parts
(buckets, saturation statistics, exercise checks) never pay for importing torch.
"""
import importlib
import sys

__version__ = "0.1.0"


def lazy_names(package: str, home: dict[str, str]):
    """PEP 562 `__getattr__` and `__dir__` for `package`: each name of `home` is imported from its
    module (`home[name]`, relative to the package) on first use, then kept in the package.

    Used as `__getattr__, __dir__ = lazy_names(__name__, HOME)` at the end of a package's `__init__`.
    """
    namespace = vars(sys.modules[package])

    def __getattr__(name):
        if name in home:
            value = getattr(importlib.import_module(f".{home[name]}", package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(namespace) | set(home))

    return __getattr__, __dir__


_HOME = {
    "ArgumentError": "_validate",
    "additive_mask": "scores", "attention": "scores", "attention_scores": "scores",
    "causal_mask": "scores", "combine_masks": "scores", "padding_mask": "scores",
    "softmax": "scores",
    "RelativePositionBias": "layer", "relative_bias": "bias",
    "BucketRange": "buckets", "BucketTable": "buckets", "bucket_ranges": "buckets",
    "relative_position_bucket": "buckets",
    "AttentionOutput": "layer", "T5SelfAttention": "layer", "attention_weights": "layer",
    "SaturationCurve": "saturation", "max_weight": "saturation", "random_logits": "saturation",
    "saturation_curve": "saturation", "softmax_entropy": "saturation", "softmax_jacobian_norm": "saturation",
    "query_gradient_norm": "saturation",
}
__all__ = sorted(_HOME)

__getattr__, __dir__ = lazy_names(__name__, _HOME)
