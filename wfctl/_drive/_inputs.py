"""Parsing what a user hands wfctl as data: ``--input``, ``--input-file``, answers and files.

Every value is held to the same limits, so hostile or broken input is one clear refusal
(:class:`~wfctl.WfctlError`, exit 2) instead of an internal error, a hang or a silently
different value:

- at most :data:`MAX_INPUT_BYTES` (16 MiB) of text; a file is read only that far, so
  ``/dev/zero`` or an endless pipe is refused instead of read forever;
- nesting at most :data:`MAX_DEPTH` (200) arrays/tables deep;
- integers of at most ``sys.get_int_max_str_digits()`` (4300) digits;
- JSON is strict: ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON, a number too large for
  a float is refused rather than read as infinity, and a key repeated in one object is refused
  rather than the last one silently winning. TOML keeps its own ``nan`` and ``inf`` (they are
  TOML), but an overflowing float is refused as in JSON.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Final

from wfctl._errors import WfctlError

__all__ = ["MAX_DEPTH", "MAX_INPUT_BYTES", "NotJsonError", "load_json", "load_toml", "read_text"]

#: The largest input, answers file or answer wfctl reads, in bytes.
MAX_INPUT_BYTES: Final = 16 * 1024 * 1024
#: How deeply arrays and objects (tables) may nest in an input or answer.
MAX_DEPTH: Final = 200


class NotJsonError(WfctlError):
    """Raised when text is not strict JSON (a syntax error, ``NaN``, ``Infinity``).

    Unlike the other refusals of this module (too large, too deep, too long an integer), it
    lets ``--response KEY=VALUE`` fall back to keeping the value as text.
    """


class _Refused(ValueError):
    """Internal: raised from a parser hook; becomes a WfctlError naming the input."""


class _NotStrict(ValueError):
    """Internal: a JSON constant (``NaN``, ``Infinity``) strict JSON does not have."""


def read_text(path: Path, what: str) -> str:
    """Return the UTF-8 text of ``path``, reading at most :data:`MAX_INPUT_BYTES` + 1 bytes.

    Raises:
        WfctlError: the file cannot be read, is not UTF-8, or is larger than the limit.
    """
    try:
        with path.open("rb") as file:
            data = file.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise WfctlError(f"cannot read {what}: {exc}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise WfctlError(f"{what} is larger than the {_limit()} limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WfctlError(f"cannot read {what}: not UTF-8 text ({exc})") from None


def load_json(text: str, what: str) -> Any:
    """Parse ``text`` as strict JSON within the limits (see the module docstring).

    Raises:
        NotJsonError: ``text`` is not strict JSON.
        WfctlError: it is JSON, but too large, too deep, or holds a number out of range or a
            repeated key.
    """
    _check_size(text, what)
    try:
        value = json.loads(
            text,
            parse_constant=_no_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
            object_pairs_hook=_unique_keys,
        )
    except (json.JSONDecodeError, _NotStrict) as exc:
        raise NotJsonError(f"{what} is not valid JSON: {exc}") from None
    except _Refused as exc:
        raise WfctlError(f"{what}: {exc}") from None
    except RecursionError:
        raise _too_deep(what) from None
    return _check_depth(value, what)


def load_toml(text: str, what: str) -> Any:
    """Parse ``text`` as TOML within the limits (see the module docstring).

    Raises:
        WfctlError: it is not valid TOML, or too large, too deep, or holds a number out of
            range.
    """
    import tomllib  # only for TOML input (start-up time)

    _check_size(text, what)
    try:
        value = tomllib.loads(text, parse_float=_toml_float)
    except tomllib.TOMLDecodeError as exc:
        raise WfctlError(f"{what} is not valid TOML: {exc}") from None
    except _Refused as exc:
        raise WfctlError(f"{what}: {exc}") from None
    except RecursionError:
        raise _too_deep(what) from None
    except ValueError as exc:  # tomllib's int() of too many digits
        if "integer string conversion" not in str(exc):
            raise
        raise WfctlError(f"{what}: {_long_int()}") from None
    return _check_depth(value, what)


def _limit() -> str:
    return f"{MAX_INPUT_BYTES // (1024 * 1024)} MiB"


def _check_size(text: str, what: str) -> None:
    # A character is at least one byte of UTF-8: only a long text needs encoding to be sure.
    if len(text) > MAX_INPUT_BYTES // 4 and len(text.encode("utf-8")) > MAX_INPUT_BYTES:
        raise WfctlError(f"{what} is larger than the {_limit()} limit")


def _too_deep(what: str) -> WfctlError:
    return WfctlError(f"{what} nests more than {MAX_DEPTH} levels deep (the limit)")


def _long_int() -> str:
    return (
        f"an integer has more than {sys.get_int_max_str_digits()} digits (the limit); "
        "pass it as a string"
    )


def _no_constant(name: str) -> Any:
    raise _NotStrict(f"{name} is not JSON (strict JSON has no NaN or Infinity)")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Refused(f"the number {text[:40]} is too large for a float")
    return value


def _toml_float(text: str) -> float:
    value = float(text)
    if math.isinf(value) and "inf" not in text:  # TOML's own inf is fine; an overflow is not
        raise _Refused(f"the number {text[:40]} is too large for a float")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > sys.get_int_max_str_digits():
        raise _Refused(_long_int())
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for key, value in pairs:
        if key in table:
            raise _Refused(f"the key {key!r} appears twice in one object")
        table[key] = value
    return table


def _check_depth(value: Any, what: str) -> Any:
    """Return ``value`` if its arrays and objects nest at most :data:`MAX_DEPTH` deep."""
    level: list[Any] = [value]
    for _ in range(MAX_DEPTH):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return value
    if any(isinstance(item, dict | list) for item in level):
        raise _too_deep(what)
    return value
