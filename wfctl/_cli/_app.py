"""The ``wfctl`` typer app, its error translation, and the options its commands share.

Errors are translated in exactly one place, :meth:`WfctlGroup.main`: usage errors and every
exception a command raises become one line on stderr (``wfctl: error: ...``) and the exit code
from :mod:`wfctl._exit`; a traceback is printed only with ``--debug``.

At module level this imports only typer and the standard library (start-up time).
"""

from __future__ import annotations

import contextlib
import enum
import json
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TextIO, TypeVar

import typer
import typer.main
from typer.core import TyperGroup
from typer.models import CommandInfo

from wfctl._visible import visible

if TYPE_CHECKING:
    from typer import TyperException as _Refused
else:
    _Refused = getattr(typer, "TyperException", None)
    if _Refused is None:  # pragma: no cover - typer < 0.27.2
        _Refused = typer.BadParameter
        while _Refused.__base__ is not Exception:
            _Refused = _Refused.__base__
# What typer raises for a command line it refuses (a usage error, a file it cannot open):
# typer >= 0.27.2, which vendors Click, derives them all from its public TyperException; an
# older typer raises Click's ClickException, the base of the public ``typer.BadParameter``
# (BadParameter < UsageError < ClickException < Exception, in Click and in typer's copy).

if TYPE_CHECKING:
    from wfctl._config import StoreLocation, StoreRef
    from wfctl._drive._runner import RunReport
    from wfctl._storage._durability import Durability

__all__ = [
    "CHECKPOINT_NAMES",
    "RUN_NAMES",
    "BatchMsOption",
    "BatchStepsOption",
    "DebugOption",
    "DrainOption",
    "DurabilityOption",
    "ExportFormat",
    "InputFileOption",
    "InputOption",
    "JsonOption",
    "RunIdOption",
    "StoreOption",
    "TargetArgument",
    "TargetOverride",
    "TrustStoreOption",
    "WfctlGroup",
    "app",
    "complete_checkpoint_id",
    "complete_run_id",
    "emit_json",
    "exit_with",
    "finish_run",
    "locate_store_option",
    "named_checkpoint",
    "named_run",
    "resolve_durability_option",
    "resolve_store_option",
    "wfctl_store_option",
    "workflow_output",
]

#: How a command's run argument may name a run (see ``wfctl._inspect._names``).
RUN_NAMES = "an id, a unique start of one, or @latest (the run created last)"
#: How a command's checkpoint argument may name a checkpoint.
CHECKPOINT_NAMES = "RUN.SEQ, RUN as for a run: " + RUN_NAMES

#: Exit code of a usage error: ``wfctl._exit.EXIT_INPUT``, not imported here (start-up time).
_EXIT_USAGE = 2
#: ``--debug`` was given on this invocation (set eagerly by the option's callback).
_debug = False


def _set_debug(value: bool) -> bool:
    global _debug
    _debug = _debug or value
    return value


_Function = TypeVar("_Function", bound=Callable[..., Any])


class _WfctlTyper(typer.Typer):
    """typer's app, whose commands are built one by one, when looked up.

    typer builds every registered command whenever it builds the group: it reads each
    function's signature and evaluates its annotations, ~35 ms for wfctl's commands, as much as
    the rest of ``wfctl runs`` on an empty store. The commands registered here are kept out of
    typer's list, in :attr:`deferred`, and the group's :class:`_CommandTable` builds each with
    typer's own ``get_command_from_info`` when it is first looked up: ``wfctl run`` builds
    ``run`` alone; ``--help``, the man page and completion of command names build them all.
    """

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        #: The registered commands by name, in registration (help) order.
        self.deferred: dict[str, CommandInfo] = {}

    def command(self, *args: Any, **kwargs: Any) -> Callable[[_Function], _Function]:
        """Register a command as typer does, for the group to build when it is looked up."""
        register = super().command(*args, **kwargs)

        def defer(function: _Function) -> _Function:
            register(function)
            info = self.registered_commands.pop()
            self.deferred[info.name or typer.main.get_command_name(function.__name__)] = info
            return function

        return defer


class _CommandTable(MutableMapping[str, Any]):
    """A group's commands by name: a command's registration until it is first looked up."""

    def __init__(self, app: _WfctlTyper, commands: Mapping[str, Any]) -> None:
        self._app = app
        self._entries: dict[str, Any] = {**app.deferred, **commands}

    def __getitem__(self, name: str) -> Any:
        entry = self._entries[name]
        if isinstance(entry, CommandInfo):
            entry = self._entries[name] = typer.main.get_command_from_info(
                entry,
                pretty_exceptions_short=self._app.pretty_exceptions_short,
                rich_markup_mode=self._app.rich_markup_mode,
            )
        return entry

    def __setitem__(self, name: str, command: Any) -> None:
        self._entries[name] = command

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


class _PipeClosed(Exception):
    """A command's write failed with ``BrokenPipeError`` (``error``); see ``._output``."""

    def __init__(self, error: BrokenPipeError) -> None:
        super().__init__(str(error))
        self.error = error


class _Interrupted(Exception):
    """A command was stopped by Ctrl-C: the KeyboardInterrupt (``error``) it did not handle."""

    def __init__(self, error: KeyboardInterrupt) -> None:
        super().__init__(str(error))
        self.error = error


@contextlib.contextmanager
def _kept_for_main() -> Iterator[None]:
    """Keep from typer what it would answer itself: a closed pipe (exit 1, a finding in
    wfctl's codes) and Ctrl-C (a silent exit 130); :meth:`WfctlGroup.main` answers both."""
    try:
        yield
    except BrokenPipeError as exc:
        raise _PipeClosed(exc) from exc
    except KeyboardInterrupt as exc:
        raise _Interrupted(exc) from exc


class WfctlGroup(TyperGroup):
    """The ``wfctl`` group: the one place where errors become a line on stderr and an exit code."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _CommandTable(app, self.commands)  # built when looked up

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line; exit (or, with ``standalone_mode=False``, return) its code."""
        global _debug
        _debug = False
        from ._coercion import defer_coercion

        defer_coercion(self.params)  # its own options (completion), before they are parsed
        try:
            result = super().main(
                args, prog_name or "wfctl", complete_var, standalone_mode=False, **extra
            )
            code = result if isinstance(result, int) else 0
        except _Refused as exc:
            code = _report_usage(exc)
        except typer.Abort:  # pragma: no cover  # only from prompts, which wfctl has none of
            code = _report_error(KeyboardInterrupt())
        except _PipeClosed as closed:  # `| head`: nobody reads on; no finding to claim
            from wfctl._exit import EXIT_OUTPUT_CLOSED

            from ._output import quiet_closed_outputs

            code = EXIT_OUTPUT_CLOSED if quiet_closed_outputs() else _report_error(closed.error)
        except _Interrupted as interrupted:  # one line, as every error (typer says nothing)
            code = _report_error(interrupted.error)
        except (Exception, KeyboardInterrupt) as exc:
            code = _report_error(exc)
        if standalone_mode:
            sys.exit(code)
        return code

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse the group's options; ``wfctl`` alone writes the help to stderr (exit 2)."""
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help(), err=True, color=ctx.color)
            raise typer.Exit(_EXIT_USAGE)
        result: list[str] = super().parse_args(ctx, args)
        return result

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        """Parse the command line (``--help`` writes; see :func:`_kept_for_main`)."""
        with _kept_for_main():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        """Run the command (see :func:`_kept_for_main`)."""
        with _kept_for_main():
            return super().invoke(ctx)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """Return the command, its parameters converted without pydantic where trivial."""
        from ._coercion import defer_coercion

        command = super().get_command(ctx, cmd_name)
        if command is not None:  # its help option is made once, from the names ctx gives
            defer_coercion([*command.params, command.get_help_option(ctx)])
        return command

    def get_help_option(self, ctx: Any) -> Any:
        """Return the help option, converted without pydantic (see :meth:`get_command`)."""
        from ._coercion import defer_coercion

        option = super().get_help_option(ctx)
        defer_coercion([option])
        return option


def _usage_message(exc: _Refused) -> str:
    """What is wrong with the command line, in wfctl's words where Click's would show."""
    ctx = getattr(exc, "ctx", None)
    command = f"'{ctx.command_path}'" if ctx is not None else "wfctl"
    kind = type(exc).__name__
    if kind == "NoSuchOption":  # Click's "No such option: --x (Possible options: ...)"
        option, near = exc.option_name, list(exc.possibilities or ())  # type: ignore[attr-defined]
        hint = f"; did you mean {near[0]}?" if near else ""
        return f"{command} has no option {option}{hint}"
    param = getattr(exc, "param", None)
    if kind == "MissingParameter" and param is not None:  # Click's "Missing argument 'X'."
        if param.param_type_name == "argument":
            return f"{command} needs its argument {param.metavar or param.name.upper()}"
        return f"{command} needs the option {max(param.opts, key=len)}"
    return exc.format_message()


def _report_usage(exc: _Refused) -> int:
    try:
        said = _usage_message(exc)
    except Exception:  # a Click whose errors look otherwise: its own message, never a traceback
        said = exc.format_message()
    message = " ".join(said.split())
    ctx = getattr(exc, "ctx", None)  # a usage error's: the command line it refuses
    if ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    print(visible(f"wfctl: error: {message}"), file=sys.stderr)
    return _EXIT_USAGE


def _report_error(exc: BaseException) -> int:
    from wfctl._engine._events import error_message
    from wfctl._errors import RunLockedError, WfctlError
    from wfctl._exit import EXIT_INTERRUPTED, exit_code_for_error

    if _debug:
        traceback.print_exception(exc, file=sys.stderr)
    code = exit_code_for_error(exc)
    if isinstance(exc, KeyboardInterrupt) or code == EXIT_INTERRUPTED:
        text = error_message(exc)
        line = f"wfctl: interrupted: {text}" if text else "wfctl: interrupted"
    elif isinstance(exc, RunLockedError):  # its holder's "since" is a time people read
        from wfctl._render._time import now, times_in

        line = f"wfctl: error: {times_in(str(exc), now())}"
    elif isinstance(exc, WfctlError | OSError):
        line = f"wfctl: error: {exc}"
    else:
        line = f"wfctl: internal error: {type(exc).__name__}: {error_message(exc)}"
        if not _debug:
            line += " (run with --debug for the traceback)"
    # One line, and stored text in it (keys, error messages) cannot steer the terminal.
    print(" ".join(visible(line).split()), file=sys.stderr)
    return code


app = _WfctlTyper(
    name="wfctl",
    cls=WfctlGroup,
    help=(
        "Run durable async workflows and inspect their checkpoints.\n\n"
        "wfctl runs a workflow (an async function marked @workflow, whose @step calls are "
        "recorded) with one durable, checksummed checkpoint chain per run: a run can pause "
        "for answers and resume, recover after a crash, be replayed from any checkpoint and "
        "diffed against the first run, and have its lineage verified.\n\n"
        "Exit status: 0 ok, 1 negative finding (run failed, replay differs, lineage broken), "
        "2 usage or input error, 3 paused waiting for answers, 130 interrupted, 141 the "
        "output's reader went away (| head).\n\n"
        "\b\nExample:\n  wfctl run sample_workflows/human_review.py --input '\"cats\"'"
    ),
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: rich-formatted help loads rich, ~100 ms per --help
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class TimeFormat(enum.StrEnum):
    """How times people read are shown (``wfctl._config.TIME_FORMATS``)."""

    local = "local"
    relative = "relative"
    iso = "iso"


def _print_version(value: bool) -> None:
    if value:
        from wfctl._inspect._versions import version_line

        print(version_line())
        raise typer.Exit()


@app.callback()
def _wfctl(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print wfctl's version and exit ('wfctl version' lists its libraries too).",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
    time_format: Annotated[
        TimeFormat | None,
        typer.Option(
            "--time-format",
            help="How times people read are shown: local (Dec 06 01:33:20, the local zone; "
            "the default), relative (3m ago) or iso (2026-12-06T01:33:20+00:00, the local "
            "offset). Default: $WFCTL_TIME_FORMAT, else 'time_format' in wfctl.toml, else "
            "local. --json always writes ISO 8601 UTC.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Options of wfctl itself, before the command."""
    from wfctl._config import choose_time_format

    choose_time_format(None if time_format is None else time_format.value)


# -- options shared by many commands ----------------------------------------------------------

# A str, not a Path: Path("") is ".", and an empty --store must be refused, not read as ".".
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="DIR",
        help="Checkpoint store (default: $WFCTL_STORE, else 'store' in wfctl.toml or "
        "[tool.wfctl] of pyproject.toml, else ./.wfctl). A store named here or by "
        "$WFCTL_STORE must exist for commands that read it.",
        show_default=False,
    ),
]
JsonOption = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print one JSON document on stdout instead of tables (described in docs/json.md; "
        "on an error stdout stays empty).",
    ),
]
DebugOption = Annotated[
    bool,
    typer.Option(
        "--debug", help="Show the traceback of an error.", callback=_set_debug, is_eager=True
    ),
]
TargetArgument = Annotated[
    str,
    typer.Argument(
        metavar="TARGET",
        help="path/to/file.py:name, package.module:name, or a file with one workflow.",
        show_default=False,
    ),
]
TargetOverride = Annotated[
    str | None,
    typer.Option(
        "--target",
        metavar="TARGET",
        help="Load the workflow from TARGET instead of the target the run recorded.",
    ),
]
TrustStoreOption = Annotated[
    bool,
    typer.Option(
        "--trust-store",
        help="Import the target the run recorded even though another user owns the store or "
        "the run (code inside the store is never imported).",
    ),
]
InputOption = Annotated[
    str | None,
    typer.Option(
        "--input",
        "-i",
        metavar="JSON",
        help="The workflow's input, as strict JSON (no NaN; limits: 16 MiB, 200 levels "
        "deep, 4300-digit integers).",
    ),
]
InputFileOption = Annotated[
    Path | None,
    typer.Option(
        "--input-file",
        metavar="FILE",
        help="Read the input from a JSON (or .toml) file, with the limits of --input.",
    ),
]
RunIdOption = Annotated[
    str | None,
    typer.Option("--run-id", metavar="ID", help="Use this run id instead of a fresh one."),
]
DrainOption = Annotated[
    float,
    typer.Option(
        "--drain-timeout",
        metavar="SECONDS",
        min=0.0,
        help="On a pause (Ctrl-C, SIGTERM, SIGHUP, wfctl pause, a request), how long running "
        "steps may take to finish before they are cancelled.",
    ),
]


def complete_run_id(ctx: typer.Context, incomplete: str) -> list[str]:
    """Complete a run id from the store the command line names so far (shell completion)."""
    from wfctl._inspect._completion import run_ids

    return run_ids(ctx.params.get("store"), incomplete)


def complete_checkpoint_id(ctx: typer.Context, incomplete: str) -> list[str]:
    """Complete a checkpoint id (``RUN.SEQ``) from the store (shell completion)."""
    from wfctl._inspect._completion import checkpoint_ids

    return checkpoint_ids(ctx.params.get("store"), incomplete)


class DurabilityChoice(enum.StrEnum):
    """The durability modes ``run`` and ``resume`` offer (see ``wfctl._storage._durability``)."""

    full = "full"
    batch = "batch"
    none = "none"


DurabilityOption = Annotated[
    DurabilityChoice | None,
    typer.Option(
        "--durability",
        help="When commits reach the disk: full (each step synced before it returns), batch "
        "(steps synced every --batch-steps commits or --batch-ms, the run's end and pauses at "
        "once; an OS crash or power loss may lose that window, which resume runs again) or "
        "none (never synced). Every mode writes each step before it returns, so a crash of "
        "the process loses nothing. Default: 'durability' in wfctl.toml, else full.",
        show_default=False,
    ),
]
BatchStepsOption = Annotated[
    int | None,
    typer.Option(
        "--batch-steps",
        metavar="N",
        min=1,
        max=1_000_000,
        help="With --durability batch: sync at the latest every N step commits (default 16).",
        show_default=False,
    ),
]
BatchMsOption = Annotated[
    float | None,
    typer.Option(
        "--batch-ms",
        metavar="MS",
        min=0.001,
        max=3_600_000,
        help="With --durability batch: sync at the latest MS milliseconds after the oldest "
        "unsynced step commit (default 100).",
        show_default=False,
    ),
]


class ExportFormat(enum.StrEnum):
    """Formats ``wfctl export`` writes."""

    json = "json"
    toml = "toml"


def resolve_durability_option(
    mode: DurabilityChoice | None, batch_steps: int | None, batch_ms: float | None
) -> Durability:
    """Return the durability ``--durability`` and the batch options select (else the config's)."""
    from wfctl._drive._durability import resolve_durability

    return resolve_durability(None if mode is None else mode.value, batch_steps, batch_ms)


def resolve_store_option(store: str | None) -> StoreRef:
    """Return the store ``--store`` selects (else the environment or config), absolute."""
    return locate_store_option(store).target


def locate_store_option(store: str | None) -> StoreLocation:
    """Return the store ``--store`` selects, absolute, and whether it was named by the user."""
    from wfctl._config import StoreLocation, locate_store

    location = locate_store(store)
    if location.url is not None:
        return location
    return StoreLocation(location.path.absolute(), location.named)


def named_run(location: StoreLocation, name: str) -> str:
    """Return the id of the run ``name`` names in the store: the id, a unique start of it, or
    ``@latest`` (see ``wfctl._inspect._names``)."""
    from wfctl._inspect._names import run_named

    return run_named(location.target, name, must_exist=location.named)


def named_checkpoint(location: StoreLocation, name: str) -> str:
    """Return the checkpoint id ``name`` (``RUN.SEQ``) names, its run part as :func:`named_run`
    reads a run's name."""
    from wfctl._inspect._names import checkpoint_named

    return checkpoint_named(location.target, name, must_exist=location.named)


def wfctl_store_option(store: str | None) -> StoreLocation:
    """:func:`locate_store_option` for a command that reads or changes wfctl's own runs only
    (``gc``, ``rm``, ``cancel``, ``pause``): a store of another engine is refused by name, not
    taken for a wfctl store without runs.

    Raises:
        StoreLocationError: ``--store`` names a store of another engine.
    """
    from wfctl._errors import StoreLocationError
    from wfctl._sources._open import other_kind
    from wfctl._sources._views import a_kind

    location = locate_store_option(store)
    target = str(location.target)
    kind = other_kind(target)  # the registry knows every kind, LangGraph's included
    if kind is not None:
        changes = ")"
        if kind.startswith("langgraph"):
            plain = target.lower().startswith(("postgresql://", "postgres://"))
            named = " named langgraph+postgresql://..." if plain else ""
            changes = f"; gc --prune-history and rm change it{named})"
        raise StoreLocationError(
            target,
            f"is {a_kind(kind)} store: this command works on wfctl stores only (runs, log, show, "
            f"export, du and verify-lineage read it{changes}",
        )
    return location


def workflow_output(json_output: bool) -> AbstractContextManager[Any]:
    """Return where a workflow's own prints go while it runs: stderr under ``--json``.

    With ``--json``, stdout holds the one document and nothing else, so what workflow code
    prints (``print()`` in a step) is sent to stderr instead.
    """
    return contextlib.redirect_stdout(sys.stderr) if json_output else contextlib.nullcontext()


def emit_json(document: Any, *, floats: bool = True) -> None:
    """Write ``document`` to stdout as the one JSON document of ``--json``.

    A document that holds no float (``floats=False``) is written by :func:`indented_json`,
    the same text, faster.
    """
    text = json.dumps(document, indent=2, ensure_ascii=False) if floats else indented_json(document)
    sys.stdout.write(text + "\n")


def emit_json_items(
    head: dict[str, Any],
    key: str,
    items: Iterable[dict[str, Any]],
    tail: Callable[[], dict[str, Any]],
    *,
    floats: bool = False,
) -> None:
    """Write ``{**head, key: [*items], **tail()}`` to stdout as :func:`emit_json` writes it,
    each item as it comes: a long list is never held whole. ``tail`` is called once the
    items are written (counts known only then); the first item is read before anything is
    written, so a source that fails at once leaves stdout empty. ``floats``: the items may
    hold floats (each such item is written by the standard library, as ``emit_json`` would)."""
    written = JsonItems(head, key, floats=floats)
    for item in items:
        written.add(item)
    written.close(tail())


class JsonItems:
    """:func:`emit_json_items` as the items come: :meth:`add` each, then :meth:`close` with the
    tail. Nothing is written before the first item (or the close), so a source that fails at
    once leaves stdout empty. ``out``: where to write (stdout as it is when made)."""

    def __init__(
        self, head: dict[str, Any], key: str, *, floats: bool = False, out: TextIO | None = None
    ) -> None:
        self._head, self._key = head, key
        self._dumps = _json_of_values if floats else indented_json
        self._write = (out or sys.stdout).write
        self._opened = False
        self._items = 0

    def add(self, item: dict[str, Any]) -> None:
        """Write the list's next item."""
        write = self._write
        if not self._opened:
            self._open()
        write(
            ("[\n    " if not self._items else ",\n    ")
            + self._dumps(item).replace("\n", "\n    ")
        )
        self._items += 1

    def close(self, tail: dict[str, Any]) -> None:
        """End the list, and write ``tail``'s fields after it."""
        if not self._opened:
            self._open()
        write = self._write
        write("\n  ]" if self._items else "[]")
        write("," + self._dumps(tail)[1:] + "\n")

    def _open(self) -> None:
        opening = self._dumps({**self._head, self._key: []})
        self._write(opening[: -len("[]\n}")])  # up to the list, as the whole document has it
        self._opened = True


def _json_of_values(document: dict[str, Any]) -> str:
    """:func:`indented_json`, or the standard library's text where ``document`` holds a float."""
    if _holds_float(document):
        return json.dumps(document, indent=2, ensure_ascii=False)
    return indented_json(document)


def _holds_float(value: Any, depth: int = 0) -> bool:
    if isinstance(value, float):
        return True
    if depth > 200:  # deeper than a record may be: let the standard library write it
        return True
    if isinstance(value, dict):
        return any(_holds_float(item, depth + 1) for item in value.values())
    if isinstance(value, list):
        return any(_holds_float(item, depth + 1) for item in value)
    return False


def indented_json(document: dict[str, Any]) -> str:
    """Return ``json.dumps(document, indent=2, ensure_ascii=False)``, with orjson if it can.

    The standard library's encoder runs in Python when it indents (~30 µs a run ``runs``
    lists). orjson writes the same text for a document of text, integers, null, lists and
    objects (indent, separators, escapes and UTF-8 alike), not for floats, which it writes in
    its own way; what it refuses (a lone surrogate, an integer beyond 64 bits) is written by
    the standard library.
    """
    import orjson  # the journal's reader has loaded it already: not at start-up

    try:
        return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONEncodeError:
        return json.dumps(document, indent=2, ensure_ascii=False)


def exit_with(code: int) -> None:
    """End the command with ``code`` (nothing to do for 0)."""
    if code:
        raise typer.Exit(code)


@contextlib.contextmanager
def stopped_part_way(what: str) -> Iterator[None]:
    """On Ctrl-C in the block, say on stderr what the command left behind, and exit 130.

    typer turns a KeyboardInterrupt into a silent exit 130; a command that changes a store
    run by run (``gc``, ``rm``, ``copy``) has done part of its work by then, which must not
    look like none of it.
    """
    try:
        yield
    except KeyboardInterrupt:
        from wfctl._exit import EXIT_INTERRUPTED

        print(visible(f"wfctl: interrupted: {what}"), file=sys.stderr)
        raise typer.Exit(EXIT_INTERRUPTED) from None


def finish_run(outcome: RunReport, json_output: bool) -> NoReturn:
    """Render a run/resume outcome and exit with its status's code."""
    from wfctl import _exit as exits

    if json_output:
        emit_json(outcome.to_json())
        if outcome.status in ("failed", "cancelled"):
            line = f"wfctl: run {outcome.run_id} failed: {outcome.error}"
            if outcome.status == "cancelled":  # the error is the sentence: who cancelled it
                line = f"wfctl: {outcome.error}"
            print(" ".join(visible(line).split()), file=sys.stderr)
    else:
        from wfctl._render import print_run_outcome

        print_run_outcome(outcome)
    raise typer.Exit(exits.exit_code_for_status(outcome.status))
