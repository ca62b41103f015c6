"""Unit tests of the record format (wfctl/_records/)."""
