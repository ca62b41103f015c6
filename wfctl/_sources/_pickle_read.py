"""A pickle read as data, never run: what its opcodes would build, described in plain JSON.

:func:`read_pickle` walks the stream with the standard library's :func:`pickletools.genops`
(which parses opcodes and never imports or calls anything) over a stack of plain values: strings,
numbers, lists and dicts are themselves; a global the stream would import is its name; a call
(``REDUCE``, ``NEWOBJ``) or an object's state (``BUILD``) becomes ``{"$type": "module.Name",
...}`` with the arguments and the state's fields, never constructed. So an agent-framework
message reads as its ``source_id``, ``target_id`` and ``data``, a request as its ``data``, while
the classes they name are never imported. A stream that does not parse, or that builds more
than :data:`MAX_NODES` values, gives no reading (the opaque marker's scan still says what it
found).
"""

from __future__ import annotations

import math
import pickletools
from typing import Any

__all__ = ["MAX_NODES", "read_pickle"]

#: How many values a reading builds at most (a stream that would build more, or whose shared
#: references would repeat more, is not read).
MAX_NODES = 5_000
#: How deep a reading nests at most.
MAX_DEPTH = 32
_MARK = object()
_STRINGS = frozenset(
    {"STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE"}
    | {"BINUNICODE8"}
)
_BYTES = frozenset({"BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8"})
_INTS = frozenset({"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4"})
_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_GETS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_CONSTANTS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}


class _Global(str):
    """A name the stream would import (``module.Name``)."""


class _Unreadable(Exception):
    """The stream holds something a reading does not follow."""


def read_pickle(raw: bytes) -> Any:
    """What ``raw`` would build, as plain JSON (see the module); None when it cannot be read."""
    try:
        value = _run(raw)
        return _plain(value, [MAX_NODES], 0)
    except (_Unreadable, ValueError, IndexError, KeyError, EOFError, TypeError, RecursionError):
        return None


def _run(raw: bytes) -> Any:
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    steps = 0
    for opcode, found, _ in pickletools.genops(raw):
        arg: Any = found  # each opcode's argument is of the type its opcode says
        steps += 1
        if steps > MAX_NODES * 4:
            raise _Unreadable("too long")
        name = opcode.name
        if name == "STOP":
            return stack.pop()
        if name in ("PROTO", "FRAME"):
            continue
        if name in _STRINGS:
            stack.append(arg.decode("latin-1") if isinstance(arg, bytes) else str(arg))
        elif name in _BYTES:
            stack.append({"$bytes": len(arg)})
        elif name in _INTS:  # a long one as its size: its digits are no reading
            big = isinstance(arg, int) and abs(arg) >= 2**63
            stack.append({"$int": f"{arg.bit_length()} bits"} if big else arg)
        elif name in ("FLOAT", "BINFLOAT"):
            stack.append(arg if math.isfinite(arg) else str(arg))
        elif name in _CONSTANTS:
            stack.append(_CONSTANTS[name])
        elif name in ("EMPTY_LIST", "EMPTY_TUPLE", "EMPTY_SET"):
            stack.append([])
        elif name == "EMPTY_DICT":
            stack.append({})
        elif name == "MARK":
            stack.append(_MARK)
        elif name in ("LIST", "TUPLE", "FROZENSET"):
            stack.append(_pop_mark(stack))
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            count = int(name[-1])
            items = stack[-count:]
            del stack[-count:]
            stack.append(items)
        elif name == "DICT":
            items = _pop_mark(stack)
            stack.append(_pairs({}, items))
        elif name == "APPEND":
            item = stack.pop()
            _list(stack[-1]).append(item)
        elif name in ("APPENDS", "ADDITEMS"):
            items = _pop_mark(stack)
            _list(stack[-1]).extend(items)
        elif name == "SETITEM":
            value, key = stack.pop(), stack.pop()
            _pairs(stack[-1], [key, value])
        elif name == "SETITEMS":
            items = _pop_mark(stack)
            _pairs(stack[-1], items)
        elif name in _PUTS:
            memo[int(arg)] = stack[-1]
        elif name == "MEMOIZE":
            memo[len(memo)] = stack[-1]
        elif name in _GETS:
            stack.append(memo[int(arg)])
        elif name in ("GLOBAL", "INST"):
            module, _, qualname = str(arg).partition(" ")
            if name == "INST":
                stack.append({"$type": f"{module}.{qualname}", "$args": _pop_mark(stack)})
            else:
                stack.append(_Global(f"{module}.{qualname}"))
        elif name == "STACK_GLOBAL":
            qualname, module = stack.pop(), stack.pop()
            stack.append(_Global(f"{module}.{qualname}"))
        elif name in ("REDUCE", "NEWOBJ"):
            args, made = stack.pop(), stack.pop()
            stack.append(_call(made, args))
        elif name == "NEWOBJ_EX":
            kwargs, args, made = stack.pop(), stack.pop(), stack.pop()
            stack.append(_call(made, [*_list(args), kwargs]))
        elif name == "OBJ":
            items = _pop_mark(stack)
            stack.append(_call(items[0], items[1:]))
        elif name == "BUILD":
            state = stack.pop()
            _build(stack[-1], state)
        elif name in ("EXT1", "EXT2", "EXT4"):
            stack.append({"$extension": arg})
        elif name in ("PERSID", "BINPERSID"):
            stack.append({"$persistent": arg if name == "PERSID" else stack.pop()})
        elif name == "POP":
            stack.pop()
        elif name == "POP_MARK":
            _pop_mark(stack)
        elif name == "DUP":
            stack.append(stack[-1])
        else:  # NEXT_BUFFER, READONLY_BUFFER and what a later protocol adds
            raise _Unreadable(name)
    raise _Unreadable("no STOP")


def _pop_mark(stack: list[Any]) -> list[Any]:
    for index in range(len(stack) - 1, -1, -1):
        if stack[index] is _MARK:
            items = stack[index + 1 :]
            del stack[index:]
            return items
    raise _Unreadable("no MARK")


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _Unreadable("append to a non-list")
    return value


def _pairs(target: Any, items: list[Any]) -> dict[str, Any]:
    if not isinstance(target, dict):
        raise _Unreadable("set an item of a non-dict")
    for key, value in zip(items[::2], items[1::2], strict=True):
        target[key if isinstance(key, str) else repr(_plain(key, [50], 0))] = value
    return target


def _call(made: Any, args: Any) -> dict[str, Any]:
    described: dict[str, Any] = {"$type": str(made) if isinstance(made, _Global) else "?"}
    if args:
        described["$args"] = args
    return described


def _build(target: Any, state: Any) -> None:
    if not isinstance(target, dict):
        raise _Unreadable("state of a non-object")
    if isinstance(state, list) and len(state) == 2:  # (dict state, slots state)
        for part in state:
            if isinstance(part, dict):
                _build(target, part)
        return
    if isinstance(state, dict) and all(not key.startswith("$") for key in state):
        target.update(state)
    else:
        target["$state"] = state


def _plain(value: Any, budget: list[int], depth: int) -> Any:
    """A copy of ``value`` in plain JSON values, within the budget of nodes (shared references
    are copied each time they are met, so the budget bounds what a stream can make them
    repeat)."""
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise _Unreadable("too large")
    if isinstance(value, _Global):
        return {"$global": str(value)}
    if isinstance(value, dict):
        return {key: _plain(item, budget, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item, budget, depth + 1) for item in value]
    if value is _MARK:
        raise _Unreadable("a MARK left on the stack")
    return value
