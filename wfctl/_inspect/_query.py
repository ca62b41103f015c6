"""Which runs a listing shows: :class:`RunQuery`, and the time arguments its filters take.

``wfctl runs``, ``wfctl gc`` and ``wfctl verify-lineage`` build one query from the same options
and pass it to the library (``list_runs``, ``collect_garbage``, ``verify_lineage``), which
applies it to the store's summaries (:meth:`RunQuery.select`): the CLI never filters. Times are parsed here too: a relative age (``30s``, ``2h``, ``3d``, ``1w2d``) counts
back from now; an ISO 8601 date or date and time without an offset is local time (``TZ`` is
honoured), one with an offset or ``Z`` means what it says.
"""

from __future__ import annotations

import fnmatch
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Final

from wfctl._errors import WfctlError

if TYPE_CHECKING:
    from wfctl._storage import RunSummary

__all__ = ["RunQuery", "SortField", "UsageSort", "parse_age", "parse_time", "summary_time"]

_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PART: Final = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_AGE: Final = re.compile(r"0|(?:\d+(?:\.\d+)?[smhdw])+")


class SortField(StrEnum):
    """What ``wfctl runs --sort`` orders by (ties are broken by run id).

    A time orders newest first, a name or a status A to Z (:attr:`newest_first`); ``--reverse``
    flips either.
    """

    CREATED = "created"
    UPDATED = "updated"
    RUN_ID = "run_id"
    WORKFLOW = "workflow"
    STATUS = "status"

    @property
    def newest_first(self) -> bool:
        """Whether this field's own order is descending: the times, newest first."""
        return self in (SortField.CREATED, SortField.UPDATED)


class UsageSort(StrEnum):
    """How ``wfctl du`` orders its runs: ``size`` largest first, ``name`` by run id, ``records``
    most first (ties by run id). Here, beside :class:`SortField`, so that the command line
    names it without loading the readers (:mod:`wfctl._sources._usage` sorts by it)."""

    SIZE = "size"
    NAME = "name"
    RECORDS = "records"


def parse_age(text: str) -> timedelta:
    """Parse an age such as ``7d``, ``12h``, ``1w2d``, ``90m``, ``30s`` or ``0``.

    Raises:
        WfctlError: the text is not such an age.
    """
    compact = text.strip().lower().replace(" ", "")
    if compact == "0":
        return timedelta(0)
    position, seconds = 0, 0.0
    for match in _PART.finditer(compact):
        if match.start() != position:
            break
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if not compact or position != len(compact):
        raise WfctlError(f"invalid age {text!r}: use a number and a unit s/m/h/d/w, e.g. 7d or 12h")
    try:
        return timedelta(seconds=seconds)
    except OverflowError:  # past timedelta's range (or a number too long for a float)
        raise WfctlError(
            f"invalid age {text!r}: out of range (at most {timedelta.max.days} days)"
        ) from None


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """Return the moment ``text`` names, as an aware datetime.

    ``text`` is an age counted back from ``now`` (``2h``: two hours ago), or an ISO 8601 date
    (``2026-11-30``: its local midnight) or date and time (``2026-11-30T14:00``, local unless
    it carries an offset or ``Z``).

    Raises:
        WfctlError: ``text`` is neither, or is out of range: an age reaching back past the
            year 1, or a local time so near either end of the calendar that it cannot be
            converted.
    """
    stripped = text.strip()
    if _AGE.fullmatch(stripped.lower().replace(" ", "")):
        age = parse_age(stripped)
        try:
            return (now or datetime.now(UTC)) - age
        except OverflowError:
            raise WfctlError(
                f"invalid time {text!r}: out of range (an age reaches back no further than "
                "the year 1)"
            ) from None
    try:
        if len(stripped) == 10:  # a bare date: midnight, local time
            moment = datetime.combine(date.fromisoformat(stripped), datetime.min.time())
        else:
            moment = datetime.fromisoformat(stripped)
    except ValueError:
        raise WfctlError(
            f"invalid time {text!r}: use an age such as 30m, 2h or 3d, or an ISO 8601 date "
            "or date and time such as 2026-11-30 or 2026-11-30T14:00"
        ) from None
    if moment.tzinfo:
        return moment
    try:
        return moment.astimezone()  # naive: local time (TZ)
    except (ValueError, OverflowError):  # the conversion itself leaves the years 1 to 9999
        raise WfctlError(
            f"invalid time {text!r}: out of range as a local time (near 0001-01-01 or "
            "9999-12-31, give an offset or Z)"
        ) from None


def summary_time(stamp: str) -> datetime | None:
    """Return a run summary's ``created``/``updated`` text as an aware datetime (None: unreadable)."""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class RunQuery:
    """Which runs to list, in which order, and how many.

    Every filter given must match. ``statuses``: any of these (empty: any status).
    ``workflow``: an ``fnmatch`` pattern over the workflow name, case-sensitive (a name
    without ``*?[`` matches only itself); a corrupt or unreadable run whose workflow cannot be
    read is kept under any pattern, so a filter never hides a broken run. ``since``/``until``:
    the run was created at or after / before that moment; a run without a readable creation
    time (corrupt, unreadable) is kept, for the same reason. ``sort`` orders (a time newest
    first, a name A to Z), ``reverse`` flips that order, and ``limit`` keeps the first that
    many of it: ``--limit 1`` is the newest run.
    """

    statuses: frozenset[str] = frozenset()
    workflow: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    sort: SortField = SortField.CREATED
    reverse: bool = False
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 0:
            raise WfctlError(f"--limit must be 0 or more, not {self.limit}")
        if self.since and self.until and self.since >= self.until:
            raise WfctlError("--since must be earlier than --until (no run can match both)")

    @property
    def filters(self) -> bool:
        """Whether the query leaves any run out (a filter or a limit is set)."""
        return self.narrows or self.limit is not None

    @property
    def narrows(self) -> bool:
        """Whether a filter is set (``sort`` and ``limit`` aside)."""
        return bool(self.statuses or self.workflow is not None or self.since or self.until)

    def describe(self) -> str:
        """Return the filters as the options that set them (``--workflow 'nightly-*'``)."""
        parts = [f"--status {status}" for status in sorted(self.statuses)]
        if self.workflow is not None:
            parts.append(f"--workflow {self.workflow!r}")
        for option, moment in (("--since", self.since), ("--until", self.until)):
            if moment is not None:
                parts.append(
                    f"{option} {moment.astimezone(UTC).isoformat().replace('+00:00', 'Z')}"
                )
        return " ".join(parts)

    def matches(self, run: RunSummary) -> bool:
        """Whether ``run`` passes every filter (``sort`` and ``limit`` aside)."""
        if self.statuses and run.status not in self.statuses:
            return False
        if (
            self.workflow is not None
            and run.workflow_name
            and not fnmatch.fnmatchcase(run.workflow_name, self.workflow)
        ):
            return False
        created = summary_time(run.created) if (self.since or self.until) else None
        if created is not None:
            if self.since is not None and created < self.since:
                return False
            if self.until is not None and created >= self.until:
                return False
        return True

    def select(self, runs: Iterable[RunSummary]) -> list[RunSummary]:
        """Return the runs that match, ordered; ``limit`` is not applied (see :meth:`apply`)."""
        # (no filter: every run matches, unread)
        matching = [r for r in runs if self.matches(r)] if self.narrows else list(runs)
        field = self.sort.value
        if field == "workflow":
            field = "workflow_name"
        matching.sort(key=operator.attrgetter(field, "run_id"), reverse=self.descending)
        return matching

    @property
    def descending(self) -> bool:
        """Whether the runs are listed in descending order of :attr:`sort` (ties: run id)."""
        return self.sort.newest_first != self.reverse

    def apply(self, runs: Sequence[RunSummary]) -> tuple[list[RunSummary], int]:
        """Return the runs to show and how many matched before the limit cut them."""
        matching = self.select(runs)
        shown = matching if self.limit is None else matching[: self.limit]
        return shown, len(matching)
