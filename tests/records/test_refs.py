"""A step argument equal to an earlier step's result is stored as a reference to it, and every
reader gives the value back; a reference to what is not there is corruption."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.storage.helpers import ckpt
from wfctl._errors import CheckpointCorruptError
from wfctl._records import _refs
from wfctl._records._checkpoint import Checkpoint, Kind
from wfctl._records._packing import pack_against
from wfctl._records._refs import REF_FROM, WINDOW, Referrer, Resolver, holds_refs, resolved

LONG = "a value long enough to be referred to " * 8


def _step(seq: int, key: str, args: list[Any], result: Any) -> dict[str, Any]:
    return {"steps": [{"key": key, "digest": "0" * 16, "args": args, "result": result}]}


def _written(referrer: Referrer, seq: int, data: dict[str, Any]) -> Checkpoint:
    referrer.refer(data, seq)
    checkpoint = ckpt("r", seq, kind=Kind.STEP, data=data)
    referrer.note(checkpoint)  # durable: later records may refer to it
    return checkpoint


def test_an_argument_equal_to_an_earlier_result_is_stored_as_a_reference() -> None:
    referrer = Referrer()
    first = _written(referrer, 1, _step(1, "a#0", [1], LONG))
    second = _written(referrer, 2, _step(2, "b#0", [LONG, 2], LONG + "!"))
    third = _written(referrer, 3, _step(3, "c#0", [LONG + "!"], {"k": LONG}))
    assert second.data["steps"][0]["args"] == [{"$t": "ref", "v": [1, "a#0"]}, 2]
    assert third.data["steps"][0]["args"] == [{"$t": "ref", "v": [2, "b#0"]}]
    assert holds_refs(second) and not holds_refs(first)
    back = list(resolved([ckpt("r", 0), first, second, third], "t"))
    assert back[2].data["steps"][0]["args"] == [LONG, 2]
    assert back[3].data["steps"][0]["args"] == [LONG + "!"]
    assert back[1] is first  # nothing to resolve: the record itself


def test_a_keyword_argument_and_a_json_value_are_referred_to_as_well() -> None:
    value = {"rows": list(range(100))}
    referrer = Referrer()
    first = _written(referrer, 1, _step(1, "a#0", [], value))
    data = _step(2, "b#0", [], 0)
    data["steps"][0]["kwargs"] = {"table": dict(value), "n": 3}
    second = _written(referrer, 2, data)
    assert second.data["steps"][0]["kwargs"] == {"table": {"$t": "ref", "v": [1, "a#0"]}, "n": 3}
    back = list(resolved([first, second], "t"))
    assert back[1].data["steps"][0]["kwargs"] == {"table": value, "n": 3}


def test_a_short_value_is_stored_as_it_is() -> None:
    short = "x" * (REF_FROM - 1)
    referrer = Referrer()
    _written(referrer, 1, _step(1, "a#0", [], short))
    second = _written(referrer, 2, _step(2, "b#0", [short], 0))
    assert second.data["steps"][0]["args"] == [short]


def test_a_reference_reaches_back_at_most_the_window() -> None:
    referrer = Referrer()
    _written(referrer, 1, _step(1, "a#0", [], LONG))
    for seq in range(2, WINDOW):
        _written(referrer, seq, _step(seq, f"f#{seq}", [seq], seq))
    at_edge = _written(referrer, WINDOW, _step(WINDOW, "g#0", [LONG], 0))
    assert at_edge.data["steps"][0]["args"] == [{"$t": "ref", "v": [1, "a#0"]}]
    past = _written(referrer, WINDOW + 1, _step(WINDOW + 1, "h#0", [LONG], 0))
    assert past.data["steps"][0]["args"] == [LONG]  # the result is out of the window


def test_the_writer_holds_at_most_held_max_of_results_the_newest_record_aside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A pipeline of big values: the writer held 16 of them (20 MB texts: a run's peak RSS
    # twice what it was before references). The oldest go first; the newest is always held.
    texts = [LONG + str(seq) for seq in range(1, 6)]
    sizes = [len(text) for text in texts]
    monkeypatch.setattr(_refs, "HELD_MAX", sum(sizes[:3]))  # three of them
    referrer = Referrer()
    _written(referrer, 1, _step(1, "a#1", [], texts[0]))
    for seq in range(2, 6):
        record = _written(referrer, seq, _step(seq, f"a#{seq}", [texts[seq - 2]], texts[seq - 1]))
        # a pipeline still refers to the step before: its result is always held
        assert record.data["steps"][0]["args"] == [{"$t": "ref", "v": [seq - 1, f"a#{seq - 1}"]}]
    assert referrer._held == sum(sizes[2:]) <= _refs.HELD_MAX
    late = _written(referrer, 6, _step(6, "b#0", [texts[1], texts[2]], 0))
    assert late.data["steps"][0]["args"] == [texts[1], {"$t": "ref", "v": [3, "a#3"]}]


def test_a_result_bigger_than_held_max_is_held_until_a_newer_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_refs, "HELD_MAX", 1024)
    big = {"rows": ["x" * 64] * 1000}
    referrer = Referrer()
    _written(referrer, 1, _step(1, "a#0", [], big))
    _written(referrer, 2, _step(2, "s#0", [], 0))  # a small step between: the big one stays
    second = _written(referrer, 3, _step(3, "b#0", [dict(big)], big | {"n": 1}))
    third = _written(referrer, 4, _step(4, "c#0", [dict(big)], 0))
    assert second.data["steps"][0]["args"] == [{"$t": "ref", "v": [1, "a#0"]}]
    assert third.data["steps"][0]["args"] == [big]  # let go when record 3 came
    assert referrer._held == len(orjson.dumps(big | {"n": 1}))


def test_the_writer_never_changes_the_callers_argument_list() -> None:
    referrer = Referrer()
    _written(referrer, 1, _step(1, "a#0", [], LONG))
    args = [LONG]
    data = _step(2, "b#0", args, 0)
    referrer.refer(data, 2)
    assert args == [LONG] and data["steps"][0]["args"] is not args


def test_a_result_refers_only_once_its_record_is_noted_durable() -> None:
    referrer = Referrer()
    data = _step(1, "a#0", [], LONG)
    referrer.refer(data, 1)  # its save failed: never noted
    second = _written(referrer, 1, _step(1, "b#0", [LONG], 0))
    assert second.data["steps"][0]["args"] == [LONG]


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ([1, "nope#0"], "step 'nope#0' in checkpoint seq 1"),
        ([5, "a#0"], "step 'a#0' in checkpoint seq 5"),  # itself: only records before
        ([0, "a#0"], "step 'a#0' in checkpoint seq 0"),  # a root holds no step
    ],
)
def test_a_reference_to_what_is_not_there_is_corruption(target: list[Any], why: str) -> None:
    first = ckpt("r", 1, kind=Kind.STEP, data=_step(1, "a#0", [], LONG))
    bad = ckpt("r", 5, kind=Kind.STEP, data=_step(5, "b#0", [{"$t": "ref", "v": target}], 0))
    with pytest.raises(CheckpointCorruptError) as caught:
        list(resolved([ckpt("r", 0), first, bad], "j"))
    assert why in caught.value.reason and "r.5" in str(caught.value)


def test_a_reference_out_of_the_window_is_corruption_even_if_the_record_was_read() -> None:
    records = [ckpt("r", 1, kind=Kind.STEP, data=_step(1, "a#0", [], LONG))]
    records += [
        ckpt("r", seq, kind=Kind.STEP, data=_step(seq, f"f#{seq}", [], seq))
        for seq in range(2, WINDOW + 2)
    ]
    late = WINDOW + 1
    records[-1] = ckpt(
        "r", late, kind=Kind.STEP, data=_step(late, "z#0", [{"$t": "ref", "v": [1, "a#0"]}], 0)
    )
    with pytest.raises(CheckpointCorruptError):
        list(resolved(records, "j"))


def test_a_reference_to_a_record_that_was_not_read_says_so() -> None:
    # Record 2 failed (it was never given to the reader): what refers to it says it could not
    # be read, which a reader naming every bad record does not blame on it (resolve_or_keep);
    # a reference to a record that was read but holds no such step is the record's own fault.
    resolver = Resolver("j")
    for seq in (0, 1, 3):
        resolver.resolve(ckpt("r", seq, kind=Kind.STEP, data=_step(seq, f"a#{seq}", [], LONG)))
    lost = ckpt("r", 4, kind=Kind.STEP, data=_step(4, "b#0", [{"$t": "ref", "v": [2, "a#2"]}], 1))
    with pytest.raises(_refs.UnreadableSourceError, match="seq 2, which could not be read"):
        resolver.resolve(lost)
    wrong = ckpt("r", 5, kind=Kind.STEP, data=_step(5, "b#1", [{"$t": "ref", "v": [3, "x#0"]}], 1))
    with pytest.raises(CheckpointCorruptError) as caught:
        resolver.resolve(wrong)
    assert not isinstance(caught.value, _refs.UnreadableSourceError)


def test_a_partial_reader_keeps_a_reference_to_a_record_it_never_saw() -> None:
    ref = {"$t": "ref", "v": [1, "a#0"]}
    later = ckpt("r", 3, kind=Kind.STEP, data=_step(3, "b#0", [ref], 0))
    shown = Resolver("j", partial=True).resolve(later)
    assert shown.data["steps"][0]["args"] == [ref]
    with pytest.raises(CheckpointCorruptError):  # a whole reader refuses it
        Resolver("j").resolve(later)


def test_a_reader_holds_the_results_of_the_window_only() -> None:
    resolver = Resolver("j")
    for seq in range(1, 10 * WINDOW):
        resolver.resolve(ckpt("r", seq, kind=Kind.STEP, data=_step(seq, "a#0", [], LONG)))
    assert len(resolver._results) == WINDOW


# -- a text result stored as its change from the texts its call took (format version 4) ------

TEXT = "A long text, handed from one step to the next and changed a little by each. " * 40


def _edited(text: str, n: int) -> str:
    return text.replace("changed a little", f"changed by step {n}", 1)


def _pipeline(referrer: Referrer, steps: int) -> list[Checkpoint]:
    """A pipeline of ``steps`` records (seq 1 on), each taking the text before it."""
    records, text = [], TEXT
    for seq in range(1, steps + 1):
        result = _edited(text, seq)
        records.append(_written(referrer, seq, _step(seq, f"e#{seq}", [text], result)))
        text = result
    return records


def test_a_text_result_is_stored_as_its_change_and_read_back_exactly() -> None:
    records = _pipeline(Referrer(deltas=True), 4)
    stored = [record.data["steps"][0]["result"] for record in records]
    assert stored[0] == _edited(TEXT, 1)  # its argument is no earlier result: stored whole
    for seq, change in enumerate(stored[1:], 2):
        assert change["$t"] == "zd" and change["v"] == [[seq - 1, f"e#{seq - 1}"]]
        assert len(orjson.dumps(change)) < 300 < len(TEXT)
    assert all(holds_refs(record) for record in records[1:])
    text = TEXT
    for seq, record in enumerate(resolved([ckpt("r", 0), *records], "t")):
        if seq:
            entry = record.data["steps"][0]
            assert entry["args"] == [text] and entry["result"] == _edited(text, seq)
            text = entry["result"]


def test_without_changes_a_result_is_stored_whole() -> None:
    # A run of format version 3 (and a short or non-text result in any version).
    records = _pipeline(Referrer(), 3)
    assert all(type(record.data["steps"][0]["result"]) is str for record in records)


def test_what_a_change_needs_lies_within_the_window_before_it() -> None:
    records = _pipeline(Referrer(deltas=True), 3 * WINDOW)
    whole = [r.seq for r in records if type(r.data["steps"][0]["result"]) is str]
    assert whole == [1, WINDOW + 1, 2 * WINDOW + 1]
    # Each record reads from the WINDOW lines before it, as show does.
    for at in range(WINDOW + 2, 3 * WINDOW):
        resolver = Resolver("j")
        for before in records[at - WINDOW - 1 : at - 1]:
            resolver.hold(before)
        entry = resolver.resolve(records[at - 1]).data["steps"][0]
        assert entry["result"] == _edited(entry["args"][0], at)


def test_a_result_is_referred_to_only_if_what_its_record_needs_lies_within_the_window() -> None:
    # A pipeline whose every fourth step also takes the text of six edits before: that text
    # may be stored as its change from records up to seven before it, out of the reach of a
    # reader of the later step and the WINDOW lines before it. It is stored whole then.
    referrer, records, given = Referrer(deltas=True), [], []
    texts = [TEXT]
    for n in range(1, 4 * WINDOW):
        calls = [(f"e#{n}", [texts[-1]], _edited(texts[-1], n))]
        texts.append(calls[0][2])
        if n % 4 == 3 and len(texts) > 7:
            calls.append((f"c#{n}", [texts[-7], texts[-1]], 0))
        for key, args, result in calls:
            seq = len(records) + 1
            records.append(_written(referrer, seq, _step(seq, key, args, result)))
            given.append(args)
    stored = [arg for r in records for arg in r.data["steps"][0]["args"] if type(arg) is str]
    assert any(len(arg) > 1000 for arg in stored)  # some text was not referred to
    for at, record in enumerate(records, 1):  # each read from the WINDOW lines before it
        resolver = Resolver("j")
        for before in records[max(0, at - 1 - WINDOW) : at - 1]:
            resolver.hold(before)
        assert resolver.resolve(record).data["steps"][0]["args"] == given[at - 1]


def test_records_held_after_later_ones_each_read_from_the_window_before_them() -> None:
    # A page of log resolves its first records before it reads (holds) the records before
    # the page, once one refers back: each held record still finds what it was made from.
    text = TEXT
    changed = _edited(TEXT, 1)
    packed = pack_against(changed.encode(), text.encode())
    assert packed is not None
    change = {"$t": "zd", "v": [[92, "a#92"]], "z": packed.decode()}
    resolver = Resolver("j")
    for seq in (100, 101):
        resolver.resolve(ckpt("r", seq, kind=Kind.STEP, data=_step(seq, f"p#{seq}", [], 1)))
    for seq in range(92, 100):
        result = text if seq == 92 else change if seq == 99 else LONG
        resolver.hold(ckpt("r", seq, kind=Kind.STEP, data=_step(seq, f"a#{seq}", [], result)))
    later = _step(102, "b#0", [{"$t": "ref", "v": [99, "a#99"]}], 0)
    shown = resolver.resolve(ckpt("r", 102, kind=Kind.STEP, data=later))
    assert shown.data["steps"][0]["args"] == [changed]


@pytest.mark.parametrize(("steps", "referred"), [(5, True), (8, False)])
def test_a_resumed_writer_refers_to_what_a_reader_held_as_the_writer_before_it(
    steps: int, referred: bool
) -> None:
    # One writer's records read back (a resume): a second writer given what the reader held
    # (each record's seq, base and results) writes the next step as the first one would. After
    # 8 records, the last one's base (record 1) is out of the reach of record 10: not referred.
    first = Referrer(deltas=True)
    records = _pipeline(first, steps)
    resolver = Resolver("j")
    read = [resolver.resolve(record) for record in [ckpt("r", 0), *records]]
    held = resolver.held_records()
    assert [(seq, base) for seq, base, _ in held] == [(1, 1)] + [
        (s, 1) for s in range(2, steps + 1)
    ]
    second = Referrer(deltas=True)
    second.hold_read(held)
    text = read[-1].data["steps"][0]["result"]
    seq = steps + 2  # after the resume's own record
    written = []
    for writer in (first, second):
        data = _step(seq, f"e#{seq}", [text], _edited(text, seq))
        writer.refer(data, seq)
        written.append(data)
    assert written[0] == written[1]
    assert (
        written[1]["steps"][0]["args"][0] == {"$t": "ref", "v": [steps, f"e#{steps}"]}
    ) is referred


def test_a_change_from_what_is_not_there_is_corruption_but_a_partial_reader_keeps_it() -> None:
    records = _pipeline(Referrer(deltas=True), 3)
    with pytest.raises(CheckpointCorruptError) as caught:
        list(resolved([ckpt("r", 0), records[0], records[2]], "j"))  # seq 2 is missing
    assert "the result of step 'e#2' in checkpoint seq 2" in str(caught.value)
    follow = Resolver("j", partial=True)  # log --follow from seq 2
    shown = [follow.resolve(record).data["steps"][0] for record in records[1:]]
    assert shown[0]["result"] == records[1].data["steps"][0]["result"]  # as stored
    assert shown[1]["result"] == records[2].data["steps"][0]["result"]  # made from it: too


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"$t": "zd", "v": [], "z": "AAAA"}, "names no result"),
        ({"$t": "zd", "v": [[1, "e#1"]], "z": "not base64!"}, "packed data is not base64"),
        ({"$t": "zd", "v": [[1, "n#1"]], "z": "AAAA"}, "step 'n#1' in checkpoint seq 1"),
        ({"$t": "zd", "v": [[1, "e#1"]], "z": "KLUv/QAAAAAA"}, "packed data"),
    ],
)
def test_a_damaged_change_is_corruption(change: dict[str, Any], why: str) -> None:
    first = _written(Referrer(), 1, _step(1, "e#1", [], TEXT))
    bad = ckpt("r", 2, kind=Kind.STEP, data=_step(2, "e#2", [], change))
    with pytest.raises(CheckpointCorruptError) as caught:
        list(resolved([ckpt("r", 0), first, bad], "j"))
    assert why in str(caught.value) and "r.2" in str(caught.value)


def test_a_text_a_change_is_made_from_must_be_a_text() -> None:
    first = _written(Referrer(), 1, _step(1, "e#1", [], {"not": "a text"}))
    change = {"$t": "zd", "v": [[1, "e#1"]], "z": "AAAA"}
    bad = ckpt("r", 2, kind=Kind.STEP, data=_step(2, "e#2", [], change))
    with pytest.raises(CheckpointCorruptError, match="not a text"):
        list(resolved([first, bad], "j"))
