"""What DBOS stores, as the DBOS reader reads it: a ``workflow_status`` row, a stored value
decoded per its ``serialization`` (a pickle never unpickled), DBOS's statuses in wfctl's words
(see :mod:`._dbos`)."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from ._pickle import pickle_marker
from ._protocol import RunState

__all__ = [
    "EPOCH_MS_RANGE",
    "NEWEST_MIGRATION",
    "STATUSES",
    "Workflow",
    "decode_value",
    "epoch_ms",
    "is_none",
]

#: The newest ``dbos_migrations`` version this reader knows (dbos 3.4.0).
NEWEST_MIGRATION = 125
STATUSES: dict[str, RunState] = {
    "SUCCESS": "completed",
    "ERROR": "failed",
    "CANCELLED": "cancelled",
    "ENQUEUED": "queued",
    "DELAYED": "queued",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "interrupted",
    "PENDING": "unknown",
}
PICKLE, JSON = "py_pickle", "portable_json"
_UNDECODABLE = "$undecodable"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: The epoch milliseconds :func:`epoch_ms` reads as a time: year 1 to year 9999.
EPOCH_MS_RANGE = (-62_135_596_800_000, 253_402_300_799_999)


@functools.lru_cache(maxsize=4096)  # a listing's times repeat (SQLite keeps whole seconds)
def epoch_ms(value: Any) -> str:
    """An epoch-milliseconds column as ISO 8601 (UTC, milliseconds); empty when NULL or not a
    time (outside :data:`EPOCH_MS_RANGE`). Counted in integers: through a float, a time near
    the year 9999 lost its last millisecond."""
    if value is None:
        return ""
    try:
        moment = _EPOCH + timedelta(milliseconds=int(value))
    except (ValueError, OverflowError, TypeError):
        return ""
    return moment.isoformat(timespec="milliseconds")


def decode_value(text: Any, serialization: Any) -> tuple[Any, str | None]:
    """A stored value decoded per its ``serialization``, and what could not be decoded.

    JSON is decoded; a pickle (``py_pickle``, or NULL: DBOS's default serializer) is given
    as its opaque marker, never unpickled; another serialization is not decoded."""
    if text is None:
        return None, None
    stored = str(text)
    size = len(stored.encode())
    if serialization == JSON:
        try:
            return json.loads(stored), None
        except (ValueError, RecursionError) as exc:
            problem = f"portable_json value is not JSON: {exc}"
            return {_UNDECODABLE: JSON, "bytes": size, "problem": problem}, problem
    if serialization is None or serialization == PICKLE:
        try:
            raw = base64.b64decode(stored, validate=True)
        except (binascii.Error, ValueError) as exc:
            problem = f"{serialization or 'default'} value is not base64: {exc}"
            return {_UNDECODABLE: PICKLE, "bytes": size, "problem": problem}, problem
        marker = pickle_marker(raw)
        if serialization is None and "problem" in marker["scan"]:
            problem = "value of no serialization is not a pickle (a custom serializer?)"
            return {_UNDECODABLE: "default", "bytes": size, "problem": problem}, problem
        return marker, None
    problem = f"serialization {str(serialization)!r} is not one wfctl knows: not decoded"
    return {_UNDECODABLE: str(serialization), "bytes": size, "problem": problem}, problem


def is_none(value: Any) -> bool:
    """Whether a decoded value is None (JSON null, or a pickle of None: no global, no
    string, a few bytes)."""
    if value is None:
        return True
    if isinstance(value, dict) and value.get("$opaque") == "pickle":
        scan = value.get("scan", {})
        return not scan.get("globals") and not scan.get("strings") and value["bytes"] <= 4
    return False


@dataclasses.dataclass(frozen=True, slots=True)
class Workflow:
    """One ``workflow_status`` row, as this reader reads it."""

    workflow_id: str
    status: str
    name: str
    created_at: Any
    updated_at: Any
    completed_at: Any
    recovery_attempts: Any
    queue: str | None
    forked_from: str | None
    was_forked_from: bool
    parent: str | None
    serialization: str | None

    @classmethod
    def of(cls, row: Any) -> Workflow:
        wid, status, name, created, updated, completed, attempts, queue, forked, was = row[:10]
        parent, serialization = row[10:12]
        return cls(
            str(wid), str(status or ""), str(name or ""), created, updated, completed,
            attempts, queue, forked, bool(was), parent, serialization,
        )  # fmt: skip

    def details(self) -> dict[str, Any]:
        """DBOS's facts of the workflow that wfctl's run fields do not hold."""
        found: dict[str, Any] = {"dbos_status": self.status}
        if self.recovery_attempts:
            found["recovery_attempts"] = int(self.recovery_attempts)
        for key, value in (
            ("queue", self.queue),
            ("forked_from", self.forked_from),
            ("parent", self.parent),
        ):
            if value:
                found[key] = str(value)
        if self.was_forked_from:
            found["was_forked_from"] = True
        return found
