"""The inspector: what reads a store for people and scripts (listing, log, show, export, lineage, replay reports, gc, copy, rm, cancel, follow)."""
