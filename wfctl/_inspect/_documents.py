"""The ``--json`` vocabulary: the ``schema`` field, times and run summaries as documents say them.

Every ``--json`` document is a JSON object whose first key, ``schema``, names its type and
version (``wfctl/runs@1``); a script can check it before reading anything else. The rest of the
vocabulary (one name per concept, ``*_at`` times in UTC with ``Z``, ``duration_s``, ``<noun>_count``,
plural nouns for lists) is documented, field by field, in ``docs/json.md``, and each document has
a JSON Schema under ``docs/schemas/`` that the tests validate real output against.

Stored values (inputs, results, outputs, answers, request data) appear in documents exactly as
the codec encodes them (:mod:`wfctl._records._codec`): plain JSON when the value is JSON, a tagged object
``{"$t": ..., "v": ...}`` otherwise. People see them decoded (:mod:`wfctl._readable`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from wfctl._storage import RunSummary

__all__ = ["SCHEMA_PREFIX", "document", "epoch_time", "schema_name", "summary_json", "utc_time"]

#: Every document's ``schema`` starts with this; the document type and ``@version`` follow.
SCHEMA_PREFIX: Final = "wfctl/"
#: The version of every document type this wfctl writes. A document whose keys or meanings
#: change incompatibly gets the next version; adding a key does not change it.
_VERSION: Final = 1


def schema_name(kind: str) -> str:
    """Return the ``schema`` value of a document of type ``kind`` (``runs`` -> ``wfctl/runs@1``)."""
    return f"{SCHEMA_PREFIX}{kind}@{_VERSION}"


def document(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """Return ``body`` as a document of type ``kind``: ``schema`` first, then its keys."""
    return {"schema": schema_name(kind), **body}


def utc_time(text: str | None) -> str | None:
    """Return a stored ISO 8601 time as UTC with ``Z`` (``2026-12-01T02:48:10.696981Z``).

    An empty or unparseable time is None (a corrupt run has none); a time without an offset is
    taken as UTC, as wfctl has always written UTC.
    """
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def epoch_time(seconds: float) -> str:
    """Return epoch ``seconds`` as an ISO 8601 UTC time with ``Z``."""
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def summary_json(summary: RunSummary) -> dict[str, Any]:
    """Return a run summary as the ``run`` object of ``runs``, ``log``, ``export`` and ``pause``."""
    return {
        "run_id": summary.run_id,
        "workflow": summary.workflow_name,
        "status": summary.status,
        "head_checkpoint_id": summary.head_checkpoint_id or None,
        "head_seq": summary.head_seq if summary.head_seq >= 0 else None,
        "created_at": utc_time(summary.created),
        "updated_at": utc_time(summary.updated),
        "origin_run_id": summary.origin_run_id,
        "origin_checkpoint_id": summary.origin_checkpoint_id,
        "pending_request_ids": list(summary.pending),
        "problem": summary.problem,
        "waiting": summary.waiting,
    }
