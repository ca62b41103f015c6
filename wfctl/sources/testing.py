"""Tools to test a source: the conformance suite of the read port.

:class:`SourceConformance` holds a test of every duty of a :class:`~wfctl.sources.Source`:
subclass it in a pytest module and provide its fixtures (see :mod:`wfctl._sources._conformance`).
:func:`directory_digest` fingerprints a directory store (the suite checks that a source never
writes); :func:`traced_peak` measures the memory a call allocates at its peak.
"""

from wfctl._sources._conformance import SourceConformance, directory_digest, traced_peak

__all__ = ["SourceConformance", "directory_digest", "traced_peak"]
