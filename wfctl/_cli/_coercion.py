"""Option values typer would hand to pydantic, converted without importing it where trivial.

typer >= 0.27 converts every parameter's value (a default included, unless it is a boolean
flag) with a pydantic ``TypeAdapter`` built on first use, and building the first one imports
pydantic: about 0.1 s, more than the rest of ``wfctl runs`` on an empty store. Most of wfctl's
values need no conversion at all: a ``str`` option given as text, a list of texts, or a default
that already has the declared type (``--drain-timeout``'s ``5.0``, ``--format``'s
``ExportFormat.json``). :func:`defer_coercion` makes each parameter of a command (and its help
option) one whose ``process_value`` passes those through as they are, converts a plain number
given as text (``--keep 3``, ``--batch-ms 2.5``) within its bounds and a choice given as one of
its values (``--status paused``, ``--format toml``) and a path that is asked nothing of (``-o
FILE``), and hands anything else (``--keep -1``, ``--status Paused``, a missing required value)
to typer's own ``process_value``, so every conversion that is not trivial stays typer's. Where
typer refuses a choice or a number, its message (pydantic's wording: "Value error, ... is not
one of", "Input should be greater than or equal to 0") is replaced by wfctl's own sentence
(:func:`in_our_words`): ``--status 'pasued' is not one of ...; did you mean 'paused'?``.

It uses only public names: typer's ``typer.core.TyperOption`` and ``TyperArgument``, Click's
``Parameter.process_value`` (which they inherit: convert, check a required value, call the
callback), and the ``type_descriptor`` each typer >= 0.27 parameter carries (its resolved
annotation and ``typer.Option`` settings). A parameter without one (an older typer, on Click,
which never used pydantic) is left as typer made it.
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final, get_args, get_origin

import typer
from typer.core import TyperArgument, TyperOption

__all__ = ["UsageSentence", "defer_coercion", "in_our_words"]

#: What :func:`_trivially_converted` returns for a value it leaves to typer.
_LEFT_TO_TYPER: Final = object()


def _passes_through(annotation: Any, value: Any) -> bool:
    """Whether ``value`` is already what typer's converter would return for ``annotation``."""
    if annotation is bool:
        return type(value) is bool
    if annotation is str:
        return type(value) is str
    if get_origin(annotation) is list and get_args(annotation) == (str,):
        return isinstance(value, list | tuple) and all(type(v) is str for v in value)
    # A default of the declared type (a number or an enum member); text from the command line
    # is a str, never one of these, so it is always converted (and checked) by typer.
    if annotation in (int, float) or (
        isinstance(annotation, type) and issubclass(annotation, enum.Enum)
    ):
        return type(value) is annotation
    return False


#: The number types converted here from plain text, and the text they take: ASCII digits, an
#: optional minus and (for a float) a fraction; no space, plus sign, underscore, exponent or
#: other digits (typer's converter reads some of those, and says what is wrong with the rest).
_NUMBERS: Final = {
    int: re.compile(r"-?[0-9]{1,18}"),
    float: re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?"),
}


def _plain_number(annotation: Any, value: Any, info: Any) -> int | float | None:
    """Return ``value`` converted, if it is plain text for an ``int`` or ``float`` parameter
    within its ``min`` and ``max``, as typer's converter would return it; else None.

    ``annotation`` is the parameter's type as typer resolved it (``int`` for ``int | None``).
    """
    pattern = _NUMBERS.get(annotation) if isinstance(annotation, type) else None
    if pattern is None or type(value) is not str or not pattern.fullmatch(value):
        return None
    number: int | float = annotation(value)
    low, high = getattr(info, "min", None), getattr(info, "max", None)
    if (low is not None and number < low) or (high is not None and number > high):
        return None  # typer's converter clamps it or says what is wrong
    return number


def _plain_choice(annotation: Any, value: Any) -> enum.Enum | list[enum.Enum] | None:
    """Return ``value`` converted, if it is the exact value of a member of an enum parameter
    (or, for a list of them, each text is), as typer's converter would return it; else None."""
    many = get_origin(annotation) is list
    kind = get_args(annotation)[0] if many else annotation
    if not (isinstance(kind, type) and issubclass(kind, enum.Enum)):
        return None
    members = kind._value2member_map_
    if not many:
        return members.get(value) if type(value) is str else None
    if not isinstance(value, list | tuple) or any(type(text) is not str for text in value):
        return None
    chosen = [members[text] for text in value if text in members]
    return chosen if len(chosen) == len(value) else None


#: What a path parameter must leave as typer's defaults for its text to be just ``Path(text)``.
_PLAIN_PATH: Final = {
    "exists": False,
    "file_okay": True,
    "dir_okay": True,
    "writable": False,
    "resolve_path": False,
    "allow_dash": False,
    "path_type": None,
}


def _plain_path(annotation: Any, value: Any, info: Any) -> Path | list[Path] | None:
    """Return ``value`` as a path (or, for a list of them, each text), if the parameter asks
    nothing of it (no existence or kind check, no resolving), as typer's converter would
    return it; else None."""
    many = get_origin(annotation) is list
    if (get_args(annotation)[0] if many else annotation) is not Path:
        return None
    if any(getattr(info, name, None) != default for name, default in _PLAIN_PATH.items()):
        return None
    if not many:
        return Path(value) if type(value) is str else None
    if not isinstance(value, list | tuple) or any(type(text) is not str for text in value):
        return None
    return [Path(text) for text in value]


def _trivially_converted(param: Any, value: Any) -> Any:
    """Return ``value`` as typer's converter would return it for ``param``, where that is
    trivial (see the module doc); else :data:`_LEFT_TO_TYPER`."""
    many = param.multiple or param.nargs == -1
    if value is None:  # nothing given and no default: what typer's converter makes of it
        return () if many else None
    if many and isinstance(value, str):
        return _LEFT_TO_TYPER  # typer says what is wrong
    descriptor = param.type_descriptor
    annotation, info = descriptor.annotation, descriptor.parameter_info
    if _passes_through(annotation, value):
        return list(value) if isinstance(value, tuple) else value
    number = _plain_number(annotation, value, info)
    if number is not None:
        return number
    choice = _plain_choice(annotation, value)
    if choice is not None:
        return choice
    path = _plain_path(annotation, value, info)
    return _LEFT_TO_TYPER if path is None else path


class UsageSentence(typer.BadParameter):
    """A value refused in wfctl's words: the message is the whole sentence."""

    def format_message(self) -> str:
        return self.message


def _shown_name(param: Any) -> str:
    """The parameter as the user typed it: its long option, or its argument's metavar."""
    options = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
    if options and isinstance(param, TyperOption):
        return str(max(options, key=len))
    return str(param.metavar or param.name.upper())


def _bounds(info: Any) -> str:
    low, high = getattr(info, "min", None), getattr(info, "max", None)
    if low is not None and high is not None:
        return f"between {low} and {high}"
    return f"{low} or more" if low is not None else f"at most {high}"


def in_our_words(param: Any, value: Any) -> str | None:
    """Say what is wrong with ``value`` for ``param`` in one sentence of wfctl's, for a choice
    or a number typer refused; None for anything else (typer's message stands)."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or value is None:
        return None
    annotation, info = descriptor.annotation, descriptor.parameter_info
    name = _shown_name(param)
    many = get_origin(annotation) is list
    kind = get_args(annotation)[0] if many else annotation
    texts = list(value) if isinstance(value, list | tuple) else [value]
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        choices = [str(member.value) for member in kind]
        bad = next((t for t in texts if t not in choices), None)
        if not isinstance(bad, str):
            return None
        close = difflib.get_close_matches(bad.lower(), choices, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"{name} {bad!r} is not one of {', '.join(choices)}{hint}"
    if kind in (int, float):
        whole = kind is int
        for text in texts:
            try:
                number = int(text) if whole else float(text)
            except (TypeError, ValueError):
                wanted = "a whole number" if whole else "a number"
                return f"{name} must be {wanted}, not {text!r}"
            low, high = getattr(info, "min", None), getattr(info, "max", None)
            if (low is not None and number < low) or (high is not None and number > high):
                return f"{name} must be {_bounds(info)}, not {text}"
    return None


def _process(param: Any, ctx: Any, value: Any, typers: Callable[[Any, Any], Any]) -> Any:
    """``process_value`` of ``param``: the trivial conversion, else typer's (``typers``)."""
    converted = _trivially_converted(param, value)
    if converted is _LEFT_TO_TYPER or (param.required and param.value_is_missing(converted)):
        try:
            return typers(ctx, value)  # converts, and raises typer's error for a missing value
        except typer.BadParameter:
            sentence = in_our_words(param, value)
            if sentence is None:
                raise
            raise UsageSentence(sentence, ctx=ctx, param=param) from None
    return converted if param.callback is None else param.callback(ctx, param, converted)


class _Option(TyperOption):
    """A typer option whose trivial values are converted without pydantic."""

    def process_value(self, ctx: Any, value: Any) -> Any:
        return _process(self, ctx, value, super().process_value)


class _Argument(TyperArgument):
    """A typer argument whose trivial values are converted without pydantic."""

    def process_value(self, ctx: Any, value: Any) -> Any:
        return _process(self, ctx, value, super().process_value)


#: The class each of typer's parameter classes becomes.
_TRIVIAL: Final[dict[type, type]] = {TyperOption: _Option, TyperArgument: _Argument}


def defer_coercion(params: Iterable[Any]) -> None:
    """Make each typer parameter in ``params`` convert trivial values itself (module doc)."""
    for param in params:
        kind = _TRIVIAL.get(type(param))
        if kind is not None and getattr(param, "type_descriptor", None) is not None:
            param.__class__ = kind  # a subclass: the same object, with its own process_value
