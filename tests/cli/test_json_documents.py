"""Every ``--json`` document, from the installed ``wfctl`` on a real store, against its schema.

The JSON Schemas in ``docs/schemas/`` are what ``docs/json.md`` describes; each forbids keys it
does not name, so a field added without documenting it fails here. One store is built for the
module (completed, paused, answered, failed, retried, interrupted, replayed and restored runs,
then cancelled and removed ones) and every command with ``--json`` is run against it, ``log
--follow --json`` (JSON Lines) included.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import typer.main
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from tests.cli.conftest import REPO, SAMPLES, WORKFLOWS, base_env, wfctl, wfctl_executable
from wfctl._cli import app

SCHEMAS = REPO / "docs" / "schemas"
#: The document type each command prints with --json.
DOCUMENT_OF = {
    "run": "run",
    "resume": "run",
    "replay": "replay",
    "verify-lineage": "verify-lineage",
    "du": "du",
    "runs": "runs",
    "log": "log",
    "describe": "describe",
    "show": "show",
    "export": "export",
    "pause": "pause",
    "gc": "gc",
    "version": "version",
    "cancel": "cancel",
    "rm": "rm",
    "copy": "copy",
    "submit": "submit",
    "worker": "worker-event",
}
#: The documents of other modes: export with --output, and log --follow's JSON Lines.
MODE_DOCUMENTS = {"export-result", "log-entry", "log-end"}


def _registry() -> Registry:
    resources = [
        (f"https://wfctl.invalid/schemas/{path.name}", Resource.from_contents(_load(path)))
        for path in SCHEMAS.glob("*.schema.json")
    ]
    return Registry().with_resources(resources)


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _check(document: Any, kind: str) -> None:
    """Validate ``document`` against the schema of ``kind``; fail naming every error."""
    schema = _load(SCHEMAS / f"{kind}.schema.json")
    validator = Draft202012Validator(schema, registry=_registry())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    assert not errors, errors
    assert document["schema"] == f"wfctl/{kind}@1"


def _json(*args: str | Path, code: int = 0) -> Any:
    done = wfctl(*args, "--json")
    assert done.code == code, done.stderr
    return done.json()


def _lines(*args: str | Path, code: int = 0) -> list[Any]:
    """Run a command printing JSON Lines; return each line parsed."""
    done = wfctl(*args, "--json")
    assert done.code == code, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _start_backing_off(store: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            wfctl_executable(), "run", str(WORKFLOWS / "waits.py"), "--input", '"backoff"',
            "--run-id", "backing-off", "--store", str(store), "--json",
        ],
        env=base_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _wait_until_backing_off(store: Path, process: subprocess.Popen[str]) -> None:
    """Poll ``wfctl runs`` until the run is backing off (cross-process, bounded)."""
    end = time.monotonic() + 60
    while True:
        assert process.poll() is None, process.communicate()
        if store.exists():
            runs = wfctl("runs", "--store", store, "--json").json()["runs"]
            if any(r["run_id"] == "backing-off" and r["waiting"] for r in runs):
                return
        assert time.monotonic() < end, "the run never reported backing off"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """Run every command with --json on one store; return the documents by type."""
    store = tmp_path_factory.mktemp("json") / "store"
    found: dict[str, list[Any]] = {}

    def keep(kind: str, document: Any) -> Any:
        found.setdefault(kind, []).append(document)
        return document

    typed = keep("run", _json("run", WORKFLOWS / "typed.py", "--store", store))
    typed_id = typed["run_id"]
    paused = keep("run", _json("run", WORKFLOWS / "review.py", "--store", store, code=3))
    keep("run", _json(
        "resume", paused["run_id"], "-r", "0/request#0=yes", "-r", "1/request#0=3",
        "--store", store,
    ))  # fmt: skip
    broken_dir = store.parent / "flaky"
    broken_dir.mkdir()
    failed = keep("run", _json("run", WORKFLOWS / "flaky.py", "--input",
                               json.dumps(str(broken_dir)), "--store", store, code=1))  # fmt: skip
    service = keep("run", _json("run", SAMPLES / "flaky_service.py", "--store", store))
    process = _start_backing_off(store)
    try:
        _wait_until_backing_off(store, process)
        keep("pause", _json("pause", "backing-off", "--store", store))
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    keep("run", json.loads(stdout))
    keep("replay", _json("replay", "-c", f"{typed_id}.1", "--store", store))
    keep("replay", _json("replay", "-c", f"{paused['run_id']}.1", "--store", store))
    caught = keep("run", _json("run", WORKFLOWS / "caught.py", "--store", store))
    replayed = keep("replay", _json("replay", "-c", f"{caught['run_id']}.0", "--store", store))
    assert replayed["identical"] is True  # the step failed again, as it did in the source
    queued = keep("submit", _json("submit", WORKFLOWS / "greet.py", "--store", store))
    keep("runs", _json("runs", "--store", store))  # lists the queued run
    for event in _lines("worker", "--store", store, "--exit-when-idle", "--workflows", WORKFLOWS):
        keep("worker-event", event)
    log = _json("log", queued["run_id"], "--store", store)
    assert log["run"]["status"] == "completed"
    for run_id in (typed_id, paused["run_id"], "backing-off"):
        keep("log", _json("log", run_id, "--store", store))
    keep("log", _json("log", typed_id, "--last", "2", "--store", store))  # a page
    keep("log", _json("log", typed_id, "--from", "99", "--store", store))  # past the head
    keep("log", _json("log", caught["run_id"], "--store", store))  # a step failure recorded
    for seq in range(4):
        keep("show", _json("show", f"{typed_id}.{seq}", "--store", store))
    keep("export", _json("export", typed_id, "--store", store))
    output = store.parent / "exported.json"
    keep("export-result", _json("export", typed_id, "--output", output, "--store", store))
    keep("export", json.loads(output.read_text(encoding="utf-8")))
    keep("verify-lineage", _json("verify-lineage", "--store", store))
    keep("du", _json("du", "--store", store))
    keep("gc", _json("gc", "--older-than", "0", "--dry-run", "--store", store))
    keep("version", _json("version"))
    keep("cancel", _json("cancel", failed["run_id"], "--reason", "superseded", "--store", store))
    keep("cancel", _json("cancel", "backing-off", "--store", store))
    keep("runs", _json("runs", "--store", store))  # lists cancelled runs
    for run_id in (typed_id, paused["run_id"], failed["run_id"], service["run_id"], "backing-off"):
        keep("describe", _json("describe", run_id, "--store", store))
    for run_id, code in ((paused["run_id"], 0), (failed["run_id"], 1)):
        *entries, end = _lines("log", run_id, "--follow", "--store", store, code=code)
        for entry in entries:
            keep("log-entry", entry)
        keep("log-end", end)
    copied = store.parent / "copied"
    keep("copy", _json("copy", "--from", store, "--to", copied))
    keep("copy", _json("copy", "--from", store, "--to", copied, typed_id))  # already copied
    keep("rm", _json("rm", service["run_id"], "--store", store))
    keep("rm", _json("rm", typed_id, "--force", "--store", store))  # its replay's origin dangles
    keep("verify-lineage", _json("verify-lineage", "--store", store, code=1))
    return found


def _json_commands() -> set[str]:
    group = typer.main.get_command(app)
    context = group.make_context("wfctl", [], resilient_parsing=True)
    assert isinstance(group, typer.core.TyperGroup)
    names = set()
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        if any("--json" in getattr(p, "opts", ()) for p in command.params):
            names.add(name)
    return names


def test_every_command_with_json_has_a_document_type_and_a_schema() -> None:
    assert _json_commands() <= set(DOCUMENT_OF)
    for kind in {*DOCUMENT_OF.values(), *MODE_DOCUMENTS}:
        assert (SCHEMAS / f"{kind}.schema.json").is_file(), kind


def test_every_document_matches_its_schema(documents: dict[str, list[Any]]) -> None:
    assert set(documents) == {*DOCUMENT_OF.values(), *MODE_DOCUMENTS}
    for kind, found in documents.items():
        for document in found:
            _check(document, kind)


def test_the_store_covers_every_shape(documents: dict[str, list[Any]]) -> None:
    """The documents validated above hold the optional parts, not only empty lists."""
    statuses = {d["status"] for d in documents["run"]}
    assert statuses == {"completed", "paused", "failed", "interrupted"}
    assert any(d["retries"] for d in documents["run"]) and any(d["hints"] for d in documents["run"])
    assert any(d["requests"] for d in documents["run"])
    statuses = {r["status"] for d in documents["runs"] for r in d["runs"]}
    assert "queued" in statuses
    events = {(e["event"], e["status"]) for e in documents["worker-event"]}
    assert {("taken", None), ("ended", "completed"), ("idle", None)} <= events
    log_items = [c for d in documents["log"] for c in d["checkpoints"]]
    assert any(c["attempts"] for c in log_items) and any(c["answers"] for c in log_items)
    assert any(c["served_count"] for c in log_items)
    assert any(c["failures"] for c in log_items)
    assert any(row["source_error"] for d in documents["replay"] for row in d["steps"])
    gc = documents["gc"][0]
    assert gc["removed"] and gc["kept"]
    assert any(d["reused_answer_ids"] for d in documents["replay"])
    assert {d["reason"] is None for d in documents["cancel"]} == {True, False}
    assert "cancelled" in {r["status"] for r in documents["runs"][-1]["runs"]}
    assert {d["status"] for d in documents["log-end"]} == {"completed", "cancelled"}
    assert [bool(d["dangling_origins"]) for d in documents["rm"]] == [False, True]
    assert [d["copied_count"] > 0 for d in documents["copy"]] == [True, False]
    assert documents["copy"][1]["runs"][0]["outcome"] == "already_copied"


def test_follow_lines_are_the_log_entries(documents: dict[str, list[Any]]) -> None:
    """``log --follow --json`` prints, per checkpoint, what ``log --json`` lists for it."""
    log = documents["log"][1]  # the paused run, answered: followed once it had completed
    run_id = log["run"]["run_id"]
    followed = [e for e in documents["log-entry"] if e["run_id"] == run_id]
    assert [{k: v for k, v in e.items() if k not in ("schema", "run_id")} for e in followed] == (
        log["checkpoints"]
    )
    [end] = [e for e in documents["log-end"] if e["run_id"] == run_id]
    assert end["head_checkpoint_id"] == log["run"]["head_checkpoint_id"]


def test_names_follow_the_vocabulary() -> None:
    """Every key a schema names is snake_case ASCII, one name per concept.

    The stored record (``show``, ``export``) is left out: it is shown with the store's own keys.
    """
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            names.update(node.get("properties", {}))
            for key, value in node.items():
                if key != "stored_record":
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in SCHEMAS.glob("*.schema.json"):
        walk(_load(path))
    assert {n for n in names if not re.fullmatch(r"[a-z][a-z0-9_]*", n)} == {"$t"}  # a tag
    retired = {"workflow_name", "wf", "ts", "dt", "timestamp", "duration", "elapsed", "head"}
    assert not names & retired, names & retired


def test_values_are_the_codec_encoding_and_never_repr(documents: dict[str, list[Any]]) -> None:
    typed = documents["run"][0]
    [output] = typed["outputs"]
    assert output["when"] == {"$t": "datetime", "v": "2026-01-02T03:04:05+00:00"}
    assert output["mixed"]["pair"] == {"$t": "tuple", "v": ["x", 2]}
    assert output["mixed"]["by_number"] == {"$t": "dict", "v": [[1, "one"]]}
    replay = documents["replay"][0]
    rows = {row["key"]: row for row in replay["steps"]}
    assert rows["stamp#0"]["source_result"] == output["when"]
    assert rows["mixed#0"]["replay_result"] == output["mixed"]
    text = json.dumps(documents)
    assert "datetime.datetime(" not in text and "Decimal('" not in text


def test_times_are_utc_with_z(documents: dict[str, list[Any]]) -> None:
    run = documents["runs"][0]["runs"][0]
    assert run["created_at"].endswith("Z") and run["updated_at"].endswith("Z")
    assert all(d["cancelled_at"].endswith("Z") for d in documents["cancel"])
    assert all(c["created_at"].endswith("Z") for c in documents["log"][0]["checkpoints"])


@pytest.fixture(scope="module")
def greeted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one completed run (the errors below leave it unchanged)."""
    store = tmp_path_factory.mktemp("errors") / "store"
    run = wfctl("run", WORKFLOWS / "greet.py", "--store", store, "--json").json()["run_id"]
    return store, run


@pytest.mark.parametrize(
    "args",
    [
        ["runs", "--store", "{missing}"],
        ["log", "nope"],
        ["show", "nope.1"],
        ["export", "nope"],
        ["export", "{run}", "--output", "{missing}/out.json"],
        ["replay", "-c", "nope.0"],
        ["resume", "{run}"],
        ["run", "{missing}/flow.py"],
        ["pause", "{run}"],
        ["verify-lineage", "nope"],
        ["du", "nope"],
        ["du", "--store", "{missing}"],
        ["gc", "--older-than", "soon"],
        ["cancel", "nope"],
        ["cancel", "{run}"],
        ["rm", "nope"],
        ["rm", "{run}", "nope"],
        ["copy", "--from", "{missing}", "--to", "{missing}-too"],
        ["log", "nope", "--follow"],
        ["runs", "--bogus"],
        ["version", "--bogus"],
    ],
)
def test_errors_under_json_leave_stdout_empty(args: list[str], greeted: tuple[Path, str]) -> None:
    """An error is one line on stderr and exit 2; stdout stays empty (no error document)."""
    store, run = greeted
    values = {"run": run, "missing": str(store.parent / "missing")}
    filled = [arg.format(**values) for arg in args]
    if "--store" not in filled and filled[0] not in ("version", "copy"):
        filled += ["--store", str(store)]
    done = wfctl(*filled, "--json")
    assert done.code == 2, done.stderr
    assert done.stdout == ""
    done.error_line()


def test_what_a_workflow_prints_goes_to_stderr_under_json(tmp_path: Path) -> None:
    flow = tmp_path / "chatty.py"
    flow.write_text(
        "from wfctl import step, workflow\n\n"
        "@step\nasync def talk(x: str) -> str:\n    print('from a step')\n    return x\n\n"
        "@workflow(name='chatty')\nasync def chatty(message: str = 'a') -> str:\n"
        "    print('from the body')\n    return await talk(message)\n",
        encoding="utf-8",
    )
    store = tmp_path / "store"
    done = wfctl("run", flow, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == ["a"]  # stdout is the document alone
    assert "from the body" in done.stderr and "from a step" in done.stderr
    replayed = wfctl("replay", "-c", f"{done.json()['run_id']}.0", "--store", store, "--json")
    assert replayed.code == 0 and replayed.json()["identical"] is True
    queued = wfctl("submit", flow, "--store", store, "--json")
    assert queued.code == 0 and queued.json()["status"] == "queued"
    worked = wfctl(
        "worker", "--store", store, "--exit-when-idle", "--workflows", tmp_path, "--json"
    )
    assert worked.code == 0, worked.stderr
    events = [json.loads(line) for line in worked.stdout.splitlines()]  # JSON Lines alone
    assert [e["event"] for e in events] == ["taken", "ended", "idle"]
    assert "from the body" in worked.stderr and "from a step" in worked.stderr
    assert "from the body" in replayed.stderr
    people = wfctl("run", flow, "--store", store)
    assert "from the body" in people.stdout  # without --json, prints stay where they were
