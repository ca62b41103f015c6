"""What ``log`` and ``du`` show of one agent-framework checkpoint, read without unpickling.

A checkpoint's messages (``messages``: a list per source executor) and pending requests
(``pending_request_info_events``) are pickles of the framework's ``WorkflowMessage`` and
``WorkflowEvent``; they are read as data (:func:`~._pickle_read.read_pickle`), never run, for
their source, target and payload. A functional workflow's step cache (``state._step_cache``)
is keyed ``v2::["auto", step, wrapper, identity, call index]`` (or ``"explicit"`` with no
index, or the older ``step::index``): each entry is shown as ``step#index`` (an explicit key as
``step[identity]``) with its value folded.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from ._pickle import pickle_marker

__all__ = [
    "FOLD",
    "channel_sizes",
    "fold",
    "opaque",
    "part_sizes",
    "step_name",
    "summary_facts",
]

#: How many characters of a value a folded line shows.
FOLD = 60
_PICKLED, _TYPE = "__pickled__", "__type__"
_V2 = "v2::"


def opaque(value: Any) -> Any:
    """Return ``value`` with every pickled value replaced by an opaque marker (never unpickled).

    The marker names the type the framework recorded, the pickle's size in bytes, what a
    static scan of its opcodes finds (:func:`~._pickle.pickle_marker`) and, as ``"reading"``,
    what its opcodes would build, as data (absent when the stream cannot be read so); a ``__pickled__`` text that is not base64 gives ``"bytes":
    null`` and says so.
    """
    if isinstance(value, dict):
        if _PICKLED in value and _TYPE in value:
            raw = _decoded(value[_PICKLED])
            if raw is None:
                return {
                    "$opaque": "pickle",
                    "type": str(value[_TYPE]),
                    "bytes": None,
                    "scan": {"problem": "not base64"},
                }
            return pickle_marker(raw, str(value[_TYPE]))
        return {key: opaque(item) for key, item in value.items()}
    if isinstance(value, list):
        return [opaque(item) for item in value]
    return value


def _decoded(text: object) -> bytes | None:
    """The bytes a base64 text holds; None if it is not base64."""
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def summary_facts(data: dict[str, Any], cached_before: frozenset[str]) -> dict[str, Any]:
    """The facts ``log`` shows of a checkpoint whose values :func:`opaque` made safe:
    ``nodes`` (the executors whose messages it holds), ``messages`` (``source → target: type
    value``), ``requests`` (``id: type value (from executor)``), and for a functional
    workflow ``steps`` (the step cache's entries not in ``cached_before``, the keys of the
    checkpoint saved before it) and ``step_count`` (every entry)."""
    facts: dict[str, Any] = {}
    messages = data.get("messages")
    if isinstance(messages, dict):
        lines, senders = [], []
        for source, items in messages.items():
            if not str(source).startswith("internal:") and source not in senders:
                senders.append(str(source))
            for item in items if isinstance(items, list) else [items]:
                lines.append(_message(str(source), item))
        facts["nodes"] = senders
        facts["messages"] = lines
    requests = data.get("pending_request_info_events")
    if isinstance(requests, dict):
        facts["requests"] = [_request(str(rid), event) for rid, event in requests.items()]
    state = data.get("state")
    cache = state.get("_step_cache") if isinstance(state, dict) else None
    if isinstance(cache, dict):
        facts["steps"] = [
            f"{step_name(key)} = {fold(value)}"
            for key, value in cache.items()
            if key not in cached_before
        ]
        facts["step_count"] = len(cache)
    return facts


def _message(source: str, item: Any) -> str:
    reading = item.get("reading") if isinstance(item, dict) else None
    if not isinstance(reading, dict) or "data" not in reading:  # not a WorkflowMessage
        return f"{source} → ?: {fold(item)}"
    target = reading.get("target_id") or "*"
    kind = reading.get("type")
    args = kind.get("$args") if isinstance(kind, dict) else None
    tag = f" [{args[0]}]" if isinstance(args, list) and args and args[0] != "standard" else ""
    return f"{reading.get('source_id') or source} → {target}{tag}: {fold(reading.get('data'))}"


def _request(request_id: str, event: Any) -> str:
    reading = event.get("reading") if isinstance(event, dict) else None
    if not isinstance(reading, dict) or "data" not in reading:  # not a WorkflowEvent
        return f"{request_id}: {fold(event)}"
    source = reading.get("_source_executor_id")
    origin = f" (from {source})" if isinstance(source, str) else ""
    return f"{request_id}: {fold(reading.get('data'))}{origin}"


def step_name(key: str) -> str:
    """A step cache key as people read it: ``step[identity]#call``, the identity (the hash of
    the call's arguments, or of an explicit replay key) cut to 8 characters and the call's
    index among calls of that identity (none for an explicit key; ``step#call`` for the older
    ``step::call``); a key of no known form as it is."""
    if key.startswith(_V2):
        try:
            payload = json.loads(key[len(_V2) :])
        except ValueError:
            return key
        if isinstance(payload, list) and len(payload) >= 4 and isinstance(payload[1], str):
            identity = str(payload[3])[:8]
            if payload[0] == "auto" and len(payload) == 5:
                return f"{payload[1]}[{identity}]#{payload[4]}"
            if payload[0] == "explicit":
                return f"{payload[1]}[{identity}]"
        return key
    name, sep, index = key.rpartition("::")
    return f"{name}#{index}" if sep and name and index.isdigit() else key


def fold(value: Any) -> str:
    """``value`` on one short line: a pickle's reading with its type first (a pickle that
    cannot be read as its type and size), JSON otherwise, cut at :data:`FOLD` characters."""
    if isinstance(value, dict) and value.get("$opaque") == "pickle":
        reading = value.get("reading")
        if reading is None:
            return f"{value.get('type')} (pickle, {value.get('bytes')} bytes, not read)"
        value = reading
    prefix = ""
    if isinstance(value, dict) and isinstance(value.get("$type"), str):
        prefix = value["$type"] + " "
        value = {k: v for k, v in value.items() if k != "$type"}
    text = json.dumps(value, ensure_ascii=False, default=str)
    text = prefix + text
    return text if len(text) <= FOLD else text[: FOLD - 1] + "…"


def part_sizes(raw: dict[str, Any]) -> dict[str, int]:
    """The bytes of a checkpoint's parts, as compact JSON: ``state`` (without the step
    cache), ``messages``, ``requests``, ``step_cache``."""
    state = _dict(raw.get("state"))
    cache = _dict(state.get("_step_cache"))
    rest = {k: v for k, v in state.items() if k != "_step_cache"}
    parts = {
        "state": rest,
        "messages": raw.get("messages"),
        "requests": raw.get("pending_request_info_events"),
        "step_cache": cache,
    }
    return {part: _size(value) if value else 0 for part, value in parts.items()}


def channel_sizes(raw: dict[str, Any]) -> dict[str, int]:
    """The bytes of a checkpoint by executor or step: ``messages from X``, ``state of X``,
    ``step S`` (every call of a step together)."""
    channels: dict[str, int] = {}
    messages = raw.get("messages")
    if isinstance(messages, dict):
        for source, items in messages.items():
            key = f"messages from {source}"
            channels[key] = channels.get(key, 0) + _size(items)
    state = _dict(raw.get("state"))
    executors = state.get("_executor_state")
    if isinstance(executors, dict):
        for name, value in executors.items():
            channels[f"state of {name}"] = _size(value)
    cache = state.get("_step_cache")
    if isinstance(cache, dict):
        for key, value in cache.items():
            step = f"step {step_name(str(key)).split('[')[0].split('#')[0]}"
            channels[step] = channels.get(step, 0) + _size(value) + len(str(key))
    return channels


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
