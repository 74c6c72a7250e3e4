"""tools/cross_cpu.py: which settings a machine runs, and that each caps every library to one instruction set."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import cross_cpu  # noqa: E402


def names(native, environ=None, skip=False):
    return [s.name for s in cross_cpu.settings(native, environ or {}, skip)]


def test_levels_up_to_the_native_one_then_the_nudge():
    assert names("avx2") == ["default", "avx2", "perturbed"]
    assert names("avx512") == ["default", "avx2", "avx512", "perturbed"]
    assert names("avx512", skip=True) == ["default", "avx2", "perturbed"]
    assert names("default", skip=True) == ["perturbed"]
    assert names("sve256") == ["default", "sve256", "perturbed"]  # another architecture: its own and the smallest


def test_each_level_caps_every_library_and_never_raises_one():
    default = cross_cpu.level_setting("default", {}).env
    assert default["ATEN_CPU_CAPABILITY"] == "default" and default["MKL_ENABLE_INSTRUCTIONS"] == "SSE4_2"
    assert default["DNNL_MAX_CPU_ISA"] == "SSE41" and default["OPENBLAS_CORETYPE"] == "Nehalem"
    assert "X86_V3" in default["NPY_DISABLE_CPU_FEATURES"].split()
    avx2 = cross_cpu.level_setting("avx2", {}).env
    assert "X86_V3" not in avx2["NPY_DISABLE_CPU_FEATURES"].split() and "X86_V4" in avx2["NPY_DISABLE_CPU_FEATURES"]
    perturbed = cross_cpu.settings("avx2", {})[-1].env
    assert perturbed == {"T5LESSON_PERTURB": "1e-6"}  # the machine's own kernels and budgets


def test_a_machine_set_openblas_core_is_kept():
    setting = cross_cpu.level_setting("default", {"OPENBLAS_CORETYPE": "Haswell"})
    assert "OPENBLAS_CORETYPE" not in setting.env and "kept at Haswell" in setting.note


def test_list_names_only_what_this_cpu_can_run():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "cross_cpu.py"), "--list"], capture_output=True,
                         text=True, check=True).stdout
    native = cross_cpu.native_capability()
    assert out.splitlines()[0].startswith("default") and out.splitlines()[-1].startswith("perturbed")
    assert ("avx512" in out) == (native == "avx512")
    bad = subprocess.run([sys.executable, str(ROOT / "tools" / "cross_cpu.py"), "--only", "sse9"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no setting sse9 here" in bad.stderr
