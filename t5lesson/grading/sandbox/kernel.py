"""The grading kernel: ipykernel, except that exit() and quit() stop their cell, not the kernel.

In Jupyter, `exit()` stops the kernel a moment later, so whether the later cells (and the
grader's reading cells) still ran depended on timing. Here the request raises `ExitCalled` at
once, in its cell, and every later cell runs: the grade is a function of the notebook alone.
Not a security boundary (the student's code can undo it). See docs/grading.md, "How a
submission is run", step 6.
"""
from __future__ import annotations

from ipykernel.ipkernel import IPythonKernel
from ipykernel.kernelapp import IPKernelApp
from ipykernel.zmqshell import ZMQInteractiveShell
from traitlets import Bunch, Type, observe

from ..protocol import EXIT_ENAME


class ExitCalled(SystemExit):
    """exit() or quit() was called in a cell: that cell stops here, the notebook goes on."""


assert ExitCalled.__name__ == EXIT_ENAME  # the name the runner reports and the grader words


class GradingShell(ZMQInteractiveShell):
    """IPython's kernel shell with exit() and quit() stopping only their cell."""

    def ask_exit(self) -> None:
        raise ExitCalled("exit() or quit() was called; while grading it stops only this cell")

    @observe("exit_now")
    def _update_exit_now(self, change: Bunch) -> None:  # replaces ipykernel's handler, which stops the event loop
        if change["new"]:
            self.exit_now = False
            raise ExitCalled("the kernel was asked to exit; while grading it stops only this cell")


class GradingKernel(IPythonKernel):
    shell_class = Type(GradingShell)

    def do_shutdown(self, restart: bool) -> dict[str, object]:  # pyright: ignore[reportIncompatibleMethodOverride] (ipykernel's inferred dict[str, str] is wrong)
        # the grader's own shutdown request: kernelbase stops the event loops itself
        return dict(status="ok", restart=restart)


def main(argv: list[str] | None = None) -> None:
    IPKernelApp.launch_instance(argv, kernel_class=GradingKernel)


if __name__ == "__main__":
    main()
