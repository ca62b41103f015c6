"""When ``resume`` and ``replay`` may import the code a store's root record names.

A run's root records its target (``/abs/flow.py:name`` or ``package.module:name``) so that
``wfctl resume`` and ``wfctl replay`` can load the same code again. But a store is data that
gets copied, shared and attached to bug reports, and importing a module runs its top-level
code. So a recorded target is imported only when:

- **its code lies outside the store**: the file, or every file and package directory an import
  of the module would execute from (parent packages' ``__init__`` included), resolved through
  symbolic links and found *without importing anything*; and
- **the store is this user's, or trusted**: the store directory, the run's directory and its
  journal are owned by the effective user -- as git's ``safe.directory`` rule has it, and
  like git, with no exception for root (root importing code that another user can write is
  exactly the escalation to avoid) -- unless the user trusts the store (``--trust-store``, or
  ``trusted_stores`` in ``wfctl.toml``; see :func:`wfctl._config.trusts_store`).

``--target`` names the code on the command line instead, and is loaded as ``wfctl run`` loads
its target. Reading commands (``runs``, ``log``, ``show``, ``export``, ``verify-lineage``)
import nothing at all.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from ._config import trusts_store
from ._errors import UntrustedTargetError

__all__ = [
    "FOREIGN_REMEDY",
    "module_locations",
    "refuse_code_in_store",
    "refuse_code_outside",
    "vet_store_owner",
]

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


def module_locations(module_name: str) -> list[str]:
    """Return where importing ``module_name`` would run code from, without importing anything.

    ``importlib.util.find_spec("a.b")`` imports ``a`` (runs its ``__init__``) to find ``b``;
    this asks the import system's finders for each level itself, passing the parent's search
    path, so nothing executes. The result holds each level's file and each package's
    directories. A level that cannot be found ends the walk (the import then fails by itself,
    after running only levels listed here).
    """
    locations: list[str] = []
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
        if spec.origin and spec.has_location:
            locations.append(spec.origin)
        locations.extend(spec.submodule_search_locations or ())
        search = list(spec.submodule_search_locations or ())
        if not search:
            break
    return locations


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
                "load your own code with --target",
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
