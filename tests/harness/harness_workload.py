"""The harness workload: a ledgered pipeline of sequential steps, an optional pause and a gather.

Every step appends its label to a ledger *before* it returns (fsynced when the ledger is a
file), so after any crash the ledger says how many times each step really ran, and each step's
result carries its label, so the journal says which steps were committed. :func:`reference`
computes, without running anything, what every step must return and what the run must output:
a result served to the wrong call, or a wrong output, cannot go unnoticed.

The same module is imported by the in-process harnesses and by the child processes of the
crash and contention harnesses (as ``tests.harness.harness_workload``), so its code signature
is the same everywhere.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wfctl import Retry, RunContext, step, workflow

__all__ = [
    "HOOKS",
    "Hooks",
    "file_ledger",
    "hold_at",
    "labels",
    "payment",
    "pipeline",
    "reference",
    "spec_for",
]

#: The environment variables a child process reads its ledger from (see :func:`file_ledger`)
#: and, for ``LABEL=DIR`` in HOLD_ENV, the step that holds (see :func:`hold_at`). They let a
#: ``wfctl`` process that loads this module (``wfctl resume``) keep the ledger and hold too.
LEDGER_ENV = "WFCTL_HARNESS_LEDGER"
ATTEMPT_ENV = "WFCTL_HARNESS_ATTEMPT"
HOLD_ENV = "WFCTL_HARNESS_HOLD"


def _no_op(label: str) -> None:
    return None


def _env_ledger(label: str) -> None:
    path = os.environ.get(LEDGER_ENV)
    if path:
        file_ledger(path, os.environ.get(ATTEMPT_ENV, "0"))(label)


def _env_hold(label: str) -> None:
    held, _, signals = os.environ.get(HOLD_ENV, "").partition("=")
    if held and label == held:
        hold_at(label, signals)(label)


def hold_at(label: str, signals: str | os.PathLike[str]) -> Callable[[str], None]:
    """Return an ``after_ledger`` hook: step ``label`` writes ``holding-<pid>`` in ``signals``
    and blocks the whole process until ``release`` appears there (bounded: 60 s)."""

    def hold(seen: str) -> None:
        if seen != label:
            return
        folder = Path(signals)
        (folder / f"holding-{os.getpid()}").write_text("holding")
        end = time.monotonic() + 60
        while not (folder / "release").exists() and time.monotonic() < end:
            time.sleep(0.002)

    return hold


@dataclass
class Hooks:
    """What the steps and the body call besides computing (swapped per scenario).

    ``ledger(label)``: a step started executing (called first, before anything else).
    ``after_ledger(label)``: right after the ledger entry (the crash child dies here).
    ``returned(label)``: the body saw that step's ``await`` return.
    """

    ledger: Callable[[str], None] = _env_ledger
    after_ledger: Callable[[str], None] = _env_hold
    returned: Callable[[str], None] = _no_op
    extra: dict[str, Any] = field(default_factory=dict)

    def reset(self) -> None:
        """Restore the defaults."""
        self.ledger, self.after_ledger, self.returned = _env_ledger, _env_hold, _no_op
        self.extra.clear()


HOOKS = Hooks()


def file_ledger(path: str | os.PathLike[str], attempt: str) -> Callable[[str], None]:
    """Return a ledger that appends ``"<attempt> <label>"`` to ``path`` and fsyncs it."""

    def write(label: str) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{attempt} {label}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    return write


def mix(label: str, acc: int) -> int:
    """The value a step computes: deterministic, and different for every label."""
    return (acc * 31 + sum(map(ord, label)) * 7 + len(label)) % 1_000_003


def carry_text(label: str, size: int) -> str:
    """The text a carrying stage returns: prose-like (it compresses), different per label."""
    return (f"{label} carries the run along one step further; " * (size // 40 + 1))[:size]


@step
async def stage(label: str, acc: int, carried: dict[str, Any] | None) -> dict[str, Any]:
    """One ledgered unit of work; its result names its label. With ``carried`` (the result of
    the stage before, or the run's first carry), it also returns a text of the same size: a
    pipeline whose every argument is the result before it, stored as a reference to it, in
    records big enough to be stored compressed (format version 3)."""
    HOOKS.ledger(label)
    HOOKS.after_ledger(label)
    await asyncio.sleep(0)  # let gathered siblings start, so several are in flight at once
    out: dict[str, Any] = {"label": label, "value": mix(label, acc)}
    if carried is not None:
        out["text"] = carry_text(label, len(carried["text"]))
    return out


def retold(label: str, text: str) -> str:
    """The text :func:`retell` returns: ``text`` with its first sentence told by ``label``."""
    return f"{label} retells it; " + text.partition("; ")[2]


@step
async def retell(label: str, text: str) -> str:
    """The carried text handed on with one sentence changed: a text result whose argument is
    the result before it, stored as its change from that (format version 4). Not ledgered:
    it does no work of its own the harness counts."""
    return retold(label, text)


async def _await_stage(label: str, acc: int, carried: dict[str, Any] | None) -> dict[str, Any]:
    out = await stage(label, acc, carried)
    HOOKS.returned(label)
    return out


async def branch(j: int, acc: int, carried: dict[str, Any] | None) -> int:
    """One branch of the gather (a scope of its own)."""
    return int((await _await_stage(f"g{j}", acc + j, carried))["value"])


@workflow(name="harness-pipeline")
async def pipeline(spec: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """``seq`` sequential steps, an optional request, a gather of ``fan`` branches, a last step."""
    acc = int(spec["seed"])
    size = int(spec.get("carry", 0))
    carried = {"text": carry_text("start", size)} if size else None
    told = carry_text("told", size)
    for i in range(spec["seq"]):
        out = await _await_stage(f"s{i}", acc, carried)
        acc, carried = int(out["value"]), out if size else None
        if size:
            told = await retell(f"s{i}", told)
    answer = None
    if spec["pause"]:
        answer = await ctx.request_info({"acc": acc}, request_id="approve")
    parts = await asyncio.gather(*(branch(j, acc, carried) for j in range(spec["fan"])))
    last = await _await_stage("final", sum(parts) + len(str(answer)), carried)
    out = {"acc": acc, "parts": list(parts), "answer": answer, "final": int(last["value"])}
    return {**out, "told": told} if size else out


def spec_for(
    seed: int, *, seq: int = 8, fan: int = 4, pause: bool = True, carry: int = 0
) -> dict[str, Any]:
    """The workflow's input for a scenario (``carry``: the size of the text each stage hands
    the next, see :func:`stage`, and of the text :func:`retell` hands on after each
    sequential stage; none by default)."""
    spec: dict[str, Any] = {"seed": seed % 1000, "seq": seq, "fan": fan, "pause": pause}
    if carry:
        spec["carry"] = carry
    return spec


def labels(spec: dict[str, Any]) -> list[str]:
    """Every step label a complete run executes, in program order."""
    return [f"s{i}" for i in range(spec["seq"])] + [f"g{j}" for j in range(spec["fan"])] + ["final"]


def reference(spec: dict[str, Any], answer: Any = "yes") -> tuple[dict[str, int], dict[str, Any]]:
    """Return what each step must return and what the run must output, computed directly."""
    if not spec["pause"]:
        answer = None
    values: dict[str, int] = {}
    acc = int(spec["seed"])
    for i in range(spec["seq"]):
        acc = values[f"s{i}"] = mix(f"s{i}", acc)
    parts = []
    for j in range(spec["fan"]):
        parts.append(mix(f"g{j}", acc + j))
        values[f"g{j}"] = parts[-1]
    final = values["final"] = mix("final", sum(parts) + len(str(answer)))
    output = {"acc": acc, "parts": parts, "answer": answer, "final": final}
    if spec.get("carry"):
        told = carry_text("told", int(spec["carry"]))
        for i in range(spec["seq"]):
            told = retold(f"s{i}", told)
        output["told"] = told
    return values, output


#: The retry-limit case: a charge that always fails, three attempts, a tiny backoff.
CHARGE_RETRY = Retry(attempts=3, initial=0.05, backoff=1.0, jitter=False)


@step(retries=CHARGE_RETRY)
async def charge(order: str) -> str:
    """One ledgered attempt at a payment that the bank always declines."""
    HOOKS.ledger("charge")
    HOOKS.after_ledger("charge")
    raise ConnectionError(f"card declined for {order}")


@workflow(name="harness-payment")
async def payment(order: str) -> str:
    """A run whose one step may only ever be attempted ``CHARGE_RETRY.attempts`` times."""
    return await charge(order)
