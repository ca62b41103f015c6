"""``wfctl describe``: one run on one screen (status, input, result or error, pending
requests, timings, origin, where it is stored)."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import (
    DebugOption,
    JsonOption,
    StoreOption,
    app,
    complete_run_id,
    emit_json,
    wfctl_store_option,
)

__all__ = ["describe"]


@app.command()
def describe(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN_ID", help="The run to describe.", autocompletion=complete_run_id
        ),
    ],
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Show one run: status, input, result or error, pending requests, timings, origin, store.

    Timings are when the run was created and last updated, how long that is, how many steps
    were executed or served from the cache, how many failed attempts were retried. Values are
    cut to one line (--json: wfctl/describe@1, whole). The run's records are read once and
    verified as they are read: exit 2 if one fails, as for 'wfctl log'.

    \b
    Example:
      wfctl describe 20261129-121400-3f9a2c71
    """
    from wfctl._inspect._describe import describe_run

    location = wfctl_store_option(store)
    description = describe_run(location.target, run_id, must_exist=location.named)
    if json_output:
        emit_json(description.to_json())
    else:
        from wfctl._render import print_description

        print_description(description)
