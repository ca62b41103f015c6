"""What ``export --format toml`` and ``show --toml`` write, ``tomllib`` reads back the same, on
every supported Python; and what they refuse does not depend on the interpreter's stack.

The rule is a depth wfctl counts (``TOML_MAX_DEPTH`` tables and arrays, the document itself the
first), not whatever depth the TOML writer reaches before a ``RecursionError``. These tests use
the private ``_toml_text`` that both commands call, to reach every document shape quickly; the
installed ``wfctl`` is run on the same rule in tests/cli/test_lone_surrogates.py.
"""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wfctl._errors import WfctlError
from wfctl._inspect._show import TOML_MAX_DEPTH, _toml_safe, _toml_text


def _nested(depth: int, kind: str) -> dict[str, Any]:
    """A document ``depth`` tables and arrays deep, itself the first."""
    value: Any = 1.5
    for level in range(depth - 1):
        value = [value] if kind == "array" or (kind == "mixed" and level % 2) else {"k": value}
    return {"doc": value} if depth > 1 else {"doc": 1}


def _write(document: dict[str, Any]) -> str:
    return _toml_text(document, "run r", "export it as JSON (--format json)")


@pytest.mark.parametrize("kind", ["array", "table", "mixed"])
def test_the_deepest_document_written_reads_back_and_one_level_more_is_refused(kind: str) -> None:
    deepest = _nested(TOML_MAX_DEPTH, kind)
    assert tomllib.loads(_write(deepest)) == deepest
    with pytest.raises(WfctlError, match=r"more than 100 levels of tables and arrays"):
        _write(_nested(TOML_MAX_DEPTH + 1, kind))


def test_a_document_far_deeper_than_the_stack_allows_is_refused_by_count() -> None:
    # 5,000 levels: deeper than any interpreter's recursion limit, refused all the same.
    with pytest.raises(WfctlError, match=r"nested deeper than wfctl can write as TOML"):
        _write(_nested(5_000, "array"))


_KEYS = st.text(max_size=8)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)  # lone surrogates included: refused, never written
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=40,
)


def _deepen(value: Any, extra: int) -> Any:
    for _ in range(extra):
        value = [value]
    return value


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, extra=st.integers(min_value=0, max_value=TOML_MAX_DEPTH + 5))
def test_whatever_is_written_reads_back_equal_and_only_the_stated_reasons_refuse(
    value: Any, extra: int
) -> None:
    document = {"values": _deepen(value, extra)}
    try:
        text = _write(document)
    except WfctlError as exc:
        reason = str(exc)
        assert (
            "nested deeper than wfctl can write as TOML" in reason
            or "a lone surrogate" in reason
            or "beyond 64" in reason
        ), reason
        return
    assert tomllib.loads(text) == _toml_safe(document)  # TOML has no null: see _toml_safe
