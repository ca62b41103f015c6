"""``wfctl ui``: a local, read-only web inspector over any store wfctl reads.

The app reads only through the read port (:mod:`wfctl._sources`) and wfctl's own inspecting
functions (lineage verdicts); nothing it serves changes a store. It needs the ``ui`` extra
(Starlette, uvicorn, Jinja2, graphviz): :func:`serve` says which extra to install when one of
them is missing. Only ``wfctl ui`` imports this package (start-up of the other commands).

- :mod:`._serve`: binding the port, the access token, serving until Ctrl-C;
- :mod:`._address`: whether an address is the loopback, the URL to open;
- :mod:`._app`: the Starlette app, its pages and the token check;
- :mod:`._listing`: the runs page's filters, order and pages over the port's listing;
- :mod:`._run_view`: one run's timeline, folded values and the commands that act on it;
- :mod:`._lineage`: the lineage drawn as SVG by Graphviz's ``dot``, problems on their nodes;
- :mod:`._replay_view`: a replay beside its source run, step by step;
- :mod:`._sizes`: the sizes page, the largest runs first;
- :mod:`._values`: stored values as people read them, folded past a size.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from wfctl._errors import WfctlError

__all__ = ["UI_MODULES", "serve"]

#: The modules the ``ui`` extra installs, by import name.
UI_MODULES = ("starlette", "uvicorn", "jinja2", "graphviz")


def serve(
    location: str,
    *,
    host: str,
    port: int,
    on_ready: Callable[[str], None],
) -> None:
    """Serve the inspector over the store at ``location`` until Ctrl-C (SIGINT) or SIGTERM.

    ``on_ready`` is called once with the URL to open (its access token included) when the port
    is bound. Returns when the server has stopped.

    Raises:
        WfctlError: the ``ui`` extra is not installed, or the port cannot be bound.
        StoreLocationError: ``location`` is no store wfctl reads.
    """
    missing = [name for name in UI_MODULES if not _importable(name)]
    if missing:
        raise WfctlError(
            f"wfctl ui needs the ui extra: pip install 'wfctl[ui]' (missing: {', '.join(missing)})"
        )
    from ._serve import serve_store

    serve_store(location, host=host, port=port, on_ready=on_ready)


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True
