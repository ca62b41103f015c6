"""``wfctl describe RUN`` through the installed ``wfctl``, on a directory and on PostgreSQL: one
run's status, input, result or error, pending requests, timings, origin and store on one
screen, and ``wfctl/describe@1`` validated against its schema; errors are one line, exit 2."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import (
    REPO,
    SAMPLES,
    WORKFLOWS,
    count_reads,
    invoke,
    many_steps,
    run_id_of,
    spawn,
    spoil_step_record,
    wfctl,
)
from tests.cli.test_json_documents import _check
from tests.postgres.conftest import pg_server, pg_url

__all__ = ["pg_server", "pg_url"]  # the fixtures this module's PostgreSQL variants use


def _described(store: str | Path, run_id: str) -> Any:
    done = wfctl("describe", run_id, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.stderr == ""
    document = done.json()
    _check(document, "describe")
    return document


def _screen(store: str | Path, run_id: str) -> dict[str, str]:
    """The lines ``describe`` prints for people, by label (``""``: the status line; ``text``:
    the whole screen)."""
    done = wfctl("describe", run_id, "--store", store, env={"TZ": "UTC", "COLUMNS": "300"})
    assert done.code == 0, done.stderr
    first, *rest = done.stdout.splitlines()
    assert first.startswith(f"run {run_id} · ")
    fields = {}
    for line in rest:
        label, _, value = line.strip().partition("  ")
        fields[label] = value.strip()
    return {"": first, "text": done.stdout, **fields}


def test_a_run_s_whole_story_on_either_store(store_arg: str, tmp_path: Path) -> None:
    store = store_arg
    paused = run_id_of(wfctl("run", WORKFLOWS / "review.py", "--input", '"dogs"', "--store", store,
                             "--json"))  # fmt: skip
    document = _described(store, paused)
    run = document["run"]
    assert (run["status"], run["pending_request_ids"]) == ("paused", ["0/request#0", "1/request#0"])
    assert document["input"] == "dogs" and document["result"] is None
    assert [(r["request_id"], r["response_type"]) for r in document["requests"]] == [
        ("0/request#0", "str"),
        ("1/request#0", "int"),
    ]
    assert document["requests"][1]["data"] == {"text": "draft about dogs", "question": "score 1-5?"}
    assert document["step_counts"] == {"executed": 1, "cached": 0, "retried": 0, "failed": 0}
    assert document["checkpoint_count"] == run["head_seq"] + 1
    assert document["workflow_ref"] == "review:review"
    assert document["target"].endswith("workflows/review.py:review")
    assert document["store"] == store  # the test server's URL holds no password to mask
    if store.startswith("postgresql://"):
        assert document["journal"] is None
    else:
        assert document["journal"] == f"{store}/runs/{paused}/journal.jsonl"
        assert Path(document["journal"]).is_file()
    screen = _screen(store, paused)
    assert screen[""].endswith(" · review · paused")
    assert screen["input"] == '"dogs"'
    assert screen["waiting on"].startswith("0/request#0 (expects str): {")
    second = '1/request#0 (expects int): {"text": "draft about dogs", "question": "score 1-5?"}'
    assert f"  {second}\n" in screen["text"]  # the next request on a line of its own
    assert re.fullmatch(r"[A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d UTC \((\d+s ago|just now)\)",
                        screen["created"]), screen  # fmt: skip
    assert screen["origin"] == "a fresh run (not restored)"
    assert "result" not in screen and "error" not in screen

    resumed = wfctl("resume", paused, "-r", "0/request#0=yes", "-r", "1/request#0=4",
                    "--store", store)  # fmt: skip
    assert resumed.code == 0, resumed.stderr
    document = _described(store, paused)
    assert document["run"]["status"] == "completed" and document["requests"] == []
    assert document["result"] == {"verdict": "yes", "score": 4}
    assert document["resume_count"] == 1 and document["duration_s"] > 0
    screen = _screen(store, paused)
    assert screen["result"] == '{"verdict": "yes", "score": 4}'
    assert screen["steps"] == "1 executed, 1 cached, 0 retried attempts; resumed 1 time"

    replayed = wfctl("replay", "-c", f"{paused}.1", "--store", store, "--json")
    restored = replayed.json()["replay_run_id"]
    document = _described(store, restored)
    assert document["run"]["origin_checkpoint_id"] == f"{paused}.1"
    assert _screen(store, restored)["origin"] == f"restored from {paused}.1"

    broken = tmp_path / "broken"
    broken.mkdir()
    failing = wfctl("run", WORKFLOWS / "flaky.py", "--input", json.dumps(str(broken)),
                    "--store", store, "--json")  # fmt: skip
    assert failing.code == 1
    failed = run_id_of(failing)
    document = _described(store, failed)
    assert document["run"]["status"] == "failed"
    assert document["error"] == "RuntimeError: the fix is not in yet"
    assert document["failed_step_key"] == "second#0" and document["result"] is None
    assert _screen(store, failed)["error"] == "RuntimeError: the fix is not in yet (in second#0)"

    cancelled = wfctl("cancel", failed, "--reason", "not needed", "--store", store)
    assert cancelled.code == 0, cancelled.stderr
    document = _described(store, failed)
    assert document["run"]["status"] == "cancelled" and document["cancel_reason"] == "not needed"

    retried = run_id_of(wfctl("run", SAMPLES / "flaky_service.py", "--store", store, "--json"))
    document = _described(store, retried)
    assert document["step_counts"] == {"executed": 1, "cached": 0, "retried": 2, "failed": 0}
    assert _screen(store, retried)["steps"] == "1 executed, 0 cached, 2 retried attempts"


def test_a_run_that_is_not_there_or_not_sound_is_one_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert wfctl("run", WORKFLOWS / "greet.py", "--store", store).code == 0
    for args in (("describe", "nobody", "--store", store), ("describe", "nobody", "--store",
                                                            store, "--json")):  # fmt: skip
        missing = wfctl(*args)
        assert missing.code == 2 and missing.stdout == ""
        assert missing.error_line() == "wfctl: error: run 'nobody' not found"
    typo = wfctl("describe", "x", "--store", tmp_path / "nowhere")
    assert typo.code == 2 and "does not exist" in typo.error_line()
    assert not (tmp_path / "nowhere").exists()
    other = wfctl("describe", "review", "--store", REPO / "tests" / "fixtures" / "af_healthy")
    assert other.code == 2 and "is an agent-framework store" in other.error_line()

    run_id = many_steps(store, 5)
    spoil_step_record(store, run_id, 3)
    spoiled = wfctl("describe", run_id, "--store", store, "--json")
    assert spoiled.code == 2 and spoiled.stdout == ""
    assert "checksum" in spoiled.error_line() or "corrupt" in spoiled.error_line()


def test_each_record_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    run_id = many_steps(store, 40)
    reads = count_reads(monkeypatch)
    done = invoke("describe", run_id, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["step_counts"]["executed"] == 40
    assert sorted(reads.decoded) == list(range(42))  # root to head, each decoded once


def test_a_running_run_is_described_while_it_runs(store_arg: str, tmp_path: Path) -> None:
    store, gate = store_arg, tmp_path / "gate"
    gate.mkdir()
    driver = spawn(
        "run", WORKFLOWS / "gated.py", "--input", json.dumps(str(gate)), "--run-id", "held",
        "--store", store, "--json",
    )  # fmt: skip
    try:
        end = time.monotonic() + 60
        while not (gate / "started").exists():  # bounded poll for the other process's step
            assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < end
            time.sleep(0.01)
        document = _described(store, "held")
        assert document["run"]["status"] == "running"
        assert document["input"] == str(gate) and document["step_counts"]["executed"] == 0
        assert _screen(store, "held")[""] == "run held · gated · running"
    finally:
        (gate / "gate").write_text("open", encoding="utf-8")
        driver.communicate(timeout=60)
    assert driver.returncode == 0
    assert _described(store, "held")["run"]["status"] == "completed"
