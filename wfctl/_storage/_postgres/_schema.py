"""The PostgreSQL store's schema: created on first use, versioned, and guarding every chain.

``wfctl_runs`` holds one row per run (its head, its lease epoch ``fence``, its pause request);
``wfctl_checkpoints`` one row per checkpoint, holding the record exactly as the file journal
writes its line (without the newline). A ``BEFORE INSERT`` trigger accepts a checkpoint only
if it is the next link (``seq = head_seq + 1``, naming the head as its parent, a root exactly
at seq 0) written under the run's current fence, advancing the head in the same statement (a
compare-and-set on the run's row): the database itself refuses a fork, a gap or a stale
writer, whoever sends the ``INSERT``.
"""

from __future__ import annotations

from typing import Final

from psycopg import AsyncConnection

from wfctl._errors import StoreLocationError

__all__ = ["LOCK_SEED", "SCHEMA_VERSION", "ensure_schema", "run_key"]

#: The schema this wfctl writes and reads; a database holding a newer one is refused.
SCHEMA_VERSION: Final = 1
#: Seed of ``hashtextextended`` for a run's advisory-lock key (keeps wfctl's keys apart from
#: another application's that hash plain text with seed 0).
LOCK_SEED: Final = 0x77666374  # "wfct"
#: Advisory lock (transaction-scoped) that serialises schema creation between processes.
_SCHEMA_LOCK: Final = 0x77666374_00000001


def run_key(placeholder: str = "%s") -> str:
    """Return the SQL of a run's 64-bit advisory-lock key (the run id at ``placeholder``)."""
    return f"hashtextextended({placeholder}, {LOCK_SEED})"


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
CREATE OR REPLACE FUNCTION wfctl_append() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    run wfctl_runs%ROWTYPE;
BEGIN
    -- The compare-and-set: the head moves only if this record is its next link, written
    -- under the run's current fence (a concurrent writer waits for the row, then the
    -- condition is checked again against what it committed).
    UPDATE wfctl_runs SET
        head_seq = NEW.seq,
        head_kind = NEW.kind,
        updated = NEW.ts,
        workflow_name = CASE WHEN NEW.seq = 0 THEN NEW.workflow_name ELSE workflow_name END,
        created = CASE WHEN NEW.seq = 0 THEN NEW.ts ELSE created END
    WHERE run_id = NEW.run_id
        AND head_seq = NEW.seq - 1
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
    RAISE EXCEPTION 'wfctl:head:%', run.head_seq USING ERRCODE = 'P0001',
        HINT = 'a checkpoint must extend the run''s head by one link';
END $$;
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

_EXISTS: Final = "SELECT to_regclass('wfctl_schema') IS NOT NULL"
_VERSION: Final = "SELECT max(version) FROM wfctl_schema"


async def ensure_schema(conn: AsyncConnection[tuple[object, ...]], location: str) -> None:
    """Create the schema if the database has none; refuse a newer one.

    Creation runs in one transaction under an advisory lock, so processes that start together
    create it once; a database already at this version costs one query.

    Raises:
        StoreLocationError: the database holds a newer schema than this wfctl knows.
    """
    version = await _version(conn)
    if version is None:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            version = await _version(conn)
            if version is None:
                await conn.execute(_DDL.encode())
                version = SCHEMA_VERSION
    if version > SCHEMA_VERSION:
        raise StoreLocationError(
            location,
            f"holds wfctl schema version {version}; this wfctl reads up to version "
            f"{SCHEMA_VERSION} (upgrade wfctl)",
        )


async def _version(conn: AsyncConnection[tuple[object, ...]]) -> int | None:
    cursor = await conn.execute(_EXISTS)
    row = await cursor.fetchone()
    if row is None or row[0] is not True:
        return None
    cursor = await conn.execute(_VERSION)
    row = await cursor.fetchone()
    value = None if row is None else row[0]
    return value if isinstance(value, int) else None
