"""What a prune keeps, decided from facts of rows alone (the rules of ``_storage/_langgraph/_keep``,
imported as the module under test)."""

from __future__ import annotations

import pytest

from wfctl._storage._langgraph._keep import Facts, UnprovenThreadError, kept_checkpoints


def _facts(parent: str | None, seeds: str = "", delta: str = "", root: str | None = None) -> Facts:
    return Facts(parent, frozenset(seeds.split()), frozenset(delta.split()), root, 4)


def test_a_namespace_walks_only_its_own_delta_channels() -> None:
    root = {"1": _facts(None, "items", "items"), "2": _facts("1", "", "items")}
    # a checkpointer=True subgraph (no ":") of three checkpoints, with no DeltaChannel
    sub = {"a": _facts(None, "x"), "b": _facts("a", "x"), "c": _facts("b", "x")}
    decision = kept_checkpoints({"": root, "sub": sub})
    assert decision.kept == {"": {"1", "2"}, "sub": {"c"}}
    assert decision.orphans == {"": set(), "sub": {"c"}}


def test_a_delta_walk_stops_at_the_snapshot_and_orphans_it() -> None:
    rows = {
        "1": _facts(None, "", "items"),
        "2": _facts("1", "items"),
        "3": _facts("2", "", "items"),
        "4": _facts("3", "", "items"),
    }
    decision = kept_checkpoints({"": rows})
    assert decision.kept == {"": {"2", "3", "4"}}
    assert decision.orphans == {"": {"2"}}


def test_an_ended_subgraph_call_goes_and_one_the_head_is_in_stays() -> None:
    root = {"1": _facts(None), "2": _facts("1")}
    ended = {"e": _facts(None, root="1")}
    paused = {"p1": _facts(None, root="2"), "p2": _facts("p1", root="2")}
    decision = kept_checkpoints({"": root, "sub:ended": ended, "sub:paused": paused})
    assert decision.kept == {"": {"2"}, "sub:ended": set(), "sub:paused": {"p2"}}


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        ({"2": _facts("1", "", "items")}, "which is missing"),
        ({"1": _facts("2", "", "items"), "2": _facts("1", "", "items")}, "loop"),
    ],
)
def test_an_unproven_chain_is_refused(rows: dict[str, Facts], words: str) -> None:
    with pytest.raises(UnprovenThreadError, match=words):
        kept_checkpoints({"": rows})
