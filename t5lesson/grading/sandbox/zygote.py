"""One pre-imported parent for every sandboxed kernel of a batch.

`python -m ...sandbox.zygote SOCKET [MODULE ...]` imports ipykernel, the launcher and what the
exercise's notebook imports, then forks one launcher per request on SOCKET (`spawn`); the child
walls itself in exactly as a new launcher would (`launcher.launch`), so no submission pays for
starting Python (measured: benchmarks/kernel_start.py). It is safe to share because it holds no
submission's data and starts no thread: see docs/grading.md, "The zygote". The worker watches a
child through a pid fd (`ForkedKernel`).
"""
from __future__ import annotations

import ast
import atexit
import contextlib
import functools
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, NoReturn, TypedDict

import psutil

from ..protocol import KERNEL_MODULE, SANDBOX_MODULE, LaunchConfig, Walls
from . import launcher, namespaces
from .namespaces import PR_SET_PDEATHSIG, load_libc
from .resources import kill_group

BASE_MODULES = ("ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell", "IPython", KERNEL_MODULE,
                SANDBOX_MODULE)
NOT_PRELOADED = ("matplotlib",)  # reads its config folder (MPLCONFIGDIR, the kernel's home) on import
MAX_REQUEST = 1 << 20
READY = b"ready\n"


class Request(TypedDict):
    argv: list[str]  # the launcher's CONFIG CONNECTION_FILE
    env: dict[str, str]
    cwd: str


def modules_imported(sources: Iterable[str]) -> list[str]:
    """The absolute imports of some Python sources, in order (sources that do not parse are skipped)."""
    found: list[str] = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append(node.module)
    return [m for m in dict.fromkeys(found) if m.split(".")[0] not in NOT_PRELOADED]


def _child(request: Request, fds: list[int], listener: socket.socket, conn: socket.socket) -> NoReturn:
    """In the forked child: become the launcher of one kernel. Never returns."""
    code = 1
    try:
        os.setsid()
        listener.close()
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, max(os.sysconf("SC_OPEN_MAX"), 1024))
        for signum in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        if "numpy.random" in sys.modules:  # random reseeds itself after a fork; numpy's global state does not
            sys.modules["numpy.random"].seed()
        config_path, connection_file = request["argv"][-2:]
        launcher.launch(LaunchConfig.read(config_path), connection_file, forked=True)
        code = 0
    except SystemExit as stop:
        code = 0 if stop.code is None else stop.code if isinstance(stop.code, int) else 1
        if isinstance(stop.code, str):
            _quietly(functools.partial(print, stop.code, file=sys.stderr))
    except BaseException:  # as an interpreter does with an uncaught exception: print it, exit with 1
        _quietly(traceback.print_exc)
    for thread in threading.enumerate():  # as an interpreter ends: wait for its threads, run the exit functions
        if thread is not threading.current_thread() and not thread.daemon:
            _quietly(thread.join)
    run_exit_functions: Callable[[], None] = atexit._run_exitfuncs  # pyright: ignore[reportPrivateUsage] (no public API)
    for action in (run_exit_functions, sys.stdout.flush, sys.stderr.flush):
        _quietly(action)
    os._exit(code & 0xFF)


def _quietly(action: Callable[[], object]) -> None:
    try:
        action()
    except BaseException:  # what a process about to exit cannot report
        pass


def _handle(listener: socket.socket, conn: socket.socket) -> None:
    """Read one request (a line of JSON, with three file descriptors) and fork its launcher; answer its pid."""
    conn.settimeout(10)
    data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
    while data and not data.endswith(b"\n") and len(data) < MAX_REQUEST and (more := conn.recv(MAX_REQUEST)):
        data += more
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request carries three file descriptors")
    request: Request = json.loads(data)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(request, fds, listener, conn)
    for fd in fds:
        os.close(fd)
    conn.sendall(f"{pid}\n".encode())
    conn.recv(16)  # the worker's acknowledgement: it holds a pid descriptor, so the child may be reaped


def serve(path: str, modules: Iterable[str]) -> int:
    """Import `modules`, then fork one kernel launcher per request on the socket at `path`."""
    parent = os.getppid()
    load_libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the zygote dies with its grader
    for name in (*BASE_MODULES, *modules):
        try:
            importlib.import_module(name)
        except Exception:  # the kernel will meet the same error where the notebook imports it
            continue
    if (threads := psutil.Process().num_threads()) != 1:
        print(f"unusable: {threads} threads after the imports", flush=True)
        return 1
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(16)
    sys.stdout.buffer.write(READY)
    sys.stdout.flush()
    while os.getppid() == parent:
        ready = select.select([listener], [], [], 0.5)[0]
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:  # reap the children that ended
                pass
        if not ready:
            continue
        conn = listener.accept()[0]
        with conn, contextlib.suppress(OSError, ValueError):  # one broken request: the worker sees no pid and says so
            _handle(listener, conn)
    return 0


class Zygote:
    """The zygote process of one batch: `with Zygote(folder, modules, env) as z:` then `z.socket` (None: unusable)."""

    def __init__(self, folder: Path, modules: Iterable[str], env: Mapping[str, str], timeout: float = 120.0,
                 walls: Walls | None = None, writable: Iterable[str | os.PathLike[str]] = ()):
        self.folder, self.modules, self.env, self.timeout = Path(folder), list(modules), env, timeout
        self.walls, self.writable = walls, list(writable)  # with walls: inside bubblewrap, seeing `writable` too
        self.socket: str | None = None
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Zygote:
        self.folder.mkdir(mode=0o700, exist_ok=True)
        path = str(self.folder / "zygote.sock")
        command = [sys.executable, "-m", __name__, path, *self.modules]
        if self.walls is not None:
            command = namespaces.command(self.walls.keep, self.walls.hide, [self.folder, *self.writable], command)
        with open(self.folder / "zygote.log", "wb") as log:
            self.process = subprocess.Popen(command, cwd=self.folder, env=self.env, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        out: IO[bytes] | None = self.process.stdout
        if out is not None and select.select([out], [], [], self.timeout)[0] and out.readline() == READY:
            self.socket = path
        else:
            self.close()
        return self

    def close(self) -> None:
        if self.process is not None:
            kill_group(self.process.pid)
            with self.process:  # closes its stdout, then waits for it
                self.process = None

    def __exit__(self, *exc: object) -> None:
        self.close()


class ForkedKernel:
    """A kernel launcher forked by the zygote, seen from the worker as a `subprocess.Popen`."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, pidfd: int | None):
        self.pid, self._fd = pid, pidfd
        self._keep: list[int] = []  # descriptors closed when it ends
        self.returncode: int | None = None if pidfd is not None else 0

    def poll(self) -> int | None:
        if self._fd is not None and select.select([self._fd], [], [], 0)[0]:
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self._fd is not None:
            if not select.select([self._fd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired("kernel", timeout or 0)
            self._ended()
        return self.returncode or 0

    def _ended(self) -> None:
        self.returncode = -signal.SIGKILL  # the zygote reaps it: the status itself is not seen here
        for fd in [*([self._fd] if self._fd is not None else []), *self._keep]:
            os.close(fd)
        self._fd, self._keep = None, []

    def send_signal(self, signum: int) -> None:
        if self._fd is not None:
            signal.pidfd_send_signal(self._fd, signum)

    kill = functools.partialmethod(send_signal, signal.SIGKILL)
    terminate = functools.partialmethod(send_signal, signal.SIGTERM)


def spawn(path: str, argv: Sequence[str], env: Mapping[str, str], cwd: str, fds: tuple[int, int, int]) -> ForkedKernel:
    """Ask the zygote at `path` for one kernel launcher running `argv` (CONFIG CONNECTION_FILE), with `fds`
    as its stdin, stdout and stderr."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(path)
        request: Request = {"argv": list(argv), "env": dict(env), "cwd": str(cwd)}
        socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], list(fds))
        with conn.makefile("rb") as answers:
            answer = answers.readline()
        if not answer.endswith(b"\n"):
            raise OSError("the kernel zygote did not start a kernel")
        pid = int(answer)
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:  # it ended already
            pidfd = None
        conn.sendall(b"ok")
    return ForkedKernel(pid, pidfd)


if __name__ == "__main__":
    sys.modules.setdefault("rfc3987_syntax", None)  # pyright: ignore[reportArgumentType] (None: never import it)
    raise SystemExit(serve(sys.argv[1], sys.argv[2:]))
