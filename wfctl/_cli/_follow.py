"""``wfctl log --follow``: print a run's checkpoints as they are committed, then exit with its code."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, NoReturn

import typer

from wfctl._visible import visible

if TYPE_CHECKING:
    from wfctl._config import StoreLocation
    from wfctl._inspect._entries import LogPage

__all__ = ["follow_log"]


def follow_log(
    location: StoreLocation, run_id: str, json_output: bool, page: LogPage, verbose: bool
) -> NoReturn:
    """Follow ``run_id`` until it ends; exit with its status's code (130 on Ctrl-C).

    With ``json_output`` each checkpoint is one line of JSON (JSON Lines), and the last line
    says how the run ended; else ``verbose`` shows each step's arguments and result.
    """
    from wfctl._exit import EXIT_INTERRUPTED, exit_code_for_status
    from wfctl._inspect._follow import FollowEnd, follow_run, followed_json

    if not json_output:
        from wfctl._render import FollowPrinter

        printer = FollowPrinter(verbose=verbose)  # one console for every checkpoint
    status = "interrupted"
    try:
        for item in follow_run(location.target, run_id, must_exist=location.named, page=page):
            if json_output:
                line = json.dumps(followed_json(run_id, item), ensure_ascii=False)
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
            else:
                printer(item)
            if isinstance(item, FollowEnd):
                status = item.status
    except KeyboardInterrupt:
        # typer turns a KeyboardInterrupt into a silent exit 130: say what stopped, and what not.
        line = f"wfctl: interrupted: stopped following run {run_id}; the run itself was not touched"
        print(visible(line), file=sys.stderr)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    raise typer.Exit(exit_code_for_status(status))
