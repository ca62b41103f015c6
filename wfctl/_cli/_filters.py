"""The run filters every command that selects runs takes: ``--status``, ``--workflow``,
``--since``, ``--until`` (``runs``, ``gc`` and ``verify-lineage``).

Defined once here, so they are the same flags with the same meaning everywhere; each command
turns them into one :class:`~wfctl._inspect._query.RunQuery` with :func:`run_query` and passes it to
the library, which does the filtering (:meth:`~wfctl._inspect._query.RunQuery.select`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from wfctl._records._checkpoint import RunStatus

if TYPE_CHECKING:
    from datetime import datetime

    from wfctl._inspect._query import RunQuery, SortField

__all__ = ["SinceOption", "StatusFilter", "UntilOption", "WorkflowGlob", "run_query"]

StatusFilter = Annotated[
    list[RunStatus] | None,
    typer.Option(
        "--status",
        "-s",
        help="Only runs in this state (repeat for several: --status paused --status failed). "
        "paused: waiting for answers; interrupted: stopped with nothing to answer (Ctrl-C, a "
        "signal, wfctl pause, or its process died).",
    ),
]
WorkflowGlob = Annotated[
    str | None,
    typer.Option(
        "--workflow",
        "-w",
        metavar="PATTERN",
        help="Only runs of workflows whose name matches PATTERN (a glob: 'review*'; a plain "
        "name matches only itself).",
    ),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="TIME",
        help="Only runs created at or after TIME: an age (30s, 2h, 3d) or an ISO 8601 date or "
        "date and time (2026-11-30, 2026-11-30T14:00; local time unless it has an offset).",
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until", metavar="TIME", help="Only runs created before TIME (the same forms as --since)."
    ),
]


def run_query(
    statuses: list[RunStatus] | None,
    workflow: str | None,
    since: str | None,
    until: str | None,
    *,
    sort: SortField | None = None,
    reverse: bool = False,
    limit: int | None = None,
) -> RunQuery:
    """Return the query the options describe.

    Raises:
        WfctlError: a time cannot be read, or the options contradict each other.
    """
    from wfctl._errors import WfctlError
    from wfctl._inspect._query import RunQuery, SortField, parse_time

    def moment(option: str, text: str | None) -> datetime | None:
        if text is None:
            return None
        try:
            return parse_time(text)
        except WfctlError as exc:
            raise WfctlError(f"{option}: {exc}") from None

    return RunQuery(
        statuses=frozenset(s.value for s in statuses or ()),
        workflow=workflow,
        since=moment("--since", since),
        until=moment("--until", until),
        sort=sort or SortField.CREATED,
        reverse=reverse,
        limit=limit,
    )
