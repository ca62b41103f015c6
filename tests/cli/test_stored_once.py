"""Each value stored once, big data stored compressed (format version 3), and every command
gives the values back as they were: ``log -v``, ``show``, ``export``, ``verify-lineage``,
``resume``, ``replay``, ``copy`` between a directory and PostgreSQL.

Through the installed ``wfctl``, on a directory and on the private PostgreSQL server.
"""

from __future__ import annotations

import itertools
import json
import shutil
import textwrap
import zlib
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.cli.conftest import wfctl
from tests.postgres.conftest import pg_server, pg_url  # noqa: F401  (fixtures)
from wfctl._inspect._entries import LogPage
from wfctl._inspect._log import read_chain
from wfctl._inspect._show import show_checkpoint
from wfctl._records._packing import unpack

_EDIT = textwrap.dedent(
    """
    import os
    from wfctl import step, workflow

    SENTENCES = [
        "The river ran quietly under the old stone bridge near the market. ",
        "A letter arrived from the north with news of the coming season. ",
        "Nobody in the garden had noticed the window left open all night. ",
        "The engine of history turns slowly, and then all at once. ",
    ]

    @step
    async def edit(text: str, i: int) -> str:
        at = (i * 7) % 60
        return text[: at * 60] + SENTENCES[i % 4] + text[at * 60 + 64 :]
    """
)

_FLOW = _EDIT + textwrap.dedent(
    """
    @workflow(name="pipeline")
    async def pipeline(n: int) -> str:
        text = "".join(SENTENCES[(k * 3) % 4] for k in range(128))  # about 8 KB
        for i in range(n):
            text = await edit(text, i)
            if i == 2 and os.path.exists("fail-once"):
                os.remove("fail-once")
                raise RuntimeError("stopped after three steps")
        return text
    """
)


def _run(tmp_path: Path, store: str, n: int = 6) -> str:
    (tmp_path / "flow.py").write_text(_FLOW)
    done = wfctl("run", "flow.py:pipeline", "--input", str(n), "--store", store, "--json",
                 cwd=tmp_path)  # fmt: skip
    assert done.code == 0, done.stderr
    return str(done.json()["run_id"])


def _steps(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        entry
        for record in document["checkpoints"]
        if record["kind"] == "step"
        for entry in record["data"]["steps"]
    ]


def _data(line: bytes) -> bytes:
    """A stored record's data as JSON, unpacked if it is packed."""
    raw = json.loads(line)
    if "z" in raw:
        return unpack(raw["z"], "t")
    return json.dumps(raw["data"], separators=(",", ":"), ensure_ascii=False).encode()


def _stored(store: str, run_id: str) -> list[bytes]:
    if not store.startswith("postgresql://"):
        return (Path(store) / "runs" / run_id / "journal.jsonl").read_bytes().splitlines()
    with psycopg.connect(store) as conn:
        rows = conn.execute(
            "SELECT record FROM wfctl_checkpoints WHERE run_id = %s ORDER BY seq", (run_id,)
        ).fetchall()
    return [bytes(row[0]) for row in rows]


def test_each_value_is_stored_once_and_every_command_gives_it_back(
    tmp_path: Path, store_arg: str
) -> None:
    run_id = _run(tmp_path, store_arg)
    stored = _stored(store_arg, run_id)
    # Each argument but the first is the previous step's result: stored as a reference, and
    # each result but the first as its change from that argument; the first step's record,
    # 8 KB of text, is stored compressed.
    data = [_data(line) for line in stored]
    assert sum(part.count(b'{"$t":"ref","v":[') for part in data) == 5
    assert sum(part.count(b'"result":{"$t":"zd","v":[[') for part in data) == 5
    assert b',"z":"' in stored[1]
    assert all(b'"seq":' not in line and b'"prev":' not in line for line in stored)
    assert sum(len(line) for line in stored) < 0.2 * 6 * 8192

    exported = wfctl("export", run_id, "--store", store_arg, cwd=tmp_path)
    assert exported.code == 0, exported.stderr
    assert '"$t"' not in exported.stdout
    steps = _steps(exported.json())
    assert [entry["key"] for entry in steps] == [f"edit#{i}" for i in range(6)]
    for before, after in itertools.pairwise(steps):
        assert after["args"] == [before["result"], after["args"][1]]  # the value, resolved
    assert all(len(entry["result"]) > 8000 for entry in steps)

    shown = wfctl("show", f"{run_id}.3", "--json", "--store", store_arg, cwd=tmp_path)
    assert shown.code == 0, shown.stderr
    record = shown.json()["record"]
    assert record["seq"] == 3 and record["prev"] == f"{run_id}.2"  # the document is whole
    assert record["data"]["steps"][0]["args"][0] == steps[1]["result"]

    log = wfctl("log", run_id, "-v", "--store", store_arg, cwd=tmp_path)
    assert log.code == 0, log.stderr
    assert "$t" not in log.stdout and "The river" in log.stdout
    # A page: its first record refers to the one before it, read for that.
    page = wfctl("log", run_id, "--from", "3", "-n", "1", "-v", "--store", store_arg, cwd=tmp_path)
    assert page.code == 0, page.stderr
    assert "$t" not in page.stdout and 'args: ("' + steps[1]["result"][:40] in page.stdout

    verified = wfctl("verify-lineage", run_id, "--json", "--store", store_arg, cwd=tmp_path)
    assert verified.code == 0, verified.stdout + verified.stderr

    replayed = wfctl("replay", "--checkpoint", f"{run_id}.3", "--json", "--store", store_arg,
                     cwd=tmp_path)  # fmt: skip
    assert replayed.code == 0, replayed.stdout + replayed.stderr
    served = wfctl("replay", "--checkpoint", f"{run_id}.6", "--no-execute", "--json",
                   "--store", store_arg, cwd=tmp_path)  # fmt: skip
    assert served.code == 0, served.stdout + served.stderr
    assert served.json()["step_counts"]["cached"] == 6  # every record served, none executed


def test_a_record_shown_alone_or_a_page_far_into_a_pipeline_is_not_called_corrupt(
    tmp_path: Path, store_arg: str
) -> None:
    # Past the window, the first of the records read for what a record refers to refers to
    # one before them: that record is read for its results only, not taken for corruption.
    run_id = _run(tmp_path, store_arg, n=14)
    exported = wfctl("export", run_id, "--store", store_arg, cwd=tmp_path)
    assert exported.code == 0, exported.stderr
    steps = _steps(exported.json())
    for seq in (10, 12, 14):
        shown = wfctl("show", f"{run_id}.{seq}", "--json", "--store", store_arg, cwd=tmp_path)
        assert shown.code == 0, shown.stderr
        entry = shown.json()["record"]["data"]["steps"][0]
        assert entry == steps[seq - 1] and entry["args"][0] == steps[seq - 2]["result"]
    for page in (("--from", "11"), ("--last", "2"), ("--from", "10", "-n", "1")):
        shown = wfctl("log", run_id, *page, "-v", "--store", store_arg, cwd=tmp_path)
        assert shown.code == 0, shown.stderr
        assert "$t" not in shown.stdout and "corrupt" not in shown.stdout + shown.stderr
    page = wfctl("log", run_id, "--from", "12", "-n", "1", "-v", "--store", store_arg,
                 cwd=tmp_path)  # fmt: skip
    assert page.code == 0 and 'args: ("' + steps[10]["result"][:40] in page.stdout
    # What a record needs to be read lies within the window before it: a result is stored as
    # a change only from one stored whole or from such a change, back to one stored whole at
    # most 7 records before; so every 8th step record is stored whole.
    base: dict[int, int] = {}
    for seq, line in enumerate(_stored(store_arg, run_id)):
        entries = json.loads(_data(line)).get("steps", [])
        changes = [e["result"]["v"] for e in entries if isinstance(e["result"], dict)]
        base[seq] = min((base[at] for sources in changes for at, _ in sources), default=seq)
        assert base[seq] > seq - 8
    assert [seq for seq in range(1, 15) if base[seq] == seq] == [1, 9]


_FAN_IN = _EDIT + textwrap.dedent(
    """
    @step
    async def compare(old: str, new: str) -> int:
        return sum(a != b for a, b in zip(old, new))

    @workflow(name="fanin")
    async def fanin(n: int) -> int:
        texts = ["".join(SENTENCES[(k * 3) % 4] for k in range(32))]  # about 2 KB
        total = 0
        for i in range(n):
            texts.append(await edit(texts[-1], i))
            if i % 4 == 3 and len(texts) > 7:
                total += await compare(texts[-7], texts[-1])  # the text of six edits before
        return total
    """
)


def _every_record_reads_alone(tmp_path: Path, store: str, run_id: str, seqs: list[int]) -> None:
    """Each step record of ``run_id`` read alone (``show``) and as a page of one record (``log
    --from``) holds the values ``export`` gives: every one through the library, those of
    ``seqs`` through the installed ``wfctl`` too."""
    exported = wfctl("export", run_id, "--store", store, cwd=tmp_path)
    assert exported.code == 0, exported.stderr
    records = {r["seq"]: r for r in exported.json()["checkpoints"] if r["kind"] == "step"}
    for seq, record in records.items():
        shown = show_checkpoint(store, f"{run_id}.{seq}")
        assert shown.data == record["data"], seq
        _, page, _ = read_chain(store, run_id, LogPage(from_seq=seq, limit=1))
        assert [c.data for c in page] == [record["data"]], seq
    for seq in seqs:
        entry = records[seq]["data"]["steps"][0]
        shown = wfctl("show", f"{run_id}.{seq}", "--json", "--store", store, cwd=tmp_path)
        assert shown.code == 0, (seq, shown.stderr)
        assert shown.json()["record"]["data"]["steps"][0] == entry
        page = wfctl("log", run_id, "--from", str(seq), "-n", "1", "-v", "--store", store,
                     cwd=tmp_path)  # fmt: skip
        assert page.code == 0, (seq, page.stderr)
        assert "$t" not in page.stdout and 'args: ("' + entry["args"][0][:40] in page.stdout


def test_a_text_taken_again_steps_later_is_read_back_by_a_record_shown_alone(
    tmp_path: Path, store_arg: str
) -> None:
    # Every fourth step also takes the text of six edits before, which may be stored as its
    # change from one of up to seven records before it: the writer refers to it only if all
    # its record needs lies within the window before the step that takes it, so a record and
    # the 8 lines before it always suffice.
    (tmp_path / "flow.py").write_text(_FAN_IN)
    done = wfctl("run", "flow.py:fanin", "--input", "16", "--store", store_arg, "--json",
                 cwd=tmp_path)  # fmt: skip
    assert done.code == 0, done.stderr
    run_id = str(done.json()["run_id"])
    base: dict[int, int] = {}
    referred = 0
    for seq, line in enumerate(_stored(store_arg, run_id)):
        entries = json.loads(_data(line)).get("steps", [])
        changes = [e["result"]["v"] for e in entries if isinstance(e["result"], dict)]
        base[seq] = min((base[at] for sources in changes for at, _ in sources), default=seq)
        for entry in entries:
            for arg in entry["args"]:
                if isinstance(arg, dict):
                    referred += 1
                    # within the 8 lines before it, which show reads
                    assert arg["v"][0] > seq - 8 and base[arg["v"][0]] >= seq - 8, (seq, arg)
    assert referred >= 12 and any(base[seq] < seq for seq in base)
    _every_record_reads_alone(tmp_path, store_arg, run_id, [10, 18])


_REVIEWED = _EDIT + textwrap.dedent(
    """
    from wfctl import RunContext

    @workflow(name="reviewed")
    async def reviewed(n: int, *, ctx: RunContext) -> str:
        text = "".join(SENTENCES[(k * 3) % 4] for k in range(128))  # about 8 KB
        for i in range(abs(n)):
            text = await edit(text, i)
            if n > 0:  # asked after each step: the run pauses, and goes on when answered
                await ctx.request_info({"draft": i}, str, request_id=f"ok{i}")
        return text
    """
)


def test_a_run_resumed_after_each_step_refers_to_the_results_read_back(
    tmp_path: Path, store_arg: str
) -> None:
    # A pipeline that pauses for an answer after each step: each step runs in a process of
    # its own, after a resume. It refers to the result read back from the store as a run
    # that went on would (and stores its own as a change from it).
    (tmp_path / "flow.py").write_text(_REVIEWED)
    paused = wfctl("run", "flow.py:reviewed", "--input", "7", "--run-id", "r1",
                   "--store", store_arg, cwd=tmp_path)  # fmt: skip
    assert paused.code == 3, paused.stderr
    for i in range(7):
        resumed = wfctl("resume", "r1", "--response", f"ok{i}=yes", "--store", store_arg,
                        cwd=tmp_path)  # fmt: skip
        assert resumed.code == (0 if i == 6 else 3), resumed.stderr
    straight = wfctl("run", "flow.py:reviewed", "--input", "-7", "--run-id", "r2",
                     "--store", store_arg, cwd=tmp_path)  # fmt: skip
    assert straight.code == 0, straight.stderr

    # steps in records 1, 4, 7, ...: each refers to the one before while that one's base is
    # within the 8 lines before it (so records 10 and 19 store theirs whole)
    entries = {
        seq: json.loads(_data(line))["steps"][0]
        for seq, line in enumerate(_stored(store_arg, "r1"))
        if json.loads(line)["kind"] == "step"
    }
    referred = [seq for seq, e in entries.items() if isinstance(e["args"][0], dict)]
    changed = [seq for seq, e in entries.items() if isinstance(e["result"], dict)]
    assert referred == changed == [4, 7, 13, 16], entries.keys()
    exported = [_steps(wfctl("export", run, "--store", store_arg, cwd=tmp_path).json())
                for run in ("r1", "r2")]  # fmt: skip
    assert [(e["args"], e["result"]) for e in exported[0]] == [
        (e["args"], e["result"]) for e in exported[1]
    ]
    verified = wfctl("verify-lineage", "r1", "--store", store_arg, cwd=tmp_path)
    assert verified.code == 0, verified.stdout + verified.stderr
    _every_record_reads_alone(tmp_path, store_arg, "r1", [13])


_VERSION_4_FAN_IN = Path(__file__).resolve().parents[1] / "fixtures" / "version_4_fan_in"


def test_a_version_4_run_that_refers_past_the_window_is_read_back_as_well(
    tmp_path: Path, store_arg: str
) -> None:
    # Written by wfctl before its writer kept references within the window (the flow above,
    # its edits within the text's first 1,800 characters; 16 edits): record 10 refers to the result of record 8, stored as a change from a change
    # ... from record 1's, which is not among the 8 lines before record 10. A reader reads
    # the 16 records before one to read it alone.
    store = tmp_path / "fixture"
    shutil.copytree(_VERSION_4_FAN_IN / "store", store)
    run_id = "20261207-021243-3197bf0a"
    copied = wfctl("copy", run_id, "--from", store, "--to", store_arg, cwd=tmp_path)
    assert copied.code == 0, copied.stdout + copied.stderr
    assert _stored(store_arg, run_id) == _stored(str(store), run_id)  # the bytes as written
    verified = wfctl("verify-lineage", run_id, "--store", store_arg, cwd=tmp_path)
    assert verified.code == 0, verified.stdout + verified.stderr
    _every_record_reads_alone(tmp_path, store_arg, run_id, [10, 18])


_VERSION_3 = Path(__file__).resolve().parents[1] / "fixtures" / "version_3"


def test_a_run_of_format_version_3_reads_as_before_and_resumes_in_version_3(
    tmp_path: Path,
) -> None:
    # Written by wfctl before format version 4 (references and packed records, no changes):
    # a completed run of 12 steps, and one that failed after 3 (the flow of this module).
    store = tmp_path / "store"
    shutil.copytree(_VERSION_3 / "store", store)
    done, failed = "20261206-223305-9e6d0df0", "20261206-223305-98ec9911"
    expected = _steps(wfctl("export", _run(tmp_path, str(tmp_path / "new"), n=12),
                            "--store", tmp_path / "new", cwd=tmp_path).json())  # fmt: skip

    exported = wfctl("export", done, "--store", store, cwd=tmp_path)
    assert exported.code == 0, exported.stderr
    assert [{**e, "dt": 0} for e in _steps(exported.json())] == [{**e, "dt": 0} for e in expected]
    # The fixture's runs name the file they were written from, which is not here: the replay
    # is given this module's flow, written by _run above.
    replay = ("replay", "-c", f"{done}.12", "--target", "flow.py:pipeline")
    for command in (("verify-lineage", done), ("show", f"{done}.12"),
                    ("log", done, "--from", "10", "-v"), replay):  # fmt: skip
        shown = wfctl(*command, "--store", store, cwd=tmp_path)
        assert shown.code == 0, (command, shown.stderr)

    resumed = wfctl("resume", failed, "--target", "flow.py:pipeline", "--store", store, "--json",
                    cwd=tmp_path)  # fmt: skip
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["step_counts"] == {"executed": 3, "cached": 3, "changed": 0}
    lines = _stored(str(store), failed)
    assert all(json.loads(line)["v"] == 3 for line in lines)  # a run goes on in its version
    assert not any(b'"$t":"zd"' in _data(line) for line in lines)
    # edit#1 to #5 refer to the result before theirs: edit#3, the first after the resume, to
    # edit#2's, read back from the store
    assert sum(b'"$t":"ref"' in _data(line) for line in lines) == 5


def test_a_failed_run_resumes_and_a_copy_keeps_the_references(
    tmp_path: Path, store_arg: str
) -> None:
    (tmp_path / "fail-once").write_text("")
    (tmp_path / "flow.py").write_text(_FLOW)
    failed = wfctl("run", "flow.py:pipeline", "--input", "6", "--store", store_arg, "--json",
                   cwd=tmp_path)  # fmt: skip
    assert failed.code == 1, failed.stderr
    run_id = str(failed.json()["run_id"])
    resumed = wfctl("resume", run_id, "--store", store_arg, "--json", cwd=tmp_path)
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["step_counts"] == {"executed": 3, "cached": 3, "changed": 0}

    other = str(tmp_path / "copied")
    copied = wfctl("copy", run_id, "--from", store_arg, "--to", other, "--json", cwd=tmp_path)
    assert copied.code == 0, copied.stdout + copied.stderr
    assert _stored(other, run_id) == _stored(store_arg, run_id)  # the bytes, references and all
    source = wfctl("export", run_id, "--store", store_arg, cwd=tmp_path).json()
    copy = wfctl("export", run_id, "--store", other, cwd=tmp_path).json()
    assert _steps(copy) == _steps(source)


def test_a_damaged_record_is_named_once_not_with_each_record_that_refers_to_it(
    tmp_path: Path,
) -> None:
    # Record 3's checksum fails; records 4 on refer to it (and change from it), or to those
    # that do: they are sound, and verify-lineage names none of them, nor leaves them out of
    # the chain (it would report them missing, and the chain broken at each).
    store = tmp_path / "store"
    run_id = _run(tmp_path, str(store), n=12)
    journal = store / "runs" / run_id / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b'"ts":"', b'"ts":"x', 1)
    journal.write_bytes(b"\n".join(lines))

    verified = wfctl("verify-lineage", run_id, "--json", "--store", store, cwd=tmp_path)
    assert verified.code == 1, verified.stderr
    run = verified.json()["runs"][0]
    assert run["checkpoint_count"] == 13  # of 14: all but record 3
    problems = run["problems"]
    assert "journal.jsonl:4: checksum mismatch" in problems[0]
    assert problems[1:] == [
        f"seq not contiguous: no record for {run_id}.3",
        problems[2],  # records 0 to 2 cannot be reached from the head
    ] and problems[2].startswith("3 record(s) unreachable from the head")


def test_a_damaged_record_read_before_the_one_shown_is_named_by_its_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_id = _run(tmp_path, str(store))
    garbled = _step(lambda e: _set(e, "result", ("z",), e["result"]["z"][:-8] + "AAAAAAA="))
    _damage(store, run_id, 4, garbled)  # record 3, which record 4 refers to and changes from
    for command in (("show", f"{run_id}.4"), ("log", run_id, "--from", "4", "-n", "1")):
        done = wfctl(*command, "--store", store, cwd=tmp_path)
        assert done.code == 2, (command, done.stdout)
        assert "journal.jsonl:4: packed data does not unpack" in done.error_line()


def _resign(line: bytes, change: Any) -> bytes:
    raw = json.loads(line)
    del raw["crc"]
    body = json.dumps(change(raw), separators=(",", ":"), ensure_ascii=False).encode()
    return b'%s,"crc":"%08x"}' % (body[:-1], zlib.crc32(body))


def _damage(store: Path, run_id: str, lineno: int, change: Any) -> None:
    journal = store / "runs" / run_id / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    lines[lineno - 1] = _resign(lines[lineno - 1], change)
    journal.write_bytes(b"\n".join(lines))


def _step(change: Any) -> Any:
    """A damage to the step entry of a record (packed or not)."""

    def damaged(raw: dict[str, Any]) -> dict[str, Any]:
        data = json.loads(unpack(raw.pop("z"), "t")) if "z" in raw else raw["data"]
        change(data["steps"][0])
        raw["data"] = data
        return raw

    return damaged


def _set(entry: dict[str, Any], field: str, path: tuple[Any, ...], value: Any) -> None:
    at = entry[field]
    for part in path[:-1]:
        at = at[part]
    at[path[-1]] = value


@pytest.mark.parametrize(
    ("lineno", "change", "reason"),
    [
        # the record of edit#2: its argument refers to edit#1's result, its result is stored
        # as its change from that
        (4, _step(lambda e: _set(e, "args", (0, "v", 1), "edit#9")),
         "refers to the result of step 'edit#9' in checkpoint seq 2"),
        (4, _step(lambda e: _set(e, "result", ("v", 0, 1), "edit#9")),
         "stored as its change from the result of step 'edit#9' in checkpoint seq 2"),
        (4, _step(lambda e: _set(e, "result", ("v", 0, 0), 0)),
         "stored as its change from the result of step 'edit#1' in checkpoint seq 0"),
        (4, _step(lambda e: _set(e, "result", ("z",), e["result"]["z"][:-8] + "AAAAAAA=")),
         "packed data does not unpack"),
        (4, _step(lambda e: _set(e, "result", ("z",), "not base64!")),
         "packed data is not base64"),
        (4, _step(lambda e: _set(e, "args", (0, "v"), [2])), "an argument holds a malformed reference"),
        (4, _step(lambda e: _set(e, "args", (0,), e["result"])), "an argument holds a change"),
        # the record of edit#0, 8 KB of text stored packed
        (2, lambda raw: raw | {"z": raw["z"][:-8] + "AAAAAAA="}, "packed data does not unpack"),
        (2, lambda raw: raw | {"z": "not base64!"}, "packed data is not base64"),
        (2, lambda raw: raw | {"data": {"steps": []}}, "record holds both data and packed data"),
    ],
)  # fmt: skip
def test_a_damaged_reference_change_or_packed_record_is_corruption(
    tmp_path: Path, lineno: int, change: Any, reason: str
) -> None:
    store = tmp_path / "store"
    run_id = _run(tmp_path, str(store))
    _damage(store, run_id, lineno, change)
    where = f"journal.jsonl:{lineno}"

    verified = wfctl("verify-lineage", run_id, "--json", "--store", store, cwd=tmp_path)
    assert verified.code == 1, verified.stderr
    problems = json.dumps(verified.json())
    assert reason in problems and where in problems
    commands = (("log", run_id, "-v"), ("show", f"{run_id}.3"), ("export", run_id),
                ("resume", run_id, "--json"), ("replay", "-c", f"{run_id}.5", "--json"))  # fmt: skip
    for command in commands:
        done = wfctl(*command, "--store", store, cwd=tmp_path)
        assert done.code == 2, (command, done.stdout)
        line = done.error_line()
        assert reason in line and where in line, line
