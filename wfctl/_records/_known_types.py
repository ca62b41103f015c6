"""agent-framework's chat types, known to the codec by a fixed table and found only when loaded.

A workflow used as an agent is given agent-framework's ``Message`` objects (a list of them, or
one) and may return its ``AgentResponse``; both store themselves through their own ``to_dict``
and ``from_dict``. The codec registers such a class the first time it meets one (encoding) or
its stored name (decoding), but only from ``agent_framework`` as the program already imported
it: :func:`loaded_class` looks the fixed name up in ``sys.modules`` and never imports. A stored
name selects an entry of :data:`AGENT_FRAMEWORK_TYPES`, nothing else, so a store can name no
module or attribute beyond this table.
"""

from __future__ import annotations

import sys
from typing import Final

__all__ = ["AGENT_FRAMEWORK_TYPES", "loaded_class", "loaded_name"]

#: The module the table's classes are read from, by its public name.
_MODULE: Final = "agent_framework"

#: Stored name -> the class's name in ``agent_framework``: its chat types, which carry their
#: own ``to_dict``/``from_dict`` (a message's contents and a response's messages nest in them).
AGENT_FRAMEWORK_TYPES: Final = {
    f"{_MODULE}.{name}": name
    for name in (
        "Message",
        "Content",
        "AgentResponse",
        "AgentResponseUpdate",
        "ChatResponse",
        "ChatResponseUpdate",
    )
}


def loaded_class(name: str) -> type | None:
    """Return the table's class stored as ``name`` if agent-framework is loaded, else None."""
    attribute = AGENT_FRAMEWORK_TYPES.get(name)
    module = sys.modules.get(_MODULE) if attribute is not None else None
    found = getattr(module, attribute, None) if module is not None and attribute else None
    return found if isinstance(found, type) else None


def loaded_name(cls: type) -> str | None:
    """Return the name ``cls`` is stored under if it is one of the table's classes, else None."""
    if not cls.__module__.startswith(_MODULE + "."):
        return None
    module = sys.modules.get(_MODULE)
    if module is None:
        return None
    for name, attribute in AGENT_FRAMEWORK_TYPES.items():
        if getattr(module, attribute, None) is cls:
            return name
    return None
