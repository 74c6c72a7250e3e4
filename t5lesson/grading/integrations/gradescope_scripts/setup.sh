#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu).
# It makes a virtual environment at $ROOT/venv with a Python 3.11 or newer (installed from
# apt where the image has none: choose the Ubuntu 24.04 base image to skip that), and
# installs the course's pinned requirements (requirements.txt + constraints.txt) and this
# package into it. T5LESSON_AUTOGRADER_ROOT (default /autograder) moves the whole layout.
set -euo pipefail
ROOT="${T5LESSON_AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"

pick_python() {
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! PYTHON="$(pick_python)"; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y python3.11 python3.11-venv
  PYTHON=python3.11
fi
"$PYTHON" -m venv "$ROOT/venv"
cd "$SOURCE"
# requirements.txt ends with "-e .": this package, from $SOURCE. PyTorch comes as PyPI's Linux
# build; to use a CPU-only wheel index instead, export PIP_EXTRA_INDEX_URL before this line.
"$ROOT/venv/bin/python" -m pip install --disable-pip-version-check -r requirements.txt -c constraints.txt
"$ROOT/venv/bin/python" -c "import t5lesson.grade"
