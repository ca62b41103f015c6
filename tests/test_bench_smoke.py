"""The benchmark harness runs end to end on wfctl alone (tiny N, one run, no peers needed).

This checks that ``bench/run.py`` works and reports every wfctl row, not how fast anything is:
timings on a shared CI machine prove nothing, so no assertion here looks at a time.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _needs_postgres() -> None:
    """Skip without psycopg or server binaries, unless WFCTL_REQUIRE_POSTGRES=1 (CI) fails."""
    pytest.importorskip("psycopg")
    from wfctl.storage.testing import find_bindir

    if find_bindir() is None:
        if os.environ.get("WFCTL_REQUIRE_POSTGRES") == "1":
            pytest.fail("WFCTL_REQUIRE_POSTGRES=1 but no PostgreSQL server binaries")
        pytest.skip("no PostgreSQL server binaries")


def test_quick_benchmark_reports_every_wfctl_row(tmp_path: Path) -> None:
    out, markdown = tmp_path / "results.json", tmp_path / "RESULTS.md"
    command = [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--only", "wfctl"]
    command += ["--out", str(out), "--markdown", str(markdown), "--workdir", str(tmp_path)]

    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )

    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = {(row["scenario"], row["engine"]): row for row in report["rows"]}
    for scenario in ("sequential", "restore", "fanout", "pause", "resume"):
        row = rows[scenario, "wfctl"]
        assert row["status"] == "ok", row
        assert row["seconds"]["median"] >= 0
        assert row["records"] > 0
    assert rows["sequential", "floor"]["status"] == "ok"
    assert rows["restore", "wfctl"]["executed"] == 0  # every step served from the record
    assert rows["fanout", "wfctl"]["roots"] == 1
    assert rows["fanout", "wfctl"]["unreachable"] == 0
    # The CLI rows exist; a command that is not there yet says so instead of failing the run.
    assert rows["verify_lineage", "wfctl"]["status"] in ("ok", "unavailable")
    assert rows["startup", "wfctl --help"]["status"] in ("ok", "unavailable")
    assert not any(
        row["engine"] in ("agent_framework", "langgraph_sqlite") for row in report["rows"]
    )
    # The big-payload target weighs the megabytes alone: the 1 MB run again and a 100-character
    # run of as many steps, in the same process; the second's CPU is taken off the first's.
    big = rows["big_payload", "wfctl"]
    assert big["status"] == "ok", big
    assert big["detail"]["cpu_seconds_small"] > 0 < big["detail"]["cpu_seconds_warm"]
    [per_mb] = [t for t in report["targets"] if t["target"].startswith("big payload")]
    assert per_mb["verdict"] in ("met", "missed"), per_mb
    assert {t["verdict"] for t in report["targets"]} <= {"met", "missed", "n/a"}
    assert "## Targets" in markdown.read_text(encoding="utf-8")


def test_startup_benchmark_times_every_command() -> None:
    command = [sys.executable, str(ROOT / "bench" / "startup.py"), "--rounds", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in ("--help", "runs (empty store)", "run (one step)"):
        assert f"  {name} " in done.stdout, done.stdout


def test_postgres_benchmark_reports_the_floor_and_wfctl(tmp_path: Path) -> None:
    """bench/postgres.py on a private server, tiny N: the floor's row and wfctl's row.

    wfctl's row is measured on its PostgreSQL store, and the server's counts show one write
    transaction per step. The Markdown section replaces its old self and leaves the rest of
    the file as it was.
    """
    _needs_postgres()
    markdown = tmp_path / "RESULTS.md"
    before = (
        "# results\n\n## Sequential\n\nkept\n\n## PostgreSQL\n\nstale\n\n## Targets\n\nkept too\n"
    )
    markdown.write_text(before, encoding="utf-8")
    command = [sys.executable, str(ROOT / "bench" / "postgres.py"), "--n", "6", "--repeat", "1"]
    command += ["--only", "floor,wfctl", "--json", "--markdown", str(markdown)]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    rows = {row["engine"]: row for row in json.loads(done.stdout)["rows"]}
    assert set(rows) == {"floor", "wfctl"}
    assert rows["floor"]["status"] == "ok", rows["floor"]
    assert rows["floor"]["ms_per_step"]["median"] > 0
    assert rows["floor"]["database_bytes"] > 0
    # One INSERT per step, each its own transaction: the server's counts say exactly that.
    assert rows["floor"]["statements_per_step"] == 1
    assert rows["floor"]["transaction_ids_per_step"] == 1
    # The server's execution time of those statements, read from pg_stat_statements.
    assert rows["floor"]["server_exec_ms_per_step"] > 0
    assert rows["wfctl"]["server_exec_ms_per_step"] > 0
    wfctl = rows["wfctl"]
    assert wfctl["status"] == "ok", wfctl
    # Durable per step: nothing that returned runs again after the kill.
    assert wfctl["rerun_after_crash"] == {"min": 0, "max": 0}, wfctl
    # One write transaction per step, besides the run's root, start and end.
    assert wfctl["runs"][0]["transaction_ids"] <= 6 + 3, wfctl
    text = markdown.read_text(encoding="utf-8")
    assert text.startswith("# results\n\n## Sequential\n\nkept\n\n## PostgreSQL\n\nGenerated by")
    assert text.endswith("\n## Targets\n\nkept too\n")
    assert text.count("## PostgreSQL") == 1 and "stale" not in text
    assert "| floor: one autocommit INSERT" in text


def test_first_run_benchmark_times_two_runs_of_each_process() -> None:
    """bench/pg_first_run.py, tiny: two processes, each timing its first and second run."""
    _needs_postgres()
    command = [sys.executable, str(ROOT / "bench" / "pg_first_run.py"), "--processes", "2"]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{ROOT}: first run "), done.stdout
    assert "2 processes, 3 steps a run" in done.stdout, done.stdout


def test_sync_gap_benchmark_times_each_amount_of_work(tmp_path: Path) -> None:
    """bench/sync_gap.py, tiny: two amounts of work, syncs every 4 writes, one round."""
    command = [sys.executable, str(ROOT / "bench" / "sync_gap.py"), "--work", "1,3"]
    command += ["--every", "4", "--n", "20", "--rounds", "1", "--dir", str(tmp_path)]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("20 writes of ") and "fdatasync every 4, 1 rounds" in lines[0]
    assert [line.split()[0] for line in lines[2:]] == ["1", "3"], done.stdout
    assert all(line.endswith("x") for line in lines[2:]), done.stdout
    assert list(tmp_path.iterdir()) == []  # its journal went with its directory


def test_sequential_floor_benchmark_reports_each_mode_beside_the_floor(tmp_path: Path) -> None:
    """bench/sequential_floor.py, tiny: the floor and both modes, one round, files cleaned up."""
    command = [sys.executable, str(ROOT / "bench" / "sequential_floor.py"), "--n", "5"]
    command += ["--rounds", "1", "--dir", str(tmp_path)]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("5 steps, 1 rounds"), done.stdout
    assert [line.split()[0] for line in lines[1:]] == ["floor", "full", "batch"], done.stdout
    assert lines[1].endswith("1.00x (1.00-1.00)"), done.stdout
    assert all(f" {ROOT} " in line for line in lines[2:]), done.stdout
    assert list(tmp_path.iterdir()) == []  # every store went with its directory


def test_claims_benchmark_times_claims_over_ended_and_queued_runs() -> None:
    """bench/claims.py, tiny: both stores, 0 and 20 ended runs, then 3 queued, then 1 queued
    behind 5 asking; three claims."""
    _needs_postgres()
    command = [sys.executable, str(ROOT / "bench" / "claims.py"), "--ended", "0,20"]
    command += ["--queued", "3", "--asking", "5", "--claims", "3"]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(": a claim")[0] for line in lines] == [
        f"{store} {ROOT}: {shape}"
        for store in ("postgres", "file")
        for shape in (
            "0 ended, 1 queued",
            "20 ended, 1 queued",
            "0 ended, 3 queued",
            "0 ended, 1 queued, 5 asking",
        )
    ], done.stdout
    assert all(line.endswith(", 3 claims") for line in lines), done.stdout


def test_pg_store_commands_benchmark_times_both_commands() -> None:
    """bench/pg_store_commands.py, tiny: 5 runs, one round, this tree."""
    _needs_postgres()
    command = [sys.executable, str(ROOT / "bench" / "pg_store_commands.py"), "--runs", "5"]
    command += ["--rounds", "1"]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "5 runs of 10 steps, 1 rounds (median)", done.stdout
    assert [line.split("  ")[0] for line in lines[2:]] == [str(ROOT)] * 2, done.stdout
    assert "wfctl verify-lineage --json" in lines[2] and "wfctl runs --json" in lines[3]


def test_append_benchmark_measures_every_variant_it_names() -> None:
    """bench/pg_append.py, tiny: every variant's SQL applies on top of the schema and takes the
    rows a save sends; the schema's row updates are HOT after the root (3 of 4)."""
    _needs_postgres()
    command = [sys.executable, str(ROOT / "bench" / "pg_append.py"), "--steps", "3"]
    command += ["--rounds", "1", "--synchronous-commit", "off"]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[2:]}
    assert set(rows) >= {"schema", "lean_body", "fk_chain", "no_trigger", "floor"}, done.stdout
    assert rows["schema"][-1] == "3/4", done.stdout


def test_postgres_benchmark_crash_check_counts_steps_run_again(tmp_path: Path) -> None:
    """The durability check's two processes, on a file store (the worker's wfctl row opens any
    location ``open_storage`` does): killed right after step 3 returned, resumed, none re-run."""
    worker = [sys.executable, str(ROOT / "bench" / "_pg_worker.py"), "wfctl"]
    where = [str(tmp_path), "--crash-at", "3"]

    crashed = subprocess.run([*worker, "crash", "6", *where], capture_output=True, timeout=60)
    recovered = subprocess.run(
        [*worker, "recover", "6", *where], capture_output=True, text=True, timeout=60
    )

    assert crashed.returncode == -9, crashed.stderr
    assert crashed.stdout == b""  # killed before it could report
    assert recovered.returncode == 0, recovered.stderr
    row = json.loads(recovered.stdout)
    assert row["status"] == "ok", row  # the last step's output, as a full run returns it
    assert (row["rerun"], row["executed"]) == (0, 3), row  # steps 3, 4 and 5 only


def test_workers_benchmark_drives_every_run_once(tmp_path: Path) -> None:
    """bench/workers.py, tiny: 6 runs queued on a private PostgreSQL server and on a file
    store, 2 workers each; every run taken by one worker, every step run once, the store's
    listing and verify-lineage agreeing. Skipped without server binaries unless
    WFCTL_REQUIRE_POSTGRES=1."""
    _needs_postgres()
    markdown = tmp_path / "RESULTS.md"
    markdown.write_text("# results\n\n## Workers\n\nstale\n\n## Targets\n\nkept\n", "utf-8")
    command = [sys.executable, str(ROOT / "bench" / "workers.py"), "--runs", "6"]
    command += ["--workers", "2", "--concurrency", "2", "--json", "--markdown", str(markdown)]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True, report
    rows = {row["store"]: row for row in report["rows"]}
    assert set(rows) == {"postgres", "file"}
    for row in rows.values():
        assert row["problems"] == [], row
        assert sum(row["taken_per_worker"]) == 6, row
        assert row["exit_codes"] == [0, 0], row
    # The server's side was counted: each run writes at least its steps' commits.
    assert rows["postgres"]["transaction_ids_per_run"] >= 3, rows["postgres"]
    text = markdown.read_text(encoding="utf-8")
    assert text.startswith("# results\n\n## Workers\n\nGenerated by") and "stale" not in text
    assert text.endswith("\n## Targets\n\nkept\n")
    assert "| postgres | 2 |" in text and "| file | 2 |" in text


def test_workers_benchmark_check_finds_a_step_run_twice(tmp_path: Path) -> None:
    """The benchmark's check is not a rubber stamp: a step executed twice, a run taken by two
    workers and a run missing from the store are each reported."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import workers
    finally:
        sys.path.remove(str(ROOT / "bench"))
    events = [
        {"event": "taken", "run_id": "w00000"},
        {"event": "taken", "run_id": "w00000"},
        {"event": "ended", "run_id": "w00000", "status": "completed"},
    ]
    executed = ["tok00000 0", "tok00000 0", "tok00000 1", "tok00000 2"]

    problems = workers.check(str(tmp_path / "none"), 1, events, executed, [""], [0])

    assert any("more than once" in p and p.startswith("1 of 1 runs taken") for p in problems)
    assert any(p.startswith("3 of 3 steps executed, 1 more than once") for p in problems)
    assert any(p.startswith("wfctl runs:") for p in problems)
    assert any(p.startswith("verify-lineage:") for p in problems)


@pytest.mark.parametrize("postgres", [False, True], ids=["file", "postgres"])
def test_resume_benchmark_resumes_the_failed_run_in_every_round(
    tmp_path: Path, postgres: bool
) -> None:
    """bench/resume_memory.py, tiny: a run of 20 steps failed once, resumed twice."""
    command = [sys.executable, str(ROOT / "bench" / "resume_memory.py"), str(tmp_path)]
    command += ["--steps", "20", "--rounds", "2"]
    if postgres:
        _needs_postgres()
        command.append("--postgres")

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    where = "PostgreSQL" if postgres else "a directory"
    assert lines[0] == f"resume of 20 cached steps on {where}, 2 rounds (medians):", done.stdout
    assert lines[1].startswith(f"  {ROOT}: ") and lines[1].endswith(" MB peak RSS"), done.stdout


def test_resume_benchmark_times_fresh_runs_with_job_run(tmp_path: Path) -> None:
    """bench/resume_memory.py --job run, tiny: a run of 20 steps into an empty store, twice."""
    command = [sys.executable, str(ROOT / "bench" / "resume_memory.py"), str(tmp_path)]
    command += ["--steps", "20", "--rounds", "2", "--job", "run"]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "run of 20 steps on a directory, 2 rounds (medians):", done.stdout
    assert lines[1].startswith(f"  {ROOT}: ") and lines[1].endswith(" MB peak RSS"), done.stdout
    runs = list((tmp_path / "runs" / "runs").iterdir())
    assert len(runs) == 1 and (runs[0] / "end.json").exists()  # the last round's run, ended


def test_bytes_per_step_benchmark_reports_every_row(tmp_path: Path) -> None:
    """bench/bytes_per_step.py, tiny: a row per engine of the text pipeline (a peer that is not
    installed, or PostgreSQL without server binaries, says so), wfctl's bytes counted, and one
    step record parted by field to its last byte, whatever fields the record format has."""
    out = tmp_path / "bytes.json"
    command = [sys.executable, str(ROOT / "bench" / "bytes_per_step.py"), "--steps", "5"]
    command += ["--text-kb", "1", "--small-steps", "5", "--json", str(out)]

    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["engine"]: row for row in report["text_pipeline"]}
    assert list(rows) == [
        "wfctl_file",
        "wfctl_file_answered",
        "wfctl_postgres",
        "langgraph_sqlite",
        "agent_framework",
    ]
    for row in rows.values():
        assert row["status"] in ("ok", "skipped"), row
        if row["status"] == "ok":
            assert row["total_bytes"] > 0 and row["x_text_per_step"] > 0, row
            assert row["bytes_per_step"] == pytest.approx(row["total_bytes"] / 5, abs=0.1)
    assert rows["wfctl_file"]["status"] == "ok"
    # A step's argument, the result before it, is a reference to it: each text of about 1 KB
    # is stored once, and compressed (two copies, as records of format version 2 held: > 2x).
    assert rows["wfctl_file"]["x_text_per_step"] < 2, rows["wfctl_file"]
    assert rows["wfctl_file_answered"]["status"] == "ok", rows["wfctl_file_answered"]
    from wfctl.storage.testing import find_bindir

    if find_bindir() is not None or os.environ.get("WFCTL_REQUIRE_POSTGRES") == "1":
        assert rows["wfctl_postgres"]["status"] == "ok", rows["wfctl_postgres"]
        assert rows["wfctl_postgres"]["detail"]["records"] == 7  # root, 5 steps, completed
    small = report["small_steps"]
    assert small["status"] == "ok" and small["step_records"] == 5, small
    assert small["total_bytes"] > 0, small
    record = small["typical_record"]
    assert sum(part["bytes"] for part in record["fields"]) == record["total"]
    assert record["total"] == record["own"] + record["framing"]
    # The step's own: a 100-character argument and result (their JSON quotes and brackets),
    # besides a key and a digest.
    assert record["own"] > 200 and record["framing"] > 0, record
    assert done.stdout.startswith("Text pipeline: 5 steps, each given a text of "), done.stdout
    assert "One typical step record (the median by size): " in done.stdout


def _bench_module(name: str) -> Any:
    """Import a module of bench/ (not a package: its scripts put their folder on the path)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_framing_parts_every_byte_of_a_record_whatever_its_fields() -> None:
    """bench/_framing.py counts each byte of a record once, by the fields it finds: today's
    step record, the same indented, and a format with other fields and a compressed result."""
    framing = _bench_module("_framing")
    today = (
        b'{"v":2,"id":"r.1","seq":1,"prev":"r.0","kind":"step","wf":"w","ts":"t","data":'
        b'{"steps":[{"key":"echo#0","digest":"ab","args":["x"],"result":"y","dt":1e-6}]},'
        b'"crc":"0a"}\n'
    )
    parted = framing.breakdown(today)
    parts = {p.field: p.bytes for p in parted.parts}
    assert parted.total == len(today) == sum(parts.values())
    assert parted.own == len(b'"echo#0""ab"["x"]"y"')
    assert parts["v"] == len(b'"v":2,') and parts["crc"] == len(b'"crc":"0a"')
    assert parts["data {}"] == len(b'"data":{},')  # a field's comma goes with it
    assert parts["data.steps [{}]"] == len(b'"steps":[{}]')
    assert parts["data.steps[].args (name)"] == len(b'"args":,')
    assert parts["data.steps[].dt"] == len(b'"dt":1e-6')
    assert parts["(line)"] == len(b"{}\n")

    spaced = json.dumps(json.loads(today), separators=(" , ", " : ")).encode() + b" \n"
    assert framing.breakdown(spaced).total == len(spaced)
    assert framing.breakdown(spaced).own == len(b'"echo#0""ab"["x"]"y"')  # blanks are framing
    indented = json.dumps(json.loads(today), indent=2).encode() + b"\n"
    assert framing.breakdown(indented).total == len(indented)

    changed = b'{"v":3, "s":7, "d":{"key":"e#0","result":{"zstd":"KLUv/QBYAA=="}}, "p":[1,2]}\n'
    parted = framing.breakdown(changed)
    parts = {p.field: p.bytes for p in parted.parts}
    assert parted.total == len(changed) == sum(parts.values())
    assert parted.own == len(b'"e#0"{"zstd":"KLUv/QBYAA=="}')
    assert parts["s"] == len(b' "s":7,') and parts["p"] == len(b' "p":[1,2]')
    assert set(parts) == {
        "(line)",
        "v",
        "s",
        "d {}",
        "d.key (name)",
        "d.key",
        "d.result (name)",
        "d.result",
        "p",
    }

    assert framing.breakdown(b"\x28\xb5\x2f\xfd\n").parts[0].field == "(not a JSON object)"


def test_framing_finds_step_records_by_kind_or_by_their_own_fields(tmp_path: Path) -> None:
    """bench/_framing.py's step_records: the lines of kind ``step`` where records name their
    kind; in a format that does not, the whole lines holding a step's own fields."""
    framing = _bench_module("_framing")
    root, step, end = (
        b'{"kind":"root"}\n',
        b'{"kind":"step","key":"e#0"}\n',
        b'{"kind":"completed"}\n',
    )
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "journal.jsonl").write_bytes(root + step + end + b'{"kind":"step"')
    (tmp_path / "end.json").write_bytes(b'{"seq":2}')
    assert framing.step_records(tmp_path) == [step]

    unnamed = [b'{"s":1,"key":"e#0","r":"x"}\n', b'{"s":2,"key":"e#1","r":"y"}\n']
    (tmp_path / "runs" / "journal.jsonl").write_bytes(b"\x00binary\n" + b"".join(unnamed))
    assert framing.step_records(tmp_path) == unnamed
    assert framing.step_records(tmp_path, own=("nothing",)) == []


def test_prose_is_the_same_text_every_time_and_compresses_like_prose() -> None:
    """bench/_prose.py: a seed's text, at most the size asked, whole sentences; each edit
    replaces one sentence; zlib shrinks it as it shrinks English (2 to 3 times), not as
    random letters (under 2) or a repeated filler (far over 3)."""
    prose = _bench_module("_prose")
    text = prose.text(8192)

    assert text == prose.text(8192) != prose.text(8192, seed=1)
    assert 7800 < len(text) <= 8192 and text.endswith(".")
    assert 2.0 < len(text) / len(zlib.compress(text.encode())) < 3.0
    edited = prose.edit(text)
    before, after = text.split(". "), edited.split(". ")
    assert edited == prose.edit(text) and len(before) == len(after)
    assert sum(a != b for a, b in zip(before, after, strict=True)) == 1
