"""``wfctl --help`` starts fast: only typer and the standard library load before a command runs.

Start-up time itself is measured by the benchmark, not here; these tests pin what makes it
fast (nothing heavy imported, typer's rich help disabled) and what help must say.
"""

from __future__ import annotations

import enum
import importlib.util
import json
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
import typer.main
from typer.core import TyperArgument, TyperOption

import wfctl
from tests.cli.conftest import WORKFLOWS, base_env, invoke
from tests.cli.conftest import wfctl as run_wfctl
from tests.conftest import BYTECODE_CACHE
from wfctl._cli import app

HEAVY = (
    "rich",
    "wfctl._engine._workflow",
    "wfctl._engine._run",
    "wfctl._storage",
    "wfctl._storage._file",
    "wfctl._records._codec",
    "wfctl._render",
    "wfctl._drive._runner",
    "filelock",
    "tomli_w",
)
COMMANDS = (
    "run", "resume", "replay", "verify-lineage", "runs", "log", "show", "export", "pause", "gc",
    "describe", "cancel", "rm",
)  # fmt: skip


def _modules_after(code: str, cwd: Path | None = None) -> set[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=base_env(),
        cwd=cwd,
        check=True,
    )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_importing_the_cli_loads_nothing_heavy() -> None:
    loaded = _modules_after("import wfctl._cli")
    assert not [m for m in HEAVY if m in loaded]


def test_help_loads_nothing_heavy() -> None:
    loaded = _modules_after(
        "from wfctl._cli import app\n"
        "app(['--help'], prog_name='wfctl', standalone_mode=False)\n"
        "app(['run', '--help'], prog_name='wfctl', standalone_mode=False)"
    )
    assert not [m for m in HEAVY if m in loaded]


def test_runs_and_run_load_neither_pydantic_nor_unneeded_modules(tmp_path: Path) -> None:
    # typer >= 0.27 converts option values with pydantic, ~0.1 s to import: wfctl's values
    # that need no conversion must not pay it (pydantic is installed here: the test extra).
    assert importlib.util.find_spec("pydantic") is not None
    store = tmp_path / "store"
    store.mkdir()
    listed = _modules_after(
        "from wfctl._cli import app\n"
        f"app(['runs', '--store', {str(store)!r}], prog_name='wfctl', standalone_mode=False)"
    )
    assert not [m for m in listed if m.startswith("pydantic")]
    # what listing runs does not need: restore, the live progress, replay reports, TOML
    for module in ("wfctl._engine._restore", "wfctl._render._progress", "wfctl._render._reports"):
        assert module not in listed
    assert "tomli_w" not in listed and "wfctl._render._runs" in listed
    assert "rich.table" not in listed  # the runs table is laid out without rich's Table
    assert "asyncio" not in listed  # listing is synchronous: no event loop to import
    assert "filelock" not in listed  # POSIX locks are fcntl's: filelock is for Windows
    ran = _modules_after(
        "from wfctl._cli import app\n"
        f"app(['run', {str(WORKFLOWS / 'greet.py')!r}, '--store', {str(store)!r}],"
        " prog_name='wfctl', standalone_mode=False)",
        cwd=tmp_path,  # no wfctl.toml or pyproject.toml to read
    )
    assert "wfctl._drive._runner" in ran and not [m for m in ran if m.startswith("pydantic")]
    # what a one-step run does not need: the live display (stderr is no terminal), TOML (no
    # config file, no TOML input, no answers template), PostgreSQL, other commands' modules
    unneeded = ("rich.live", "rich.spinner", "rich.table", "tomllib", "tomli_w", "psycopg")
    assert not [m for m in ran if m.split(".")[0] in unneeded or m in unneeded]
    assert not [m for m in ran if m.startswith("wfctl._sources")]  # the readers of stores
    for module in (
        "wfctl._storage._postgres",
        "wfctl._inspect._runs",
        "wfctl._inspect._entries",
        "wfctl._inspect._json_pages",
        "wfctl._inspect._log",
        "wfctl._inspect._show",
        "wfctl._inspect._export",
        "wfctl._inspect._pause",
        "wfctl._inspect._verify",
        "wfctl._inspect._replay",
        "wfctl._inspect._gc",
    ):
        assert module not in ran
    # a value that needs converting still goes through typer's own converter, and its errors
    refused = invoke("gc", "--keep", "-1", "--store", store)
    assert refused.code == 2 and "--keep" in refused.stderr


def test_numbers_choices_and_paths_given_as_text_load_no_pydantic(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    for args in (
        ["runs", "--limit", "3"],
        ["gc", "--keep", "10", "--dry-run"],
        ["gc", "--keep", "0", "--older-than", "1d", "--dry-run"],
        ["runs", "--status", "failed", "-s", "paused", "--sort", "updated"],
        ["verify-lineage", "--agent-framework", str(tmp_path)],
    ):
        loaded = _modules_after(
            "from wfctl._cli import app\n"
            f"app({[*args, '--store', str(store)]!r}, prog_name='wfctl', standalone_mode=False)"
        )
        assert not [m for m in loaded if m.startswith("pydantic")], args
    # outside the bounds: typer's converter, and wfctl's message
    refused = run_wfctl("runs", "--limit", "-3", "--store", store)
    assert refused.code == 2 and "--limit must be 0 or more, not -3" in refused.stderr


def _typers_value(param: Any, given: Any) -> Any:
    """What typer's own ``process_value`` makes of ``given`` for ``param`` (its converter)."""
    typers = TyperArgument if isinstance(param, TyperArgument) else TyperOption
    return typers.process_value(param, None, given)  # type: ignore[arg-type]


def _number_params() -> list[tuple[str, Any]]:
    """Every int and float parameter of every command (and of the group), by name."""
    group = typer.main.get_command(app)
    commands = [("wfctl", group), *group.commands.items()]  # type: ignore[attr-defined]
    found = []
    for name, command in commands:
        for param in command.params:
            descriptor = getattr(param, "type_descriptor", None)
            if descriptor is not None and descriptor.annotation in (
                int,
                float,
                int | None,
                float | None,
            ):
                found.append((f"{name} {param.opts[0]}", param))
    return found


@pytest.mark.parametrize(
    "text",
    [
        "0", "3", "10", "-0", "-1", "007", "16", "1000000", "1000001", "3600000", "3600001",
        "999999999999999999", "1.5", "0.001", "0.0001", "2.50", "-2.5", " 3", "3 ", "+3", "1_0",
        "1e3", "0x10", "\u0663", "", "-", ".5", "5.", "nan", "inf", "1.5.2",
    ],
)  # fmt: skip
def test_a_plain_number_is_what_typer_would_make_of_it(text: str) -> None:
    from wfctl._cli._coercion import _plain_number

    params = _number_params()
    assert len(params) >= 8  # --limit, --keep, --last, --from, --batch-steps, --batch-ms, ...
    for name, param in params:
        descriptor = param.type_descriptor
        fast = _plain_number(descriptor.annotation, text, descriptor.parameter_info)
        if fast is None:
            continue  # typer's converter decides, and words any error
        real = _typers_value(param, text)
        assert (type(fast), fast) == (type(real), real), name


def _choice_params() -> list[tuple[str, Any]]:
    """Every parameter whose values are members of an enum (or lists of them), by name."""
    group = typer.main.get_command(app)
    found = []
    for name, command in [("wfctl", group), *group.commands.items()]:  # type: ignore[attr-defined]
        for param in command.params:
            annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
            kind = get_args(annotation)[0] if get_origin(annotation) is list else annotation
            if isinstance(kind, type) and issubclass(kind, enum.Enum):
                found.append((f"{name} {param.opts[0]}", param, kind))
    return found


def test_a_choice_given_as_text_is_what_typer_would_make_of_it() -> None:
    from wfctl._cli._coercion import _plain_choice

    params = _choice_params()
    assert len(params) >= 5  # --durability, --status, --sort, --format, ...
    for name, param, kind in params:
        descriptor = param.type_descriptor
        values = [member.value for member in kind]
        texts = [*values, *(v.upper() for v in values), *(m.name for m in kind), "", " x", "x"]
        for text in texts:
            given = (text,) if param.multiple else text
            fast = _plain_choice(descriptor.annotation, given)
            if fast is None:
                assert text not in values, name  # a member's value is always converted here
                continue
            assert fast == _typers_value(param, given), (name, text)
        if param.multiple:
            both = (values[0], values[-1])
            assert _plain_choice(descriptor.annotation, both) == _typers_value(param, both)


def test_a_path_given_as_text_is_what_typer_would_make_of_it() -> None:
    from wfctl._cli._coercion import _plain_path

    group = typer.main.get_command(app)
    checked = 0
    for _name, command in [("wfctl", group), *group.commands.items()]:  # type: ignore[attr-defined]
        for param in command.params:
            descriptor = getattr(param, "type_descriptor", None)
            if descriptor is None or "Path" not in str(descriptor.annotation):
                continue
            for text in ("a.toml", "", "-", "~/x", "a/../b", "/tmp/", "dir/", "é.json"):
                given = (text,) if param.multiple else text
                fast = _plain_path(descriptor.annotation, given, descriptor.parameter_info)
                assert fast is not None  # no path option asks for a check: all converted here
                assert fast == _typers_value(param, given)
                checked += 1
    assert checked >= 40  # --input-file, --responses, -o, --workflows, --agent-framework, ...


def test_a_command_line_builds_only_its_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # typer makes a command by reading its function's signature and annotations (~2 ms each):
    # a command line makes the one it runs; help makes them all
    built: list[str] = []
    make = typer.main.get_command_from_info

    def counted(*args: Any, **kwargs: Any) -> Any:
        command = make(*args, **kwargs)
        built.append(command.name)
        return command

    monkeypatch.setattr(typer.main, "get_command_from_info", counted)
    assert invoke("runs", "--store", tmp_path).code == 0
    assert built == ["runs"]
    built.clear()
    assert invoke("--help").code == 0
    assert set(COMMANDS) <= set(built) and len(built) == len(set(built))
    built.clear()
    assert invoke("rnus").code == 2 and not built  # a typo is refused without making any


def test_the_package_is_lazy_but_complete() -> None:
    loaded = _modules_after("import wfctl")
    assert "wfctl._engine._workflow" not in loaded and "wfctl._storage" not in loaded
    for name in wfctl.__all__:
        assert getattr(wfctl, name) is not None
    assert set(wfctl.__all__) <= set(dir(wfctl))
    with pytest.raises(AttributeError):
        _ = wfctl.no_such_name


def test_installed_help_lists_every_command() -> None:
    done = run_wfctl("--help")
    assert done.code == 0 and done.stderr == ""
    assert done.stdout.startswith("Usage: wfctl [OPTIONS] COMMAND [ARGS]...")
    for command in COMMANDS:
        assert f"  {command} " in done.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_ends_with_an_example(command: str) -> None:
    done = invoke(command, "--help")
    assert done.code == 0
    text = done.stdout
    assert "--store DIR" in text and "--json" in text and "--debug" in text
    description = text.split("Arguments:")[0].split("Options:")[0].rstrip()
    lines = [line.strip() for line in description.splitlines()]
    heading = max(i for i, line in enumerate(lines) if line in ("Example:", "Examples:"))
    examples = lines[heading + 1 :]
    assert examples, description
    assert all(line.startswith("wfctl ") for line in examples), examples
    assert (lines[heading] == "Examples:") == (len(examples) > 1), lines[heading]


def test_no_arguments_shows_help() -> None:
    done = invoke()
    assert done.code == 2
    assert done.stderr.startswith("Usage: wfctl [OPTIONS] COMMAND [ARGS]...")
    assert "  verify-lineage " in done.stderr
    assert app.info.name == "wfctl"


def test_a_parameter_processes_what_it_is_given_as_typer_does() -> None:
    """Every parameter of every command, made by :func:`defer_coercion`, returns what typer's
    own ``process_value`` returns (or raises the same error) for nothing given, its default
    and an empty list: required values missing, callbacks called."""
    import copy

    from wfctl._cli._coercion import defer_coercion

    group = typer.main.get_command(app)
    checked = 0
    for _name, command in [("wfctl", group), *group.commands.items()]:  # type: ignore[attr-defined]
        for param in command.params:
            own = copy.copy(param)
            defer_coercion([own])
            assert type(own) is not type(param)  # every parameter of wfctl's is typer's kind
            for given in (None, param.default, ()):
                outcomes = []
                for processing in (partial(own.process_value, None), partial(_typers_value, param)):
                    try:
                        outcomes.append(("value", processing(given)))
                    except Exception as exc:  # the same error, with the same message
                        outcomes.append((type(exc).__name__, str(exc)))
                assert outcomes[0] == outcomes[1], (param.name, given)
                checked += 1
    assert checked >= 150


def test_the_processes_the_tests_start_read_bytecode_from_one_private_cache() -> None:
    """With ``PYTHONDONTWRITEBYTECODE`` set, every process the tests start (``wfctl`` above all)
    writes and reads its bytecode in the cache tests/conftest.py made, instead of compiling wfctl
    from source at each start."""
    cache = BYTECODE_CACHE
    if cache is None:
        pytest.skip("bytecode is written as the caller set it (PYTHONDONTWRITEBYTECODE unset)")
    probe = "import sys, wfctl._cli; print(sys.dont_write_bytecode, sys.pycache_prefix)"
    done = subprocess.run(
        [sys.executable, "-c", probe], env=base_env(), capture_output=True, text=True, check=True
    )

    assert done.stdout.split() == ["False", cache]
    compiled = importlib.util.cache_from_source(
        str(Path(wfctl.__file__).parent / "_cli" / "_app.py")
    )
    assert Path(compiled).is_file() and Path(compiled).is_relative_to(cache)
