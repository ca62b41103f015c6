"""Finding a workflow from a command-line target: ``file.py:name``, ``package.module:name``.

A target names a workflow by where its code lives:

- ``path/to/file.py:name`` -- load the file (its directory goes on ``sys.path``, as with
  ``python file.py``) and take the workflow bound to ``name`` (dotted names follow attributes);
- ``package.module:name`` -- import the module (the current directory goes on ``sys.path``, as
  with ``python -m``);
- ``path/to/file.py`` or ``package.module`` -- the one workflow it defines.

The loaded workflow's :attr:`~wfctl.Workflow.target` is set to a target that finds it again from
anywhere (the file's absolute path, or the module name), so ``wfctl resume`` and ``wfctl
replay`` reload the same code from what the run's root recorded.

A file is loaded under a module name derived only from its file name, so the code signature
(which includes module names) is the same in every process that loads it.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from wfctl._engine._events import error_message
from wfctl._engine._step import Step
from wfctl._engine._trust import FoundCode, file_code, module_code, names_a_file
from wfctl._engine._workflow import Workflow
from wfctl._errors import WorkflowLoadError

__all__ = ["load_workflow", "module_name_for_file"]


def _split(target: str) -> tuple[str, str | None]:
    location, colon, name = target.rpartition(":")
    if not colon or not name or "/" in name or os.sep in name or name.endswith(".py"):
        return target, None  # no name, or a Windows drive letter ("C:\\...")
    return location, name


def module_name_for_file(path: Path) -> str:
    """Return the module name a workflow file is loaded under.

    The file's stem, unless that would shadow the standard library or a module already loaded
    from elsewhere; then a name made from the stem that cannot clash.
    """
    stem = path.stem
    if stem.isidentifier():
        loaded = sys.modules.get(stem)
        loaded_file = getattr(loaded, "__file__", None) if loaded is not None else None
        if stem not in sys.stdlib_module_names and (
            loaded is None or (loaded_file and Path(loaded_file).resolve() == path)
        ):
            return stem
    safe = "".join(c if c.isalnum() else "_" for c in stem)
    return f"wfctl_target_{safe}"


#: Called with where an import is about to run code from (files and package directories, found
#: without importing); may raise to refuse the import.
BeforeImport = Callable[[FoundCode], None]


def _load_file(path_text: str, target: str, before_import: BeforeImport) -> tuple[ModuleType, Path]:
    path = Path(path_text).expanduser()
    if not path.exists():
        raise WorkflowLoadError(f"cannot load {target!r}: no such file {path_text!r}")
    if not path.is_file():
        raise WorkflowLoadError(f"cannot load {target!r}: {path_text!r} is not a file")
    path = path.resolve()
    before_import(file_code(path_text, path))
    name = module_name_for_file(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkflowLoadError(f"cannot load {target!r}: {path_text!r} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    directory = str(path.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)  # sibling imports work, as with `python file.py`
    previous = sys.modules.get(name)
    sys.modules[name] = module  # dataclasses and register_type look the module up by name
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        _restore(name, previous)
        raise WorkflowLoadError(
            f"cannot load {target!r}: syntax error in {exc.filename or path}"
            f"{f' line {exc.lineno}' if exc.lineno else ''}: {exc.msg}"
        ) from exc
    except BaseException as exc:
        _restore(name, previous)
        if not isinstance(exc, Exception | SystemExit):
            raise  # Ctrl-C while the module runs is still Ctrl-C
        raise WorkflowLoadError(
            f"cannot load {target!r}: running {path_text} raised {_raised(exc)}"
        ) from exc
    return module, path


def _raised(exc: BaseException) -> str:
    """Describe what a module raised at import: ``Type: message``, or ``SystemExit(code)``.

    A ``SystemExit`` (``sys.exit()`` at the module's top level) is a load failure like any
    other: it must not end ``wfctl`` with the status the module chose.
    """
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r})"  # its message alone would be the bare code
    return f"{type(exc).__name__}: {error_message(exc)}"


def _restore(name: str, previous: ModuleType | None) -> None:
    if previous is None:
        sys.modules.pop(name, None)
    else:
        sys.modules[name] = previous


def _import_module(module_name: str, target: str, before_import: BeforeImport) -> ModuleType:
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # as `python -m` does; console scripts leave it out
    before_import(module_code(module_name))
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise WorkflowLoadError(
                f"cannot load {target!r}: no module named {exc.name!r} (give a file path, "
                "or run from the directory that holds the package)"
            ) from exc
        raise WorkflowLoadError(
            f"cannot load {target!r}: importing {module_name} raised ModuleNotFoundError: {exc}"
        ) from exc
    except SyntaxError as exc:
        raise WorkflowLoadError(
            f"cannot load {target!r}: syntax error in {exc.filename}"
            f"{f' line {exc.lineno}' if exc.lineno else ''}: {exc.msg}"
        ) from exc
    except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: Ctrl-C stays Ctrl-C
        raise WorkflowLoadError(
            f"cannot load {target!r}: importing {module_name} raised {_raised(exc)}"
        ) from exc


def _workflows_in(module: ModuleType) -> dict[str, Workflow]:
    found: dict[str, Workflow] = {}
    seen: set[int] = set()
    for attr, value in vars(module).items():
        if isinstance(value, Workflow) and id(value) not in seen:
            seen.add(id(value))
            found[attr] = value
    own = {a: w for a, w in found.items() if w.fn.__module__ == module.__name__}
    return own or found


def _describe(value: Any) -> str:
    if isinstance(value, Step):
        return "a @step, not a @workflow"
    if inspect.iscoroutinefunction(value):
        return "a plain async function; decorate it with @wfctl.workflow"
    return f"a {type(value).__name__}, not a workflow"


def _pick(module: ModuleType, name: str | None, where: str, target: str) -> tuple[str, Workflow]:
    workflows = _workflows_in(module)
    if name is None:
        if len(workflows) == 1:
            return next(iter(workflows.items()))
        if not workflows:
            raise WorkflowLoadError(
                f"cannot load {target!r}: no workflow in {where} "
                "(decorate an async function with @wfctl.workflow)"
            )
        names = ", ".join(sorted(workflows))
        raise WorkflowLoadError(
            f"cannot load {target!r}: {len(workflows)} workflows in {where} ({names}); "
            f"name one, e.g. {target}:{sorted(workflows)[0]}"
        )
    value: Any = module
    for part in name.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            known = ", ".join(sorted(workflows)) or "none"
            raise WorkflowLoadError(
                f"cannot load {target!r}: {where} has no attribute {name!r} "
                f"(workflows in it: {known})"
            ) from None
    if not isinstance(value, Workflow):
        raise WorkflowLoadError(f"cannot load {target!r}: {name!r} is {_describe(value)}")
    return name, value


def _allow(found: FoundCode) -> None:
    return None


def load_workflow(target: str, *, before_import: BeforeImport | None = None) -> Workflow:
    """Load the workflow ``target`` names and record how to find it again.

    Args:
        target: ``file.py:name``, ``package.module:name``, or a file or module that defines
            exactly one workflow.
        before_import: called, before anything is imported, with where the import would run
            code from: the file, or the module's file and every package directory on the way
            (found without importing; see :func:`wfctl._engine._trust.module_code`). It may
            raise to refuse.

    Returns:
        The workflow, with :attr:`~wfctl.Workflow.target` set to a target that reloads it from
        any directory (files by absolute path).

    Raises:
        WorkflowLoadError: the file or module is missing or cannot be imported (syntax error,
            an exception or ``sys.exit()`` at import), it holds no workflow or several and none
            was named, or the name is missing or is not a workflow.
        KeyboardInterrupt: Ctrl-C while the module ran (not converted: it is the user's).
    """
    text = target.strip()
    if not text:
        raise WorkflowLoadError("no workflow target given (expected file.py:name or module:name)")
    location, name = _split(text)
    if names_a_file(location):
        module, path = _load_file(location, text, before_import or _allow)
        attr, found = _pick(module, name, location, text)
        found.target = f"{path}:{attr}"
    else:
        if not all(part.isidentifier() for part in location.split(".")):
            raise WorkflowLoadError(
                f"cannot load {text!r}: {location!r} is neither a file nor a module name"
            )
        module = _import_module(location, text, before_import or _allow)
        attr, found = _pick(module, name, location, text)
        found.target = f"{location}:{attr}"
    return found
