"""Read the learner's answers out of their namespace as plain records (JSON-able data).

Runs *inside the learner's kernel*: `check()` imports it, and the class grader runs its source
text there after the student's cells, so it depends on nothing the student could replace in
`t5lesson`. Only tagged plain data leaves the kernel (a subclass of int is not an int here), and
it is only as honest as that kernel: see docs/grading.md, "What the grader guarantees, and what
it does not". It must stay self-contained: standard library only, no relative imports.
"""
from __future__ import annotations

import json
import math
import signal
import sys
import threading
import traceback

TYPE_CHECKING = False  # typing is not imported in the kernel: the names below serve pyright only
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from importlib.machinery import ModuleSpec
    from types import CodeType
    from typing import Any

    Plain = dict[str, Any]  # a tagged plain value, JSON-able

MIME = "text/x-t5lesson-harvest"
MAX_ITEMS = 1000  # items of one harvested list or array (the grader's `records` reads its bound from here)
MAX_TEXT = 5000  # characters of one harvested string (likewise)
MAX_INT = 10 ** 18  # ints beyond this are reported as "huge int" (likewise)
MAX_SLOW_CASES = 3  # the default of the grader's Limits.slow_cases (check() in the notebook uses it)
HARVEST_FILE, ADAPTER_FILE = "<t5lesson-harvest>", "<t5lesson-adapter>"  # the file names of exec'd code


class GradingSetupError(Exception):
    """A driver's verdict that the learner's code breaks the exercise's contract (no cache used, say): a
    wrong answer, explained, not an Error. The drivers run in a scope that holds this class (`collect`)."""


class _CaseTimeout(BaseException):
    """Raised by the alarm when one call of the learner's function runs too long."""


def to_plain(x: object, depth: int = 0) -> Plain:
    """A tagged plain value: {"t": "int", "v": 3}, {"t": "list", "v": [...]}, {"t": "other", ...}."""
    # types are compared by identity: a subclass (of int, of list) is not plain data
    if x is None or x is Ellipsis:
        return {"t": "none"}
    if type(x) is bool:
        return {"t": "bool", "v": x}
    if type(x) is int:  # huge ints, non-finite floats and long text bounded
        return {"t": "int", "v": x} if abs(x) < MAX_INT else {"t": "other", "type": "huge int"}
    if type(x) is float:
        return {"t": "float", "v": x if math.isfinite(x) else repr(x)}
    if type(x) is str:
        return {"t": "str", "v": x[:MAX_TEXT]}
    if type(x) in (list, tuple, set, frozenset):  # if small and shallow; a set's items in a fixed order
        items: Any = x
        if depth > 3 or len(items) > MAX_ITEMS:
            return {"t": "other", "type": f"{type(x).__name__} (too large or too deep)"}
        values = [to_plain(item, depth + 1) for item in items]
        if isinstance(x, (set, frozenset)):
            values.sort(key=lambda item: json.dumps(item, sort_keys=True))
        return {"t": "list", "v": values}
    return _from_libraries(x) or {"t": "other", "type": str(getattr(type(x), "__name__", "unknown"))[:60]}


def _from_libraries(x: Any) -> Plain | None:
    """A NumPy scalar or array or a torch tensor as plain data; None for anything else (a NumPy string
    is "other"). The libraries are looked up, never imported: only a learner who uses one has it."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(x, numpy.bool_):
            return {"t": "bool", "v": bool(x)}
        if isinstance(x, numpy.integer):
            return to_plain(int(x))
        if isinstance(x, numpy.floating):
            return to_plain(float(x))
        if isinstance(x, numpy.ndarray):
            return _array(x.shape, x.size, lambda: x.ravel().tolist(), str(x.dtype))
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _array(x.shape, x.numel(), lambda: x.detach().cpu().reshape(-1).tolist(), str(x.dtype))
    return None


def _array(shape: Iterable[int], size: int, flat: Callable[[], list[object]], dtype: str) -> Plain:
    if size > MAX_ITEMS:
        return {"t": "other", "type": f"array of {size} entries (too large)"}
    return {"t": "array", "shape": [int(n) for n in shape], "dtype": dtype[:20],
            "v": [to_plain(item, 4) for item in flat()]}


def _text_of(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # an exception whose __str__ raises still gets a verdict
        return ""


def describe_error(exc: BaseException) -> tuple[str, str]:
    """("ZeroDivisionError: division by zero", "my_bucket, line 9"), robust to odd exceptions. The place is
    the deepest traceback entry in the learner's code (not the library, not this module), else the deepest of
    all; "" without a traceback."""
    text, name = _text_of(exc), type(exc).__name__
    message = f"{name}: {text[:200]}" if text else name
    ours = (HARVEST_FILE, ADAPTER_FILE, globals().get("__file__"))
    library = ("<frozen", *(p for p in {sys.prefix, sys.base_prefix, sys.exec_prefix} if p))
    frames = [(frame.f_code, line) for frame, line in traceback.walk_tb(exc.__traceback__)]
    users = [(code, line) for code, line in frames if not (
        code.co_filename in ours or code.co_filename.startswith(library) or "/t5lesson/" in code.co_filename)]
    if not frames:
        return message, ""
    code, line = (users or frames)[-1]
    return message, f"{'your cell' if code.co_name == '<module>' else code.co_name}, line {line}"


def _alarm(signum: int, frame: object) -> None:
    raise _CaseTimeout()


def call_cases(function: Callable[..., object], cases: Iterable[Mapping[str, Any]], timeout: float,
               slow_cases: int = MAX_SLOW_CASES) -> list[Plain]:
    """Call `function` on every case; one result record per case, never raising. Each call gets
    `timeout` seconds (an alarm, in the main thread); after `slow_cases` timeouts the rest are skipped."""
    use_alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    results: list[Plain] = []
    for case in cases:
        if sum("timeout" in result for result in results) >= slow_cases:
            results.append({"skipped": True})
            continue
        args, kwargs = json.loads(json.dumps(case["args"])), json.loads(json.dumps(case["kwargs"]))
        previous = None
        try:
            if use_alarm:
                previous = signal.signal(signal.SIGALRM, _alarm)
                signal.setitimer(signal.ITIMER_REAL, timeout)
            before = len(getattr(sys, HITS_ATTRIBUTE, ()))
            try:
                value = function(*args, **kwargs)
            except BaseException as exc:
                hits = getattr(sys, HITS_ATTRIBUTE, [])[before:]
                if not hits or isinstance(exc, (_CaseTimeout, KeyboardInterrupt)):
                    raise
                # the reference was called and its refusal escaped: a blocked case, kept as data (the
                # grader words it; an error text the learner raised can never read as one)
                results.append({"blocked": str(hits[0]), "where": describe_error(exc)[1]})
            else:
                hits = getattr(sys, HITS_ATTRIBUTE, [])[before:]
                # the reference was called (and the refusal caught): no credit for this case
                results.append({"blocked": str(hits[0]), "where": ""} if hits else {"ok": to_plain(value)})
            finally:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, previous)
        except _CaseTimeout:
            results.append({"timeout": True})
        except NotImplementedError:
            results.append({"not_implemented": True})
        except GradingSetupError as exc:
            results.append({"setup_error": _text_of(exc)[:200]})
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit and friends from the learner's code are errors too
            error, where = describe_error(exc)
            results.append({"error": error, "where": where})
    return results


BLOCKED_MESSAGE = "is not available while your answer is graded"  # in every refusal (reports look for it)
HITS_ATTRIBUTE = "_t5lesson_blocked_hits"  # sys.<this>: the blocked targets called so far, in order
BLOCKED_FILE = "<t5lesson-blocked>"  # the file name of every refusing code object


def _refusing_code(target: str, freevars: tuple[str, ...] = ()) -> CodeType:
    """A code object that notes the call (in `sys`, the one place every module's code can reach)
    and raises; with as many free variables as `freevars`, so that it can also replace the code
    of a closure, such as the wrapper a decorator returns."""
    message = f"the reference implementation {BLOCKED_MESSAGE} ({target})"
    names = [f"_free{i}" for i in range(len(freevars))]
    lines = [f"__import__('sys').__dict__.setdefault({HITS_ATTRIBUTE!r}, []).append({target!r})",
             f"raise RuntimeError({message!r})"]
    if names:
        lines.insert(0, f"({', '.join(names)},)")
    source = ("def _outer():\n" + (f"    {' = '.join(names)} = None\n" if names else "")
              + "    def _refuse(*args, **kwargs):\n" + "".join(f"        {line}\n" for line in lines)
              + "    return _refuse\n")
    scope: dict[str, Any] = {}
    exec(compile(source, BLOCKED_FILE, "exec"), scope)
    code: CodeType = scope["_outer"]().__code__
    return code.replace(co_freevars=tuple(freevars)) if freevars else code


def _functions(obj: object, seen: set[int]) -> list[Any]:
    """The Python functions behind `obj`: a function, a method, a static or class method, a
    property, and whatever a decorator wraps (`__wrapped__`), all of them."""
    todo: list[Any] = [obj]
    found: list[Any] = []  # each with a settable __code__
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        wrapped = getattr(item, "__wrapped__", None)
        if isinstance(item, property):
            todo += [item.fget, item.fset, item.fdel]
        elif hasattr(item, "__func__"):  # a method, a static or class method
            todo.append(item.__func__)
        elif getattr(item, "__code__", None) is not None:
            found.append(item)
        todo.append(wrapped)
    return found


def _members(owner: object, path: str) -> list[object]:
    """What a target names: "Class.method" one attribute, "Class.*" every member of a class,
    "*" every function and class defined in the module (every member, of a class)."""
    if path == "*" and not isinstance(owner, type):
        return [value for value in vars(owner).values()
                if getattr(value, "__module__", None) == getattr(owner, "__name__", None)]
    *outer, last = path.split(".")
    for part in outer:
        owner = getattr(owner, part, None)
    if last == "*":
        return list(vars(owner).values()) if isinstance(owner, type) else []
    return [(vars(owner).get(last) if isinstance(owner, type) else None) or getattr(owner, last, None)]


def target_functions(module: object, path: str, seen: set[int] | None = None) -> list[Any]:
    """The Python functions a target "module:path" blocks (see `_members`), classes method by method."""
    seen = set() if seen is None else seen
    found: list[Any] = []
    for member in _members(module, path):
        inner = _members(member, "*") if isinstance(member, type) and path == "*" else []
        found += _functions(member, seen) + [f for m in inner for f in _functions(m, seen)]
    return found


def _block_now(module: object, module_name: str, path: str, seen: set[int]) -> list[tuple[Any, CodeType]]:
    """Give the functions a target names in a loaded module refusing code; return (function, its own code) of each."""
    replaced: list[tuple[Any, CodeType]] = [(f, f.__code__) for f in target_functions(module, path, seen)]
    for function, code in replaced:
        function.__code__ = _refusing_code(f"{module_name}:{getattr(function, '__qualname__', '?')}", code.co_freevars)
    return replaced


def blocking(targets: Iterable[str]) -> Callable[[], None]:
    """Make the reference implementations unusable; return a function that undoes it.

    A loaded function gets a refusing code object (every name bound to it now raises, and the call
    is noted in `sys.<HITS_ATTRIBUTE>`), decorated ones inside and out, classes method by method; a
    module not loaded yet cannot be imported. Deterrence: a code object copied beforehand escapes it."""
    hidden: list[str] = []
    replaced: list[tuple[Any, CodeType]] = []
    seen: set[int] = set()
    for target in targets:
        module_name, _, path = target.partition(":")
        module = _module(module_name)
        if module_name not in sys.modules:
            sys.modules[module_name] = None  # pyright: ignore[reportArgumentType] (None blocks the module's import)
            hidden.append(module_name)
        elif module is not None and path:
            replaced += _block_now(module, module_name, path, seen)

    def restore() -> None:
        for function, code in reversed(replaced):
            function.__code__ = code
        for module_name in hidden:
            sys.modules.pop(module_name, None)
    return restore


def _module(name: str, default: object = None) -> object:
    """`sys.modules[name]`: a module, None (kept from loading) or `default` when there is none."""
    return sys.modules.get(name, default)


def still_blocked(targets: Iterable[str]) -> bool:
    """Whether every loaded target still refuses (its code is a refusing one) and every module
    that was kept from loading is still kept: False once anything undid the blocking mid-read
    (the undo `blocking` returns, called by the learner's code, or a code object put back)."""
    for target in targets:
        module_name, _, path = target.partition(":")
        module = _module(module_name, ())
        if module is None or not path:
            continue
        # blocking put None here, so a module missing now was taken out of the way
        if module == () or any(f.__code__.co_filename != BLOCKED_FILE for f in target_functions(module, path)):
            return False
    return True


class _BlockOnImport:
    """A meta path finder that lets a target module load as usual and blocks its targets the
    moment its code has run, so a module imported after the run's first cell is blocked too."""

    def __init__(self, pending: dict[str, list[str]]):
        self.pending = pending  # module name -> [paths of targets], for modules not loaded yet
        self.seen: set[int] = set()

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if name not in self.pending:
            return None
        finders = (getattr(finder, "find_spec", None) for finder in sys.meta_path if finder is not self)
        specs = (find(name, path, target) for find in finders if find is not None)
        spec = next((found for found in specs if found is not None), None)
        if spec is None:
            return None
        if spec.loader is None or isinstance(spec.loader, type) or not hasattr(spec.loader, "exec_module"):
            return spec  # a built-in or frozen module (its loader is a shared class): left to `blocking`
        paths = self.pending.pop(name)
        original = spec.loader.exec_module

        def exec_then_block(module: object) -> None:
            original(module)
            for item in paths:
                _block_now(module, name, item, self.seen)
        setattr(spec.loader, "exec_module", exec_then_block)  # noqa: B010 (this spec's loader object only: made for this import
        return spec


def block_for_the_run(targets: Iterable[str]) -> None:
    """Block the reference implementations for the rest of the kernel's life, from the run's first
    cell on: loaded modules now, the others as soon as they are imported (they still import, so
    the notebook's own imports work). Nothing undoes it. A target without a path ("transformers:",
    which `blocking` refuses to import while an answer is read) is left to `blocking`."""
    pending: dict[str, list[str]] = {}
    seen: set[int] = set()
    for target in targets:
        module_name, _, path = target.partition(":")
        module = _module(module_name)
        if path and module is not None:
            _block_now(module, module_name, path, seen)
        elif path:
            pending.setdefault(module_name, []).append(path)
    if pending:
        sys.meta_path.insert(0, _BlockOnImport(pending))


def collect(spec: Mapping[str, Any], namespace: Mapping[str, object]) -> Plain:
    """The record for one question (see t5lesson.grading.questions.kinds): read a variable or run a function."""
    name = spec["name"]
    if name not in namespace:
        return {"status": "missing"}
    value = namespace[name]
    if spec["kind"] == "code":
        if not callable(value):
            return {"status": "not_callable", "value": to_plain(value)}
        if spec.get("adapter"):  # e.g. a class: the adapter's function builds and runs it per case
            scope: dict[str, Any] = {"__name__": "t5lesson_adapter", "GradingSetupError": GradingSetupError}
            exec(compile(spec["adapter"], ADAPTER_FILE, "exec"), scope)
            value = scope["adapt"](value)
        blocked = spec.get("blocked", ())
        restore = blocking(blocked)
        try:
            slow_cases = spec.get("slow_cases", MAX_SLOW_CASES)
            record: Plain = {"status": "ran", "cases": call_cases(value, spec["cases"], spec["timeout"], slow_cases)}
            if not still_blocked(blocked):
                record["unblocked"] = True
            return record
        finally:
            restore()
    try:
        return {"status": "value", "value": to_plain(value)}
    except Exception as exc:  # a hostile object that raises while being read
        described = {"t": "other", "type": type(value).__name__, "error": describe_error(exc)[0]}
        return {"status": "value", "value": described}


# Where the code a kernel runs on its own comes from when nothing was added to it: IPython, the
# kernel and the inline backend register callbacks and input transformers of their own.
KNOWN_HOOK_MODULES = ("IPython.", "ipykernel.", "matplotlib_inline.", "ipywidgets.", "comm.", "matplotlib.")


def _hook_name(hook: object) -> str:
    """'module.qualname' of a callback or transformer (a bound method's function, an object's class)."""
    function: object = getattr(hook, "__func__", hook)
    owner: object = function if hasattr(function, "__qualname__") else type(function)
    return f"{getattr(owner, '__module__', '?')}.{getattr(owner, '__qualname__', '?')}"[:120]


def _foreign(hooks: Iterable[object], where: str) -> list[str]:
    """The hooks among `hooks` that come from none of KNOWN_HOOK_MODULES, each as "where (name)"."""
    return [f"{where} ({_hook_name(h)})" for h in hooks if not _hook_name(h).startswith(KNOWN_HOOK_MODULES)]


def audit() -> list[str]:
    """What in this kernel runs around the grader's cells without being asked: event callbacks,
    input and AST transformers, trace and profile functions, a replaced display publisher. A
    notebook that hooks the reading of its answers is told so (docs/grading.md); a notebook that
    means to can hide from this too, so it is a flag, not a wall."""
    found: list[str] = []
    shell = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    if shell is not None:
        for event, callbacks in sorted(getattr(getattr(shell, "events", None), "callbacks", {}).items()):
            found += _foreign(callbacks, f"an IPython {event} callback")
        for name in ("input_transformers_cleanup", "input_transformers_post", "ast_transformers"):
            found += _foreign(getattr(shell, name, ()), f"an input transformer ({name})")
        manager = getattr(shell, "input_transformer_manager", None)
        for name in ("cleanup_transforms", "line_transforms"):
            found += _foreign(getattr(manager, name, ()), f"an input transformer ({name})")
        publisher: object = getattr(shell, "display_pub", None)
        publish = getattr(publisher, "publish", None)
        if publish is not None and getattr(publish, "__func__", None) is not getattr(type(publisher), "publish", 0):
            found.append("a replaced publish of the display publisher")
    for module_name in ("IPython.core.display_functions", "IPython.display"):
        publish = getattr(sys.modules.get(module_name), "publish_display_data", None)
        if publish is not None and not _hook_name(publish).startswith(KNOWN_HOOK_MODULES):
            found.append(f"a replaced {module_name}.publish_display_data")
    for name, hook in (("a trace function", sys.gettrace()), ("a profile function", sys.getprofile())):
        if hook is not None:
            found.append(f"{name} ({_hook_name(hook)})")
    return found[:20]


def emit(nonce: str, spec: Mapping[str, Any], namespace: Mapping[str, object]) -> None:
    """Publish one question's record as display data, tagged with the grader's nonce, with the
    `audit` of what ran around this cell (taken before and after the answer is read)."""
    from IPython.display import publish_display_data  # pyright: ignore[reportUnknownVariableType] (untyped)

    before = audit()
    record = collect(spec, namespace)
    hooks = list(dict.fromkeys(before + audit()))[:20]
    payload = json.dumps({"nonce": nonce, "id": spec["id"], "record": record, "audit": hooks}, allow_nan=False)
    publish_display_data({MIME: payload})
