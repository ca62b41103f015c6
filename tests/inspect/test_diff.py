"""How ``diff_steps`` pairs a replay's calls with the source run's records (``wfctl._inspect._diff``).

Tests import the internal module directly: the pairing rules are its whole job, and are easier
to pin down with hand-made records than through a run.
"""

from __future__ import annotations

from wfctl._inspect._diff import ReplayCalls, diff_outputs, preview
from wfctl._inspect._pairing import diff_steps
from wfctl._records._codec import encode
from wfctl._records._recorded import StepRecord


def _rec(key: str, digest: str | None, result: object, scope: str = "") -> StepRecord:
    name = key.rsplit("/", 1)[-1].split("#")[0].split("@")[0]
    explicit = key.split("@", 1)[1] if "@" in key else None
    return StepRecord(key, scope, name, digest, encode(result), explicit)


def _table(source: list[StepRecord], calls: ReplayCalls) -> list[tuple[str, str, str | None]]:
    return [(r.key, r.status, r.source_key) for r in diff_steps(source, calls)]


def test_every_status_in_source_order_then_replay_order() -> None:
    source = [
        _rec("a#0", "d1", 1),
        _rec("b#0", "d2", 2),
        _rec("c#0", "d3", 3),
        _rec("d#0", "d4", 4),
    ]
    calls = ReplayCalls(
        order=["a#0", "e#0", "b#0", "c#0", "f#0"],
        served={"a#0": "a#0"},
        records={
            "b#0": _rec("b#0", "d2", 2),
            "c#0": _rec("c#0", "d3", 30),
            "e#0": _rec("e#0", "d5", 5),
        },
        failed={"f#0": "ReplayDivergenceError: replay diverged at f#0"},
    )
    assert _table(source, calls) == [
        ("a#0", "cached", "a#0"),
        ("b#0", "same", "b#0"),
        ("c#0", "changed", "c#0"),
        ("d#0", "not reached", "d#0"),
        ("e#0", "new", None),
        ("f#0", "failed", None),
    ]
    failed = diff_steps(source, calls)[-1]
    assert failed.replay_preview == "ReplayDivergenceError: replay diverged at f#0"


def test_calls_numbered_in_another_order_pair_by_digest() -> None:
    source = [_rec("fetch#0", "d-x", "X"), _rec("fetch#1", "d-y", "Y")]
    calls = ReplayCalls(
        order=["fetch#0", "fetch#1"],
        records={"fetch#0": _rec("fetch#0", "d-y", "Y"), "fetch#1": _rec("fetch#1", "d-x", "X")},
    )
    assert _table(source, calls) == [("fetch#1", "same", "fetch#0"), ("fetch#0", "same", "fetch#1")]


def test_a_cached_call_pairs_with_the_record_that_served_it() -> None:
    source = [_rec("fetch#0", "d-x", "X"), _rec("fetch#1", "d-y", "Y")]
    calls = ReplayCalls(
        order=["fetch#0", "fetch#1"],
        served={"fetch#0": "fetch#1"},
        records={"fetch#1": _rec("fetch#1", "d-x", "X")},
    )
    rows = diff_steps(source, calls)
    assert [(r.key, r.status, r.source_key) for r in rows] == [
        ("fetch#1", "same", "fetch#0"),
        ("fetch#0", "cached", "fetch#1"),
    ]
    assert rows[1].replay_digest == "d-y" and rows[1].replay_preview == '"Y"'


def test_engine_reported_changes_and_a_later_record_of_a_key_win() -> None:
    # A source run restored with allow_changed holds its origin's record and its own for a key.
    source = [_rec("step#0", "old", 1), _rec("step#0", "new", 2)]
    calls = ReplayCalls(
        order=["step#0"], records={"step#0": _rec("step#0", "new", 2)}, changed={"step#0"}
    )
    [row] = diff_steps(source, calls)
    assert (row.status, row.source_digest, row.source_preview) == ("changed", "new", "2")


def test_a_call_that_returned_nothing_is_failed_even_without_an_error_event() -> None:
    [row] = diff_steps([_rec("wait#0", "d", 1)], ReplayCalls(order=["wait#0"]))
    assert row.status == "failed" and row.source_key == "wait#0"
    assert row.replay_preview is not None and "stopped before it returned" in row.replay_preview


def test_previews_are_short_and_diffs_empty_when_equal() -> None:
    assert preview(encode("x" * 100)) == '"' + "x" * 56 + "..."
    assert len(preview(encode(list(range(100))))) == 60
    assert preview({"$t": "nope", "v": 1}).startswith('{"$t": "nope"')  # never raises
    assert diff_outputs([1, {"a": b"x"}], [1, {"a": b"x"}]) == ""
    assert diff_outputs(None, [1]).startswith("--- source\n+++ replay\n")
