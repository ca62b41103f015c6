"""The read port every store kind is read through (public names in :mod:`wfctl.sources`)."""
