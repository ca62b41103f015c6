"""Times as people read them: one function, :func:`human_time`, formats every one.

Stored times are ISO 8601 in UTC and ``--json`` prints them so; only what people read is
converted here, in the format the invocation chose (:func:`wfctl._config.time_format`:
``--time-format``, ``WFCTL_TIME_FORMAT``, ``time_format`` in ``wfctl.toml``):

- ``local`` (the default): ``Dec 01 14:03:07`` in the local zone (``Dec 01 2025 14:03:07``
  another year), the zone named once (a column's header, after a single time);
- ``relative``: how long ago (``3m ago``; ``in 5s`` if ahead of the clock);
- ``iso``: ISO 8601 in the local zone, with its offset (``2026-12-01T14:03:07+01:00``).

The local zone is the process's (``TZ`` is honoured, as ``time.localtime`` honours it). Month
names are fixed English abbreviations, whatever the locale, so a table's width does not depend
on it. A test fails if another module of ``wfctl/_render`` formats a time itself.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from wfctl._config import time_format

__all__ = [
    "TimelineTimes",
    "age",
    "human_time",
    "now",
    "time_and_age",
    "time_header",
    "time_with_age",
    "times_in",
]

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
#: Units of a relative time, largest first.
_UNITS = (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
#: A UTC time as wfctl writes it into its own text, after the word that introduces it: a lock's
#: holder (``since``), a waiting note (``until``, ``at``), a lineage problem (``at``). A time
#: elsewhere in such text (inside a path, a key) is left as it is written.
_UTC_STAMP = re.compile(r"\b(at|since|until) (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?\+00:00)")

#: A time as it is stored (ISO 8601 text) or recorded (epoch seconds).
Moment = str | float | datetime


def now() -> datetime:
    """Return the current time in the local zone."""
    return datetime.now(UTC).astimezone()


def _parse(moment: Moment) -> datetime | None:
    if isinstance(moment, datetime):
        if moment.tzinfo is not None:  # shown in its own zone (this module's are local)
            return moment
        parsed = moment
    elif isinstance(moment, float | int):
        try:
            return datetime.fromtimestamp(moment, UTC).astimezone()
        except (OverflowError, OSError, ValueError):
            return None
    else:
        try:
            parsed = datetime.fromisoformat(moment)
        except (TypeError, ValueError):
            return None
    if parsed.tzinfo is None:  # stored times are UTC; a hand-made record may omit the offset
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone()


def human_time(
    moment: Moment, current: datetime, *, millis: bool = False, form: str | None = None
) -> str:
    """Return a time as people read it, in the chosen format (the one place that says how).

    Args:
        moment: A stored ISO 8601 time, epoch seconds, or a datetime.
        current: Now, in the local zone (decides whether the year is shown; what ``ago`` is
            counted from).
        millis: Add milliseconds (``14:03:07.215``; not to a relative time).
        form: ``local``, ``relative`` or ``iso``; by default the invocation's
            (:func:`wfctl._config.time_format`).

    Returns:
        The time, or ``moment`` itself (``-`` if empty) when it is not a time.
    """
    parsed = _parse(moment)
    if parsed is None:
        return str(moment) if moment not in ("", None) else "-"
    form = form or time_format()
    if form == "relative":
        seconds = (current - parsed).total_seconds()
        span = abs(seconds)
        if span < 1:
            return "just now"
        unit, size = next((u, s) for u, s in _UNITS if span >= s)
        amount = f"{int(span // size)}{unit}"
        return f"{amount} ago" if seconds > 0 else f"in {amount}"
    if form == "iso":
        return parsed.isoformat(timespec="milliseconds" if millis else "seconds")
    day = f"{_MONTHS[parsed.month - 1]} {parsed.day:02d}"
    if parsed.year != current.year:
        day += f" {parsed.year}"
    clock = f"{parsed.hour:02d}:{parsed.minute:02d}:{parsed.second:02d}"
    if millis:
        clock += f".{parsed.microsecond // 1000:03d}"
    return f"{day} {clock}"


def age(moment: Moment, current: datetime) -> str:
    """Return how long ago ``moment`` was (``3m ago``), whatever the chosen format; ``-`` if
    it is not a time."""
    parsed = _parse(moment)
    return "-" if parsed is None else human_time(parsed, current, form="relative")


def time_and_age(moment: Moment, current: datetime) -> tuple[str, str]:
    """Return ``(human_time(moment, current), age(moment, current))``, parsing once (a table's
    two cells of a row)."""
    parsed = _parse(moment)
    if parsed is None:
        return human_time(moment, current), "-"
    return human_time(parsed, current), human_time(parsed, current, form="relative")


def _zone(current: datetime) -> str:
    """The local zone's abbreviation (``UTC``, ``CET``, ``+03``)."""
    return current.tzname() or "local time"


def time_header(name: str, current: datetime) -> str:
    """Return a time column's header: ``updated (UTC)`` for local times (the zone named once),
    the bare name for the formats that need none."""
    return f"{name} ({_zone(current)})" if time_format() == "local" else name


def time_with_age(moment: Moment, current: datetime, *, millis: bool = False) -> str:
    """Return a single time with what it needs to be read alone: ``Dec 01 14:03:07 UTC (3m
    ago)`` (local), ``2026-12-01T14:03:07+00:00 (3m ago)`` (iso), ``3m ago`` (relative)."""
    form = time_format()
    parsed = _parse(moment)
    if form == "relative" or parsed is None:
        return human_time(moment, current, millis=millis)
    zone = f" {_zone(current)}" if form == "local" else ""
    return f"{human_time(parsed, current, millis=millis)}{zone} ({age(parsed, current)})"


def times_in(text: str, current: datetime) -> str:
    """Return wfctl's own text (a lock's holder, a waiting note, a lineage problem) with each
    UTC time it wrote after ``at``, ``since`` or ``until`` (``since 2026-12-01T14:03:07+00:00``)
    shown as :func:`human_time` shows one."""
    if "+00:00" not in text:
        return text
    return _UTC_STAMP.sub(
        lambda found: f"{found[1]} {human_time(found[2], current, millis='.' in found[2])}", text
    )


class TimelineTimes:
    """``human_time(text, current, millis=True)`` for many times, each second converted once.

    A long run's log shows thousands of times within each second: in the local format, a time
    as wfctl stores it (``2026-12-01T07:33:18.374520+00:00``) takes its date and clock from the
    last conversion of the same second (zones change their offset on whole seconds) and its
    milliseconds from its own digits. Any other text, or another format, is converted by
    :func:`human_time`.
    """

    def __init__(self, current: datetime) -> None:
        self._current = current
        self._local = time_format() == "local"
        self._second = ""
        self._shown = ""

    def __call__(self, text: str) -> str:
        """Return ``text`` as :func:`human_time` with ``millis`` shows it."""
        if (
            not self._local
            or len(text) != 32
            or text[19] != "."
            or text[26:] != "+00:00"
            or not text.isascii()
        ):
            return human_time(text, self._current, millis=True)
        fraction = text[20:26]
        if not fraction.isdigit():
            return human_time(text, self._current, millis=True)
        second = text[:19]
        if second != self._second:
            self._shown = human_time(second + "+00:00", self._current)
            self._second = second
        return f"{self._shown}.{fraction[:3]}"
