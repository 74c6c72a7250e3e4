"""One pre-imported parent for every sandboxed kernel of a batch.

`python -m ...sandbox.zygote SOCKET [MODULE ...]` imports ipykernel, the launcher and what the
exercise's notebook imports, then forks one launcher per request on SOCKET (`spawn`); the child
walls itself in exactly as a new launcher would (`launcher.run_here`), so no submission pays for
starting Python. It is safe to share because it holds no submission's data and starts no thread:
see docs/grading.md, "The zygote". The worker watches a child through a pid fd (`ForkedKernel`).
"""
from __future__ import annotations

import ast
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

from ..protocol import KERNEL_MODULE, SANDBOX_MODULE, LaunchConfig
from . import bubblewrap
from .resources import kill_group

__all__ = ["Zygote", "ForkedKernel", "spawn", "modules_imported", "serve"]

BASE_MODULES = ("ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell", "IPython", KERNEL_MODULE,
                SANDBOX_MODULE)
NOT_PRELOADED = ("matplotlib",)  # reads its config folder (MPLCONFIGDIR, the kernel's home) on import
MAX_REQUEST = 1 << 20
READY = b"ready\n"


def modules_imported(sources) -> list[str]:
    """The absolute imports of some Python sources, in order (sources that do not parse are skipped)."""
    found = []
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


# --------------------------------------------------------------------------- the zygote's side


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
    while data and not data.endswith(b"\n") and len(data) < MAX_REQUEST:
        more = conn.recv(MAX_REQUEST)
        if not more:
            break
        data += more
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request carries three file descriptors")
    return json.loads(data), fds


def _child(request: dict, fds: list[int], listener: socket.socket, conn: socket.socket) -> None:
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
        from . import launcher

        config_path, connection_file = request["argv"][-2:]
        launcher.run_here(LaunchConfig.read(config_path), connection_file)
        code = 0
    except SystemExit as stop:
        code = _exit_code(stop)
    except BaseException:  # as an interpreter does with an uncaught exception: print it, exit with 1
        _quietly(lambda: sys.excepthook(*sys.exc_info()))
    finally:
        _finish(code)


def _exit_code(stop: SystemExit) -> int:
    if stop.code is None or isinstance(stop.code, int):
        return (stop.code or 0) & 0xFF
    _quietly(lambda: print(stop.code, file=sys.stderr))
    return 1


def _quietly(action) -> None:
    try:
        action()
    except BaseException:
        pass


def _finish(code: int) -> None:
    """End the child as an interpreter ends: wait for its threads, run the exit functions, flush, exit."""
    import atexit
    import threading

    _quietly(threading._shutdown)
    _quietly(atexit._run_exitfuncs)
    _quietly(sys.stdout.flush)
    _quietly(sys.stderr.flush)
    os._exit(code)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _handle(listener: socket.socket, conn: socket.socket) -> None:
    conn.settimeout(10)
    request, fds = _read_request(conn)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(request, fds, listener, conn)
    for fd in fds:
        os.close(fd)
    conn.sendall(f"{pid}\n".encode())
    conn.recv(16)  # the worker's acknowledgement: it holds a pid descriptor, so the child may be reaped


def serve(path: str, modules) -> int:
    """Import `modules`, then fork one kernel launcher per request on the socket at `path`."""
    parent = os.getppid()
    from .namespaces import load_libc

    load_libc().prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: the zygote dies with its grader
    for name in (*BASE_MODULES, *modules):
        try:
            importlib.import_module(name)
        except Exception:  # the kernel will meet the same error where the notebook imports it
            continue
    if _threads() != 1:
        sys.stdout.write(f"unusable: {_threads()} threads after the imports\n")
        sys.stdout.flush()
        return 1
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(16)
    sys.stdout.buffer.write(READY)
    sys.stdout.flush()
    while os.getppid() == parent:
        ready, _, _ = select.select([listener], [], [], 0.5)
        _reap()
        if not ready:
            continue
        conn, _ = listener.accept()
        try:
            _handle(listener, conn)
        except (OSError, ValueError):
            pass  # one broken request: the worker sees no pid and says so
        finally:
            conn.close()
    return 0


# --------------------------------------------------------------------------- the grader's and worker's side


class Zygote:
    """The zygote process of one batch: `with Zygote(folder, modules, env) as z:` then `z.socket` (None: unusable)."""

    def __init__(self, folder: Path, modules, env: dict, timeout: float = 120.0, walls=None, writable=()):
        self.folder, self.modules, self.env, self.timeout = Path(folder), list(modules), env, timeout
        self.walls, self.writable = walls, list(writable)  # with walls: inside bubblewrap, seeing `writable` too
        self.socket: str | None = None
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Zygote:
        self.folder.mkdir(mode=0o700, exist_ok=True)
        path = str(self.folder / "zygote.sock")
        log = open(self.folder / "zygote.log", "wb")
        command = [sys.executable, "-m", __name__, path, *self.modules]
        if self.walls is not None:
            command = bubblewrap.command(self.walls.keep, self.walls.hide, [self.folder, *self.writable], command)
        try:
            self.process = subprocess.Popen(
                command, cwd=self.folder, env=self.env,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        finally:
            log.close()
        ready, _, _ = select.select([self.process.stdout], [], [], self.timeout)
        if ready and self.process.stdout.readline() == READY:
            self.socket = path
        else:
            self.close()
        return self

    def close(self) -> None:
        if self.process is not None:
            kill_group(self.process.pid)
            self.process.wait()
            self.process.stdout.close()
            self.process = None

    def __exit__(self, *exc) -> None:
        self.close()


class ForkedKernel:
    """A kernel launcher forked by the zygote, seen from the worker as a `subprocess.Popen`."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, pidfd: int | None, keep=()):
        self.pid, self._fd, self._keep = pid, pidfd, list(keep)  # keep: descriptors closed when it ends
        self.returncode: int | None = None if pidfd is not None else 0

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._fd], [], [], 0)[0]:
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._fd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired("kernel", timeout)
            self._ended()
        return self.returncode

    def _ended(self) -> None:
        self.returncode = -signal.SIGKILL  # the zygote reaps it: the status itself is not seen here
        for fd in [self._fd, *self._keep]:
            if fd is not None:
                os.close(fd)
        self._fd, self._keep = None, []

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            signal.pidfd_send_signal(self._fd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def spawn(path: str, argv: list[str], env: dict, cwd: str, fds: tuple[int, int, int]) -> ForkedKernel:
    """Ask the zygote at `path` for one kernel launcher running `argv` (CONFIG CONNECTION_FILE).

    `fds` become the kernel's stdin, stdout and stderr.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(path)
        message = json.dumps({"argv": list(argv), "env": dict(env), "cwd": str(cwd)}).encode() + b"\n"
        socket.send_fds(conn, [message], list(fds))
        answer = b""
        while not answer.endswith(b"\n"):
            more = conn.recv(64)
            if not more:
                raise OSError("the kernel zygote did not start a kernel")
            answer += more
        pid = int(answer)
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            pidfd = None
        conn.sendall(b"ok")
    return ForkedKernel(pid, pidfd)


if __name__ == "__main__":
    sys.modules.setdefault("rfc3987_syntax", None)
    raise SystemExit(serve(sys.argv[1], sys.argv[2:]))
