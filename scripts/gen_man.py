"""Generate ``man/wfctl.1`` (roff) from the ``wfctl`` typer app.

Walks ``typer.main.get_command(app)``: every command with its description, arguments and
options (their help as ``wfctl CMD --help`` shows it), plus the sections a manual page needs
(exit status, environment, files, examples). The output is deterministic (no dates), so
``tests/cli/test_man.py`` can regenerate it and fail when the committed page is stale.

Usage::

    python scripts/gen_man.py            # write man/wfctl.1
    python scripts/gen_man.py --check    # exit 1 if man/wfctl.1 is stale
    python scripts/gen_man.py --stdout   # print it
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from wfctl import __version__
from wfctl._cli import app
from wfctl._cli._flags import short_flags

__all__ = ["MAN_PAGE", "render"]

MAN_PAGE = Path(__file__).resolve().parents[1] / "man" / "wfctl.1"

_EXIT_STATUS = [
    ("0", "Success."),
    ("1", "A negative finding: the run failed, the replay differs from its source, a "
     "lineage is broken, or du could not count a run whole (also an unexpected internal "
     "error)."),
    ("2", "A usage or input error: bad arguments, an unknown run or checkpoint, a corrupt "
     "file, a locked run, a workflow that cannot be loaded, code that changed without "
     "--allow-changed."),
    ("3", "The run paused, waiting for answers to its requests."),
    ("130", "Interrupted: Ctrl-C (or wfctl pause) paused the run cleanly, or a second Ctrl-C "
     "aborted it. Either way it can be resumed."),
    ("141", "The output's reader went away (a pipe closed early, as head closes it): wfctl "
     "stopped writing, quietly, and claims no finding (see how a run it drove ended with "
     "wfctl runs or wfctl log). A worker hands the runs it drives over at their next step, as "
     "SIGTERM makes it do."),
]  # fmt: skip

_ENVIRONMENT = [
    ("WFCTL_STORE", "The checkpoint store directory, when --store is not given."),
    ("WFCTL_TIME_FORMAT", "How times people read: local, relative or iso (--time-format)."),
    ("TZ", "The local time zone times are shown in (--json keeps UTC)."),
    ("NO_COLOR", "Set to any value to turn colour off."),
    ("COLUMNS", "The width tables are drawn to."),
]

_FILES = [
    ("./.wfctl/", "The default checkpoint store."),
    ("<store>/runs/<run>/journal.jsonl", "The run's checkpoint chain: one checksummed JSON "
     "record per line, appended and fsynced per commit. A process executing the run holds an OS "
     "lock (flock) on this file. New runs write format version 2; a run recorded in version 1 "
     "goes on in version 1."),
    ("<store>/runs/<run>/owner.json", "Who holds the run's lock (pid, host, since)."),
    ("<store>/runs/<run>/end.json", "The end marker: the last seq (and its checksum) when the run "
     "last completed, failed or paused. A journal that ends before it was cut back: "
     "verify-lineage, runs and resume report it."),
    ("<store>/runs/<run>/pause", "Present while a pause has been requested (wfctl pause)."),
    ("<store>/runs/<run>/answers.toml", "The answers template written when the run paused."),
    ("wfctl.toml, pyproject.toml", "store = \"DIR\" (or [tool.wfctl] store = \"DIR\" in "
     "pyproject.toml) in the current directory or a parent selects the store; time_format = "
     "\"relative\" how times are shown."),
]  # fmt: skip

_EXAMPLES = [
    ("Run a workflow, answer its question, resume it:",
     ["wfctl run sample_workflows/human_review.py --input '\"cats\"'",
      "wfctl resume RUN_ID --response 'request#0=yes'"]),
    ("List paused runs and show one as a timeline:",
     ["wfctl runs --status paused", "wfctl log RUN_ID"]),
    ("Replay from a checkpoint with shuffled cache hits, then verify every lineage:",
     ["wfctl replay --checkpoint RUN_ID.1 --shuffle 7", "wfctl verify-lineage"]),
    ("Machine-readable output:", ["wfctl runs --json | jq '.runs[].status'"]),
]  # fmt: skip


def _escape(text: str) -> str:
    """Escape text for roff: backslashes, hyphens, and control characters at line starts."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(
        f"\\&{line}" if line.startswith((".", "'")) else line for line in text.splitlines()
    )


def _paragraphs(help_text: str) -> list[str]:
    """Turn a command's help into roff: prose paragraphs, and ``\\b`` blocks kept verbatim."""
    out: list[str] = []
    for block in help_text.strip().split("\n\n"):
        lines = block.splitlines()
        if not block.strip():
            continue
        if lines and lines[0].strip() == "\b":
            verbatim = [line for line in lines[1:] if line.strip()]
            head, rest = verbatim[0].strip(), verbatim[1:]
            out += [".PP", _escape(head), ".RS 4", ".nf"]
            out += [_escape(line.strip()) for line in rest]
            out += [".fi", ".RE"]
        else:
            out += [".PP", _escape(" ".join(line.strip() for line in lines))]
    return out


def _argument_name(param: Any) -> str:
    name = str(param.metavar or param.name.upper())
    return f"{name}..." if param.nargs == -1 else name


def _param_entries(command: Any, context: Any) -> list[str]:
    out: list[str] = []
    for param in command.params:
        record = param.get_help_record(context)
        if record is None or param.name == "help":
            continue
        label, help_text = record
        if isinstance(param, typer.core.TyperArgument):
            label = _argument_name(param)
        out += [".TP", f"\\fB{_escape(label)}\\fR", _escape(help_text or "")]
    return out


def _synopsis(name: str, command: Any) -> str:
    pieces = [f"wfctl {name}", "[OPTIONS]"]
    for param in command.params:
        if isinstance(param, typer.core.TyperArgument):
            shown = _argument_name(param)
            pieces.append(shown if param.required else f"[{shown}]")
    return " ".join(pieces)


def render() -> str:
    """Return the manual page for the current CLI."""
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    context = group.make_context("wfctl", [], resilient_parsing=True)
    summary, _, description = (group.help or "").partition("\n\n")
    lines = [
        '.\\" Generated by scripts/gen_man.py from the wfctl CLI; do not edit by hand.',
        f'.TH WFCTL 1 "" "wfctl {__version__}" "User Commands"',
        ".SH NAME",
        f"wfctl \\- {_escape(summary.strip().rstrip('.').lower())}",
        ".SH SYNOPSIS",
        ".B wfctl",
        "\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]",
        ".br",
        ".B wfctl",
        "[\\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR | \\fB\\-\\-install\\-completion\\fR | "
        "\\fB\\-\\-show\\-completion\\fR]",
        ".SH DESCRIPTION",
        ".PP",
        _escape(summary.strip()),
        *_paragraphs(description.split("Exit status:")[0]),
        ".PP",
        "Every command takes \\fB\\-\\-json\\fR (one JSON document on stdout, described in "
        "docs/json.md) and \\fB\\-\\-debug\\fR (a traceback with errors), and every command "
        "but \\fBversion\\fR takes \\fB\\-\\-store\\fR \\fIDIR\\fR. Errors are one line on "
        "standard error, and then nothing is written on standard output.",
        ".SH OPTIONS",
        *_param_entries(group, context),
        ".SH COMMANDS",
    ]
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        sub = command.make_context(name, [], parent=context, resilient_parsing=True)
        lines += [f'.SS "{_escape(_synopsis(name, command))}"']
        lines += _paragraphs(command.help or "")
        lines += _param_entries(command, sub)
    lines.append(".SH SHORT OPTIONS")
    lines += [
        ".PP",
        "A short option stands for the same long option in every command that takes it "
        "(\\fB\\-h\\fR is \\fB\\-\\-help\\fR everywhere).",
    ]
    for flag in short_flags(group, context).values():
        names = ", ".join(f"\\fB{_escape(name)}\\fR" for name in (flag.short, *flag.longs))
        lines += [".TP", names, _escape(", ".join(flag.commands))]
    lines.append(".SH EXIT STATUS")
    for code, meaning in _EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", _escape(meaning)]
    lines.append(".SH ENVIRONMENT")
    for variable, meaning in _ENVIRONMENT:
        lines += [".TP", f"\\fB{variable}\\fR", _escape(meaning)]
    lines.append(".SH FILES")
    for path, meaning in _FILES:
        lines += [".TP", f"\\fI{_escape(path)}\\fR", _escape(meaning)]
    lines.append(".SH EXAMPLES")
    for caption, commands in _EXAMPLES:
        lines += [".PP", _escape(caption), ".RS 4", ".nf"]
        lines += [_escape(command) for command in commands]
        lines += [".fi", ".RE"]
    lines += [".SH SEE ALSO", "The README and docs/ of the wfctl repository."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Write, check or print the manual page; return the exit code."""
    text = render()
    if "--stdout" in argv:
        sys.stdout.write(text)
        return 0
    if "--check" in argv:
        current = MAN_PAGE.read_text(encoding="utf-8") if MAN_PAGE.exists() else ""
        if current != text:
            print(f"{MAN_PAGE} is stale: run python scripts/gen_man.py", file=sys.stderr)
            return 1
        return 0
    MAN_PAGE.parent.mkdir(parents=True, exist_ok=True)
    MAN_PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {MAN_PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
