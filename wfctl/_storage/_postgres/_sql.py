"""The queries of the PostgreSQL store, in one place."""

from __future__ import annotations

from typing import Final

from ._schema import LOCK_SEED

#: The advisory-lock keys held right now in this database (every lease of every process).
_HELD: Final = (
    "held AS (SELECT (l.classid::bigint << 32) | l.objid::bigint AS key FROM pg_locks l"
    " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1"
    " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))"
)
_LOCKED: Final = f"(hashtextextended(r.run_id, {LOCK_SEED}) IN (SELECT key FROM held))"

#: A save: the prepared INSERT of one checkpoint row (prepared once per lease connection, run
#: at the level of libpq). Its parameters: run id, seq, kind, parent, workflow name, timestamp,
#: fence (as text) and the record (as binary: no escaping, no parsing).
SAVE: Final = b"wfctl_save"
PREPARE_SAVE: Final = (
    "PREPARE wfctl_save (text, bigint, text, text, text, text, bigint, bytea) AS"
    " INSERT INTO wfctl_checkpoints (run_id, seq, kind, prev, workflow_name, ts, fence, record)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
)
SAVE_FORMATS: Final = (0, 0, 0, 0, 0, 0, 0, 1)

#: One run's records, with its head as the run's row says (no row: no run).
RUN_RECORDS: Final = (
    "SELECT r.head_seq, c.record FROM wfctl_runs r"
    " LEFT JOIN wfctl_checkpoints c ON c.run_id = r.run_id"
    " WHERE r.run_id = %s ORDER BY c.seq"
)

#: One run's head seq, whether it is held, its root and head records (``log``) and the highest
#: seq it holds: no row, no run; a row without a record, a missing one.
CHAIN_ENDS: Final = (
    "WITH " + _HELD + " SELECT r.head_seq, " + _LOCKED + ", c.seq, c.record,"
    " (SELECT max(m.seq) FROM wfctl_checkpoints m WHERE m.run_id = r.run_id) FROM wfctl_runs r"
    " LEFT JOIN wfctl_checkpoints c ON c.run_id = r.run_id AND c.seq IN (0, r.head_seq)"
    " WHERE r.run_id = %s ORDER BY c.seq"
)

#: A page of one run's records: past a seq, up to a seq, at most N, in order.
CHAIN_PAGE: Final = (
    "SELECT record FROM wfctl_checkpoints WHERE run_id = %(run)s AND seq > %(after)s"
    " AND seq <= %(last)s ORDER BY seq LIMIT %(n)s"
)

#: Every record of the matching runs, with whether each run is held (summaries, listings).
_RECORDS_OF: Final = (
    "WITH " + _HELD + ", runs AS (SELECT r.run_id, r.head_seq, r.workflow_name, r.created,"
    " " + _LOCKED + " AS locked FROM wfctl_runs r"
    " WHERE r.head_seq >= 0 AND (%(run)s::text IS NULL OR r.run_id = %(run)s)"
    " AND (%(wf)s::text IS NULL OR r.workflow_name = %(wf)s))"
    " SELECT runs.run_id, runs.head_seq, runs.workflow_name, runs.locked, c.record"
    " FROM runs LEFT JOIN wfctl_checkpoints c ON c.run_id = runs.run_id{}"
    " ORDER BY runs.created, runs.run_id, c.seq"
)
RECORDS_OF: Final = _RECORDS_OF.format("")
#: The same for one run, its records only if its head seq is below ``long`` (a longer run comes
#: as one row without a record: its summary reads it a page at a time).
SHORT_RUN_RECORDS: Final = _RECORDS_OF.format(" AND runs.head_seq < %(long)s")

_PAGE_OF: Final = (
    "WITH runs AS (SELECT r.run_id, r.head_seq, r.created FROM wfctl_runs r"
    " WHERE r.head_seq >= 0 AND (%(wf)s::text IS NULL OR r.workflow_name = %(wf)s)"
    " AND {} ORDER BY r.created, r.run_id LIMIT %(n)s)"
    " SELECT runs.run_id, runs.head_seq, runs.created, c.record"
    " FROM runs LEFT JOIN wfctl_checkpoints c ON c.run_id = runs.run_id"
    " AND runs.head_seq < %(long)s ORDER BY runs.created, runs.run_id, c.seq"
)
#: A page of runs after a ``(created, run_id)`` key, oldest first, with every record of each
#: and its head (``verify-lineage`` of a whole store); the first page's key is ``('', '')``. A
#: run whose head seq is ``long`` or more comes as one row without a record (it is read by
#: itself, a page of its records at a time).
RUNS_PAGE: Final = _PAGE_OF.format("(r.created, r.run_id) > (%(created)s, %(run)s)")
#: The same for the runs without a creation time (a row changed by hand: the trigger sets it
#: from the root), which no key orders, after a run id (the first page's: ``''``).
UNDATED_RUNS_PAGE: Final = _PAGE_OF.format("r.created IS NULL AND r.run_id > %(run)s")

#: What a follower of one run looks at (``log --follow``): the run's head, whether its lease is
#: held, and its records past a seq (at most N; NULL: all), in one statement (one snapshot). No
#: row: no such run.
FOLLOW: Final = (
    "WITH " + _HELD + " SELECT r.head_seq, " + _LOCKED + ", c.record FROM wfctl_runs r"
    " LEFT JOIN wfctl_checkpoints c ON c.run_id = r.run_id AND c.seq > %(after)s"
    " WHERE r.run_id = %(run)s ORDER BY c.seq LIMIT %(n)s"
)

#: A run's head seq, the highest seq it holds and its head record (NULL: missing), for
#: get_latest: the head pointer is checked against the records, as every read checks it.
_HEAD: Final = (
    "SELECT r.run_id, r.head_seq,"
    " (SELECT max(m.seq) FROM wfctl_checkpoints m WHERE m.run_id = r.run_id), c.record"
    " FROM wfctl_runs r LEFT JOIN wfctl_checkpoints c"
    " ON c.run_id = r.run_id AND c.seq = r.head_seq WHERE r.head_seq >= 0 AND "
)
#: One run's head (for get_latest with a run id).
HEAD_OF_RUN: Final = _HEAD + "r.run_id = %(run)s"
#: The newest head among the runs of a workflow (or all runs).
NEWEST_HEAD: Final = (
    _HEAD + "(%(wf)s::text IS NULL OR r.workflow_name = %(wf)s)"
    " ORDER BY r.updated DESC, r.run_id DESC LIMIT 1"
)

#: Lock a run's row for a cut, and try its lease for the transaction (free: nobody drives it).
CUT_START: Final = (
    f"SELECT head_seq, pg_try_advisory_xact_lock(hashtextextended(run_id, {LOCK_SEED}))"
    " FROM wfctl_runs WHERE run_id = %s FOR UPDATE"
)
DELETE_RUN: Final = (
    "WITH gone AS (DELETE FROM wfctl_checkpoints WHERE run_id = %(run)s)"
    " DELETE FROM wfctl_runs WHERE run_id = %(run)s"
)
#: Cut the chain at ``seq``: the head goes back to ``seq - 1``, and the fence moves on (a
#: writer granted the old one cannot append to the shortened chain).
CUT: Final = (
    "WITH gone AS (DELETE FROM wfctl_checkpoints WHERE run_id = %(run)s AND seq >= %(seq)s)"
    " UPDATE wfctl_runs r SET head_seq = c.seq, head_kind = c.kind, updated = c.ts,"
    " claimable = wfctl_claimable(c.kind, c.record), fence = nextval('wfctl_fence')"
    " FROM wfctl_checkpoints c WHERE r.run_id = %(run)s AND c.run_id = %(run)s"
    " AND c.seq = %(seq)s - 1"
)

#: Set or clear a run's pause request and wake its lease, in one transaction: the lease reads
#: the flag again (the notification's payload, ``<0|1>:<run id>``, decides nothing, as anyone
#: who can connect may send one; it is kept for a lease of schema version 2). A request needs a
#: run with records (a leased run that has written none is not a run yet); clearing does not,
#: and clears only a request that is there: every run clears at its end, and one that was never
#: asked to pause then writes nothing (no transaction id, no WAL flush, no notification).
PAUSE: Final = (
    "WITH u AS (UPDATE wfctl_runs SET pause_requested = %(flag)s,"
    " cancel_request = CASE WHEN %(flag)s THEN cancel_request END WHERE run_id = %(run)s"
    " AND (NOT %(flag)s OR head_seq >= 0) AND (%(flag)s OR pause_requested) RETURNING run_id)"
    " SELECT pg_notify('wfctl_pause', %(note)s) FROM u"
)
#: Ask a run to end cancelled: its pause request, with who asked (``%(request)s``, JSON), in one
#: statement, so the driver that sees the pause finds the request. Parameters as :data:`PAUSE`'s.
CANCEL: Final = (
    "WITH u AS (UPDATE wfctl_runs SET pause_requested = true, cancel_request = %(request)s"
    " WHERE run_id = %(run)s AND head_seq >= 0 RETURNING run_id)"
    " SELECT pg_notify('wfctl_pause', %(note)s) FROM u"
)
#: The cancel request standing for a run (NULL: none).
CANCEL_REQUEST: Final = "SELECT cancel_request FROM wfctl_runs WHERE run_id = %s"

#: The oldest run a worker may take over, nobody holding it. Decided by the ``claimable`` flag
#: alone (the append trigger sets it from the head's kind, and for a pause from its record's
#: structure: a hand-over), read through its partial index: a claim reads the runs it may take,
#: never a record, nor the runs that ended or wait for an answer.
CLAIMABLE: Final = (
    "WITH " + _HELD + " SELECT r.run_id FROM wfctl_runs r"
    " WHERE r.claimable AND NOT (r.run_id = ANY(%s::text[]))"
    " AND NOT " + _LOCKED + " ORDER BY r.created, r.run_id LIMIT 1 FOR UPDATE OF r SKIP LOCKED"
)

#: Delete the runs a copy left marked (``copy_seq``) that nobody holds: killed part way, their
#: records seen by nothing (see ``_copying``). A copy holding its run's lease is left alone.
ABANDONED_COPIES: Final = (
    "WITH " + _HELD + ", abandoned AS (SELECT r.run_id FROM wfctl_runs r"
    " WHERE r.copy_seq IS NOT NULL AND NOT " + _LOCKED + " FOR UPDATE SKIP LOCKED),"
    " gone AS (DELETE FROM wfctl_checkpoints c USING abandoned a WHERE c.run_id = a.run_id)"
    " DELETE FROM wfctl_runs r USING abandoned a WHERE r.run_id = a.run_id"
)

#: The runs whose id starts with a prefix (a ``LIKE`` pattern, escaped), in id order, at most
#: N, with how many there are: read from the run id's pattern index, not from every run.
RUNS_STARTING: Final = (
    "SELECT run_id, count(*) OVER () FROM wfctl_runs WHERE run_id LIKE %(pattern)s"
    " AND head_seq >= 0 ORDER BY run_id LIMIT %(n)s"
)
#: The newest run by its creation time (ties: the greater id), from the creation index.
NEWEST_RUN: Final = (
    "SELECT run_id FROM wfctl_runs WHERE head_seq >= 0 AND created IS NOT NULL"
    " ORDER BY created DESC, run_id DESC LIMIT 1"
)
#: Every run's id (the runs a mistyped id is compared with).
RUN_IDS: Final = "SELECT run_id FROM wfctl_runs WHERE head_seq >= 0"
