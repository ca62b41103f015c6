"""Consoles and small renderables shared by the renderers."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, RenderableType
from rich.text import Text

__all__ = ["STATUS_STYLE", "json_text", "render_value", "status_text", "stderr", "stdout"]

STATUS_STYLE = {
    "completed": "green",
    "failed": "red",
    "paused": "yellow",
    "interrupted": "yellow",
    "aborted": "red",
    "running": "cyan",
    "corrupt": "bold red",
    "unreadable": "bold red",
}


# markup=False: run ids, paths, keys and user data are printed as they are, never as markup.


def stdout() -> Console:
    """Return a console for results (stdout)."""
    return Console(highlight=False, markup=False)


def stderr() -> Console:
    """Return a console for progress, notes and diagnostics (stderr)."""
    return Console(stderr=True, highlight=False, markup=False)


def status_text(status: str) -> Text:
    """Return a run or step status, coloured by what it means."""
    return Text(status, style=STATUS_STYLE.get(status, ""))


def json_text(value: Any) -> str:
    """Return ``value`` as indented JSON (anything JSON cannot say as its ``str``)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def render_value(value: Any) -> RenderableType:
    """Show text as text and anything else as pretty JSON."""
    if isinstance(value, str):
        return Text(value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > 60:  # short values stay on one line
        text = json_text(value)
    # Plain text, never cropped: an output is data, and a shortened one would misreport it.
    return Text(text)
