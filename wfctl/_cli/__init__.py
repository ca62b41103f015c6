"""The ``wfctl`` command: a thin typer shell over the library.

Each command parses its options, makes one library call that returns a frozen report, renders
it (rich tables for people via :mod:`wfctl._render`, or one JSON document with ``--json``) and
picks the exit code. Errors are translated in exactly one place, :meth:`WfctlGroup.main`: one
line on stderr (``wfctl: error: ...``) and the code from :mod:`wfctl._exit`; a traceback only
with ``--debug``.

Start-up is kept fast: at import time this package loads only typer and the standard library.
The engine, the storages and rich are imported inside the commands that need them.

- :mod:`._app`: the app, its error translation and the options commands share;
- :mod:`._run_commands`: ``run``, ``resume``, ``replay``;
- :mod:`._store_commands`: ``verify-lineage``, ``runs``, ``log``, ``show``, ``export``, ``pause``, ``gc``;
- :mod:`._describe_command`: ``describe``;

- :mod:`._du_command`: ``du``;
- :mod:`._lifecycle_commands`: ``cancel``, ``rm``, ``copy``;
- :mod:`._worker_commands`: ``submit``, ``worker``;
- :mod:`._filters`: the run filters ``runs`` and ``gc`` share;
- :mod:`._output`: a command whose output's reader went away (``| head``), and text the
  output cannot encode (written as JSON escapes, see :mod:`wfctl._escapes`);
- :mod:`._ui_command`: ``ui``, the web inspector (:mod:`wfctl._ui`);
- :mod:`._version_command`: ``version``.
"""

import logging

# Registers the commands, in help order (isort would sort these into another order).
from . import _run_commands, _store_commands, _du_command  # noqa: F401  # isort: skip
from . import _describe_command  # noqa: F401  # isort: skip
from . import _lifecycle_commands, _worker_commands  # noqa: F401  # isort: skip
from . import _ui_command  # noqa: F401  # isort: skip
from . import _version_command  # noqa: F401  # isort: skip
from ._app import WfctlGroup, app
from ._output import escape_unencodable

__all__ = ["WfctlGroup", "app", "main"]


def main() -> None:
    """Entry point of the ``wfctl`` console script."""
    escape_unencodable()
    # The warnings the engine logs for ported agent-framework programs (wfctl/_engine/_af_log.py)
    # are for a library's caller; the command says what happened in its own lines, so nothing
    # logged under agent-framework's name reaches its stderr through logging's last resort.
    logging.getLogger("agent_framework").addHandler(logging.NullHandler())
    app(prog_name="wfctl")
