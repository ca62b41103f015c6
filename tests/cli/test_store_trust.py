"""Whole-store commands (``runs``, ``gc``, ``verify-lineage``) trust only what they verified.

- A store named by ``--store`` or ``WFCTL_STORE`` that does not exist, and any store path that
  is not a directory, is refused by every read command in one line (exit 2): a typo in a CI
  check must not pass as "no runs". The default ``./.wfctl`` (and a configured store) may be
  missing: that is a project before its first run, which has no runs (exit 0).
- A run with an edited record anywhere in its journal is ``corrupt`` in ``runs`` and is never
  removed by ``gc``, whatever its last record says.
- A run whose journal cannot be read is reported as ``unreadable`` and the other runs are
  still listed, verified and collected. Tests run as root, which reads any file whatever its
  mode, so the command runs without the capabilities that let root ignore file permissions
  (``CAP_DAC_OVERRIDE``, ``CAP_DAC_READ_SEARCH``, dropped from the bounding set before exec):
  the journal's ``open`` really fails with ``EACCES``, as it does for a user who cannot read it.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import (
    WORKFLOWS,
    Invocation,
    invoke,
    run_id_of,
    wfctl,
)

GREET = WORKFLOWS / "greet.py"
#: Every command that reads a store, with the arguments it needs (ids that would not exist).
READ_COMMANDS = [
    ["runs"],
    ["gc", "--older-than", "0s"],
    ["verify-lineage"],
    ["log", "r1"],
    ["show", "r1.0"],
    ["export", "r1"],
    ["pause", "r1"],
]


def _completed_run(store: Path) -> str:
    return run_id_of(invoke("run", GREET, "--store", store, "--json"))


def _journal(store: Path, run_id: str) -> Path:
    return store / "runs" / run_id / "journal.jsonl"


# -- a store that is missing or is not a directory ---------------------------------------------


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: a[0])
def test_a_named_store_that_does_not_exist_is_refused(args: list[str], tmp_path: Path) -> None:
    typo = tmp_path / "stor"
    done = wfctl(*args, "--store", typo, "--json")
    assert done.code == 2, done
    assert done.error_line() == f"wfctl: error: store '{typo}' does not exist"
    assert done.stdout == ""
    by_env = wfctl(*args, "--json", env={"WFCTL_STORE": str(typo)})
    assert by_env.code == 2, by_env
    assert by_env.error_line() == f"wfctl: error: store '{typo}' does not exist"
    assert not typo.exists()  # reading never creates it


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: a[0])
def test_a_store_that_is_a_file_is_refused(args: list[str], tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("not a store\n")
    done = wfctl(*args, "--store", afile)
    assert done.code == 2, done
    assert done.error_line() == f"wfctl: error: store '{afile}' is not a directory"
    assert afile.read_text() == "not a store\n"


def test_the_default_store_may_not_exist_yet(workdir: Path) -> None:
    runs = wfctl("runs", cwd=workdir)
    assert runs.code == 0 and runs.stdout.startswith(f"no runs in {workdir / '.wfctl'}")
    listed = wfctl("runs", "--json", cwd=workdir).json()
    assert listed["schema"] == "wfctl/runs@1" and listed["run_count"] == 0
    assert (listed["store"], listed["runs"], listed["total_run_count"]) == (
        str(workdir / ".wfctl"),
        [],
        0,
    )
    verify = wfctl("verify-lineage", cwd=workdir)  # nothing to verify is not a pass
    assert verify.code == 2 and verify.stdout == "", verify
    assert verify.error_line() == (
        f"wfctl: error: store '{workdir / '.wfctl'}' holds no run; nothing was verified"
    )
    gc = wfctl("gc", "--json", cwd=workdir)
    assert gc.code == 0 and gc.json()["removed"] == []
    assert list(workdir.iterdir()) == []  # nothing created
    (workdir / "wfctl.toml").write_text('store = "state/checkpoints"\n')  # configured: the same
    configured = wfctl("runs", "--json", cwd=workdir)
    assert configured.code == 0, configured
    assert configured.json()["runs"] == []
    assert not (workdir / "state").exists()


def test_the_default_store_as_a_file_is_refused(workdir: Path) -> None:
    (workdir / ".wfctl").write_text("")
    for args in (["runs"], ["verify-lineage"], ["gc"]):
        done = wfctl(*args, cwd=workdir)
        assert done.code == 2, done
        assert done.error_line() == f"wfctl: error: store '{workdir / '.wfctl'}' is not a directory"


def test_an_existing_empty_store_has_no_runs(store: Path) -> None:
    store.mkdir()
    assert wfctl("runs", "--store", store, "--json").json()["run_count"] == 0
    # A verification of no run is not a pass: no document, one line, exit 2.
    done = wfctl("verify-lineage", "--store", store, "--json")
    assert done.code == 2 and done.stdout == "", done
    assert done.error_line() == f"wfctl: error: store '{store}' holds no run; nothing was verified"


# -- a run with an edited middle record ----------------------------------------------------------


def test_runs_and_gc_do_not_trust_a_run_with_an_edited_middle_record(store: Path) -> None:
    edited = _completed_run(store)
    healthy = _completed_run(store)
    journal = _journal(store, edited)
    lines = journal.read_bytes().split(b"\n")
    assert b'"kind":"step"' in lines[1] and b"WORLD" in lines[1]
    lines[1] = lines[1].replace(b"WORLD", b"WORLX")  # the head still says completed
    journal.write_bytes(b"\n".join(lines))
    where = f"{journal}:2"

    listed = wfctl("runs", "--store", store, "--json")
    assert listed.code == 0
    by_id = {r["run_id"]: r for r in listed.json()["runs"]}
    assert by_id[edited]["status"] == "corrupt"
    assert by_id[edited]["problem"].startswith(f"{where}: checksum mismatch")
    assert by_id[healthy]["status"] == "completed"
    only_corrupt = wfctl("runs", "--status", "corrupt", "--store", store, "--json")
    assert [r["run_id"] for r in only_corrupt.json()["runs"]] == [edited]
    people = wfctl("runs", "--store", store)
    assert people.code == 0 and "corrupt" in people.stdout

    gc = wfctl("gc", "--older-than", "0s", "--store", store, "--json")
    assert gc.code == 0, gc
    report = gc.json()
    assert [r["run_id"] for r in report["removed"]] == [healthy]
    assert [(k["run_id"], k["status"]) for k in report["kept"]] == [(edited, "corrupt")]
    assert "corrupt" in report["kept"][0]["reason"]
    assert journal.exists() and not _journal(store, healthy).exists()
    assert wfctl("verify-lineage", edited, "--store", store).code == 1


def test_gc_keeps_a_run_whose_records_verify_but_do_not_chain(store: Path) -> None:
    run_id = _completed_run(store)
    journal = _journal(store, run_id)
    lines = journal.read_bytes().split(b"\n")
    del lines[1]  # every remaining record verifies; seq 1 is missing
    journal.write_bytes(b"\n".join(lines))
    gc = wfctl("gc", "--older-than", "0s", "--store", store, "--json")
    assert gc.code == 0 and gc.json()["removed"] == []
    (kept,) = gc.json()["kept"]
    assert kept["status"] == "corrupt"
    assert journal.exists()
    (run,) = wfctl("runs", "--store", store, "--json").json()["runs"]
    assert run["status"] == "corrupt" and "expected seq 1" in run["problem"]


# -- a run that cannot be read -------------------------------------------------------------------

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _without_file_permission_override() -> None:  # pragma: no cover - runs in the child
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _as_plain_user(*args: str | os.PathLike[str]) -> Invocation:
    """Run the installed ``wfctl`` so that file modes apply to it, even as root."""
    preexec = _without_file_permission_override if os.geteuid() == 0 else None
    try:
        return wfctl(*args, preexec_fn=preexec)
    except subprocess.SubprocessError as exc:  # pragma: no cover - a container without SETPCAP
        pytest.skip(f"cannot drop the file-permission capabilities: {exc}")


@pytest.mark.skipif(os.name != "posix" or not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_an_unreadable_run_is_reported_and_the_others_go_on(store: Path) -> None:
    unreadable = _completed_run(store)
    readable = _completed_run(store)
    journal = _journal(store, unreadable)
    journal.chmod(0)
    try:
        probe = _as_plain_user("show", f"{unreadable}.0", "--store", store)
        if probe.code != 2 or "Permission denied" not in probe.stderr:  # pragma: no cover
            pytest.skip(f"file modes do not apply here: {probe}")

        listed = _as_plain_user("runs", "--store", store, "--json")
        assert listed.code == 0, listed
        by_id = {r["run_id"]: r for r in listed.json()["runs"]}
        assert by_id[unreadable]["status"] == "unreadable"
        assert by_id[unreadable]["problem"] == f"{journal}: cannot read: Permission denied"
        assert by_id[readable]["status"] == "completed"

        # Commands about one run no longer stop at another run they cannot read.
        log = _as_plain_user("log", readable, "--store", store, "--json")
        assert log.code == 0, log
        assert log.json()["run"]["status"] == "completed"

        verified = _as_plain_user("verify-lineage", "--store", store, "--json")
        assert verified.code == 1, verified
        verdicts = {v["run_id"]: v for v in verified.json()["runs"]}
        assert verdicts[readable]["ok"] is True
        assert verdicts[unreadable]["ok"] is False
        assert f"{journal}: cannot read: Permission denied" in verdicts[unreadable]["problems"]

        gc = _as_plain_user("gc", "--older-than", "0s", "--store", store, "--json")
        assert gc.code == 0, gc
        assert [r["run_id"] for r in gc.json()["removed"]] == [readable]
        (kept,) = gc.json()["kept"]
        assert (kept["run_id"], kept["status"]) == (unreadable, "unreadable")
        assert journal.exists() and not _journal(store, readable).exists()
    finally:
        journal.chmod(0o600)
