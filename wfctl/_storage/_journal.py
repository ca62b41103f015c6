"""The journal record format: one checksummed JSON line per checkpoint.

A record is the checkpoint's JSON object with its CRC-32 appended as the last field::

    {"v":3,"id":"r1.4","kind":"step",...,"data":{...},"crc":"1a2b3c4d"}

Format version 3 stores neither ``seq`` nor ``prev`` (the id says both), and a record whose
``data`` is 1 KB or more as ``"z"``, the base64 text of its zstd frame, when that is smaller
(``wfctl._records._packing``); versions 1 and 2 start ``{"v":2,"id":"r1.4","seq":4,"prev":"r1.3",``.

The checksum covers the compact body *without* the ``crc`` field, so each line is valid JSON
and verification is byte slicing: strip the fixed 18-byte suffix ``,"crc":"xxxxxxxx"}``, put the
``}`` back and hash. A line is committed only once its ``\\n`` is on disk; whatever follows the
last newline (a partial record or the NUL bytes some file systems leave after a crash) is the
*torn tail* of a write that was never acknowledged.

Beside each journal, a run's end marker (see ._marker) names the last record committed when the
run last ended or paused; :func:`crc_of_seq` finds the checksum it is compared with.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

import orjson

try:
    # zlib-ng's crc32 gives zlib's value 15-20x faster on big records (folding with the CPU's
    # carry-less multiply); without it (an environment made before it was a dependency),
    # zlib's own, which gives the same value (see
    # docs/decisions/0068-the-record-checksum-comes-from-zlib-ng-where-a-1.md).
    from zlib_ng.zlib_ng import crc32 as _crc32
except ImportError:  # pragma: no cover
    from zlib import crc32 as _crc32

from wfctl._errors import CheckpointCorruptError
from wfctl._records._checkpoint import (
    FORMAT_VERSION,
    KINDS,
    LEAN_VERSION,
    Checkpoint,
    Kind,
    check_format_version,
    checkpoint_id_for,
)
from wfctl._records._packing import PACK_FROM, pack, unpack
from wfctl._records._refs import (
    READ_BACK,
    WINDOW,
    Resolver,
    UnreadableSourceError,
    holds_refs,
)

from ._fs import FileSystem
from ._protocol import JournalProblem

__all__ = [
    "JOURNAL_NAME",
    "SUFFIX_LEN",
    "TAIL_CHUNK",
    "LinesBefore",
    "Tail",
    "check_journal",
    "check_last_is_newest",
    "check_version",
    "crc_of_seq",
    "decode_chain",
    "decode_checked",
    "decode_record",
    "encode_record",
    "encode_record_parts",
    "journal_lines",
    "later_id_start",
    "load_body",
    "parse_journal",
    "read_all",
    "read_head",
    "read_lines",
    "read_tail",
    "record_crc",
    "record_link",
    "resolve_or_keep",
    "verified_body",
]

JOURNAL_NAME: Final = "journal.jsonl"
#: How much of a journal's end is read at first to find its last record (doubled as needed).
TAIL_CHUNK: Final = 64 * 1024
#: How much of a journal is read at a time from its start.
_READ_CHUNK: Final = 16 * TAIL_CHUNK

_CRC_PREFIX: Final = b',"crc":"'
_SUFFIX_LEN: Final = 18  # len(b',"crc":"xxxxxxxx"}')
#: What follows a record's body in its line, but the body's last ``}``: its checksum.
SUFFIX_LEN: Final = _SUFFIX_LEN
_HEX8: Final = re.compile(rb"[0-9a-f]{8}")
#: The start of a record as encode_record writes it: version, id (run.seq), and seq before
#: format version 3.
_LINK: Final = re.compile(
    rb'\{"v":\d{1,9},"id":"([A-Za-z0-9_-]{1,100})\.(\d{1,12})"(?:,"seq":(\d{1,12}))?,'
)
#: A record's format version, as encode_record writes it first.
_VERSION: Final = re.compile(rb'\{"v":(\d{1,9}),')
#: The same, through the parent and the kind: what :func:`check_journal` needs of every record.
_CHAIN_LINK: Final = re.compile(
    rb'\{"v":(\d{1,9}),"id":"([A-Za-z0-9_-]{1,100})\.(\d{1,12})","seq":(\d{1,12}),'
    rb'"prev":(null|"[A-Za-z0-9_-]{1,100}\.\d{1,12}"),"kind":"([a-z]{1,12})"'
)
#: The same in format version 3 and later, which store no seq and no parent.
_LEAN_LINK: Final = re.compile(
    rb'\{"v":(\d{1,9}),"id":"([A-Za-z0-9_-]{1,100})\.(\d{1,12})","kind":"([a-z]{1,12})"'
)
_KINDS: Final = frozenset(kind.encode() for kind in KINDS)
_ROOT: Final = Kind.ROOT.value.encode()
_STEP: Final = Kind.STEP.value.encode()
#: The kind a chain's first record has, and those every later one may have, each with the
#: quote that closes it (what ``bytes.startswith`` looks for after a record's start).
_FIRST_KINDS: Final[tuple[bytes, ...]] = (_ROOT + b'"',)
_LATER_KINDS: Final = tuple(sorted(kind + b'"' for kind in _KINDS if kind != _ROOT))
#: A record body up to this long is copied to be checksummed; a longer one is not.
_COPY_LIMIT: Final = 64 * 1024
# orjson writes compact UTF-8 JSON straight to bytes, 10-60x faster than the stdlib (see
# docs/decisions/0029-orjson-writes-journal-records.md). Dataclasses and datetimes are passed
# through to the fallback, which refuses them, as it always did: the data is codec output,
# plain JSON by construction.
_ORJSON_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
# The fallback, built once: json.dumps with options builds an encoder per call. No circular
# check: the data is a tree by construction (a cycle would still fail, with RecursionError).
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)
_ASCII_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def encode_record(checkpoint: Checkpoint) -> bytes:
    """Return the journal line (newline included) that commits ``checkpoint``.

    The parts of :func:`encode_record_parts`, joined.

    Raises:
        TypeError, ValueError, RecursionError: as :func:`encode_record_parts`.
    """
    return b"".join(encode_record_parts(checkpoint))


def encode_record_parts(checkpoint: Checkpoint) -> tuple[memoryview, bytes]:
    """Return the journal line that commits ``checkpoint`` as the two buffers that make it.

    The body without its closing brace, then the trailer ``,"crc":"xxxxxxxx"}\n``. The body
    is encoded once and never copied: the checksum is taken over it in place, and the storage
    writes both buffers with one ``writev`` (a 1 MB result costs one encode and one crc32).

    Raises:
        TypeError, ValueError, RecursionError: ``checkpoint.data`` is not plain JSON (the codec
            should have encoded it already).
    """
    if checkpoint.version >= LEAN_VERSION:
        body = _lean_body(checkpoint)
    else:
        body = _json(checkpoint.to_dict())
    return memoryview(body)[:-1], b',"crc":"%08x"}\n' % _crc32(body)


def _lean_body(checkpoint: Checkpoint) -> bytes:
    """The body of a record of format version 3 or later: :meth:`Checkpoint.stored_head`, then
    its ``data``, packed (``"z"``) when that is smaller. The data is encoded once."""
    head = checkpoint.stored_head()
    head["data"] = checkpoint.data
    body = _json(head)
    if len(body) < PACK_FROM:  # the common record: a small step, in one encode
        return body
    del head["data"]
    start = _json(head)[:-1]
    data = memoryview(body)[len(start) + len(b',"data":') : -1]
    if not body.startswith(start) or not body.startswith(b',"data":', len(start)):
        data = memoryview(_json(checkpoint.data))  # the fallback escaped the start otherwise
    packed = pack(data)
    return body if packed is None else start + b',"z":"' + packed + b'"}'


def _json(raw: dict[str, object]) -> bytes:
    try:
        return orjson.dumps(raw, option=_ORJSON_OPTIONS)
    except TypeError:
        # What orjson refuses (a lone surrogate, an int beyond 64 bits, a passed-through type)
        # the standard library writes or refuses as it always did.
        return _stdlib_body(raw)


def _stdlib_body(raw: dict[str, object]) -> bytes:
    try:
        return _ENCODER.encode(raw).encode()
    except UnicodeEncodeError:
        # A lone surrogate cannot be written as UTF-8; \u escapes keep it and stay valid JSON.
        return _ASCII_ENCODER.encode(raw).encode()


def decode_record(line: bytes, where: str) -> Checkpoint:
    """Verify and decode one journal line (without its newline).

    Raises:
        CheckpointCorruptError: the checksum is missing or wrong, the JSON is invalid, or a field
            fails :meth:`Checkpoint.from_dict` (including a newer format version).
    """
    return record_of(load_body(verified_body(line, where), where), where)


def decode_checked(line: bytes, where: str) -> Checkpoint:
    """:func:`decode_record` of a line whose checksum :func:`check_journal` has just verified.

    The checksum is not computed again: the body it covers is decoded and checked as
    :func:`decode_record` checks it.
    """
    return record_of(load_body(line[:-_SUFFIX_LEN] + b"}", where), where)


def record_of(raw: object, where: str) -> Checkpoint:
    """Return the checkpoint a record's parsed body holds, its ``data`` unpacked if packed.

    Raises:
        CheckpointCorruptError: as :meth:`Checkpoint.from_dict`, or the packed data is damaged.
    """
    if isinstance(raw, dict) and "z" in raw:
        version = raw.get("v")
        if type(version) is int and version >= LEAN_VERSION:
            if "data" in raw:
                raise CheckpointCorruptError(where, "record holds both data and packed data")
            raw["data"] = load_body(unpack(raw.pop("z"), where), where)
    return Checkpoint.from_dict(raw, where)


#: Digits to ``0``, every other byte to ``.``: a run of 19 zeros is then a run of 19 digits,
#: which an integer orjson could read as a float (beyond 64 bits) has (a regular expression
#: finds it ~8x slower).
_DIGIT_RUNS: Final = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x2E for byte in range(256))
_LONG_DIGITS: Final = b"0" * 19


def load_body(body: bytes, where: str) -> object:
    """Parse a record's or end marker's JSON body exactly as the stdlib does, with orjson if it can.

    orjson reads a record ~2.5x faster, but it reads an integer beyond 64 bits (below -2**63
    or above 2**64-1) as a float, silently, and it refuses what the standard library accepts
    (``NaN``, lone surrogates, a UTF-8 BOM, nesting deeper than 1,024). A body with a run of 19
    digits, or one orjson refuses, is read by the standard library instead, which reads it
    as written or names what is wrong: the value read is always the standard library's.

    ``NaN``, ``Infinity``, ``-Infinity`` and numbers that overflow to infinity (``1e400``) are
    refused by both: wfctl never writes them (the codec tags such floats), so a record holding
    one was edited. Read as numbers, they went on into ``--json`` output that is not JSON, and
    a copy to PostgreSQL (whose JSON has no such numbers) changed them silently.
    """
    if _LONG_DIGITS not in body.translate(_DIGIT_RUNS):
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:
        raise CheckpointCorruptError(where, f"invalid JSON: {exc}") from None


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"{text[:40]} is beyond the largest float")
    return value


def record_link(line: bytes, where: str) -> tuple[str, int]:
    """Return the run id and seq of a journal line, verifying its checksum only.

    What a record's successor must name as its parent, without parsing the record's ``data``
    (which may be large): the line's start is read as ``encode_record`` writes it. A line that
    starts otherwise (written by hand, in another field order) is decoded in full.

    Raises:
        CheckpointCorruptError: as :func:`decode_record`.
    """
    verified_body(line, where)
    match = _LINK.match(line)
    if match is None or (match[3] is not None and match[2] != match[3]):
        checkpoint = decode_record(line, where)
        return checkpoint.run_id, checkpoint.seq
    return match[1].decode(), int(match[2])


def crc_of_seq(data: bytes, seq: int) -> str | None:
    """Return the checksum field of the last line of ``data`` that records ``seq``.

    Scans back from the end, reading only each line's start (as :func:`record_link` does), and
    stops at the first line with a lower seq; None if no such line was found that way.
    """
    end = data.rfind(b"\n")
    while end > 0:
        begin = data.rfind(b"\n", 0, end) + 1
        match = _LINK.match(data, begin, end)
        if match is not None:
            found = int(match[2] if match[3] is None else match[3])
            if found == seq:
                return record_crc(data[begin:end])
            if found < seq:
                return None
        end = begin - 1
    return None


def record_crc(line: bytes) -> str:
    """Return the checksum field of a journal line (without newline), as written."""
    return line[-10:-2].decode("ascii", "replace")


def verified_body(line: bytes, where: str) -> bytes:
    """Check a line's checksum; return the JSON body it covers."""
    body = line[:-_SUFFIX_LEN] + b"}"
    if len(line) > _SUFFIX_LEN and line.endswith(b',"crc":"%08x"}' % _crc32(body)):
        return body  # as written (the checksum in lower case): what is wrong is not needed
    if (
        len(line) <= _SUFFIX_LEN
        or line[-_SUFFIX_LEN : -_SUFFIX_LEN + 8] != _CRC_PREFIX
        or line[-2:] != b'"}'
    ):
        raise CheckpointCorruptError(where, "record has no checksum (truncated or edited)")
    digits = line[-10:-2]
    if not _HEX8.fullmatch(digits):
        raise CheckpointCorruptError(where, "malformed checksum")
    actual = _crc32(body)
    if actual != int(digits, 16):
        raise CheckpointCorruptError(
            where, f"checksum mismatch (record says {digits.decode()}, content is {actual:08x})"
        )
    return body


def parse_journal(
    data: bytes, path: str, run_id: str
) -> tuple[list[Checkpoint], list[JournalProblem], int]:
    """Decode a whole journal, keeping what verifies and naming what does not.

    Returns ``(checkpoints, problems, torn_tail)``: checkpoints in file order (no dedupe, no
    reordering: lineage verification must see forks and gaps; the references in their step
    arguments resolved, see :func:`resolve_or_keep`), one problem per bad line (at
    ``<file>:<line>``, with its line; a reference that names no result before it is one), and
    the byte count after the last newline.
    """
    committed = data.rfind(b"\n") + 1
    resolver = Resolver(path)
    checkpoints: list[Checkpoint] = []
    problems: list[JournalProblem] = []
    if committed:
        # One line at a time: no copy of the journal, no list of all its lines at once.
        lineno, start = 0, 0
        while start < committed:
            end = data.index(b"\n", start)
            line, start = data[start:end], end + 1
            lineno += 1
            where = f"{path}:{lineno}"
            try:
                checkpoint = decode_record(line, where)
                check_version(checkpoint, checkpoints[0] if checkpoints else None, where)
                checkpoint = resolve_or_keep(resolver, checkpoint, where)
            except CheckpointCorruptError as exc:
                problems.append(JournalProblem(where, exc.reason, lineno))
                continue
            if checkpoint.run_id != run_id:
                reason = f"record belongs to run {checkpoint.run_id!r}"
                problems.append(JournalProblem(where, reason, lineno))
                continue
            checkpoints.append(checkpoint)
    return checkpoints, problems, len(data) - committed


def resolve_or_keep(resolver: Resolver, checkpoint: Checkpoint, where: str) -> Checkpoint:
    """``resolver.resolve(checkpoint)``, for a reader that names every bad record: a record
    that refers to one that could not be read is kept as stored, its references unresolved.

    That record's links are sound, and what it refers to is the failed record's problem: it
    is neither named a problem too nor left out of the chain, where it would read as a gap
    and a break in the lineage it does not have.

    Raises:
        CheckpointCorruptError: a reference or change of its own is wrong.
    """
    try:
        return resolver.resolve(checkpoint, where)
    except UnreadableSourceError:
        return checkpoint


def check_version(checkpoint: Checkpoint, first: Checkpoint | None, where: str) -> None:
    """Refuse ``checkpoint`` unless it is in the format version of ``first``, the first record
    read of its run (None: it is the first): every record of a run is in its root's version,
    which says which hash its step records' argument digests are.

    Raises:
        CheckpointCorruptError: the versions differ.
    """
    if first is not None and checkpoint.version != first.version:
        raise CheckpointCorruptError(where, _other_version(checkpoint.version, first.version))


def _other_version(version: int, root_version: int) -> str:
    return f"record is in format version {version}, its run's root in {root_version}"


def _checksum_holds(line: bytes) -> bool:
    """Return whether a line ends with ``,"crc":"<crc32 of what precedes it, and "}">"}``.

    The fast path of :func:`verified_body`, which says what is wrong when this is False. A
    short line's body is sliced (cheaper than a view); a long one's is not copied.
    """
    body = line[:-_SUFFIX_LEN] if len(line) < _COPY_LIMIT else memoryview(line)[:-_SUFFIX_LEN]
    return len(line) > _SUFFIX_LEN and line.endswith(b',"crc":"%08x"}' % _crc32(b"}", _crc32(body)))


def check_journal(
    lines: Iterable[bytes], path: str, run_id: str, *, start: int = 0, root: bytes = b""
) -> tuple[bytes, bytes] | None:
    """Verify every committed record of a journal as one chain, without decoding its data.

    Each record's checksum must hold, and its start (format version, id, seq, parent, kind) must
    make it the next link of ``run_id``'s chain: seq 0 the only root, each later seq naming the
    one before as its parent. A record that does not start as :func:`encode_record` writes it
    (another field order, an older version) is decoded in full instead. Whatever follows the
    last newline is the torn tail, never committed, and is ignored. This is what ``wfctl runs``
    and ``gc`` trust a run by: every checksum and link, at the cost of one read and one CRC per
    record, not a JSON parse (``verify-lineage`` also judges the records' contents).

    Args:
        lines: the journal's committed lines, without newlines (see :func:`read_lines`).
        start: the seq of the first line: a page of a run, whose links to the records before
            it are checked by the seqs each record names (its parent is the seq before).
        root: with ``start`` above 0, the run's root line (its format version is the run's).

    Returns:
        The first and last committed lines (without newlines), or None if there is none.

    Raises:
        CheckpointCorruptError: naming the first record (``<path>:<line>``) that fails.
    """
    run = run_id.encode()
    # A later record's start, as encode_record writes it, is ``_start(later, seq)``, in the
    # root's format version (every record of a run is written in it).
    version = FORMAT_VERSION
    later = b""
    first: bytes | None = None
    line = b""
    prefix, kinds = b"", _FIRST_KINDS
    if start:
        version = _root_version(root)
        later = _later(version, run)
        prefix, kinds = _start(later, start), _LATER_KINDS
    for seq, line in enumerate(lines, start):
        if not _checksum_holds(line):
            verified_body(line, f"{path}:{seq + 1}")  # says what is wrong
        if seq == 0:
            version = _root_version(line)
            later = _later(version, run)
            prefix = _root_start(version, run)
        # The link, in two comparisons: the start encode_record writes for it, then its kind.
        if not (line.startswith(prefix) and line.startswith(kinds, len(prefix))):
            parent = b"null" if seq == 0 else b'"%s.%d"' % (run, seq - 1)
            # accepts it, or says what is wrong
            _check_link(line, f"{path}:{seq + 1}", run_id, seq, parent, version)
        if first is None:
            first = line
        prefix, kinds = _start(later, seq + 1), _LATER_KINDS
    return None if first is None else (first, line)


def decode_chain(
    lines: Iterable[bytes],
    path: str,
    run_id: str,
    known: dict[bytes, Checkpoint],
    decode_from: int = 0,
    *,
    start: int = 0,
    root: bytes = b"",
    resolver: Resolver | None = None,
) -> Iterator[tuple[bytes, Checkpoint]]:
    """Verify and decode a journal's records one at a time, as one chain, in one read.

    Each record is checked as :func:`check_journal` checks it (checksum, then the link to its
    parent), then decoded in full as :func:`decode_record` decodes it, before it is yielded
    with its line: a record is never yielded before everything before it held. A line in
    ``known`` (already verified and decoded, such as a run's root and head read for its
    summary) is checked but not decoded again. A record whose seq is below ``decode_from`` is
    checked only, as :func:`check_journal` checks it, and not yielded (the step records of
    the :data:`~wfctl._records._refs.READ_BACK` before ``decode_from`` are kept, and decoded
    only if one of the first :data:`~wfctl._records._refs.WINDOW` decoded refers to one).
    ``start`` and ``root``: a page of a run, as :func:`check_journal` takes them. Each record is
    yielded with the references in its step arguments resolved by ``resolver`` (one is made if
    None; pass the same one to the pages of a run read in turn).

    Raises:
        CheckpointCorruptError: naming the first record (``<path>:<line>``) that fails, with
            the message :func:`check_journal` or :func:`decode_record` gives for it, or a
            reference that names no result before it.
    """
    run = run_id.encode()
    parent = b"null"
    version = FORMAT_VERSION
    if resolver is None:
        resolver = Resolver(path)
    behind = LinesBefore(resolver, decode_from)
    if start:
        parent, version = b'"%s.%d"' % (run, start - 1), _root_version(root)
    for seq, line in enumerate(lines, start):
        where = f"{path}:{seq + 1}"
        if not _checksum_holds(line):
            verified_body(line, where)  # says what is wrong
        if seq == 0:
            version = _root_version(line)  # every record of the run is in its root's version
        prefix = (
            b'{"v":%d,"id":"%s.%d","kind":"' % (version, run, seq)
            if version >= LEAN_VERSION
            else b'{"v":%d,"id":"%s.%d","seq":%d,"prev":%s,"kind":"'
            % (version, run, seq, seq, parent)
        )
        kind = line[len(prefix) : line.find(b'"', len(prefix))]
        if not line.startswith(prefix) or kind not in _KINDS or (kind == _ROOT) != (seq == 0):
            # accepts it, or says what is wrong
            _check_link(line, where, run_id, seq, parent, version)
        parent = b'"%s.%d"' % (run, seq)
        if seq < decode_from:
            if seq >= decode_from - READ_BACK and kind == _STEP:
                behind.lines.append((seq, line, where))  # decoded only if one refers to it
            continue
        checkpoint = known.get(line)
        if checkpoint is None:
            # The checksum held: the body it covers, read as decode_record reads it.
            body = load_body(line[:-_SUFFIX_LEN] + b"}", where)
            checkpoint = record_of(body, where)
        if checkpoint.seq != seq or checkpoint.run_id != run_id:
            # the start read as this link, the whole as another (a key given twice)
            raise CheckpointCorruptError(where, f"record {checkpoint.checkpoint_id} at seq {seq}")
        if behind.lines:
            if seq >= decode_from + WINDOW:  # out of every later record's reach
                behind.lines.clear()
            elif holds_refs(checkpoint):  # what it may refer to, read now
                yield line, behind.resolve(checkpoint, where)
                continue
        yield line, resolver.resolve(checkpoint, where)


class LinesBefore:
    """The step lines before the first record a reader decodes (``start``), held by its
    resolver once one of the records from ``start`` on refers back: the :data:`WINDOW` before
    it first, and the :data:`READ_BACK` only if a record cannot be read from those (a run
    written before decision 0196), so that what a page holds does not double for every other
    run. :func:`decode_chain` (a page) and ``wfctl show`` (one record) read so."""

    def __init__(self, resolver: Resolver, start: int) -> None:
        self.resolver, self.start = resolver, start
        #: ``(seq, line, where)`` of the step lines of the READ_BACK before ``start``, in order.
        self.lines: list[tuple[int, bytes, str]] = []
        self._reach: int | None = None  # the lines of seq ``_reach`` on are held

    def resolve(self, checkpoint: Checkpoint, where: str) -> Checkpoint:
        """``checkpoint`` (of the first WINDOW decoded) resolved with the lines before.

        Raises:
            CheckpointCorruptError: it cannot be read from the READ_BACK lines either.
        """
        if self._reach is None:
            self._hold(self.start - WINDOW)
        try:
            return self.resolver.resolve(checkpoint, where)
        except CheckpointCorruptError:
            if self._reach == self.start - READ_BACK:
                raise
            self._hold(self.start - READ_BACK)
            return self.resolver.resolve(checkpoint, where)

    def _hold(self, reach: int) -> None:
        # Every line from ``reach``, in order, each held again: one that could not be read
        # without a line before it now can.
        for seq, line, where in self.lines:
            if seq >= reach:
                self.resolver.hold(decode_checked(line, where), where)
        self._reach = reach


def _later(version: int, run: bytes) -> bytes:
    """The start of a later record of ``run`` in format ``version``, for :func:`_start`."""
    escaped = run.replace(b"%", b"%%")  # none in a valid id; any other is refused by the link
    if version >= LEAN_VERSION:
        return b'{"v":%d,"id":"%s.%%d","kind":"' % (version, escaped)
    return b'{"v":%d,"id":"%s.%%d","seq":%%d,"prev":"%s.%%d","kind":"' % (
        version, escaped, escaped
    )  # fmt: skip


def later_id_start(root: bytes, run_id: str) -> bytes | None:
    """How every later record of the run whose root line is ``root`` starts, up to its seq,
    as :func:`encode_record` writes it: ``{"v":N,"id":"<run_id>.``; then its seq and
    ``","kind":"``. None if the root's format version writes more fields there (before 3)."""
    version = _root_version(root)
    if version < LEAN_VERSION:
        return None
    return b'{"v":%d,"id":"%s.' % (version, run_id.encode())


def _start(later: bytes, seq: int) -> bytes:
    """The start of record ``seq``, up to its kind, as :func:`encode_record` writes it, from
    :func:`_later`'s template (which says the seq once from format version 3, else thrice)."""
    return later % (seq, seq, seq - 1) if b'"prev":' in later else later % (seq,)


def _root_start(version: int, run: bytes) -> bytes:
    """The start of a run's root, up to its kind, as :func:`encode_record` writes it."""
    if version >= LEAN_VERSION:
        return b'{"v":%d,"id":"%s.0","kind":"' % (version, run)
    return b'{"v":%d,"id":"%s.0","seq":0,"prev":null,"kind":"' % (version, run)


def _root_version(line: bytes) -> int:
    """Return the format version a run's root ``line`` starts with, or this wfctl's if it
    starts with none it knows (:func:`_check_link` then says what is wrong with the line)."""
    match = _VERSION.match(line)
    version = int(match[1]) if match is not None else FORMAT_VERSION
    return version if 1 <= version <= FORMAT_VERSION else FORMAT_VERSION


def _check_link(
    line: bytes, where: str, run_id: str, seq: int, parent: bytes, root_version: int
) -> None:
    """Check one record's link the slow way, to accept it or name exactly what is wrong.

    Every record of a run must be in the format version of its root (``root_version``): the
    version says which hash its step records' argument digests are.
    """
    match = _CHAIN_LINK.match(line)
    lean = _LEAN_LINK.match(line) if match is None else None
    if match is not None and match[3] == match[4]:
        version, rid, at, prev, kind = (
            int(match[1]), match[2].decode(), int(match[4]), match[5], match[6].decode()
        )  # fmt: skip
    elif lean is not None and int(lean[1]) >= LEAN_VERSION:
        version, rid, at, kind = int(lean[1]), lean[2].decode(), int(lean[3]), lean[4].decode()
        prev = b"null" if at == 0 else b'"%s.%d"' % (lean[2], at - 1)
    else:
        record = decode_record(line, where)
        version, rid, at, kind = record.version, record.run_id, record.seq, record.kind.value
        prev = (
            b"null"
            if record.previous_checkpoint_id is None
            else b'"%s"' % (record.previous_checkpoint_id.encode())
        )
    check_format_version(version, where)
    if version != root_version:
        raise CheckpointCorruptError(where, _other_version(version, root_version))
    if rid != run_id:
        raise CheckpointCorruptError(where, f"record belongs to run {rid!r}")
    if at != seq or prev != parent:
        raise CheckpointCorruptError(
            where,
            f"record is seq {at} with parent {prev.decode()}, expected seq {seq} with parent "
            f"{parent.decode()} (a gap, duplicate, fork or reordering in the chain)",
        )
    if kind not in KINDS or (kind == Kind.ROOT) != (seq == 0):
        raise CheckpointCorruptError(where, f"seq {seq} is a {kind!r} record")


@dataclass(frozen=True, slots=True)
class Tail:
    """Where a journal's committed part ends and what its last record is."""

    #: The last complete line (without newline), or None if the journal holds none.
    line: bytes | None
    #: Byte offset of that line.
    offset: int
    #: Byte offset just after the last newline: everything from here on is the torn tail.
    committed_end: int


def read_tail(fs: FileSystem, fd: int, size: int) -> Tail:
    """Find the last complete line of the first ``size`` bytes, reading only the file's end."""
    chunk = TAIL_CHUNK
    while True:
        start = max(0, size - chunk)
        buf = _pread_exact(fs, fd, size - start, start)
        cut = buf.rfind(b"\n") + 1
        if cut == 0:
            if start == 0:
                return Tail(None, 0, 0)
            chunk *= 2
            continue
        begin = buf.rfind(b"\n", 0, cut - 1) + 1
        if begin == 0 and start > 0:
            chunk *= 2
            continue
        return Tail(buf[begin : cut - 1], start + begin, start + cut)


def check_last_is_newest(fs: FileSystem, fd: int, tail: Tail, head: Checkpoint, path: str) -> None:
    """Refuse a journal whose last record (``head``, read at ``tail``) is not its newest.

    Every record verifies on its own, so without this a stale record appended after the head
    (or the last two records swapped) would be taken for the head: older data, silently. It
    costs one more small read (the line before the last) and that line's checksum, not its
    data. Other breaks (a fork, a gap, a corrupt record before the head) leave the last record
    the newest; strict reads and lineage verification report them.

    Raises:
        CheckpointCorruptError: the record before the last is as new or newer.
    """
    if tail.offset == 0:
        return
    before = read_tail(fs, fd, tail.offset)
    if before.line is None:  # pragma: no cover - a line ends just before the last one
        return
    try:
        run_id, seq = record_link(before.line, path)
    except CheckpointCorruptError:
        return  # a broken record mid-file: the strict reads name it; the head is newest
    if run_id != head.run_id or seq >= head.seq:
        raise CheckpointCorruptError(
            path,
            f"last record {head.checkpoint_id} is not newer than the record before it "
            f"({checkpoint_id_for(run_id, seq)}): the journal's end is out of order, so it "
            "has no trustworthy head",
        )


def read_head(fs: FileSystem, fd: int) -> bytes | None:
    """Return the first complete line of a journal (without newline), or None."""
    chunk = TAIL_CHUNK
    while True:
        buf = _pread_exact(fs, fd, chunk, 0)
        end = buf.find(b"\n")
        if end >= 0:
            return buf[:end]
        if len(buf) < chunk:
            return None
        chunk *= 2


def read_lines(
    fs: FileSystem, fd: int, chunk: int = _READ_CHUNK, *, size: int | None = None
) -> Iterator[bytes]:
    """Yield a file's committed lines (without newlines), reading ``chunk`` bytes at a time.

    What follows the last newline (the torn tail) is not yielded. Memory stays at one chunk
    plus the longest line, however long the journal is. With ``size`` (the file's size, from
    the ``fstat`` that opened it), only that many bytes are read: a journal of up to ``chunk``
    bytes in one ``pread``, with no second one to find its end (what was appended since is
    not read, as if it had come just after).
    """
    offset = 0
    pending: list[bytes] = []  # the start of a line that continues in the next chunk
    while size is None or offset < size:
        part = fs.pread(fd, chunk if size is None else min(chunk, size - offset), offset)
        if not part:
            return
        offset += len(part)
        end = part.rfind(b"\n")
        if end < 0:
            pending.append(part)
            continue
        pieces = part[:end].split(b"\n")
        if pending:
            pending.append(pieces[0])
            pieces[0] = b"".join(pending)
            pending = []
        yield from pieces
        if end + 1 < len(part):
            pending.append(part[end + 1 :])


def journal_lines(fs: FileSystem, fd: int, size: int) -> Iterable[bytes]:
    """:func:`read_lines` of a journal's first ``size`` bytes: a list when one read holds them."""
    if size > _READ_CHUNK:
        return read_lines(fs, fd, size=size)
    data = _pread_exact(fs, fd, size, 0)
    end = data.rfind(b"\n")
    return data[:end].split(b"\n") if end >= 0 else []


def read_all(fs: FileSystem, fd: int) -> bytes:
    """Read a file from its start to its end."""
    parts: list[bytes] = []
    offset = 0
    size = fs.fstat(fd).st_size
    while True:
        part = fs.pread(fd, max(size - offset, TAIL_CHUNK), offset)
        if not part:
            return b"".join(parts)
        parts.append(part)
        offset += len(part)


def _pread_exact(fs: FileSystem, fd: int, length: int, offset: int) -> bytes:
    parts: list[bytes] = []
    while length > 0:
        part = fs.pread(fd, length, offset)
        if not part:
            break  # the file shrank under us: work with what is there
        parts.append(part)
        length -= len(part)
        offset += len(part)
    return b"".join(parts)
