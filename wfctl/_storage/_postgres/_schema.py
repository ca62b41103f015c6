"""The PostgreSQL store's schema: created on first use, versioned, and guarding every chain.

``wfctl_runs`` holds one row per run (its head, its lease epoch ``fence``, its pause request
and, for a cancel, who asked);
``wfctl_checkpoints`` one row per checkpoint, holding the record exactly as the file journal
writes its line (without the newline). A ``BEFORE INSERT`` trigger accepts a checkpoint only
if it is the next link (``seq = head_seq + 1``, naming the head as its parent, a root exactly
at seq 0) written under the run's current fence, advancing the head in the same statement (a
compare-and-set on the run's row): the database itself refuses a fork, a gap or a stale
writer, whoever sends the ``INSERT``. The same statement keeps the run's ``claimable`` flag
(a worker may take the run over), which a partial index lists: a worker's claim reads the runs
it may take, not every run the database ever held. A run being copied in (``copy_seq`` set)
moves that mark instead of its head, which stays -1 until the copy ends: nothing reads it.

The schema is created on first use and upgraded on first use by a newer wfctl: one transaction
under an advisory lock runs the steps from the database's version to :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

from typing import Final

import psycopg
from psycopg import AsyncConnection

from wfctl._errors import StoreLocationError
from wfctl._records._payloads import HANDOFF

__all__ = ["LOCK_SEED", "SCHEMA_VERSION", "ensure_schema", "run_key"]

#: The schema this wfctl writes and reads; a database holding a newer one is refused, an older
#: one upgraded (see :data:`_UPGRADES`).
SCHEMA_VERSION: Final = 5
#: Seed of ``hashtextextended`` for a run's advisory-lock key (keeps wfctl's keys apart from
#: another application's that hash plain text with seed 0).
LOCK_SEED: Final = 0x77666374  # "wfct"
#: Advisory lock (transaction-scoped) that serialises schema creation between processes.
_SCHEMA_LOCK: Final = 0x77666374_00000001


def run_key(placeholder: str = "%s") -> str:
    """Return the SQL of a run's 64-bit advisory-lock key (the run id at ``placeholder``)."""
    return f"hashtextextended({placeholder}, {LOCK_SEED})"


#: Whether a pause ``record`` hands its run over: its ``data`` (the record parsed as JSON, never
#: searched as text) has the hand-over's ``reason`` and no pending request, as
#: :func:`wfctl._records._payloads.handed_over` judges it. A record that is not JSON (or not UTF-8 the
#: database can hold) hands nothing over: the run is never claimed, and reading it reports why.
_HANDED_OVER_FUNCTION: Final = f"""
CREATE OR REPLACE FUNCTION wfctl_handed_over(record bytea) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    data jsonb;
BEGIN
    BEGIN
        data := convert_from(record, 'UTF8')::jsonb -> 'data';
    EXCEPTION WHEN others THEN
        RETURN false;
    END;
    RETURN jsonb_typeof(data) = 'object'
        AND coalesce(data ->> 'reason', 'request') = '{HANDOFF}'
        AND (jsonb_typeof(data -> 'requests') IS DISTINCT FROM 'array'
            OR jsonb_array_length(data -> 'requests') = 0);
END $$;
"""
#: Whether a run whose head record is of ``kind`` with bytes ``record`` may be taken over by a
#: worker: a root (queued), step or resume record (its driver died, or it waits between steps),
#: or a pause that hands the run over (read from the record's structure: schema version 3; a
#: text test over the bytes before, which request data could match). The append trigger keeps
#: ``wfctl_runs.claimable`` with it; the record is parsed only for a pause.
_CLAIMABLE_FUNCTION: Final = (
    _HANDED_OVER_FUNCTION
    + "CREATE OR REPLACE FUNCTION wfctl_claimable(kind text, record bytea) RETURNS boolean"
    " LANGUAGE sql IMMUTABLE AS $$ SELECT kind IN ('root', 'step', 'resume')"
    " OR (kind = 'pause' AND wfctl_handed_over(record)) $$;"
)
_CLAIMABLE_COLUMN: Final = (
    "ALTER TABLE wfctl_runs ADD COLUMN IF NOT EXISTS claimable boolean NOT NULL DEFAULT false;"
)
#: The server process (``pg_backend_pid()``) of the session holding the run's lease as its
#: holder was recorded: a lock held by any other session is not that holder's (version 3).
_HOLDER_PID_COLUMN: Final = "ALTER TABLE wfctl_runs ADD COLUMN IF NOT EXISTS holder_pid integer;"
#: The runs a claim reads, oldest first: only those it may take (schema version 2).
_CLAIMABLE_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS wfctl_runs_claimable ON wfctl_runs (created, run_id)"
    " WHERE claimable;"
)
#: A run being copied into the database (schema version 3): the seq of the last record the copy
#: wrote (NULL: not being copied). While it is set the run's head stays -1, so no read, listing,
#: claim or resume sees the run; the copy's last statement moves the head there (see
#: ``_copying``).
_COPY_COLUMN: Final = "ALTER TABLE wfctl_runs ADD COLUMN IF NOT EXISTS copy_seq bigint;"
#: Who asked a running run to be cancelled (schema version 4): a JSON object (``by``, ``at``,
#: ``reason``) set with the pause request and cleared with it; the driver that honours the
#: pause reads it and ends the run ``cancelled`` instead.
_CANCEL_COLUMN: Final = "ALTER TABLE wfctl_runs ADD COLUMN IF NOT EXISTS cancel_request text;"
#: Run ids by their characters (not the database's collation): a prefix of a run id
#: (``LIKE 'abc%'``) is looked up in it, whatever the collation (schema version 5).
_PREFIX_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS wfctl_runs_prefix ON wfctl_runs (run_id text_pattern_ops);"
)
#: The append trigger's function: the compare-and-set on the run's head (or, for a run being
#: copied, on its copy's last seq, the head staying -1).
_APPEND_FUNCTION: Final = """
CREATE OR REPLACE FUNCTION wfctl_append() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    run wfctl_runs%ROWTYPE;
BEGIN
    -- The compare-and-set: the head moves only if this record is its next link, written
    -- under the run's current fence (a concurrent writer waits for the row, then the
    -- condition is checked again against what it committed). A run being copied moves its
    -- copy's last seq instead, and is not claimable until the copy ends.
    UPDATE wfctl_runs SET
        head_seq = CASE WHEN copy_seq IS NULL THEN NEW.seq ELSE head_seq END,
        copy_seq = CASE WHEN copy_seq IS NULL THEN NULL ELSE NEW.seq END,
        head_kind = CASE WHEN copy_seq IS NULL THEN NEW.kind ELSE head_kind END,
        updated = NEW.ts,
        claimable = copy_seq IS NULL AND wfctl_claimable(NEW.kind, NEW.record),
        workflow_name = CASE WHEN NEW.seq = 0 THEN NEW.workflow_name ELSE workflow_name END,
        created = CASE WHEN NEW.seq = 0 THEN NEW.ts ELSE created END
    WHERE run_id = NEW.run_id
        AND coalesce(copy_seq, head_seq) = NEW.seq - 1
        AND fence = NEW.fence
        AND (NEW.seq = 0) = (NEW.kind = 'root')
        AND NEW.prev IS NOT DISTINCT FROM (CASE WHEN NEW.seq = 0 THEN NULL
            ELSE NEW.run_id || '.' || (NEW.seq - 1) END);
    IF FOUND THEN
        RETURN NEW;
    END IF;
    -- Refused: say why.
    SELECT * INTO run FROM wfctl_runs WHERE run_id = NEW.run_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'wfctl:nolease:-1' USING ERRCODE = 'P0001',
            HINT = 'take the run''s lease before appending';
    END IF;
    IF NEW.fence IS DISTINCT FROM run.fence THEN
        RAISE EXCEPTION 'wfctl:fence:%', run.fence USING ERRCODE = 'P0001',
            HINT = 'the writer''s lease was taken over';
    END IF;
    RAISE EXCEPTION 'wfctl:head:%', coalesce(run.copy_seq, run.head_seq) USING ERRCODE = 'P0001',
        HINT = 'a checkpoint must extend the run''s head by one link';
END $$;
"""

_DDL: Final = f"""
CREATE TABLE IF NOT EXISTS wfctl_schema (version integer NOT NULL);
CREATE SEQUENCE IF NOT EXISTS wfctl_fence;
CREATE TABLE IF NOT EXISTS wfctl_runs (
    run_id text PRIMARY KEY,
    workflow_name text,
    created text,
    updated text,
    head_seq bigint NOT NULL DEFAULT -1,
    head_kind text,
    fence bigint NOT NULL,
    pause_requested boolean NOT NULL DEFAULT false,
    holder text
);
CREATE INDEX IF NOT EXISTS wfctl_runs_created ON wfctl_runs (created, run_id);
{_CLAIMABLE_COLUMN}
{_HOLDER_PID_COLUMN}
{_CLAIMABLE_FUNCTION}
{_CLAIMABLE_INDEX}
{_COPY_COLUMN}
{_CANCEL_COLUMN}
{_PREFIX_INDEX}
CREATE TABLE IF NOT EXISTS wfctl_checkpoints (
    run_id text NOT NULL,
    seq bigint NOT NULL CHECK (seq >= 0),
    kind text NOT NULL,
    prev text,
    workflow_name text NOT NULL,
    ts text NOT NULL,
    fence bigint NOT NULL,
    record bytea NOT NULL,
    PRIMARY KEY (run_id, seq)
);
{_APPEND_FUNCTION}
CREATE OR REPLACE FUNCTION wfctl_no_relink() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'wfctl:relink:-1' USING ERRCODE = 'P0001',
        HINT = 'a checkpoint''s run, seq, kind, parent or fence cannot change';
END $$;
DROP TRIGGER IF EXISTS wfctl_append ON wfctl_checkpoints;
CREATE TRIGGER wfctl_append BEFORE INSERT ON wfctl_checkpoints
    FOR EACH ROW EXECUTE FUNCTION wfctl_append();
DROP TRIGGER IF EXISTS wfctl_no_relink ON wfctl_checkpoints;
CREATE TRIGGER wfctl_no_relink BEFORE UPDATE OF run_id, seq, kind, prev, fence ON wfctl_checkpoints
    FOR EACH ROW EXECUTE FUNCTION wfctl_no_relink();
INSERT INTO wfctl_schema (version) SELECT {SCHEMA_VERSION}
    WHERE NOT EXISTS (SELECT 1 FROM wfctl_schema);
"""

#: From each older version to the next: the SQL that upgrades a database (run in order, in one
#: transaction, under the schema lock).
_UPGRADES: Final[dict[int, str]] = {
    # 1 -> 2: the claimable flag, set for the runs already there from their heads, its index,
    # and the append trigger that keeps it.
    1: f"""
{_CLAIMABLE_COLUMN}
{_CLAIMABLE_FUNCTION}
UPDATE wfctl_runs r SET claimable = true FROM wfctl_checkpoints c
    WHERE c.run_id = r.run_id AND c.seq = r.head_seq AND wfctl_claimable(c.kind, c.record);
{_CLAIMABLE_INDEX}
{_APPEND_FUNCTION}
""",
    # 2 -> 3: the hand-over read from a pause record's structure (the flag of each run whose
    # head is a pause set again by it), the column naming the lease holder's session, and the
    # copy's mark with the append trigger that keeps a run being copied unseen.
    2: f"""
{_CLAIMABLE_FUNCTION}
UPDATE wfctl_runs r SET claimable = wfctl_claimable(c.kind, c.record) FROM wfctl_checkpoints c
    WHERE c.run_id = r.run_id AND c.seq = r.head_seq AND r.head_kind = 'pause';
{_HOLDER_PID_COLUMN}
{_COPY_COLUMN}
{_APPEND_FUNCTION}
""",
    # 3 -> 4: the column naming who asked a running run to be cancelled.
    3: _CANCEL_COLUMN,
    # 4 -> 5: the index a run id's prefix is looked up in.
    4: f"""
{_PREFIX_INDEX}
""",
}

_EXISTS: Final = "SELECT to_regclass('wfctl_schema') IS NOT NULL"
_VERSION: Final = "SELECT max(version) FROM wfctl_schema"


async def ensure_schema(conn: AsyncConnection[tuple[object, ...]], location: str) -> None:
    """Create the schema if the database has none, upgrade an older one; refuse a newer one.

    Creation and upgrade run in one transaction under an advisory lock, so processes that
    start together do it once; a database already at this version costs two small queries.

    Raises:
        StoreLocationError: the database holds a newer schema than this wfctl knows, or an
            older one that could not be upgraded (the server refused: say, the user may not
            alter the tables).
    """
    version = await _version(conn)
    if version is None or version < SCHEMA_VERSION:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            version = await _version(conn)
            if version is None:
                await conn.execute(_DDL.encode())
                version = SCHEMA_VERSION
            elif version < SCHEMA_VERSION:
                await _upgrade(conn, version, location)
                version = SCHEMA_VERSION
    if version > SCHEMA_VERSION:
        raise StoreLocationError(
            location,
            f"holds wfctl schema version {version}; this wfctl reads up to version "
            f"{SCHEMA_VERSION} (upgrade wfctl)",
        )


async def _upgrade(conn: AsyncConnection[tuple[object, ...]], version: int, location: str) -> None:
    """Run the upgrades from ``version`` to :data:`SCHEMA_VERSION` (in the caller's transaction)."""
    if version not in _UPGRADES:
        raise StoreLocationError(
            location, f"holds wfctl schema version {version}, which no wfctl wrote"
        )
    try:
        for step in range(version, SCHEMA_VERSION):
            await conn.execute(_UPGRADES[step].encode())
        await conn.execute("UPDATE wfctl_schema SET version = %s", (SCHEMA_VERSION,))
    except psycopg.Error as exc:
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise StoreLocationError(
            location,
            f"holds wfctl schema version {version}; upgrading it to version {SCHEMA_VERSION} "
            f"was refused ({text}): run a wfctl command once as a user who may alter its tables",
        ) from None


async def _version(conn: AsyncConnection[tuple[object, ...]]) -> int | None:
    cursor = await conn.execute(_EXISTS)
    row = await cursor.fetchone()
    if row is None or row[0] is not True:
        return None
    cursor = await conn.execute(_VERSION)
    row = await cursor.fetchone()
    value = None if row is None else row[0]
    return value if isinstance(value, int) else None
