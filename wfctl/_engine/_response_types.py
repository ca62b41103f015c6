"""Answer types: the ``response_type`` a request declares, the name it is recorded under, and
converting an answer to it.

``ctx.request_info(data, response_type)`` declares what its answer must be. The declared type is
recorded in the pause checkpoint under a *type name*: ``bool``, ``int``, ``float``, ``str``,
``list``, ``dict``, ``list[T]``, ``dict[str, T]`` (or ``dict[int, T]``), ``T | None``, or the
name a dataclass or pydantic model was registered under with :func:`wfctl.register_type`. No
``response_type`` (or ``Any``, ``object``) records none and accepts any answer. Other types are
refused when the request is made (:class:`WorkflowDefinitionError`), since no answer to them
could be checked.

Every answer is converted to the type before it is recorded, or refused with
:class:`AnswerTypeError`. Conversions happen only where they are unambiguous:

- ``bool``: ``true``/``false``, or the strings ``"true"``/``"false"`` in any case -- not
  ``yes``/``no``, ``1``/``0``, ``on``/``off``;
- ``int``: an int (never a bool), a float with an integral value, or a string holding a JSON
  number with an integral value (``"42"``, ``"4.0"``);
- ``float``: an int or float (never a bool), or a string holding a JSON number;
- ``str``: a string only (``--response`` keeps the raw text for a request that takes ``str``);
- ``list[T]``: a list (or tuple), each item converted; ``dict[K, V]``: a table, keys and values
  converted; ``T | None``: None, or a ``T``;
- a registered dataclass: an instance, or a table of its init fields, each converted to its
  annotated type where that is one of these types (a field annotated with another class must
  hold an instance of it);
- a registered pydantic model: an instance, or whatever its ``model_validate`` accepts.

Reading a type name back from a store never imports anything: names resolve only through the
builtin names above and the classes the running code registered.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import types
import typing
from typing import Any, Final

from wfctl._errors import AnswerTypeError, WorkflowDefinitionError
from wfctl._records._codec import registered_class, registered_name

from ._events import error_message

__all__ = ["admits_text", "convert_answer", "type_name"]

_BUILTIN: Final = {"bool": bool, "int": int, "float": float, "str": str, "list": list, "dict": dict}
#: A registered name usable as a type name: dotted identifiers (the default, module.qualname).
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_MAX_DEPTH: Final = 16
_SUPPORTED: Final = (
    "use bool, int, float, str, list[T], dict[str, T], T | None, a dataclass or pydantic "
    "model registered with wfctl.register_type, or no response_type"
)


# --- declared type -> type name ------------------------------------------------------------


def type_name(declared: object, key: str) -> str | None:
    """Return the name a request's declared ``response_type`` is recorded under.

    Returns:
        The type name, or None when any answer is accepted (no type, ``Any``, ``object``).

    Raises:
        WorkflowDefinitionError: no answer to this type could be checked (see module docstring).
    """
    name = _name_of(declared, declared, key, 0)
    return None if name == "any" else name


def _unsupported(declared: object, key: str, why: str) -> WorkflowDefinitionError:
    shown = getattr(declared, "__qualname__", None) or repr(declared)
    return WorkflowDefinitionError(
        f"request {key}: response_type {shown} is not supported ({why}); {_SUPPORTED}"
    )


def _name_of(tp: object, declared: object, key: str, depth: int) -> str:
    if depth > _MAX_DEPTH:
        raise _unsupported(declared, key, "nested too deeply")
    if tp is None or tp is Any or tp is object:
        return "any"
    if tp is type(None):
        return "None"
    if isinstance(tp, type) and tp.__name__ in _BUILTIN and _BUILTIN[tp.__name__] is tp:
        return tp.__name__
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        if len(members) != 1:
            raise _unsupported(declared, key, "a union other than T | None")
        inner = _name_of(members[0], declared, key, depth + 1)
        return "any" if inner == "any" else f"{inner} | None"
    if origin is list and len(args) == 1:
        inner = _name_of(args[0], declared, key, depth + 1)
        return "list" if inner == "any" else f"list[{inner}]"
    if origin is dict and len(args) == 2:
        keys = _name_of(args[0], declared, key, depth + 1)
        if keys not in ("str", "int"):
            raise _unsupported(declared, key, "dict keys must be str or int")
        values = _name_of(args[1], declared, key, depth + 1)
        return "dict" if (keys, values) == ("str", "any") else f"dict[{keys}, {values}]"
    if isinstance(tp, type):
        registered = registered_name(tp)
        if registered is not None and _NAME.fullmatch(registered):
            return registered
        if registered is not None:
            raise _unsupported(declared, key, f"registered under {registered!r}, not a dotted name")
        if dataclasses.is_dataclass(tp) or callable(getattr(tp, "model_validate", None)):
            raise _unsupported(declared, key, "not registered")
    raise _unsupported(declared, key, "no answer to it can be checked")


# --- type name -> node ---------------------------------------------------------------------

#: A parsed type name: (kind, arguments); kind is a builtin name, "any", "None", "optional",
#: or "registered" with the registered name as its one argument.
_Node = tuple[str, tuple[Any, ...]]


def _split(text: str, separator: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth < 0:
            raise ValueError("unbalanced brackets")
        if char == separator and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if depth:
        raise ValueError("unbalanced brackets")
    return [*parts, text[start:].strip()]


@functools.lru_cache(maxsize=256)
def _parse(text: str, depth: int = 0) -> _Node:
    """Parse a type name (which may come from a store: anything unexpected is a ValueError)."""
    if depth > _MAX_DEPTH or len(text) > 1000:
        raise ValueError("type name too long or nested too deeply")
    union = _split(text, "|")
    if len(union) == 2 and union[1] == "None":
        return ("optional", (_parse(union[0], depth + 1),))
    if len(union) != 1:
        raise ValueError("a union other than T | None")
    head, bracket, rest = text.partition("[")
    if bracket:
        if not rest.endswith("]"):
            raise ValueError("text after ']'")
        args = tuple(_parse(a, depth + 1) for a in _split(rest[:-1], ","))
        if (head, len(args)) in (("list", 1), ("dict", 2)):
            return (head, args)
        raise ValueError(f"{head}[...] is not a type wfctl checks")
    if head in _BUILTIN or head in ("any", "None"):
        return (head, ())
    if _NAME.fullmatch(head):
        return ("registered", (head,))
    raise ValueError(f"unknown type name {head[:40]!r}")


def admits_text(name: str | None) -> bool:
    """Tell whether a ``--response`` value for this type is kept as raw text (``str``)."""
    return name in ("str", "str | None")


# --- converting ----------------------------------------------------------------------------


class _Refused(Exception):
    """Internal: the value does not fit; carries why (naming the part that does not fit)."""


def convert_answer(value: Any, name: str | None, key: str) -> Any:
    """Return ``value`` converted to the type recorded as ``name`` (None: any, as given).

    Raises:
        AnswerTypeError: the value does not fit the type, or the type name cannot be checked
            here (an unregistered class, or a name wfctl cannot read).
    """
    if name is None:
        return value
    try:
        node = _parse(name)
    except (ValueError, RecursionError):
        raise AnswerTypeError(key, name, value, "wfctl cannot read this type name") from None
    try:
        return _convert(value, node, "")
    except _Refused as exc:
        raise AnswerTypeError(key, name, value, str(exc)) from None
    except RecursionError:
        raise AnswerTypeError(key, name, value, "nested too deeply") from None


def _refuse(path: str, value: Any, wanted: str) -> _Refused:
    if not path:
        return _Refused(wanted)
    shown = repr(value)
    return _Refused(f"{path} is {shown[:40]}{'...' if len(shown) > 40 else ''}: {wanted}")


def _number(text: str) -> int | float | None:
    try:
        number = json.loads(text, parse_constant=lambda _: None)
    except ValueError:
        return None
    return number if type(number) in (int, float) else None


def _convert(value: Any, node: _Node, path: str) -> Any:
    kind, args = node
    if kind == "any":
        return value
    if kind == "None" or (kind == "optional" and value is None):
        if value is None:
            return None
        raise _refuse(path, value, "expected null")
    if kind == "optional":
        return _convert(value, args[0], path)
    if kind == "registered":
        return _convert_registered(value, args[0], path)
    return _CONVERTERS[kind](value, args, path)


def _to_bool(value: Any, args: tuple[Any, ...], path: str) -> bool:
    if type(value) is bool:
        return value
    if type(value) is str and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _refuse(path, value, "expected true or false")


def _to_int(value: Any, args: tuple[Any, ...], path: str) -> int:
    number = _number(value) if type(value) is str else value
    if type(number) is int:
        return number
    if type(number) is float and number.is_integer():
        return int(number)
    raise _refuse(path, value, "expected a whole number")


def _to_float(value: Any, args: tuple[Any, ...], path: str) -> float:
    number = _number(value) if type(value) is str else value
    if isinstance(number, int | float) and type(number) is not bool:
        try:
            return float(number)
        except OverflowError:
            pass
    raise _refuse(path, value, "expected a number")


def _to_str(value: Any, args: tuple[Any, ...], path: str) -> str:
    if type(value) is str:
        return value
    raise _refuse(path, value, "expected text")


def _to_list(value: Any, args: tuple[Any, ...], path: str) -> list[Any]:
    if type(value) not in (list, tuple):
        raise _refuse(path, value, "expected a list")
    if not args:
        return list(value)
    return [_convert(item, args[0], f"{path}[{i}]") for i, item in enumerate(value)]


def _to_dict(value: Any, args: tuple[Any, ...], path: str) -> dict[Any, Any]:
    if type(value) is not dict:
        raise _refuse(path, value, "expected a table")
    if not args:
        return dict(value)
    keys, values = args
    return {
        _convert(k, keys, f"{path}.<key>"): _convert(v, values, f"{path}[{k!r}]")
        for k, v in value.items()
    }


_CONVERTERS: Final = {
    "bool": _to_bool,
    "int": _to_int,
    "float": _to_float,
    "str": _to_str,
    "list": _to_list,
    "dict": _to_dict,
}


def _convert_registered(value: Any, name: str, path: str) -> Any:
    entry = registered_class(name)
    if entry is None:
        raise _Refused(f"{name} is not registered in this process (wfctl.register_type)")
    cls, fields = entry
    if type(value) is cls:
        return value
    if fields is None:  # a pydantic model validates (and converts) for itself
        try:
            return cls.model_validate(value)  # type: ignore[attr-defined]  # duck-typed model
        except Exception as exc:
            raise _refuse(path, value, _first_line(exc)) from None
    if type(value) is not dict:
        raise _refuse(path, value, f"expected a {cls.__name__} or a table of its fields")
    unknown = sorted(str(k) for k in value if k not in fields)
    if unknown:
        raise _refuse(path, value, f"{cls.__name__} has no field(s) {', '.join(unknown)}")
    missing = _required_fields(cls) - value.keys()
    if missing:
        raise _refuse(path, value, f"{cls.__name__} needs field(s) {', '.join(sorted(missing))}")
    hints = _field_types(cls)
    converted = {k: _convert_field(v, hints.get(k), f"{path}.{k}") for k, v in value.items()}
    try:
        return cls(**converted)
    except Exception as exc:
        raise _refuse(path, value, _first_line(exc)) from None


def _convert_field(value: Any, hint: Any, path: str) -> Any:
    if hint is None:
        return value
    try:
        name = _name_of(hint, hint, "", 0)
    except WorkflowDefinitionError:
        if isinstance(hint, type) and not isinstance(value, hint):
            raise _refuse(path, value, f"expected a {hint.__name__}") from None
        return value  # a generic annotation wfctl cannot check: the class decides
    return _convert(value, _parse(name), path)


def _required_fields(cls: type) -> set[str]:
    """The fields of a dataclass that have no default (what its constructor needs)."""
    if not dataclasses.is_dataclass(cls):
        return set()
    return {
        f.name
        for f in dataclasses.fields(cls)
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }


def _field_types(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: its fields are not converted
        return {}


def _first_line(exc: BaseException) -> str:
    text = error_message(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]
