"""The engines the benchmark compares, each a module exposing the same scenario functions.

Every engine module defines ``async def sequential(job)``, ``fanout(job)``, ``restore(job)`` and
``pause_resume(job)``, each returning a :class:`~engines._common.Measurement`. A module imports
its engine at the top, so importing it is the availability check: the worker turns an
``ImportError`` into rows that say "not installed". This registry imports nothing heavy.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

__all__ = ["ENGINES", "PEERS", "EngineSpec", "load"]


@dataclass(frozen=True)
class EngineSpec:
    """Where an engine lives and which installed distributions its rows report versions of."""

    module: str
    variant: str
    label: str
    distributions: tuple[str, ...] = ()


ENGINES: dict[str, EngineSpec] = {
    "wfctl": EngineSpec("wfctl_engine", "file", "wfctl (file journal, durable)", ("wfctl",)),
    "agent_framework": EngineSpec(
        "agent_framework_engine",
        "file",
        "agent-framework (FileCheckpointStorage)",
        ("agent-framework-core",),
    ),
    "langgraph_sqlite": EngineSpec(
        "langgraph_engine",
        "sqlite",
        "langgraph (AsyncSqliteSaver)",
        ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite"),
    ),
    "langgraph_memory": EngineSpec(
        "langgraph_engine", "memory", "langgraph (InMemorySaver)", ("langgraph",)
    ),
    "floor": EngineSpec("floor_engine", "fdatasync", "floor: append + fdatasync"),
}

#: Engines wfctl is compared with, in table order.
PEERS = ("agent_framework", "langgraph_sqlite", "langgraph_memory")


def load(name: str) -> ModuleType:
    """Import and return the module of engine ``name`` (raises ImportError if not installed)."""
    return importlib.import_module(f"{__name__}.{ENGINES[name].module}")
