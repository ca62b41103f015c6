"""No password of a store's URL reaches stdout, stderr or ``--json``, whatever wfctl does.

A role with a password (``scram-sha-256`` in the private server's ``pg_hba.conf``) owns a
database; every command runs the installed ``wfctl`` on a URL carrying that password in each
form libpq reads, and its whole output is searched for the password, as written and decoded.
The password has an ``@``, so the URLs carry it percent-encoded. Last, a server that goes away
under ``log --follow`` ends it in one line of wfctl's: the pool's retries print nothing (and a
session the server ends in a poll is replaced, as one ended between polls is).
"""

from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from tests.cli.conftest import WORKFLOWS, Invocation, base_env, wfctl, wfctl_executable
from wfctl.storage.testing import PrivateServer, private_postgres

#: What every password below holds: no output may contain it.
MARK = "Sekr3t"


@dataclass(frozen=True)
class Role:
    """A role that logs in with ``password`` only, owning ``dbname`` on ``server``."""

    server: PrivateServer
    name: str
    password: str
    dbname: str

    def url(self, *, password: str | None = None, form: str = "user") -> str:
        """The database's URL, the password (``password`` instead, if given) in ``form``."""
        secret = quote(self.password if password is None else password, safe="")
        where = f"host={self.server.socket_dir}&port={self.server.port}"
        socket = quote(self.server.socket_dir, safe="")
        return {
            "user": f"postgresql://{self.name}:{secret}@/{self.dbname}?{where}",
            "postgres": f"postgres://{self.name}:{secret}@/{self.dbname}?{where}",
            "query": f"postgresql://{self.name}@/{self.dbname}?{where}&password={secret}",
            "first": f"postgresql:///{self.dbname}?password={secret}&user={self.name}&{where}",
            "hosts": f"postgresql://{self.name}:{secret}@{socket}:{self.server.port},"
            f"{socket}:{self.server.port}/{self.dbname}",
            "none": f"postgresql://{self.name}@/{self.dbname}?{where}",
        }[form]


FORMS = ["user", "postgres", "query", "first", "hosts"]
#: The forms every command is run on (the others: a run and a listing).
SWEPT = ["user", "query"]


@pytest.fixture(scope="module")
def role(pg_server: PrivateServer) -> Iterator[Role]:
    """A password role and its database, the server asking it for its password."""
    name = f"secret_{secrets.token_hex(4)}"
    made = Role(pg_server, name, f"{MARK}-{secrets.token_hex(4)}@pw:/x", f"{name}_db")
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        conn.execute(
            f"CREATE ROLE {name} LOGIN PASSWORD '{made.password}'"
        )  # the test's own password
        conn.execute(f"CREATE DATABASE {made.dbname} OWNER {name}")
        [hba] = conn.execute("SHOW hba_file").fetchone() or [""]
        before = Path(hba).read_text(encoding="utf-8")
        Path(hba).write_text(f"local all {name} scram-sha-256\n{before}", encoding="utf-8")
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield made
    finally:
        with psycopg.connect(pg_server.url, autocommit=True) as conn:
            Path(hba).write_text(before, encoding="utf-8")
            conn.execute("SELECT pg_reload_conf()")


def _empty(role: Role) -> None:
    """Remove every run of the role's database (as the server's superuser)."""
    server = role.server
    url = f"postgresql://postgres@/{role.dbname}?host={server.socket_dir}&port={server.port}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "DO $$ BEGIN IF to_regclass('wfctl_runs') IS NOT NULL THEN"
            " TRUNCATE wfctl_runs, wfctl_checkpoints; END IF; END $$"
        )


def _clean(done: Invocation, code: int = 0) -> Invocation:
    """Assert the exit code and that no output holds the password; return ``done``."""
    everything = done.stdout + done.stderr
    assert MARK not in everything, everything
    assert "Traceback" not in done.stderr, done.stderr
    assert done.code == code, done.stderr
    return done


@pytest.mark.parametrize("form", FORMS)
def test_a_run_and_a_listing_show_the_store_without_its_password(role: Role, form: str) -> None:
    _empty(role)
    url = role.url(form=form)
    ran = _clean(wfctl("run", WORKFLOWS / "greet.py", "--run-id", "g1", "--store", url, "--json"))
    assert ran.json()["store"].startswith(url.split(":", 1)[0])
    assert "g1" in _clean(wfctl("runs", "--store", url)).stdout
    assert _clean(wfctl("runs", "--store", url, "--json")).json()["store"] == ran.json()["store"]


@pytest.mark.parametrize("form", SWEPT)
def test_no_command_prints_the_password_of_its_store(role: Role, form: str, tmp_path: Path) -> None:
    _empty(role)
    url = role.url(form=form)
    ran = _clean(wfctl("run", WORKFLOWS / "greet.py", "--run-id", "g1", "--store", url, "--json"))
    assert ran.json()["status"] == "completed"
    assert ran.json()["store"].startswith(("postgresql://", "postgres://"))
    _clean(wfctl("run", WORKFLOWS / "greet.py", "--run-id", "g2", "--store", url))
    listed = _clean(wfctl("runs", "--store", url, "--json"))
    assert {r["run_id"] for r in listed.json()["runs"]} >= {"g1", "g2"}
    assert "g1" in _clean(wfctl("runs", "--store", url)).stdout
    _clean(wfctl("log", "g1", "--store", url, "--json"))
    _clean(wfctl("log", "g1", "--store", url))
    _clean(wfctl("show", "g1.0", "--store", url, "--json"))
    _clean(wfctl("export", "g1", "--format", "json", "--store", url))
    _clean(wfctl("verify-lineage", "--store", url, "--json"))
    _clean(wfctl("verify-lineage", "--store", url))
    copied = _clean(wfctl("copy", "--from", url, "--to", tmp_path / "copy", "--json"))
    assert json.dumps(copied.json())
    _clean(wfctl("copy", "--from", tmp_path / "copy", "--to", url))
    _clean(wfctl("submit", WORKFLOWS / "greet.py", "--run-id", "q1", "--store", url, "--json"))
    _clean(wfctl("submit", WORKFLOWS / "greet.py", "--run-id", "q2", "--store", url))
    worked = wfctl("worker", "--store", url, "--json", "--exit-when-idle", "--workflows", WORKFLOWS)
    _clean(worked)
    _clean(wfctl("worker", "--store", url, "--exit-when-idle", "--workflows", WORKFLOWS))
    _clean(wfctl("gc", "--store", url, "--dry-run", "--json"))
    _clean(wfctl("gc", "--store", url, "--yes"))
    _clean(wfctl("rm", "g2", "q1", "q2", "--store", url, "--json", "--yes"))


@pytest.mark.parametrize("form", FORMS)
def test_a_wrong_password_is_refused_without_being_printed(role: Role, form: str) -> None:
    wrong = role.url(password=f"{MARK}-wrong@pw", form=form)
    for args in (("runs", "--json"), ("runs",), ("log", "nope")):
        done = _clean(wfctl(*args, "--store", wrong), code=2)
        line = done.error_line()
        assert "password authentication failed" in line and "***" in line, line
        assert done.stdout == ""


def test_a_failed_run_hints_at_commands_without_the_password(role: Role, tmp_path: Path) -> None:
    _empty(role)
    url = role.url(form="query")
    given = json.dumps(str(tmp_path))
    args = ("--store", url, "--trust-store")
    done = _clean(
        wfctl(
            "run", WORKFLOWS / "flaky.py", "--input", given, "--run-id", "f1", *args[:2], "--json"
        ),
        code=1,
    )
    assert done.json()["hints"], done.stdout
    assert "password=***" in done.stdout
    _clean(wfctl("run", WORKFLOWS / "flaky.py", "--input", given, "--run-id", "f2", *args[:2]), 1)
    again = _clean(wfctl("resume", "f1", *args, "--json"), code=1)
    assert again.json()["store"].endswith("password=***")
    _clean(wfctl("resume", "f2", *args), code=1)
    _clean(wfctl("replay", "--checkpoint", "f1.1", *args, "--json"), code=1)
    _clean(wfctl("replay", "--checkpoint", "f1.1", *args), code=1)
    (tmp_path / "fixed").touch()
    fixed = _clean(wfctl("resume", "f1", *args, "--json"))
    assert fixed.json()["store"].endswith("password=***")
    _clean(wfctl("pause", "f1", "--store", url), code=2)  # completed: nothing to pause
    _clean(wfctl("cancel", "f2", "--store", url, "--json"))


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://bob:{MARK}@[::1:5432/wf",
        f"postgresql://bob:{MARK}@x@localhost/wf",
        f"postgresql://bob:{MARK}/x@localhost/wf",
        f"postgresql://localhost?password={MARK}@x",
        f"postgresql://localhost/wf?password={MARK}&x",
        f"postgresql://localhost/wf?password=a={MARK}",
        f"postgresql://bob:{MARK}%zz@localhost/wf",
        f"postgresql://bob:{MARK}@localhost/wf?nonsense=1",
        f"postgres://bob:{MARK}@localhost:notaport/wf",
        f"host=/nowhere password={MARK}",
        f"host=/nowhere password='{MARK} x'",
        f"mysql://bob:{MARK}@localhost/wf",
    ],
)
def test_a_malformed_url_is_refused_in_one_line_without_its_password(url: str) -> None:
    for args in (("runs", "--json"), ("log", "r1"), ("run", WORKFLOWS / "greet.py")):
        done = _clean(wfctl(*args, "--store", url), code=2)
        done.error_line()
        assert done.stdout == ""


def test_a_password_from_pgpassword_or_a_pgpass_file_is_used(role: Role, tmp_path: Path) -> None:
    url = role.url(form="none")
    missing = _clean(wfctl("runs", "--store", url, env={"PGPASSFILE": str(tmp_path / "none")}), 2)
    assert "password" in missing.error_line()
    _clean(wfctl("runs", "--store", url, env={"PGPASSWORD": role.password}))
    passfile = tmp_path / "pgpass"
    escaped = role.password.replace("\\", "\\\\").replace(":", "\\:")
    passfile.write_text(f"*:*:*:{role.name}:{escaped}\n", encoding="utf-8")
    passfile.chmod(0o600)
    done = _clean(wfctl("runs", "--store", url, "--json", env={"PGPASSFILE": str(passfile)}))
    assert done.json()["store"] == url


def test_a_server_gone_under_log_follow_ends_it_in_one_line() -> None:
    """The pool's failed reconnections (psycopg's warnings) are not printed; wfctl's line is."""

    def stop_between_polls(follower: subprocess.Popen[str]) -> None:
        _await_clients(server, "idle", 2)  # the follower settled to polling
        _stop(server)

    with private_postgres() as server:
        code, stdout, stderr = _follow(server, stop_between_polls)
    assert code == 2, stderr
    assert "q1.0" in stdout
    # The pool retried until its timeout; wfctl's own last attempt says why, in one line.
    [line] = stderr.splitlines()
    assert line.startswith("wfctl: error: store 'postgresql://"), line
    assert "cannot be reached: " in line and "No such file or directory" in line, line


def test_a_session_ended_in_a_follower_poll_is_replaced_and_following_goes_on() -> None:
    """A lock on the runs table holds the follower's next poll in the server, which ends its
    session there, as a server restarting does: the poll runs again on another session, as one
    between polls would (not an error), and follows the run to its end."""

    def end_the_held_poll(follower: subprocess.Popen[str]) -> None:
        _await_clients(server, "idle", 2)  # the follower settled to polling
        with psycopg.connect(server.url) as locker:  # committed (the lock let go) at its end
            locker.execute("LOCK TABLE wfctl_runs IN ACCESS EXCLUSIVE MODE")
            _await_clients(server, "active", 1, waiting_on="Lock")
            ended = locker.execute(  # returns once the session is gone (or after 60 s: False)
                "SELECT pg_terminate_backend(pid, 60000) FROM pg_stat_activity WHERE"
                " wait_event_type = 'Lock' AND backend_type = 'client backend'"
                " AND pid <> pg_backend_pid()"
            ).fetchall()
            assert ended == [(True,)], ended
            _await_clients(server, "active", 1, waiting_on="Lock", alive=follower)  # sent again
        drove = wfctl("worker", "--exit-when-idle", "--store", server.url)
        assert drove.code == 0, drove.stderr

    with private_postgres() as server:
        code, stdout, stderr = _follow(server, end_the_held_poll)
    assert (code, stderr) == (0, "")
    assert "q1.0" in stdout and "completed" in stdout, stdout


def _follow(
    server: PrivateServer, meanwhile: Callable[[subprocess.Popen[str]], None]
) -> tuple[int, str, str]:
    """Run ``log --follow`` on a queued run, call ``meanwhile`` with it once it printed the
    run's first record, and return its exit code, stdout and stderr (psycopg's words checked
    absent)."""
    queued = wfctl("submit", WORKFLOWS / "greet.py", "--run-id", "q1", "--store", server.url)
    assert queued.code == 0, queued.stderr
    follower = subprocess.Popen(
        [wfctl_executable(), "log", "q1", "--follow", "--store", server.url],
        env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        assert follower.stdout is not None
        printed = ""  # the run's first record printed: log has read it and follows now
        while "q1.0" not in printed:  # read from the pipe's descriptor: nothing buffered
            ready_to_read, _, _ = select.select([follower.stdout], [], [], 1.0)
            assert time.monotonic() < deadline, "log --follow printed no record"
            if ready_to_read:
                chunk = os.read(follower.stdout.fileno(), 65536)
                assert chunk, follower.communicate()
                printed += chunk.decode()
        assert follower.poll() is None, follower.communicate()
        meanwhile(follower)
        stdout, stderr = follower.communicate(timeout=120)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    assert "error connecting" not in stderr, stderr
    return follower.returncode, printed + stdout, stderr


def _await_clients(
    server: PrivateServer,
    state: str,
    n: int,
    waiting_on: str = "",
    alive: subprocess.Popen[str] | None = None,
) -> None:
    """Wait (bounded) until ``n`` connections of others are in ``state`` (and wait on
    ``waiting_on``, if given): the follower's two once it settled to polling, or its poll held.
    With ``alive``, that process ending first fails the test with its output."""
    end = time.monotonic() + 60
    query = (
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"
        " AND pid <> pg_backend_pid() AND state = %s"
        " AND (%s = '' OR wait_event_type = %s)"
    )
    while True:
        with psycopg.connect(server.url, autocommit=True) as conn:
            row = conn.execute(query, (state, waiting_on, waiting_on)).fetchone()
        if row is not None and int(row[0]) >= n:
            return
        assert alive is None or alive.poll() is None, alive.communicate()
        assert time.monotonic() < end, f"no {n} connections {state} {waiting_on}".rstrip()
        time.sleep(0.02)


def _stop(server: PrivateServer) -> None:
    """Stop the server for good (the ``with`` block's end finds it stopped)."""
    from wfctl._storage._pg_server import _run, find_bindir

    bindir = find_bindir()
    assert bindir is not None
    _run(bindir, server.socket_dir, "pg_ctl", "-D", server.data_dir, "-m", "fast", "-w", "stop")
    assert not os.path.exists(os.path.join(server.socket_dir, f".s.PGSQL.{server.port}"))
