"""Unit tests of the inspector (wfctl/_inspect/): lineage verification, replay reports, diffs, TOML."""
