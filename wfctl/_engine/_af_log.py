"""agent-framework's logger: the warnings a ported program (and its tests) read there.

agent-framework's functional API logs two warnings under its module's logger,
``agent_framework._workflows._functional``: a fresh message while requests are pending, and a
``None`` answer. wfctl logs the same facts under the same name, so a handler or ``caplog`` set
up for agent-framework sees them; wfctl's own facts stay in its events and errors.
"""

from __future__ import annotations

import logging

__all__ = ["AF_LOGGER"]

#: The logger of agent-framework's ``_workflows/_functional.py``.
AF_LOGGER = logging.getLogger("agent_framework._workflows._functional")
