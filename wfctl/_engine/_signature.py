"""The code signature of a workflow: a digest over the workflow body and the steps it uses.

A run's root records the signature; restoring one of its checkpoints with different code raises
``WorkflowChangedError`` unless the caller allows it. The signature covers the body and, found
through the names its code refers to, every ``@step`` and every plain function of the body's
own module that it reaches (transitively). Steps reached only through other modules' helpers or
through objects are not seen: the per-call argument digests still catch what they change.
"""

from __future__ import annotations

import hashlib
import inspect
import types
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["code_signature"]


def _names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def _source(fn: Callable[..., Any]) -> bytes:
    try:
        return inspect.getsource(fn).encode()
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        return code.co_code + repr(code.co_consts).encode() if code else repr(fn).encode()


def code_signature(body: Callable[..., Any], unwrap: Callable[[Any], Any]) -> str:
    """Return the signature (16 hex digits) of ``body`` and the steps it reaches.

    Args:
        body: the workflow function.
        unwrap: returns the user function behind a step object, or None for anything else.
    """
    module = getattr(body, "__module__", None)
    seen: dict[str, Callable[..., Any]] = {}
    todo: list[Callable[..., Any]] = [body]
    while todo:
        fn = todo.pop()
        name = f"{getattr(fn, '__module__', '')}:{getattr(fn, '__qualname__', repr(fn))}"
        if name in seen:
            continue
        seen[name] = fn
        code, env = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
        if code is None:
            continue
        cells = {}
        for var, cell in zip(
            code.co_freevars, getattr(fn, "__closure__", None) or (), strict=False
        ):
            try:
                cells[var] = cell.cell_contents
            except ValueError:  # an empty cell: the variable is not bound yet
                continue
        for ref in (*_names(code), *cells):
            target = cells[ref] if ref in cells else env.get(ref)
            inner = unwrap(target)
            if inner is not None:
                todo.append(inner)
            elif isinstance(target, types.FunctionType) and target.__module__ == module:
                # Plain helpers of the body's own module (branch functions, closures).
                todo.append(target)
    digest = hashlib.blake2b(digest_size=8)
    for name in sorted(seen):
        digest.update(name.encode() + b"\0" + _source(seen[name]) + b"\0")
    return digest.hexdigest()
