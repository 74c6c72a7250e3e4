"""t5lesson: T5's unscaled attention with a learned relative-position bias, small, exact and fast.

Sign convention: relative_position = key_position - query_position (j - i).
"""
from ._checks import ArgumentError
from .attention import (additive_mask, attention, attention_scores, causal_mask, combine_masks,
                        padding_mask, softmax)
from .bias import RelativePositionBias, relative_bias
from .buckets import BucketRange, BucketTable, bucket_ranges, relative_position_bucket
from .layer import AttentionOutput, T5SelfAttention
from .saturation import (SaturationCurve, max_weight, random_logits, saturation_curve,
                         softmax_entropy, softmax_jacobian_norm)

__version__ = "0.1.0"
__all__ = [
    "ArgumentError", "additive_mask", "attention", "attention_scores", "causal_mask", "combine_masks",
    "padding_mask", "softmax", "RelativePositionBias", "relative_bias", "BucketRange", "BucketTable",
    "bucket_ranges", "relative_position_bucket", "AttentionOutput", "T5SelfAttention", "SaturationCurve",
    "max_weight", "random_logits", "saturation_curve", "softmax_entropy", "softmax_jacobian_norm",
]
