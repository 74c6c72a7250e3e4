"""The README's two commands are the ones CI runs and the ones that work."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands():
    return re.findall(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_exactly_two_commands_and_ci_runs_the_second():
    commands = readme_commands()
    assert len(commands) == 2, commands
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line and not line.startswith(("#", "set ", "cd "))]
    assert commands[1] in ci_lines


def test_requirements_pin_torch_cpu_build():
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    assert "torch==2.13.0" in lines
