"""Check that every stored notebook output comes out the same on other CPUs, on this one machine.

    python tools/cross_cpu.py              # nbval on notebooks/ and solutions/ under each setting below
    python tools/cross_cpu.py --skip-native  # the same, less the machine's own kernels (CI: the main run had them)
    python tools/cross_cpu.py --list       # the settings this machine can run, and what each sets
    python tools/cross_cpu.py --probe      # which variable changes which kernel's bits here

Why: another CPU sums in another order, and a training run or an argmax turns a last-bit
difference into another printed number. PyTorch, oneMKL, oneDNN, OpenBLAS and NumPy each pick
their kernels by instruction set at run time, and each lets an environment variable cap that
choice, so one machine can run the kernels of a smaller CPU:

- `ATEN_CPU_CAPABILITY` (PyTorch's own vectorised kernels: softmax, exp, reductions),
- `MKL_ENABLE_INSTRUCTIONS` (oneMKL, PyTorch's matrix products on x86),
- `DNNL_MAX_CPU_ISA` (oneDNN, some of PyTorch's CPU kernels),
- `OPENBLAS_CORETYPE` (NumPy's matrix products),
- `NPY_DISABLE_CPU_FEATURES` (NumPy's own SIMD loops: log, exp, sums).

A setting is run only when the CPU has its instruction set (a capped kernel set is safe, a
raised one would crash); the levels are those PyTorch knows on x86: default (SSE4.2-era), avx2,
avx512. A last run keeps the machine's kernels and nudges every trained model's weights by 1e-6
(`T5LESSON_PERTURB`). Runs go in parallel, one per core, each with its own report folder.

What this cannot cover: GPU kernels, other versions of PyTorch, NumPy or OpenBLAS, an instruction
set this CPU lacks (an AVX2 machine cannot run AVX-512 kernels), and libraries that ignore their
variable on this CPU (`--probe` shows which do).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("notebooks", "solutions")
LEVELS = ("default", "avx2", "avx512")  # PyTorch's x86 capabilities, smallest first
NUMPY_ABOVE = {  # NumPy's dispatch targets to switch off so that only a level's instruction set is left
    "default": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    "avx2": "X86_V4 AVX512_ICL AVX512_SPR",
    "avx512": "",
}
LIBRARY_ISA = {  # level -> (oneMKL, oneDNN, OpenBLAS) names for the same instruction set
    "default": ("SSE4_2", "SSE41", "Nehalem"),
    "avx2": ("AVX2", "AVX2", "Haswell"),
    "avx512": ("AVX512", "AVX512_CORE", "SkylakeX"),
}


@dataclass(frozen=True)
class Setting:
    name: str
    env: dict = field(default_factory=dict)
    note: str = ""


def native_capability(python: str = sys.executable) -> str:
    """PyTorch's own choice on this CPU (lower case), read in a process without ATEN_CPU_CAPABILITY."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    out = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().lower()


def level_setting(level: str, environ: dict) -> Setting:
    mkl, dnnl, openblas = LIBRARY_ISA[level]
    env = {"ATEN_CPU_CAPABILITY": level, "MKL_ENABLE_INSTRUCTIONS": mkl, "DNNL_MAX_CPU_ISA": dnnl,
           "NPY_DISABLE_CPU_FEATURES": NUMPY_ABOVE[level]}
    note = ""
    if environ.get("OPENBLAS_CORETYPE"):  # set by the machine's owner because other kernels misbehave here
        note = f"OPENBLAS_CORETYPE kept at {environ['OPENBLAS_CORETYPE']} (set on this machine)"
    else:
        env["OPENBLAS_CORETYPE"] = openblas
    return Setting(level, env, note)


def settings(native: str, environ: dict, skip_native: bool = False) -> list[Setting]:
    """Every level up to the native one (all of them on x86), then the weight nudge."""
    levels = LEVELS[:LEVELS.index(native) + 1] if native in LEVELS else ("default", native)
    chosen = [level_setting(level, environ) if level in LEVELS else Setting(level, {"ATEN_CPU_CAPABILITY": level})
              for level in levels if not (skip_native and level == native)]
    return chosen + [Setting("perturbed", {"T5LESSON_PERTURB": "1e-6"}, "the machine's kernels, weights nudged")]


def run_one(setting: Setting, python: str, targets: tuple[str, ...]) -> tuple[Setting, int, float, str]:
    """nbval on `targets` under `setting`, with its own report folder; (setting, exit code, seconds, tail)."""
    artifacts = ROOT / "artifacts" / "cross-cpu" / setting.name
    env = {**os.environ, **setting.env, "T5LESSON_ARTIFACTS": str(artifacts)}
    command = [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", *targets]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "pytest.log").write_text(done.stdout + done.stderr)
    return setting, done.returncode, time.perf_counter() - start, (done.stdout + done.stderr)[-3000:]


PROBE = r"""
import hashlib, numpy as np, torch
def h(a): return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:10]
g = np.random.default_rng(0)
a = g.standard_normal((256, 384)).astype(np.float32); b = g.standard_normal((384, 128)).astype(np.float32)
x = g.random(100_000).astype(np.float32) * 50 + 0.1
ta, tx = torch.from_numpy(a), torch.from_numpy(x)
print(h((ta @ torch.from_numpy(b)).numpy()), h(torch.softmax(ta, -1).numpy()), h(torch.exp(tx / 7).numpy()),
      h(torch.log(tx).numpy()), h(a @ b), h(np.log(x)), h(np.exp(x / 7)))
"""
PROBED = ("torch matmul", "torch softmax", "torch exp", "torch log", "numpy matmul", "numpy log", "numpy exp")


def probe(python: str, native: str) -> int:
    """Print, per variable, which probed kernels give other bits than the machine's own choice."""
    def hashes(env):
        out = subprocess.run([python, "-c", PROBE], env={**os.environ, **env}, capture_output=True, text=True)
        return out.stdout.split() if out.returncode == 0 else None

    base = hashes({})
    print(f"native PyTorch capability: {native}")
    for level in (lv for lv in LEVELS[:LEVELS.index(native)] if native in LEVELS):
        for variable, value in level_setting(level, {}).env.items():
            got = hashes({variable: value})
            changed = "crashed" if got is None else ", ".join(n for n, a, b in zip(PROBED, base, got, strict=True)
                                                         if a != b)
            print(f"  {variable + '=' + repr(value):<62} changes: {changed or 'nothing probed'}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-native", action="store_true", help="leave out the machine's own kernels")
    parser.add_argument("--list", action="store_true", help="print the settings and exit")
    parser.add_argument("--probe", action="store_true", help="print which variable changes which kernel")
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this setting (repeatable)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at once (default: cores)")
    parser.add_argument("--python", default=sys.executable, help="the course's Python (default: this one)")
    parser.add_argument("targets", nargs="*", default=list(TARGETS), help="paths for pytest (default: %(default)s)")
    args = parser.parse_args(argv)
    native = native_capability(args.python)
    if args.probe:
        return probe(args.python, native)
    chosen = settings(native, dict(os.environ), args.skip_native)
    if args.only:
        unknown = set(args.only) - {s.name for s in chosen}
        if unknown:
            parser.error(f"no setting {', '.join(sorted(unknown))} here; this machine has {[s.name for s in chosen]}")
        chosen = [s for s in chosen if s.name in args.only]
    for s in chosen:
        print(f"{s.name:<10} " + " ".join(f"{k}={v!r}" for k, v in s.env.items()) + (f"  ({s.note})" if s.note else ""))
    if args.list:
        return 0
    print(f"running nbval on {' '.join(args.targets)} under {len(chosen)} settings, {args.jobs} at a time ...",
          flush=True)
    failed = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for setting, code, seconds, tail in pool.map(lambda s: run_one(s, args.python, tuple(args.targets)), chosen):
            summary = next((line for line in reversed(tail.splitlines()) if "passed" in line or "failed" in line),
                           "no summary line").strip("= ")
            print(f"{setting.name:<10} {'passed' if code == 0 else 'FAILED'} in {seconds:.0f} s: {summary}", flush=True)
            if code != 0:
                failed.append(setting.name)
                print(tail, flush=True)
    print(f"cross-CPU check: {len(chosen) - len(failed)} of {len(chosen)} settings passed"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
