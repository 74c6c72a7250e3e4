"""Relative bias: t5lesson's Toeplitz construction vs transformers' T5Attention.compute_bias.

Run: python benchmarks/bias_vs_reference.py [--lengths 512 2048 4096] [--heads 8] [--repeats 5]

Time: both run side by side in this process, alternating, on the same table; each output is
checked equal to the other before any timing counts. We print the median and the ratio.
Memory: each (implementation, length) runs in a fresh Python process that resets its peak RSS
(VmHWM, Linux) after warming up, then makes one call; peak RSS minus the RSS before the call is
the peak extra memory, printed as a multiple of the output tensor's size.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

from t5lesson import relative_bias
from t5lesson.reference import reference_bias


def make_reference(table, bidirectional=True, max_distance=128):
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    config = T5Config(num_heads=table.shape[1], relative_attention_num_buckets=table.shape[0],
                      relative_attention_max_distance=max_distance, is_decoder=not bidirectional,
                      attn_implementation="eager")
    ref = T5Attention(config, has_relative_attention_bias=True, layer_idx=0)
    with torch.no_grad():
        ref.relative_attention_bias.weight.copy_(table)
    return ref


def run_ours(table, length):
    return relative_bias(table, length, length)


def time_side_by_side(length, heads, repeats):
    table = torch.randn(32, heads)
    ref = make_reference(table)
    with torch.no_grad():
        ours, theirs = run_ours(table, length), ref.compute_bias(length, length)[0]
        assert torch.equal(ours, theirs), f"outputs differ at length {length}"
        del ours, theirs
        times = {"t5lesson": [], "transformers": []}
        for _ in range(repeats):
            for name, fn in (("t5lesson", lambda: run_ours(table, length)),
                             ("transformers", lambda: ref.compute_bias(length, length))):
                start = time.perf_counter()
                out = fn()
                times[name].append(time.perf_counter() - start)
                del out
    return {name: statistics.median(ts) for name, ts in times.items()}


def _rss_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _peak_child(impl, length, heads):
    """Runs in a fresh process: peak extra RSS of one call, in bytes (Linux: VmHWM after, VmRSS before)."""
    table = torch.randn(32, heads)
    ref = make_reference(table)
    with torch.no_grad():  # warm up both code paths on a tiny size so lazy allocations are not counted
        run_ours(table, 8), ref.compute_bias(8, 8)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak (VmHWM) to the current RSS
        before = _rss_bytes("VmRSS")
        out = run_ours(table, length) if impl == "t5lesson" else ref.compute_bias(length, length)
        after = _rss_bytes("VmHWM")
    print(json.dumps({"extra": after - before, "output": out.numel() * out.element_size()}))


def peak_memory(impl, length, heads):
    cmd = [sys.executable, __file__, "--child", impl, str(length), str(heads)]
    result = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    return result["extra"] / result["output"], result["output"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 4096])
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _peak_child(args.child[0], int(args.child[1]), int(args.child[2]))

    assert torch.equal(reference_bias(torch.ones(32, 2), 3, 3)[0], relative_bias(torch.ones(32, 2), 3, 3))
    print(f"relative bias, {args.heads} heads, q_len = k_len = L, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, median of {args.repeats}")
    print(f"{'L':>6} {'t5lesson ms':>12} {'transformers ms':>16} {'speed-up':>9} "
          f"{'mem t5lesson':>13} {'mem transformers':>17}  (peak extra RSS / output size)")
    for length in args.lengths:
        t = time_side_by_side(length, args.heads, args.repeats)
        mem_ours, size = peak_memory("t5lesson", length, args.heads)
        mem_ref, _ = peak_memory("transformers", length, args.heads)
        print(f"{length:>6} {t['t5lesson'] * 1e3:>12.1f} {t['transformers'] * 1e3:>16.1f} "
              f"{t['transformers'] / t['t5lesson']:>8.1f}x {mem_ours:>12.2f}x {mem_ref:>16.2f}x"
              f"   output {size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
