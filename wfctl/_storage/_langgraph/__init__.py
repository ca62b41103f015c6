"""Changing another engine's store: LangGraph's SQLite and PostgreSQL checkpointers.

``plan_prune`` / ``plan_remove`` report what would go; ``apply`` does it, one transaction per
thread. Nothing here imports LangGraph; checkpoints are read as data (see ``_facts``).
"""

from ._change import ChangePlan, apply, langgraph_location, plan_prune, plan_remove
from ._report import Action, ChangeReport, ThreadChange

__all__ = [
    "Action",
    "ChangePlan",
    "ChangeReport",
    "ThreadChange",
    "apply",
    "langgraph_location",
    "plan_prune",
    "plan_remove",
]
