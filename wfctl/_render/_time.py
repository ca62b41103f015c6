"""Times as people read them: local time zone, the date (with the year when not this year).

Stored times are ISO 8601 in UTC and ``--json`` prints them so; only what people read is
converted here. The local zone is the process's (``TZ`` is honoured, as ``time.localtime``
honours it). Month names are fixed English abbreviations, whatever the locale, so a table's
width does not depend on it.
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["LocalMillis", "local_and_relative", "local_time", "now", "relative_time", "zone_name"]

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
#: Units of a relative time, largest first.
_UNITS = (("y", 365 * 86400), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def now() -> datetime:
    """Return the current time in the local zone."""
    return datetime.now(UTC).astimezone()


def _parse(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:  # stored times are UTC; a hand-made record may omit the offset
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone()


def local_time(text: str, current: datetime, *, millis: bool = False) -> str:
    """Return a stored time as local ``Dec 01 14:03:07`` (``Dec 01 2025 14:03:07`` another year).

    Args:
        text: The stored ISO 8601 time.
        current: Now, in the local zone (decides whether the year is shown).
        millis: Add milliseconds (``14:03:07.215``).

    Returns:
        The local time, or ``text`` itself (``-`` if empty) when it is not a time.
    """
    moment = _parse(text)
    if moment is None:
        return text or "-"
    return _local(moment, current, millis=millis)


def _local(moment: datetime, current: datetime, *, millis: bool = False) -> str:
    day = f"{_MONTHS[moment.month - 1]} {moment.day:02d}"
    if moment.year != current.year:
        day += f" {moment.year}"
    clock = f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    if millis:
        clock += f".{moment.microsecond // 1000:03d}"
    return f"{day} {clock}"


class LocalMillis:
    """``local_time(text, current, millis=True)`` for many times, each second converted once.

    A long run's log shows thousands of times within each second: a time as wfctl stores it
    (``2026-12-01T07:33:18.374520+00:00``) takes its date and clock from the last conversion of
    the same second (zones change their offset on whole seconds) and its milliseconds from its
    own digits. Any other text is converted as :func:`local_time` does.
    """

    def __init__(self, current: datetime) -> None:
        self._current = current
        self._second = ""
        self._shown = ""

    def __call__(self, text: str) -> str:
        """Return ``text`` as :func:`local_time` with ``millis`` shows it."""
        if len(text) != 32 or text[19] != "." or text[26:] != "+00:00" or not text.isascii():
            return local_time(text, self._current, millis=True)
        fraction = text[20:26]
        if not fraction.isdigit():
            return local_time(text, self._current, millis=True)
        second = text[:19]
        if second != self._second:
            self._shown = local_time(second + "+00:00", self._current)
            self._second = second
        return f"{self._shown}.{fraction[:3]}"


def relative_time(text: str, current: datetime) -> str:
    """Return how long ago a stored time was (``3m ago``; ``in 5s`` if ahead of the clock)."""
    moment = _parse(text)
    if moment is None:
        return "-"
    return _relative(moment, current)


def local_and_relative(text: str, current: datetime) -> tuple[str, str]:
    """Return ``(local_time(text, current), relative_time(text, current))``, parsing once."""
    moment = _parse(text)
    if moment is None:
        return text or "-", "-"
    return _local(moment, current), _relative(moment, current)


def _relative(moment: datetime, current: datetime) -> str:
    seconds = (current - moment).total_seconds()
    span = abs(seconds)
    if span < 1:
        return "just now"
    unit, size = next((u, s) for u, s in _UNITS if span >= s)
    amount = f"{int(span // size)}{unit}"
    return f"{amount} ago" if seconds > 0 else f"in {amount}"


def zone_name(current: datetime) -> str:
    """Return the local zone's abbreviation (``UTC``, ``CET``, ``+03``)."""
    return current.strftime("%Z") or "local time"
