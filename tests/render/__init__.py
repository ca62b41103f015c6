"""Unit tests of the renderer (wfctl/_render/)."""
