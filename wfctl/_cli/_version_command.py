"""``wfctl version``: the versions of wfctl, Python and the libraries it runs on."""

from __future__ import annotations

from ._app import DebugOption, JsonOption, app, emit_json

__all__ = ["version"]


@app.command()
def version(json_output: JsonOption = False, debug: DebugOption = False) -> None:
    """Show the versions of wfctl, Python and the libraries wfctl runs on.

    The versions are those of the installed packages. 'wfctl --version' prints the first
    line only.

    \b
    Example:
      wfctl version --json
    """
    from wfctl._inspect._versions import versions

    report = versions()
    if json_output:
        emit_json(report.to_json())
    else:
        print("\n".join(report.lines()))
