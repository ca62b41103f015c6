"""When ``resume``, ``replay`` and ``worker`` may import the code a run's root names.

A run's root records its target (``/abs/flow.py:name`` or ``package.module:name``) so that
``wfctl resume``, ``wfctl replay`` and ``wfctl worker`` can load the same code again. But a
store is data that gets copied, shared and attached to bug reports, and importing a module
runs its top-level code. So all three decide with one function, :func:`recorded_code_check`
(under a :class:`CodeRule` that says what the user allowed), and a recorded target is imported
only when every file and package directory an import would run from (parent packages'
``__init__`` included), found *without importing anything* and resolved through symbolic
links, passes these checks in order:

1. **it lies outside the store**;
2. **it is not Python's own**: not the standard library (outside ``site-packages``) and not
   built into the interpreter -- no workflow lives there, and importing ``this`` prints, and
   ``antigravity`` opens a browser;
3. **it is not found only through the current directory** (a module whose ``sys.path`` entry
   is the current directory, or a relative file path) unless the run's root records that the
   run was started in this directory (``started_in``), or the user named the directory
   (``worker --workflows``);
4. **it lies under the directories the user allowed**, where there are some: a worker's
   ``--workflows`` (default: the current directory), the current directory for a server
   store the user has not trusted;
5. where none are allowed (``resume``/``replay`` of a directory store), **the store is this
   user's, or trusted**: the store directory, the run's directory and its journal are owned by
   the effective user -- as git's ``safe.directory`` rule has it, and like git, with no
   exception for root -- unless the user trusts the store (``--trust-store``, or
   ``trusted_stores`` in ``wfctl.toml``; see :func:`wfctl._config.trusts_store`).

``--target`` names the code on the command line instead, and is loaded as ``wfctl run`` loads
its target. Reading commands (``runs``, ``log``, ``show``, ``export``, ``verify-lineage``)
import nothing at all.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import sysconfig
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from wfctl._config import trusts_store
from wfctl._errors import UntrustedTargetError

__all__ = [
    "FOREIGN_REMEDY",
    "TARGET_REMEDY",
    "CodeRule",
    "FoundCode",
    "file_code",
    "module_code",
    "names_a_file",
    "recorded_code_check",
    "refuse_code_in_store",
    "refuse_code_outside",
    "vet_store_owner",
]

TARGET_REMEDY = "load your own code with --target"
FOREIGN_REMEDY = (
    "if you trust this store, pass --trust-store (or list it under trusted_stores in "
    "wfctl.toml), or load your own code with --target"
)


def _find_spec(name: str, path: list[str] | None) -> importlib.machinery.ModuleSpec | None:
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is not None:
            spec = find(name, path, None)
            if spec is not None:
                return spec  # type: ignore[no-any-return]
    return None


@dataclass(frozen=True, slots=True)
class FoundCode:
    """Where importing a target would run code from, found without importing anything.

    ``locations``: the file, or each level's file and each package's directories.
    ``entries``: for a module, the ``sys.path`` directories its top level was found in.
    ``built_in``: a level is built into the interpreter or frozen (it has no file).
    ``relative``: a file target named by a relative path (found from the current directory).
    """

    locations: tuple[str, ...]
    entries: tuple[str, ...] = ()
    built_in: bool = False
    relative: bool = False


def names_a_file(location: str) -> bool:
    """Whether a target's location (before its ``:name``) is a file path, not a module name."""
    return (
        location.endswith(".py")
        or "/" in location
        or os.sep in location
        or Path(location).is_file()
    )


def file_code(path_text: str, resolved: Path) -> FoundCode:
    """Where loading the file target ``path_text`` (found at ``resolved``) runs code from."""
    return FoundCode((str(resolved),), relative=not Path(path_text).expanduser().is_absolute())


def module_code(module_name: str) -> FoundCode:
    """Where importing ``module_name`` would run code from, without importing anything.

    ``importlib.util.find_spec("a.b")`` imports ``a`` (runs its ``__init__``) to find ``b``;
    this asks the import system's finders for each level itself, passing the parent's search
    path, so nothing executes. A level that cannot be found ends the walk (the import then
    fails by itself, after running only levels listed here).
    """
    locations: list[str] = []
    entries: tuple[str, ...] = ()
    built_in = False
    search: list[str] | None = None
    parts = module_name.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        loaded = sys.modules.get(name)
        spec = getattr(loaded, "__spec__", None) if loaded is not None else None
        if spec is None:
            spec = _find_spec(name, search)
        if spec is None:
            break
        packages = list(spec.submodule_search_locations or ())
        if spec.origin and spec.has_location:
            locations.append(spec.origin)
        elif not packages:
            built_in = True  # built in or frozen: no file
        locations.extend(packages)
        if depth == 1:  # the sys.path entries the top level came from
            tops = packages or ([spec.origin] if spec.origin and spec.has_location else [])
            entries = tuple(os.path.dirname(top) for top in tops)
        search = packages
        if not search:
            break
    return FoundCode(tuple(locations), entries, built_in)


@dataclass(frozen=True, slots=True)
class CodeRule:
    """What the user allowed a recorded target's code to be (see :func:`recorded_code_check`).

    ``store``: a directory store (code inside it is refused; None for a server). ``roots``: the
    directories the code must lie under (none: anywhere the other checks allow), called
    ``label`` in messages; ``named``: the user named them (``worker --workflows``), which
    vouches for the current directory among them. ``trusted``: the store counts as the user's
    own (``--trust-store``). ``remedy`` ends every refusal.
    """

    store: Path | None
    roots: tuple[Path, ...] = ()
    label: str = ""
    named: bool = False
    trusted: bool = False
    remedy: str = TARGET_REMEDY


def recorded_code_check(
    target: str, run_id: str, started_in: str | None, rule: CodeRule
) -> Callable[[FoundCode], None]:
    """Return the check to run before importing ``target``, the target run ``run_id``
    recorded (its root says it was started in ``started_in``): the one rule ``resume``,
    ``replay`` and ``worker`` apply (see the module's docstring).

    The store's owner is checked at once (where the rule allows no directories); the rest,
    when the loader has found the code and before it imports anything.

    Raises:
        UntrustedTargetError: (here, or from the check) the code is refused.
    """
    if rule.store is not None and not rule.roots:
        vet_store_owner(rule.store, run_id, target, trusted=rule.trusted)

    def check(found: FoundCode) -> None:
        if rule.store is not None:
            refuse_code_in_store(target, run_id, found.locations, rule.store)
        own = [location for location in found.locations if _python_itself(location)]
        if own or found.built_in:
            raise UntrustedTargetError(
                target,
                run_id,
                f"its code ({', '.join(own) or 'built in'}) is part of Python itself, which "
                "holds no workflow",
                rule.remedy,
            )
        _refuse_stray(target, run_id, found, started_in, rule)
        if rule.roots:
            refuse_code_outside(
                target, run_id, found.locations, (rule.label, rule.roots), rule.remedy
            )

    return check


def _refuse_stray(
    target: str, run_id: str, found: FoundCode, started_in: str | None, rule: CodeRule
) -> None:
    """Refuse code found only through the current directory, where the run was not started
    and that the user did not name."""
    here = os.path.realpath(os.getcwd())
    through_here = found.relative or any(os.path.realpath(e) == here for e in found.entries)
    if not through_here:
        return
    if started_in is not None and os.path.realpath(started_in) == here:
        return
    if rule.named and any(Path(here).is_relative_to(os.path.realpath(r)) for r in rule.roots):
        return
    where = f"it was started in {started_in}" if started_in else "it records no directory"
    raise UntrustedTargetError(
        target,
        run_id,
        f"its code is found only through the current directory {here}, and the run was not "
        f"started there ({where})",
        rule.remedy,
    )


def _python_itself(location: str) -> bool:
    """Whether ``location`` is part of the Python installation's own library (not
    ``site-packages``/``dist-packages``, where installed packages live)."""
    real = Path(os.path.realpath(location))
    if {"site-packages", "dist-packages"} & set(real.parts):
        return False
    own = {sysconfig.get_path(key) for key in ("stdlib", "platstdlib")}
    return any(real.is_relative_to(os.path.realpath(path)) for path in own if path)


def refuse_code_outside(
    target: str,
    run_id: str,
    locations: Iterable[str | Path],
    roots: tuple[str, Iterable[Path]],
    remedy: str,
) -> None:
    """Raise unless every one of ``locations`` (the target's code) lies under one of ``roots``.

    ``roots`` is what the message calls them (``--workflows``) and the directories. Both sides are resolved through symbolic links first; code that cannot be found counts
    as outside.

    Raises:
        UntrustedTargetError: a location lies outside every root, or there is none.
    """
    label, directories = roots
    real_roots = [Path(os.path.realpath(root)) for root in directories]
    found = list(locations)
    outside = [
        str(location)
        for location in found
        if not any(Path(os.path.realpath(location)).is_relative_to(r) for r in real_roots)
    ]
    if outside or not found:
        raise UntrustedTargetError(
            target,
            run_id,
            f"its code ({', '.join(outside) or 'not found'}) is not under {label} "
            f"({', '.join(map(str, real_roots))})",
            remedy,
        )


def refuse_code_in_store(
    target: str, run_id: str, locations: Iterable[str | Path], store: Path
) -> None:
    """Raise if any of ``locations`` (the target's code) lies inside ``store``.

    Both sides are resolved through symbolic links first.

    Raises:
        UntrustedTargetError: a location is the store or lies under it.
    """
    root = Path(os.path.realpath(store))
    for location in locations:
        real = Path(os.path.realpath(location))
        if real.is_relative_to(root):
            raise UntrustedTargetError(
                target,
                run_id,
                f"its code {real} lies inside the store {root} (a store is data, never code)",
                TARGET_REMEDY,
            )


def vet_store_owner(store: Path, run_id: str, target: str, *, trusted: bool) -> None:
    """Raise unless the store and the run's files are the user's own, or the store is trusted.

    Checked: the store directory, ``runs/<run_id>`` and its journal (followed through
    links: what counts is who can change what is read).

    Raises:
        UntrustedTargetError: one of them is owned by another user and the store is trusted
            neither by ``trusted`` nor by the configuration.
    """
    geteuid = getattr(os, "geteuid", None)
    if trusted or geteuid is None:  # (no owners to compare on Windows)
        return
    me = geteuid()
    run_dir = store / "runs" / run_id
    for path in (store, run_dir, run_dir / "journal.jsonl"):
        try:
            owner = path.stat().st_uid
        except OSError:
            continue  # reading it has already succeeded or failed on its own terms
        if owner != me and not trusts_store(store):
            raise UntrustedTargetError(
                target,
                run_id,
                f"{path} is owned by uid {owner}, not by you (uid {me})",
                FOREIGN_REMEDY,
            )
