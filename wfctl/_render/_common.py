"""Consoles and small renderables shared by the renderers.

Text read from a store reaches people only through these: :class:`Text` and both consoles show
control characters as escapes (:func:`wfctl._visible.visible`), so a crafted store cannot
clear the screen, retitle the window or hide text. Renderers build text with this module's
:class:`Text`, which does it before layout (so tables keep their widths); the consoles do it
again, for plain strings and as a last guard, on every segment that is not rich's own control
sequence.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Iterable
from typing import Any

from rich import text as rich_text
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.style import Style

from wfctl._readable import readable
from wfctl._visible import visible

__all__ = [
    "STATUS_STYLE",
    "Text",
    "json_text",
    "render_stored",
    "render_value",
    "status_text",
    "stderr",
    "stdout",
]

STATUS_STYLE = {
    "completed": "green",
    "failed": "red",
    "paused": "yellow",
    "interrupted": "yellow",
    "aborted": "red",
    "cancelled": "magenta",
    "running": "cyan",
    "queued": "blue",
    "corrupt": "bold red",
    "unreadable": "bold red",
}


class Text(rich_text.Text):
    """Rich text whose characters are shown, never obeyed: controls become escapes."""

    def __init__(self, text: str = "", *args: Any, **kwargs: Any) -> None:
        super().__init__(visible(text), *args, **kwargs)

    def append(self, text: str | rich_text.Text, style: str | Style | None = None) -> Text:
        """Append ``text`` (a string has its controls made visible first)."""
        super().append(visible(text) if isinstance(text, str) else text, style)
        return self


class _Console(Console):
    """A console that shows control characters in what it prints instead of sending them.

    markup=False: run ids, paths, keys and user data are printed as they are, never as markup.
    Text is wrapped to the width only on a terminal: in a pipe or a file (a CI log) a line of
    text stays one line, whatever its length, so that grep finds it. Tables and trees are laid
    out to the width (``COLUMNS``, else 80) wherever they go: rich crops what does not fit
    when it does not wrap them.
    """

    def __init__(self, *, stderr: bool = False) -> None:
        super().__init__(stderr=stderr, highlight=False, markup=False)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        """Print as rich does; text (not a table or a tree) is not wrapped unless on a
        terminal, and a ``soft_wrap`` given is obeyed."""
        if (
            "soft_wrap" not in kwargs
            and not self.is_terminal
            and all(isinstance(o, str | rich_text.Text) for o in objects)
        ):
            kwargs["soft_wrap"] = True
        super().print(*objects, **kwargs)

    def on_broken_pipe(self) -> None:
        """Stop writing and let the error reach the command line's one error handler.

        rich's own answer points stdout at ``/dev/null`` (even for a console on stderr) and
        exits 1, which wfctl's exit codes read as a finding; the handler exits 141 instead
        (see ``wfctl._cli._output``).
        """
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the output's reader went away")

    def render_str(self, text: str, **kwargs: Any) -> rich_text.Text:
        """Turn a plain string (a table cell, a tree label, a line) into text, controls shown."""
        return super().render_str(visible(text), **kwargs)

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        """Render ``renderable``; text segments leave with their controls made visible."""
        for segment in super().render(renderable, options):
            if segment.control:  # rich's own cursor movement (live progress), not data
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style, None)


def stdout() -> Console:
    """Return a console for results (stdout)."""
    return _Console()


def stderr() -> Console:
    """Return a console for progress, notes and diagnostics (stderr)."""
    return _Console(stderr=True)


def status_text(status: str) -> Text:
    """Return a run or step status, coloured by what it means."""
    return Text(status, style=STATUS_STYLE.get(status, ""))


def json_text(value: Any) -> str:
    """Return ``value`` as indented JSON (anything JSON cannot say as its ``str``)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def render_stored(encoded: Any) -> RenderableType:
    """Show a stored value (in the codec's encoding) as people read it: decoded, as JSON."""
    return render_value(readable(encoded))


def render_value(value: Any) -> RenderableType:
    """Show text as text and anything else as pretty JSON."""
    if isinstance(value, str):
        return Text(value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > 60:  # short values stay on one line
        text = json_text(value)
    # Plain text, never cropped: an output is data, and a shortened one would misreport it.
    return Text(text)
