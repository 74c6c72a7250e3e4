"""Removing what a kernel leaves behind, and counting the memory it hides in files.

`remove_tree` removes a run folder of any depth (Python 3.11's `shutil.rmtree` raises
RecursionError on a few thousand levels, even with ignore_errors), never follows a symbolic
link, opens up folders made without permissions, and reports instead of raising.
`held_shared_memory` counts memfd and tmpfs files held open, which no PSS counts.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from isolation_helpers import normal_user

from t5lesson.grading.sandbox import resources
from t5lesson.grading.sandbox.resources import held_shared_memory, remove_quietly, remove_tree

DEPTH = 10_000


def _deep_tree(top: Path, outside: Path, depth: int = DEPTH) -> None:
    """A chain of `depth` folders under `top`, with files, links to `outside` and closed folders on the way."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(depth):
            os.mkdir("d", dir_fd=fd)
            if level % 500 == 0:
                os.symlink(outside, "link", dir_fd=fd)  # a link to a folder outside: never followed
                os.symlink(outside / "keep", "file_link", dir_fd=fd)
                os.close(os.open("file", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
                os.mkdir("closed", dir_fd=fd)
                os.close(os.open("closed/inside", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
                os.chmod(f"/proc/self/fd/{fd}/closed", 0)  # no permission at all
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = below
        os.close(os.open("last", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
        os.chmod(f"/proc/self/fd/{fd}", 0o500)  # the deepest folder: its entries cannot be unlinked as it is
    finally:
        os.close(fd)


def _outside(base: Path) -> Path:
    outside = base / "outside"
    outside.mkdir()
    (outside / "keep").write_text("must survive")
    return outside


def test_a_ten_thousand_level_tree_is_removed_without_following_links(tmp_path):
    outside = _outside(tmp_path)
    _deep_tree(tmp_path / "tree", outside)
    assert remove_tree(tmp_path / "tree") == []
    assert not os.path.lexists(tmp_path / "tree")
    assert (outside / "keep").read_text() == "must survive"  # the links' targets are untouched
    assert sorted(os.listdir(outside)) == ["keep"]


def test_a_normal_user_removes_its_own_closed_folders(tmp_path):
    """As a normal user permissions hold: a folder without them is opened up (it is the user's own)."""
    user = normal_user() if os.geteuid() == 0 else (os.getuid(), os.getgid())
    if isinstance(user, str):
        pytest.skip(user)
    base = Path(tempfile.mkdtemp(prefix="t5rm-"))
    os.chmod(base, 0o777)
    try:
        outside = _outside(base)
        os.chmod(outside, 0o555)
        pid = os.fork()
        if pid == 0:  # the child: build and remove as that user
            code = 1
            try:
                os.setgroups([]) if os.geteuid() == 0 else None
                os.setgid(user[1])
                os.setuid(user[0])
                _deep_tree(base / "tree", outside, depth=3000)
                code = 0 if remove_tree(base / "tree") == [] and not os.path.lexists(base / "tree") else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert (outside / "keep").read_text() == "must survive"
    finally:
        remove_tree(base)


def test_a_link_is_removed_not_followed_and_a_missing_path_is_no_error(tmp_path):
    outside = _outside(tmp_path)
    (tmp_path / "link").symlink_to(outside)
    assert remove_tree(tmp_path / "link") == []
    assert not os.path.lexists(tmp_path / "link") and (outside / "keep").exists()
    assert remove_tree(tmp_path / "missing") == []
    (tmp_path / "file").write_text("x")
    assert remove_tree(tmp_path / "file") == [] and not (tmp_path / "file").exists()
    (tmp_path / "real" / "run").mkdir(parents=True)  # a temp folder reached through a link: its run folder goes
    (tmp_path / "temp").symlink_to(tmp_path / "real")
    assert remove_tree(tmp_path / "temp" / "run") == [] and os.listdir(tmp_path / "real") == []


def test_what_cannot_be_removed_is_reported_in_one_line_never_raised(tmp_path, capsys, monkeypatch):
    """A folder that rm cannot remove (a mount point, say): remove_tree says why; remove_quietly logs one line."""
    assert remove_tree(tmp_path / "no" / "such" / "parent" / "x") == []  # nothing there: nothing to do
    (tmp_path / "busy").mkdir()
    refused = subprocess.CompletedProcess(["rm"], 1, "", "rm: cannot remove 'busy': Device or resource busy\n")
    monkeypatch.setattr(resources.subprocess, "run", lambda *args, **kwargs: refused)
    assert remove_quietly(tmp_path / "busy") is False
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "could not remove all of" in err and "busy" in err, err


def test_memfd_files_held_open_count_as_memory():
    """A memfd written to (never mapped) is memory no PSS shows; counted once however many descriptors hold it."""
    fd = os.memfd_create("t5-hidden")
    try:
        for _ in range(8):
            os.write(fd, b"x" * 2 ** 20)
        second = os.dup(fd)
        try:
            held = held_shared_memory([os.getpid()])
            assert 8 * 2 ** 20 <= held < 9 * 2 ** 20, held
            device = os.fstat(fd).st_dev
            assert held_shared_memory([os.getpid()], exclude_devices=(device + 1,)) == held
        finally:
            os.close(second)
    finally:
        os.close(fd)
    assert held_shared_memory([os.getpid()]) < 2 ** 20


def test_a_tmpfs_file_counts_unless_it_is_on_the_kernel_s_own_tmpfs():
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    with tempfile.NamedTemporaryFile(dir="/dev/shm", prefix="t5-held-") as f:
        f.write(b"y" * (4 * 2 ** 20))
        f.flush()
        assert held_shared_memory([os.getpid()]) >= 4 * 2 ** 20
        own = (os.stat("/dev/shm").st_dev,)  # as the kernel's own tmpfs: bounded by --disk-mb, not counted here
        assert held_shared_memory([os.getpid()], exclude_devices=own) < 2 ** 20
