"""The server's time for a PostgreSQL save: the schema's append trigger against alternatives.

    python bench/pg_append.py [--steps 1000] [--rounds 5] [--synchronous-commit on|off]
                              [--client-gap-us 200] [--only schema,no_trigger,...]

One private PostgreSQL server (``pg_stat_statements``, ``track_functions=all``) and one database
per variant: wfctl's schema as this tree creates it, then the variant's SQL. Each round, for each
variant in turn, one run is granted a fence and N+1 checkpoint rows (a root, then steps of a
100-character argument and result, the records wfctl writes for them) are inserted with the
prepared ``INSERT`` a lease sends, over one autocommit connection at the level of libpq. Per
variant, the median over the rounds of: the server's execution time per ``INSERT``
(``pg_stat_statements``; its trigger included, the commit not), the append trigger's own time
(``pg_stat_user_functions``), the wall time per ``INSERT`` on the client, WAL bytes per
``INSERT``, and how many of the run row's updates were HOT. The server's times are what to
compare when other work loads the machine; the wall time holds the commit's flush
(``--synchronous-commit off`` takes it out: not a durable setting, a way to see the rest) and
the client's own time. ``--client-gap-us`` keeps the client's CPU busy before each ``INSERT``,
as an engine's step does: the server then runs its statements with colder caches, and a
trigger's longer path pays more for it than a plain ``INSERT``.

The variants: ``schema`` (as created), bodies of the trigger that keep every check
(``lean_body``: only the head column updated, no ``CASE``; ``scalar_vars``: no row variable),
table settings (``fillfactor_50`` on ``wfctl_runs``; ``no_created_index``: without the index on
``created``, whose change could prevent a HOT update), a design of constraints
(``fk_chain``: a self-referencing foreign key on the parent's seq and checks instead of the
head's compare-and-set, no trigger; ``fk_chain_fence``: the same with a trigger that only locks
the run's row at the writer's fence), a trigger that locks the run's row instead of updating it
and compares the run's ``max(seq)`` (``lock_and_max``: the head no longer stored), and bounds
that drop guarantees, for scale only (``select_only``: a trigger that reads the run's row and
checks nothing; ``empty_trigger``; ``no_trigger``; ``floor``: the benchmark floor's INSERT of
300 bytes into a table of its own).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the wfctl being developed

import psycopg

from wfctl._records._checkpoint import Checkpoint, Kind, checkpoint_id_for
from wfctl._storage._journal import encode_record
from wfctl._storage._postgres import _sql
from wfctl._storage._postgres._schema import _DDL
from wfctl.storage.testing import private_postgres

_TEXT = "abcdefghijklmnopqrstuvwxyz0123456789" * 3
#: The head's compare-and-set conditions of the schema's trigger, for the bodies below.
_CHECKS = """WHERE run_id = NEW.run_id AND head_seq = NEW.seq - 1 AND fence = NEW.fence
        AND (NEW.seq = 0) = (NEW.kind = 'root')
        AND NEW.prev IS NOT DISTINCT FROM (CASE WHEN NEW.seq = 0 THEN NULL
            ELSE NEW.run_id || '.' || (NEW.seq - 1) END)"""
_REFUSE = """
    SELECT fence, head_seq INTO cur_fence, cur_head FROM wfctl_runs WHERE run_id = NEW.run_id;
    IF NOT FOUND THEN RAISE EXCEPTION 'wfctl:nolease:-1' USING ERRCODE = 'P0001'; END IF;
    IF NEW.fence IS DISTINCT FROM cur_fence THEN
        RAISE EXCEPTION 'wfctl:fence:%', cur_fence USING ERRCODE = 'P0001';
    END IF;
    RAISE EXCEPTION 'wfctl:head:%', cur_head USING ERRCODE = 'P0001';"""
_FK_CHAIN = """
ALTER TABLE wfctl_checkpoints ADD COLUMN prev_seq bigint
        GENERATED ALWAYS AS (CASE WHEN seq = 0 THEN NULL ELSE seq - 1 END) STORED,
    ADD FOREIGN KEY (run_id, prev_seq) REFERENCES wfctl_checkpoints (run_id, seq),
    ADD CHECK ((seq = 0) = (kind = 'root')),
    ADD CHECK (prev IS NOT DISTINCT FROM (CASE WHEN seq = 0 THEN NULL
        ELSE run_id || '.' || (seq - 1) END));"""


def _append(body: str) -> str:
    """The SQL replacing the append trigger's function with ``body``."""
    return (
        "CREATE OR REPLACE FUNCTION wfctl_append() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"DECLARE cur_fence bigint; cur_head bigint;\nBEGIN\n{body}\nEND $$;"
    )


_DROP_TRIGGER = "DROP TRIGGER wfctl_append ON wfctl_checkpoints;"
#: Variant -> the SQL run after the schema's own.
VARIANTS: dict[str, str] = {
    "schema": "",
    "lean_body": _append(
        f"UPDATE wfctl_runs SET head_seq = NEW.seq {_CHECKS};\n"
        "IF FOUND THEN RETURN NEW; END IF;" + _REFUSE
    ),
    "scalar_vars": _append(
        "UPDATE wfctl_runs SET head_seq = NEW.seq, head_kind = NEW.kind, updated = NEW.ts,"
        " workflow_name = CASE WHEN NEW.seq = 0 THEN NEW.workflow_name ELSE workflow_name END,"
        f" created = CASE WHEN NEW.seq = 0 THEN NEW.ts ELSE created END {_CHECKS};\n"
        "IF FOUND THEN RETURN NEW; END IF;" + _REFUSE
    ),
    "fillfactor_50": "ALTER TABLE wfctl_runs SET (fillfactor = 50);",
    "no_created_index": "DROP INDEX wfctl_runs_created;",
    "fk_chain": _DROP_TRIGGER + _FK_CHAIN,
    "fk_chain_fence": _FK_CHAIN
    + _append(
        "PERFORM 1 FROM wfctl_runs WHERE run_id = NEW.run_id AND fence = NEW.fence FOR SHARE;\n"
        "IF FOUND THEN RETURN NEW; END IF;" + _REFUSE
    ),
    "lock_and_max": _append(
        "PERFORM 1 FROM wfctl_runs WHERE run_id = NEW.run_id AND fence = NEW.fence"
        " FOR NO KEY UPDATE;\nIF FOUND THEN\n"
        "SELECT max(seq) INTO cur_head FROM wfctl_checkpoints WHERE run_id = NEW.run_id;\n"
        "IF coalesce(cur_head, -1) = NEW.seq - 1 AND (NEW.seq = 0) = (NEW.kind = 'root')"
        " AND NEW.prev IS NOT DISTINCT FROM (CASE WHEN NEW.seq = 0 THEN NULL"
        " ELSE NEW.run_id || '.' || (NEW.seq - 1) END) THEN RETURN NEW; END IF;\nEND IF;" + _REFUSE
    ),
    "select_only": _append(
        "SELECT fence, head_seq INTO cur_fence, cur_head FROM wfctl_runs"
        " WHERE run_id = NEW.run_id;\nRETURN NEW;"
    ),
    "empty_trigger": _append("RETURN NEW;"),
    "no_trigger": _DROP_TRIGGER,
    "floor": "CREATE TABLE bench_floor (id bigserial PRIMARY KEY, body text NOT NULL);",
}
_PREPARE_FLOOR = (
    "PREPARE wfctl_save (text, bigint, text, text, text, text, bigint, bytea) AS"
    " INSERT INTO bench_floor (body) VALUES ($1)"
)


def rows(run_id: str, fence: int, n: int) -> list[tuple[bytes | None, ...]]:
    """The prepared INSERT's parameters for a root and ``n`` steps of run ``run_id``."""
    params: list[tuple[bytes | None, ...]] = []
    for seq in range(n + 1):
        text = f"call-{seq:09d}-{_TEXT}"[:100]
        checkpoint = Checkpoint(
            run_id=run_id,
            seq=seq,
            kind=Kind.ROOT if seq == 0 else Kind.STEP,
            workflow_name="bench_pg_sequential",
            timestamp="2026-01-01T00:00:00.000000+00:00",
            previous_checkpoint_id=checkpoint_id_for(run_id, seq - 1) if seq else None,
            data={
                "steps": [
                    {
                        "key": f"echo#{seq}",
                        "digest": "86ce8f61450afdda",
                        "args": [text],
                        "result": text[::-1],
                        "dt": 1.2e-05,
                    }
                ]
            },
        )
        parent = checkpoint.previous_checkpoint_id
        params.append(
            (
                run_id.encode(),
                b"%d" % seq,
                checkpoint.kind.encode(),
                None if parent is None else parent.encode(),
                checkpoint.workflow_name.encode(),
                checkpoint.timestamp.encode(),
                b"%d" % fence,
                encode_record(checkpoint)[:-1],
            )
        )
    return params


def measure(
    url: str, variant: str, round_: int, n: int, synchronous_commit: str, gap: float
) -> dict[str, Any]:
    """Insert one run's ``n + 1`` rows into the variant's database, the client busy for
    ``gap`` seconds before each; return what it cost."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET synchronous_commit = {synchronous_commit}")
        run_id = f"run{round_}"
        granted = conn.execute(
            "INSERT INTO wfctl_runs (run_id, fence, holder) VALUES (%s, nextval('wfctl_fence'),"
            " 'bench') RETURNING fence",
            (run_id,),
        ).fetchone()
        assert granted is not None
        params = rows(run_id, int(granted[0]), n)
        if variant == "floor":
            conn.execute(_PREPARE_FLOOR)
            params = [(p[7][:300], *p[1:7], b"") for p in params]
        else:
            conn.execute(_sql.PREPARE_SAVE)
        before = _counters(conn)
        pgconn = conn.pgconn
        started = time.perf_counter()
        for one in params:
            busy_until = time.perf_counter() + gap
            while time.perf_counter() < busy_until:  # as an engine's CPU between steps
                pass
            result = pgconn.exec_prepared(_sql.SAVE, one, _sql.SAVE_FORMATS)
            if result.status != psycopg.pq.ExecStatus.COMMAND_OK:
                raise SystemExit(f"{variant}: {result.error_message.decode(errors='replace')}")
        wall = time.perf_counter() - started
        conn.execute("SELECT pg_stat_force_next_flush()")  # this session's table counters
        conn.execute("SELECT 1")
        after = _counters(conn)
    inserts = len(params)
    return {
        "exec_ms": (after["exec_ms"] - before["exec_ms"]) / inserts,
        "trigger_ms": (after["trigger_ms"] - before["trigger_ms"]) / inserts,
        "wall_ms": wall * 1000 / inserts,
        "wal_bytes": (after["wal_bytes"] - before["wal_bytes"]) / inserts,
        "updates": after["updates"] - before["updates"],
        "hot": after["hot"] - before["hot"],
    }


#: The saves' entries in pg_stat_statements (the prepared INSERT, whichever table it fills).
_SAVES: Final = (
    "WITH saves AS (SELECT total_exec_time, wal_bytes FROM pg_stat_statements"
    " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND query LIKE 'PREPARE wfctl_save %')"
)


def _counters(conn: psycopg.Connection[Any]) -> dict[str, float]:
    row = conn.execute(
        _SAVES + " SELECT (SELECT coalesce(sum(total_exec_time), 0) FROM saves),"
        " (SELECT coalesce(sum(wal_bytes), 0) FROM saves),"
        " (SELECT coalesce(sum(total_time), 0) FROM pg_stat_user_functions"
        "   WHERE funcname = 'wfctl_append'),"
        " (SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables"
        "   WHERE relname = 'wfctl_runs'),"
        " (SELECT coalesce(sum(n_tup_hot_upd), 0) FROM pg_stat_user_tables"
        "   WHERE relname = 'wfctl_runs')"
    ).fetchone()
    assert row is not None
    names = ("exec_ms", "wal_bytes", "trigger_ms", "updates", "hot")
    return {name: float(value) for name, value in zip(names, row, strict=True)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000, help="step rows per run")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--synchronous-commit", choices=("on", "off"), default="on")
    parser.add_argument(
        "--client-gap-us",
        type=float,
        default=0,
        help="keep the client's CPU busy this long before each INSERT (an engine's step)",
    )
    parser.add_argument("--only", default=",".join(VARIANTS), help="comma-separated variants")
    args = parser.parse_args(argv)
    names = list(dict.fromkeys(v.strip() for v in args.only.split(",") if v.strip()))
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    with private_postgres(
        "shared_preload_libraries=pg_stat_statements", "track_functions=all"
    ) as server:
        with psycopg.connect(server.url, autocommit=True) as admin:
            for name in names:
                admin.execute(f"CREATE DATABASE v_{name}")
        urls = {name: replace(server, dbname=f"v_{name}").url for name in names}
        for name in names:
            with psycopg.connect(urls[name], autocommit=True) as conn:
                conn.execute("CREATE EXTENSION pg_stat_statements")
                conn.execute(_DDL.encode())
                if VARIANTS[name]:
                    conn.execute(VARIANTS[name].encode())
        for round_ in range(args.rounds):
            for name in names:
                results[name].append(
                    measure(
                        urls[name],
                        name,
                        round_,
                        args.steps,
                        args.synchronous_commit,
                        args.client_gap_us / 1e6,
                    )
                )
    print(
        f"{args.steps + 1} INSERTs per round, {args.rounds} interleaved rounds,"
        f" synchronous_commit={args.synchronous_commit}, client busy"
        f" {args.client_gap_us:g} us before each; medians (min-max) per INSERT"
    )
    print(f"{'':18} {'server ms':>22} {'trigger ms':>11} {'wall ms':>22} {'WAL B':>6} {'HOT':>9}")
    for name in names:
        done = results[name]
        last = done[-1]
        print(
            f"{name:18} {_spread([r['exec_ms'] for r in done]):>22}"
            f" {statistics.median(r['trigger_ms'] for r in done):11.4f}"
            f" {_spread([r['wall_ms'] for r in done]):>22}"
            f" {statistics.median(r['wal_bytes'] for r in done):6.0f}"
            f" {last['hot']:4.0f}/{last['updates']:<4.0f}"
        )
    return 0


def _spread(values: list[float]) -> str:
    values = sorted(values)
    return f"{statistics.median(values):.4f} ({values[0]:.4f}-{values[-1]:.4f})"


if __name__ == "__main__":
    sys.exit(main())
