"""A private, throwaway PostgreSQL server in a temporary directory, for tests and benchmarks.

It runs the server binaries of the machine (``pg_config --bindir``, else ``WFCTL_PG_BINDIR``,
else ``PATH``) on a Unix socket in its own directory, with ``fsync`` and
``synchronous_commit`` on (the defaults: what a user's server does). PostgreSQL refuses to run
as root, so under root the server runs as the ``postgres`` system user (``runuser``), with a
data directory that user owns.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from wfctl._errors import WfctlError

__all__ = [
    "PostgresUnavailableError",
    "PrivateServer",
    "find_bindir",
    "private_postgres",
    "restart",
]


class PostgresUnavailableError(WfctlError):
    """Raised when no PostgreSQL server binaries are found, or the server does not start."""


@dataclass(frozen=True, slots=True)
class PrivateServer:
    """A running private server: connect with :attr:`url`."""

    socket_dir: str
    port: int
    data_dir: str
    user: str = "postgres"
    dbname: str = "postgres"
    #: The server's settings as ``pg_ctl -o`` takes them (to start it again in place).
    settings: str = ""

    @property
    def url(self) -> str:
        """A ``postgresql://`` URL for the server's socket (no password: trust auth)."""
        return f"postgresql://{self.user}@/{self.dbname}?host={self.socket_dir}&port={self.port}"


def find_bindir() -> Path | None:
    """Return the directory of ``initdb``/``pg_ctl``, or None if none is installed."""
    explicit = os.environ.get("WFCTL_PG_BINDIR")
    if explicit:
        return Path(explicit)
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            out = subprocess.run(
                [pg_config, "--bindir"], check=True, capture_output=True, text=True
            ).stdout.strip()
            if (Path(out) / "initdb").exists():
                return Path(out)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb is not None else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def private_postgres(*options: str) -> Iterator[PrivateServer]:
    """Start a private server for the ``with`` block; stop it and remove its files after.

    Args:
        options: extra ``name=value`` settings for the server (each becomes ``-c``).

    Raises:
        PostgresUnavailableError: no server binaries, or the server did not start (the
            message holds the end of its log).
    """
    bindir = find_bindir()
    if bindir is None:
        raise PostgresUnavailableError(
            "no PostgreSQL server binaries found (pg_config --bindir, WFCTL_PG_BINDIR or PATH)"
        )
    base = tempfile.mkdtemp(prefix="wfctl-pg-")
    try:
        if _as_root():
            shutil.chown(base, "postgres")
        data = os.path.join(base, "data")
        _run(
            bindir,
            base,
            "initdb",
            "-D",
            data,
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-sync",
        )
        port = _free_port()
        settings = " ".join(
            [
                "-c listen_addresses=''",
                f"-k {base}",
                f"-p {port}",
                "-c max_connections=200",
                *(f"-c {o}" for o in options),
            ]
        )
        _run(
            bindir,
            base,
            "pg_ctl",
            "-D",
            data,
            "-o",
            settings,
            "-l",
            os.path.join(base, "log"),
            "-w",
            "start",
        )
        try:
            yield PrivateServer(base, port, data, settings=settings)
        finally:
            with contextlib.suppress(PostgresUnavailableError):
                _run(bindir, base, "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def restart(server: PrivateServer, *, mode: str = "fast") -> None:
    """Restart the server in place (same socket and port): what a crash-and-recover looks like.

    Raises:
        PostgresUnavailableError: the server did not come back.
    """
    bindir = find_bindir()
    assert bindir is not None, "the server was started, so its binaries exist"
    base = server.socket_dir
    _run(
        bindir,
        base,
        "pg_ctl",
        "-D",
        server.data_dir,
        "-m",
        mode,
        "-l",
        os.path.join(base, "log"),
        "-w",
        "restart",
    )


@contextlib.contextmanager
def stopped(server: PrivateServer) -> Iterator[None]:
    """Stop the server as a crash does (``-m immediate``) for the ``with`` block, then start it
    again in place (same socket and port): an outage the block's code lives through.

    Raises:
        PostgresUnavailableError: the server did not stop, or did not come back.
    """
    bindir = find_bindir()
    assert bindir is not None, "the server was started, so its binaries exist"
    base, data = server.socket_dir, server.data_dir
    _run(bindir, base, "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
    try:
        yield
    finally:
        log = os.path.join(base, "log")
        _run(bindir, base, "pg_ctl", "-D", data, "-o", server.settings, "-l", log, "-w", "start")


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _run(bindir: Path, base: str, program: str, *args: str) -> None:
    """Run a server program (as ``postgres`` under root; its log goes to a file, never a pipe
    the server would keep open)."""
    prefix = ["runuser", "-u", "postgres", "--"] if _as_root() else []
    argv = [*prefix, str(bindir / program), *args]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=base, check=False)
    if done.returncode != 0:
        log = Path(base, "log")
        tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
        output = (done.stderr or done.stdout).strip()[-400:]
        raise PostgresUnavailableError(
            f"{program} failed ({done.returncode}): {output} {tail}".strip()
        )
