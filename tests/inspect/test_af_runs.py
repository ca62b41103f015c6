"""The rules that split an agent-framework workflow's checkpoints into runs, on shapes made by
hand for the cases the real engine writes rarely (tests/sources/test_af_runs.py reads what it
writes)."""

from __future__ import annotations

from wfctl._inspect._af_runs import CheckpointShape, split_runs


def functional(
    cid: str, parent: str | None, *steps: str, pending: bool = False, message: str = "1"
) -> CheckpointShape:
    return CheckpointShape(cid, parent, pending=pending, cache=frozenset(steps), original=message)


def graph(cid: str, parent: str | None, *, in_flight: bool = True) -> CheckpointShape:
    return CheckpointShape(cid, parent, in_flight=in_flight)


def split(*shapes: CheckpointShape) -> list[tuple[str, list[str], bool]]:
    return [
        (run.run_id, [s.checkpoint_id for s in run.members], run.ended)
        for run in split_runs(shapes)
    ]


def test_a_fork_s_roots_are_one_run_and_its_last_save_ends_it() -> None:
    assert split(
        functional("a", None, "s0"),
        functional("b", None, "s0", "s1"),  # concurrent steps: roots of one run
        functional("c", "a", "s0", "s1"),  # the last save, parented to a stale root
    ) == [("a", ["a", "b", "c"], True)]


def test_a_run_after_one_that_ended_is_a_new_run() -> None:
    assert split(
        functional("a", None, "s0"),
        functional("b", "a", "s0"),  # repeats its parent: the workflow returned
        functional("c", None, "s0"),  # the same first step, same input: a new run still
    ) == [("a", ["a", "b"], True), ("c", ["c"], False)]


def test_answers_alone_carry_a_paused_run_on() -> None:
    assert split(
        functional("a", None, "s0"),
        functional("b", "a", "s0", pending=True),
        functional("c", None, "s0"),  # run(responses=...): a new root, the same run, its end
        functional("d", None, "s0"),  # after that end: a new run
    ) == [("a", ["a", "b", "c"], True), ("d", ["d"], False)]


def test_another_input_or_fewer_steps_is_another_run() -> None:
    assert split(
        functional("a", None, "s0", "s1"),
        functional("b", None, "s0", "s1", "s2", message="2"),  # another input
        functional("c", None, "s0"),  # holds less than the save before it
    ) == [("a", ["a"], False), ("b", ["b"], False), ("c", ["c"], False)]


def test_a_crash_then_a_retry_of_the_same_first_step_read_as_one_run() -> None:
    """What the format cannot tell apart (decision 0173): a run that stopped after its first
    step, and a second run of the same input that did that step again."""
    assert split(functional("a", None, "s0"), functional("b", None, "s0")) == [
        ("a", ["a", "b"], False)
    ]


def test_graph_runs_are_chains_and_end_with_nothing_in_flight() -> None:
    assert split(
        graph("a", None),
        graph("b", "a"),
        graph("c", "b", in_flight=False),
        graph("d", None),  # a graph workflow's root is always a run of its own
        graph("e", "d"),
    ) == [("a", ["a", "b", "c"], True), ("d", ["d", "e"], False)]
