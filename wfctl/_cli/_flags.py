"""The short options of every command, as one table: one meaning per letter.

A letter means the same long option in every command that has it (``-n`` is ``--limit``
wherever it is given), so a hand that learned it once is never surprised. The table is built
from the app itself, for the man page (``scripts/gen_man.py``) and for the test that fails on
a letter with two meanings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ShortFlag", "short_flags"]


@dataclass(frozen=True, slots=True)
class ShortFlag:
    """One short option: the long options it stands for, and the commands that take it.

    ``longs`` has one name when the letter keeps one meaning (the rule); more name a clash.
    """

    short: str
    longs: tuple[str, ...]
    commands: tuple[str, ...]


def short_flags(group: Any, context: Any) -> Mapping[str, ShortFlag]:
    """Return every short option of ``group``'s commands (and its own), by letter, sorted.

    ``--help``'s ``-h`` is left out: it is the same option everywhere by construction.
    """
    longs: dict[str, set[str]] = {}
    users: dict[str, set[str]] = {}
    commands = [("", group)] + [
        (n, group.get_command(context, n)) for n in group.list_commands(context)
    ]
    for name, command in commands:
        for param in command.params:
            names = [*param.opts, *getattr(param, "secondary_opts", ())]
            long = next((o for o in names if o.startswith("--")), None)
            for option in names:
                if option.startswith("-") and not option.startswith("--") and long != "--help":
                    longs.setdefault(option, set()).add(long or option)
                    users.setdefault(option, set()).add(name or "wfctl")
    return {
        letter: ShortFlag(letter, tuple(sorted(longs[letter])), tuple(sorted(users[letter])))
        for letter in sorted(longs)
    }
