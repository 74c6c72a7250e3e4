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
import subprocess
import sys

import torch

from t5lesson import relative_bias
from t5lesson.lessons.bias_timing import bias_timings
from t5lesson.reference import reference_bias, reference_bias_layer


def run_ours(table, length):
    return relative_bias(table, length, length)


def _rss_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _peak_child(impl, length, heads):
    """Runs in a fresh process: peak extra RSS of one call, in bytes (Linux: VmHWM after, VmRSS before)."""
    table = torch.randn(32, heads)
    ref = reference_bias_layer(table)
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
    for row in bias_timings(args.lengths, args.heads, args.repeats):
        assert row["equal"], f"outputs differ at length {row['length']}"
        mem_ours, size = peak_memory("t5lesson", row["length"], args.heads)
        mem_ref, _ = peak_memory("transformers", row["length"], args.heads)
        print(f"{row['length']:>6} {row['ours_s'] * 1e3:>12.1f} {row['reference_s'] * 1e3:>16.1f} "
              f"{row['speedup']:>8.1f}x {mem_ours:>12.2f}x {mem_ref:>16.2f}x   output {size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
