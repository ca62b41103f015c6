"""Where the checkpoint store lives: ``--store``, ``WFCTL_STORE``, ``wfctl.toml``, default.

Precedence, highest first: an explicit path; the ``WFCTL_STORE`` environment variable;
``store = "..."`` in ``wfctl.toml`` or under ``[tool.wfctl]`` in ``pyproject.toml`` in the
current directory or the nearest parent that has one (relative paths are taken from that
file's directory); ``./.wfctl``.

The same files may list stores owned by other users that ``resume`` and ``replay`` may import
code for (:func:`trusts_store`), choose how durable ``run`` and ``resume`` commit
(``durability``, ``batch_steps``, ``batch_ms``: read by
:func:`wfctl._drive._durability.resolve_durability`), and how times are shown to people
(``time_format``: :func:`time_format`).

A store named for this invocation (the explicit path or ``WFCTL_STORE``) must exist when it is
read: a typo must not read as "no runs". The configured and default stores may not exist yet
(a project before its first run); reads then find no runs. An empty path is refused everywhere:
it would silently mean the current directory. An empty ``WFCTL_STORE`` counts as unset.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfctl._errors import StoreLocationError, WfctlError

if TYPE_CHECKING:
    pass

__all__ = [
    "DEFAULT_STORE",
    "TIME_FORMATS",
    "StoreLocation",
    "StoreRef",
    "choose_time_format",
    "is_url",
    "locate_store",
    "resolve_store",
    "time_format",
    "trusts_store",
]

DEFAULT_STORE = ".wfctl"

#: How times people read are shown: local date and time (the default), how long ago, or
#: ISO 8601 with the local offset. ``--json`` is ISO 8601 UTC whatever is chosen.
TIME_FORMATS = ("local", "relative", "iso")

#: The time format named for this invocation (``--time-format``), and the one resolved.
_chosen_time_format: str | None = None
_resolved_time_format: str | None = None

#: A store as commands take it: a directory, or a store URL (``postgresql://...``) as text.
StoreRef = Path | str


def config_tables(directory: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Yield each wfctl table from ``directory`` upwards: ``wfctl.toml`` (which ends the
    search) or ``[tool.wfctl]`` of ``pyproject.toml``, with the file it came from."""
    for parent in (directory, *directory.parents):
        for name, section in (("wfctl.toml", ()), ("pyproject.toml", ("tool", "wfctl"))):
            path = parent / name
            if not path.is_file():
                continue
            import tomllib  # only where there is a file to read (start-up time)

            try:
                table = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise WfctlError(f"cannot read {path}: {exc}") from None
            for part in section:
                table = table.get(part, {})
            yield path, table if isinstance(table, dict) else {}
            if name == "wfctl.toml":
                return


def _configured(directory: Path) -> StoreRef | None:
    for path, table in config_tables(directory):
        store = table.get("store")
        if store is not None:
            if not isinstance(store, str):
                raise WfctlError(f"{path}: 'store' must be a string")
            if not store:
                raise StoreLocationError(store, f"(in {path}) is empty: name a directory")
            return store if is_url(store) else path.parent / store
    return None


def trusts_store(store: StoreRef, directory: Path | None = None) -> bool:
    """Return whether the configuration trusts ``store`` although another user owns it.

    ``trusted_stores = ["path", ...]`` in the nearest ``wfctl.toml`` (or ``[tool.wfctl]``) that
    sets it lists trusted stores (relative paths from that file's directory; ``"*"`` trusts
    every store). Like git's ``safe.directory``, the list is honoured only from a file owned by
    the current user: a file someone else wrote cannot vouch for that someone's store.

    Raises:
        WfctlError: a configuration file cannot be read, or the list is not a list of strings.
    """
    for path, table in config_tables(directory or Path.cwd()):
        listed = table.get("trusted_stores")
        if listed is None:
            continue
        if not isinstance(listed, list) or not all(isinstance(i, str) for i in listed):
            raise WfctlError(f"{path}: 'trusted_stores' must be a list of strings")
        geteuid = getattr(os, "geteuid", None)
        if geteuid is not None and path.stat().st_uid != geteuid():
            return False
        if isinstance(store, str):  # a URL: listed as it is written
            return any(i in ("*", store) for i in listed)
        real = os.path.realpath(store)
        return any(i == "*" or os.path.realpath(path.parent / i) == real for i in listed)
    return False


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """Where the store is, and whether it was named for this invocation.

    ``url`` is set for a store named by URL (``postgresql://...``, ``memory:``); ``path`` is
    then meaningless. :attr:`target` is what to open either way.
    """

    path: Path
    #: Named by an explicit path or ``WFCTL_STORE``: reads refuse it if it does not exist.
    named: bool
    url: str | None = None

    @property
    def target(self) -> StoreRef:
        """The store to open: the URL, else the directory."""
        return self.url if self.url is not None else self.path


def is_url(location: str | os.PathLike[str]) -> bool:
    """Return whether ``location`` names a store by URL (not a directory).

    Any ``scheme://`` counts, so that a URL of a kind wfctl does not read is refused by name
    (:func:`open_storage`) instead of being taken for a relative directory.
    """
    text = os.fspath(location)
    return text == "memory:" or "://" in text


def _location(text: str | os.PathLike[str], named: bool) -> StoreLocation:
    if is_url(text):
        return StoreLocation(Path(), named, os.fspath(text))
    return StoreLocation(Path(text), named)


def locate_store(explicit: str | os.PathLike[str] | None = None) -> StoreLocation:
    """Return the store directory to use and how it was chosen.

    Raises:
        StoreLocationError: the path given (explicitly or in a configuration file) is empty.
        WfctlError: a configuration file exists but cannot be read.
    """
    if explicit is not None:
        if not os.fspath(explicit):
            raise StoreLocationError("", "is empty: name a directory (. for the current one)")
        return _location(explicit, named=True)
    env = os.environ.get("WFCTL_STORE")
    if env:
        return _location(env, named=True)
    configured = _configured(Path.cwd())
    if isinstance(configured, str):
        return _location(configured, named=False)
    return StoreLocation(configured or Path(DEFAULT_STORE), named=False)


def resolve_store(explicit: str | os.PathLike[str] | None = None) -> StoreRef:
    """Return the store to use: a directory, or a URL (see :func:`locate_store`).

    Raises:
        StoreLocationError: the path given is empty.
        WfctlError: a configuration file exists but cannot be read.
    """
    return locate_store(explicit).target


def _time_format_named(value: str, where: str) -> str:
    if value not in TIME_FORMATS:
        raise WfctlError(f"{where} is {value!r}: use one of {', '.join(TIME_FORMATS)}")
    return value


def choose_time_format(explicit: str | None) -> None:
    """Keep the time format this invocation names (``--time-format``, else
    ``WFCTL_TIME_FORMAT``), checked; a configuration file is read only when a time is shown
    (:func:`time_format`), so a command that shows none (``--json``) never reads it for this.

    Raises:
        WfctlError: ``WFCTL_TIME_FORMAT`` is not one of :data:`TIME_FORMATS`.
    """
    global _chosen_time_format, _resolved_time_format
    if explicit is None:
        env = os.environ.get("WFCTL_TIME_FORMAT")
        if env:  # empty counts as unset
            explicit = _time_format_named(env, "WFCTL_TIME_FORMAT")
    _chosen_time_format, _resolved_time_format = explicit, None


def time_format(directory: Path | None = None) -> str:
    """Return how times people read are shown: one of :data:`TIME_FORMATS`.

    Precedence, highest first: ``--time-format``, then the ``WFCTL_TIME_FORMAT`` environment
    variable (:func:`choose_time_format`; without it, as here, the variable is read);
    ``time_format = "..."`` in ``wfctl.toml`` or ``[tool.wfctl]``; ``local``. Resolved once
    per process (until :func:`choose_time_format` is called again).

    Raises:
        WfctlError: a value named outside the command line is not one of :data:`TIME_FORMATS`,
            or a configuration file cannot be read.
    """
    global _resolved_time_format
    if _resolved_time_format is not None:
        return _resolved_time_format
    chosen = _chosen_time_format
    if chosen is None:
        env = os.environ.get("WFCTL_TIME_FORMAT")
        if env:
            chosen = _time_format_named(env, "WFCTL_TIME_FORMAT")
    if chosen is None:
        for path, table in config_tables(directory or Path.cwd()):
            value = table.get("time_format")
            if value is not None:
                if not isinstance(value, str):
                    raise WfctlError(f"{path}: 'time_format' must be a string")
                chosen = _time_format_named(value, f"{path}: 'time_format'")
                break
    _resolved_time_format = _time_format_named(chosen or "local", "the time format")
    return _resolved_time_format
