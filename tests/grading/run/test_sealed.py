"""No cell runs before the kernel's socket folder is read-only.

The socket folder is the one folder of the machine's disk bound into a kernel; its supervisor
remounts it read-only once the sockets are bound (the scenarios in
tests/grading/scenarios/test_hostile_cleanup.py try to write there). Here, without a kernel:
the sockets the supervisor waits for, the read-only check on another process's mounts, and the
clear failure when the folder never becomes read-only.
"""
from __future__ import annotations

import asyncio
import json
import os
from types import SimpleNamespace

import psutil
import pytest

from t5lesson.grading.protocol import Job, LaunchConfig, Limits, SandboxPlan
from t5lesson.grading.run import worker
from t5lesson.grading.sandbox import launcher, namespaces


def test_the_supervisor_waits_for_every_socket_of_the_connection_file():
    connection = {"transport": "ipc", "ip": "/tmp/t5ipc-x/tmpy/k", "shell_port": 3, "iopub_port": 1,
                  "stdin_port": 2, "control_port": 5, "hb_port": 4, "key": "secret"}
    assert launcher._sockets(json.dumps(connection)) == [f"/tmp/t5ipc-x/tmpy/k-{n}" for n in (5, 4, 1, 3, 2)]
    assert launcher._sockets(json.dumps(dict(connection, transport="tcp"))) == []
    assert launcher._sockets("not json") == []


def test_a_writable_folder_is_not_sealed():
    assert not namespaces.sealed(os.getpid(), "/no/such/mount")
    here = [p.mountpoint for p in psutil.disk_partitions(all=True) if "rw" in p.opts.split(",")]
    assert here and not namespaces.sealed(os.getpid(), here[-1])
    assert not namespaces.sealed(2 ** 22 + 1, "/")  # no such process: not sealed


def test_no_cell_runs_when_the_folder_is_never_sealed(tmp_path):
    """A kernel whose supervisor ended without sealing the folder: the run stops, saying why."""
    plan = SandboxPlan(home=str(tmp_path), disk_bytes=1, keep=(str(tmp_path),),
                       writable_keep=(str(tmp_path),))
    job = Job(notebook="", result="", private_dir=str(tmp_path), limits=Limits(startup_timeout=600),
              sandbox=LaunchConfig(home=str(tmp_path), isolation=plan))
    ended = SimpleNamespace(pid=os.getpid(), poll=lambda: 0)  # the supervisor has ended
    km = SimpleNamespace(provisioner=SimpleNamespace(process=ended))
    with pytest.raises(worker.SocketFolderOpen, match="not made read-only"):
        asyncio.run(worker._wait_sealed(km, job))
    unwalled = Job(notebook="", result="", private_dir=str(tmp_path), limits=Limits(),
                   sandbox=LaunchConfig(home=str(tmp_path)))
    asyncio.run(worker._wait_sealed(km, unwalled))  # without isolation there is nothing to wait for
