"""The inspector: what reads a store for people and scripts.

``runs`` (``_runs``), ``log`` (``_log``, its entries in ``_entries``), ``show`` (``_show``),
``export`` (``_export``), ``pause`` (``_pause``), ``verify-lineage`` (``_verify``, ``_lineage``,
``_af_lineage``), replay reports and their diffs (``_replay``, ``_diff``), ``gc``, ``copy``,
``rm``, ``cancel`` and ``log --follow`` each have a module. Each function opens the store, makes
its reads, and returns a frozen report whose ``to_json()`` is the command's ``--json`` document.
Reads never create the store. A store that does not exist is refused (``StoreLocationError``)
unless ``must_exist=False`` (the CLI passes that for the configured or default store, which may
not exist before the first run): then ``list_runs`` returns no runs and the others report the run
as not found. A path that is not a directory, or a store whose ``runs`` is a link or a file, is
always refused. Chains are read strictly (every checksum verified, one unbroken chain), so a
corrupt journal is reported by name (``CheckpointCorruptError``) rather than shown in part.
"""
