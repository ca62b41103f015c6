"""The read port: one read-only view of a store of any kind (wfctl's, agent-framework's, ...).

:class:`Source` is what every inspecting command reads through: runs with their summary
(:class:`RunInfo`), one run's records in order with their parents (:class:`Entry`), one record
by the store's own id, sizes (:class:`SizeInfo`) and the store's own integrity rules
(``verify``). :func:`open_source` opens one from a URL or a path, choosing the reader by scheme
or by detection; a new engine's reader is one module that registers a :class:`Reader` with
:func:`register_reader`, and a test that runs :mod:`wfctl.sources.testing`'s suite.
"""

from wfctl._sources._open import Reader, open_source, readers, register_reader
from wfctl._sources._protocol import Entry, KindSize, RunInfo, RunState, SizeInfo, Source

__all__ = [
    "Entry",
    "KindSize",
    "Reader",
    "RunInfo",
    "RunState",
    "SizeInfo",
    "Source",
    "open_source",
    "readers",
    "register_reader",
]
