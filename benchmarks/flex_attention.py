"""T5's attention at scale: the materialised bias against the bias as a FlexAttention score_mod, side by side.

Run: python benchmarks/flex_attention.py            (CPU: small sizes, says so)
     python benchmarks/flex_attention.py --gpu      (CUDA: the sizes of lesson 8's stored runs)
     options: --lengths 256 512 --dtypes fp32 bf16 --repeats 5 --json results.json

One process, four tables, every pair checked against each other before its timing counts
(H = 8, d = 64, T5's default buckets, encoder, no grad):
1. attention: the attention alone, q, k, v given, each call building its bias from the table on the
   device: eager (the [1, H, L, L] bias materialised and added, as transformers' eager path and
   `t5lesson.layer` do) against FlexAttention compiled (the bias a per-offset score_mod).
2. t5lesson_layer: one layer forward, projections included: `T5SelfAttention` against
   `FlexT5SelfAttention`, compiled and (on CPU) uncompiled, the path the lessons run.
3. layer: transformers' `T5Attention` with attn_implementation eager, sdpa and flex_attention
   (each builds its bias with compute_bias first) against the same weights in our flex layer.
4. bias builders: transformers' `compute_bias`, `t5lesson.layer.RelativePositionBias` (buckets
   on the host in NumPy) and `t5lesson.flex.per_offset_bias` (buckets on the device, no host round
   trip), the last also laid out as [1, H, L, L] with `dense_bias`, against a plain write of a tensor
   that size: the share of the write's bandwidth (goal on a GPU: at least 50 % at L >= 4,096).
A backend that fails here (transformers' flex_attention does not compile on CPU with PyTorch 2.13)
is reported as failed, and the run goes on.

Time: median of --repeats rounds after a warm-up (which compiles), the runs of a table interleaved
within each round; on CUDA with synchronisation.
Peak memory: CUDA, torch.cuda.max_memory_allocated above what was allocated before the call; CPU,
the process's peak resident memory (VmHWM, reset through /proc/self/clear_refs) above its
resident memory before the call (glibc's mmap threshold fixed, so freed tensors leave it): both
as GiB of extra memory one call needs. At the CPU's small sizes these are a few MiB and noisy.
With --json (default on CUDA: flex_gpu_runs.json here) the results are written in the shape of
t5lesson/lessons/flex_gpu_runs.json, with the machine, versions, TF32 setting and command.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import warnings

import torch
import transformers
from bias_vs_reference import _rss_bytes  # beside this script: peak resident memory, Linux

from t5lesson.flex import FlexT5SelfAttention, bias_score_mod, dense_bias, flex_t5_attention, per_offset_bias
from t5lesson.layer import RelativePositionBias, T5SelfAttention
from t5lesson.reference import reference_bias_layer

HEADS, D_KV = 8, 64
D_MODEL = HEADS * D_KV
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
GIB = 2 ** 30
BACKENDS = ("eager", "sdpa", "flex_attention")


# --- measuring ---

def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_ms(runs, device, repeats):
    """{name: median milliseconds} of `repeats` rounds, each calling every run once, in turn.

    Interleaved, so that a burst of load from elsewhere on a shared machine falls on every run alike.
    Each run is called once first (a warm-up, which also compiles).
    """
    times = {name: [] for name in runs}
    for run in runs.values():
        run()
    _sync(device)
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            _sync(device)
            times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def peak_gib(fn, device):
    """GiB of extra memory one call of fn needs at its peak (see the module docstring)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        out = fn()
        torch.cuda.synchronize(device)
        extra = torch.cuda.max_memory_allocated(device) - before
    else:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # the peak resident memory (VmHWM) starts again from the current one
        before = _rss_bytes("VmRSS")
        out = fn()
        extra = _rss_bytes("VmHWM") - before
    del out
    return extra / GIB


def largest_difference(a, b):
    return (a.float() - b.float()).abs().max().item()


# --- the three tables ---

def _qkv_and_table(length, dtype, device):
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, HEADS, length, D_KV, generator=g).to(device, dtype) for _ in range(3))
    q = q * D_KV ** -0.5  # unit-variance logits, as T5's initialisation gives (the 1/sqrt(d) folded into W_q)
    table = (torch.randn(32, HEADS, generator=g) * D_MODEL ** -0.5).to(device, dtype)
    return q, k, v, table


def attention_row(length, dtype_name, device, repeats):
    """Table 1: the attention alone, given q, k, v [1, H, L, d] and the table; each call builds its own bias
    on the device: eager materialises [1, H, L, L] and adds it, FlexAttention looks it up per offset."""
    q, k, v, table = _qkv_and_table(length, DTYPES[dtype_name], device)
    bias_args = dict(bidirectional=True, max_distance=128)

    def eager():
        bias = dense_bias(per_offset_bias(table, length, length, **bias_args), length, length)
        scores = q @ k.transpose(-1, -2) + bias  # as T5SelfAttention: scores in the input dtype, softmax in float32
        return torch.softmax(scores.float(), dim=-1).to(v.dtype) @ v

    def flex():
        per_offset = per_offset_bias(table, length, length, **bias_args)
        return flex_t5_attention(q, k, v, score_mod=bias_score_mod(per_offset, length), compiled=True)

    runs = {"eager": eager, "flex": flex}
    row = {"L": length, "dtype": dtype_name}
    with torch.no_grad():
        row["largest_difference"] = largest_difference(flex(), eager())
        for name, ms in median_ms(runs, device, repeats).items():
            row[f"{name}_ms"], row[f"{name}_peak_gib"] = ms, peak_gib(runs[name], device)
    return row


def _layers(device, dtype):
    """(eager T5SelfAttention, compiled FlexT5SelfAttention, uncompiled FlexT5SelfAttention), same weights."""
    torch.manual_seed(0)
    eager = T5SelfAttention(D_MODEL, HEADS, D_KV).to(device, dtype).eval()
    flex = FlexT5SelfAttention(D_MODEL, HEADS, D_KV, compiled=True).to(device, dtype).eval()
    flex.load_state_dict(eager.state_dict())
    unfused = FlexT5SelfAttention(D_MODEL, HEADS, D_KV).to(device, dtype).eval()
    unfused.load_state_dict(eager.state_dict())
    return eager, flex, unfused


def layer_pair_row(length, dtype_name, device, repeats):
    """Table 2: eager T5SelfAttention against FlexT5SelfAttention, compiled and not, one layer forward."""
    eager, flex, unfused = _layers(device, DTYPES[dtype_name])
    x = torch.randn(1, length, D_MODEL, generator=torch.Generator().manual_seed(1)).to(device, DTYPES[dtype_name])
    runs = {"eager": lambda: eager(x).output, "flex": lambda: flex(x).output}
    if device.type == "cpu":  # on a GPU the unfused path would hold [1, H, L, L] scores several times over
        runs["flex_uncompiled"] = lambda: unfused(x).output
    row = {"L": length, "dtype": dtype_name, "flex_uncompiled_ms": None, "flex_uncompiled_peak_gib": None}
    with torch.no_grad():
        expected = runs["eager"]()
        row["largest_difference"] = largest_difference(runs["flex"](), expected)
        if "flex_uncompiled" in runs:
            row["uncompiled_largest_difference"] = largest_difference(runs["flex_uncompiled"](), expected)
        for name, ms in median_ms(runs, device, repeats).items():
            row[f"{name}_ms"], row[f"{name}_peak_gib"] = ms, peak_gib(runs[name], device)
    return row


def _transformers_layer(eager, backend):
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    config = T5Config(d_model=D_MODEL, d_kv=D_KV, num_heads=HEADS, dropout_rate=0.0, attn_implementation=backend)
    layer = T5Attention(config, has_relative_attention_bias=True, layer_idx=0)
    layer.load_state_dict(eager.state_dict())
    return layer.to(eager.q.weight.device, eager.q.weight.dtype).eval()


def _difference_or_failure(run, reference):
    """The largest difference from reference, or why the backend could not run (reported, not fatal)."""
    try:
        return largest_difference(run(), reference)
    except Exception as error:  # e.g. a compile error of PyTorch's CPU code generator
        return f"failed: {type(error).__name__}: {str(error).strip().splitlines()[0][:120]}"


def layer_row(length, dtype_name, device, repeats):
    """Table 3: transformers' T5Attention (eager, sdpa, flex_attention) against our flex layer, same weights."""
    eager, flex, _ = _layers(device, DTYPES[dtype_name])
    x = torch.randn(1, length, D_MODEL, generator=torch.Generator().manual_seed(1)).to(device, DTYPES[dtype_name])
    theirs = {name: _transformers_layer(eager, name) for name in BACKENDS}
    runs = {f"transformers_{name}": (lambda layer=layer: layer(x)[0]) for name, layer in theirs.items()}
    runs["t5lesson_eager"] = lambda: eager(x).output
    runs["score_mod"] = lambda: flex(x).output
    row = {"L": length, "dtype": dtype_name, "differences_vs_transformers_eager": {}, "failed": {}}
    with torch.no_grad():
        reference = runs["transformers_eager"]()
        for name in list(runs):
            result = _difference_or_failure(runs[name], reference)
            if isinstance(result, str):
                row["failed"][name], row[f"{name}_ms"], row[f"{name}_peak_gib"] = result, None, None
                del runs[name]
            else:
                row["differences_vs_transformers_eager"][name] = result
        for name, ms in median_ms(runs, device, repeats).items():
            row[f"{name}_ms"], row[f"{name}_peak_gib"] = ms, peak_gib(runs[name], device)
    row["largest_difference"] = row["differences_vs_transformers_eager"].get("score_mod")
    return row


def bias_row(length, device, repeats):
    """Table 4: three bias builders, and a plain write of a [1, H, L, L] tensor, fp32."""
    torch.manual_seed(0)
    table = RelativePositionBias(HEADS, d_model=D_MODEL).to(device)
    reference = reference_bias_layer(table.table.detach().cpu()).to(device)
    out = torch.empty(1, HEADS, length, length, device=device)
    builds = {"compute_bias": lambda: reference.compute_bias(length, length),
              "relative_position_bias": lambda: table(length, length),
              "per_offset_bias": lambda: per_offset_bias(table.table, length, length, bidirectional=True,
                                                         max_distance=128),
              "device_dense_bias": lambda: dense_bias(per_offset_bias(table.table, length, length, bidirectional=True,
                                                                      max_distance=128), length, length),
              "plain_write": lambda: out.fill_(1.0)}
    with torch.no_grad():
        expected = builds["compute_bias"]()
        equal = all(torch.equal(builds[name]().to(device), expected)
                    for name in ("relative_position_bias", "device_dense_bias"))
        ms = median_ms(builds, device, repeats)
    return {"L": length, "dtype": "fp32", "equal": equal, **{f"{name}_ms": t for name, t in ms.items()},
            "speedup_vs_compute_bias": ms["compute_bias"] / ms["relative_position_bias"],
            "write_bandwidth_share": ms["plain_write"] / ms["relative_position_bias"],
            "device_speedup_vs_compute_bias": ms["compute_bias"] / ms["device_dense_bias"],
            "device_write_bandwidth_share": ms["plain_write"] / ms["device_dense_bias"],
            "builder_ms": ms["relative_position_bias"], "plain_write_ms": ms["plain_write"]}


# --- printing ---

def print_attention(rows):
    print("\n1. the attention alone, q, k, v given, each call building its bias from the table on the device:\n"
          "   eager (bias materialised as [1, H, L, L]) vs FlexAttention compiled (per-offset score_mod, scale 1.0)")
    print(f"{'L':>7} {'dtype':>5} {'eager ms':>9} {'MiB':>8} {'flex ms':>8} {'MiB':>8} {'faster':>7} "
          f"{'less memory':>11} {'largest diff':>12}")
    for r in rows:
        print(f"{r['L']:>7,} {r['dtype']:>5} {r['eager_ms']:>9.2f} {r['eager_peak_gib'] * 1024:>8.1f} "
              f"{r['flex_ms']:>8.2f} {r['flex_peak_gib'] * 1024:>8.1f} {r['eager_ms'] / r['flex_ms']:>6.1f}x "
              f"{_ratio(r['eager_peak_gib'], r['flex_peak_gib']):>11} {r['largest_difference']:>12.1e}")


def print_layer_pair(rows):
    print("\n2. one encoder layer forward: eager T5SelfAttention vs FlexT5SelfAttention, compiled (fused kernel)\n"
          "   and uncompiled (PyTorch's unfused reference path, what the lessons run)")
    print(f"{'L':>7} {'dtype':>5} {'eager ms':>9} {'MiB':>8} {'flex ms':>8} {'MiB':>8} {'faster':>7} "
          f"{'less memory':>11} {'largest diff':>12} {'uncompiled ms':>14} {'MiB':>8}")
    for r in rows:
        print(f"{r['L']:>7,} {r['dtype']:>5} {r['eager_ms']:>9.2f} {r['eager_peak_gib'] * 1024:>8.1f} "
              f"{r['flex_ms']:>8.2f} {r['flex_peak_gib'] * 1024:>8.1f} {r['eager_ms'] / r['flex_ms']:>6.1f}x "
              f"{_ratio(r['eager_peak_gib'], r['flex_peak_gib']):>11} {r['largest_difference']:>12.1e} "
              + (f"{r['flex_uncompiled_ms']:>14.2f} {r['flex_uncompiled_peak_gib'] * 1024:>8.1f}"
                 if r["flex_uncompiled_ms"] is not None else f"{'not run':>14}"))


def print_layer(rows):
    print("\n3. one T5Attention layer forward, projections included: transformers' backends vs ours, same weights")
    names = [f"transformers_{n}" for n in BACKENDS] + ["t5lesson_eager", "score_mod"]
    for r in rows:
        print(f"L = {r['L']:,}, {r['dtype']}: {'ms':>9} {'peak MiB':>9} {'ours faster':>12} {'less memory':>12} "
              f"{'diff vs transformers eager':>27}")
        for name in names:
            label = "per-offset score_mod (ours)" if name == "score_mod" else name.replace("_", " ", 1)
            if name in r["failed"]:
                print(f"  {label:<28} {r['failed'][name]}")
                continue
            ms, gib = r[f"{name}_ms"], r[f"{name}_peak_gib"]
            ratios = " " * 24
            if name != "score_mod" and r["score_mod_ms"]:
                ratios = f"{ms / r['score_mod_ms']:>11.1f}x {_ratio(gib, r['score_mod_peak_gib']):>12}"
            print(f"  {label:<28} {ms:>9.2f} {gib * 1024:>9.1f} {ratios} "
                  f"{r['differences_vs_transformers_eager'][name]:>27.1e}")


def _ratio(a, b):
    """a / b as "12.3x", or "n/a" where b is below what the measurement resolves (one 4 KiB page)."""
    return f"{a / b:.1f}x" if b * GIB >= 4096 else "n/a"


def print_bias(rows):
    print("\n4. building the bias, fp32: ms per call, and each builder's speed as a share of a plain write of "
          "[1, H, L, L]")
    print(f"{'L':>7} {'compute_bias':>13} {'RelativePositionBias':>21} {'per_offset_bias':>16} "
          f"{'+ dense_bias':>13} {'plain write':>12} {'RPB share':>10} {'device share':>13}")
    for r in rows:
        assert r["equal"], f"the builders' outputs differ at L = {r['L']}"
        print(f"{r['L']:>7,} {r['compute_bias_ms']:>13.3f} {r['relative_position_bias_ms']:>21.3f} "
              f"{r['per_offset_bias_ms']:>16.3f} {r['device_dense_bias_ms']:>13.3f} {r['plain_write_ms']:>12.3f} "
              f"{r['write_bandwidth_share']:>10.0%} {r['device_write_bandwidth_share']:>13.0%}")
    print("   RelativePositionBias vs compute_bias: "
          + ", ".join(f"{r['speedup_vs_compute_bias']:.1f}x at {r['L']:,}" for r in rows)
          + "; per_offset_bias + dense_bias on the device vs compute_bias: "
          + ", ".join(f"{r['device_speedup_vs_compute_bias']:.1f}x" for r in rows))


# --- the run ---

def machine(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", action="store_true", help="require CUDA and run the stored runs' sizes")
    parser.add_argument("--cpu", action="store_true", help="run on the CPU even when CUDA is present")
    parser.add_argument("--lengths", type=int, nargs="+")
    parser.add_argument("--layer-lengths", type=int, nargs="+")
    parser.add_argument("--dtypes", nargs="+", choices=sorted(DTYPES))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", help="write the results here (default on CUDA: flex_gpu_runs.json)")
    args = parser.parse_args(argv)
    if args.gpu and not torch.cuda.is_available():
        parser.error("--gpu needs CUDA, and this machine has none: run without --gpu for the small CPU run")
    args.device = torch.device("cuda" if torch.cuda.is_available() and not args.cpu else "cpu")
    big = args.device.type == "cuda"
    args.lengths = args.lengths or ([2048, 4096, 8192, 16384] if big else [256, 512, 1024])
    args.layer_lengths = args.layer_lengths or ([4096, 16384] if big else [256, 1024])
    args.dtypes = args.dtypes or (["bf16", "fp32"] if big else ["fp32"])
    args.json = args.json or ("flex_gpu_runs.json" if big else None)
    return args


def record(args, attention, pairs, layer, bias):
    tf32 = torch.backends.cuda.matmul.allow_tf32 if args.device.type == "cuda" else False
    return {"source": f"measured with benchmarks/flex_attention.py on {machine(args.device)}",
            "machine": machine(args.device), "torch": torch.__version__, "transformers": transformers.__version__,
            "tf32": tf32, "command": " ".join(["python", "benchmarks/flex_attention.py", *sys.argv[1:]]),
            "heads": HEADS, "d_kv": D_KV, "num_buckets": 32, "max_distance": 128,
            "attention": {"what": "the attention alone: eager with the [1, H, L, L] bias materialised vs "
                                  "compiled FlexAttention with the per-offset score_mod, scale 1.0", "rows": attention},
            "t5lesson_layer": {"what": "one encoder layer forward: eager T5SelfAttention vs FlexT5SelfAttention",
                               "rows": pairs},
            "layer": {"what": "one T5Attention forward: transformers' backends vs the per-offset score_mod",
                      "rows": layer},
            "bias_builder": {"what": "compute_bias vs RelativePositionBias vs per_offset_bias (+ dense_bias)",
                             "rows": bias}}


def _with_fixed_mmap_threshold():
    """On Linux, run again with glibc's mmap threshold fixed at 64 KiB: every large tensor then gets
    pages of its own, returned when freed, so the resident memory follows what is allocated (by
    default glibc raises the threshold after the first frees and keeps freed pages, which hides peaks)."""
    if platform.system() == "Linux" and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"})


def main(argv=None):
    args = parse(argv)
    if args.device.type == "cpu" and argv is None:
        _with_fixed_mmap_threshold()
    warnings.filterwarnings("ignore", message=".*flex_attention.*")
    if args.device.type == "cpu":
        print(f"CPU run, SMALL sizes (L = {', '.join(map(str, args.lengths))}): the GPU figures of lesson 8 are "
              "stored in t5lesson/lessons/flex_gpu_runs.json; on a GPU run `python benchmarks/flex_attention.py "
              "--gpu`. Compiling flex_attention takes a while on the first call of each size.")
    print(f"{machine(args.device)}, torch {torch.__version__}, transformers {transformers.__version__}, "
          f"H = {HEADS}, d = {D_KV}, median of {args.repeats}")
    attention = [attention_row(n, d, args.device, args.repeats) for d in args.dtypes for n in args.lengths]
    print_attention(attention)
    pairs = [layer_pair_row(n, d, args.device, args.repeats) for d in args.dtypes for n in args.layer_lengths]
    print_layer_pair(pairs)
    layer = [layer_row(n, "bf16" if args.device.type == "cuda" else args.dtypes[0], args.device, args.repeats)
             for n in args.layer_lengths]
    print_layer(layer)
    bias = [bias_row(n, args.device, args.repeats) for n in args.lengths]
    print_bias(bias)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record(args, attention, pairs, layer, bias), f, indent=1)
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
