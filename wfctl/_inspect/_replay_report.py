"""What a replay reports: how it went and how it differs from its source (``ReplayReport``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from wfctl._engine._result import ResultStatus
from wfctl._records._codec import encode

from ._diff import StepDiff, count_statuses, render_json
from ._documents import document

__all__ = ["ReplayReport", "replay_json_head"]


#: Row statuses that make a replay differ from its source.
_DIFFERING: Final = frozenset({"changed", "new", "failed"})


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """How a replay went and how it differs from the source run.

    ``source_status`` is ``completed``, ``paused``, ``failed`` or ``interrupted`` (the source
    run's last checkpoint is none of those: it was killed or is still running).
    ``outputs_source``/``outputs_replay`` are as ``get_outputs()`` returns them, or None for a
    run that did not complete; ``outputs_diff`` is a unified diff of their pretty JSON, empty
    when they are equal. ``error`` is the replay's failure message (``error_type`` its class).
    ``code_changed``: the workflow's code signature differs from the one that wrote the
    checkpoint (possible only with ``allow_changed``). A changed step whose arguments did not
    change is still served from the record, so a changed workflow can replay as identical.
    ``target`` is the code the CLI imported (``target_recorded``: it came from the source run's
    record); empty when the report was made by the library.
    """

    source_run_id: str
    source_checkpoint_id: str
    source_status: str
    replay_run_id: str
    replay_checkpoint_id: str
    replay_status: ResultStatus
    error: str | None
    error_type: str | None
    outputs_source: list[Any] | None
    outputs_replay: list[Any] | None
    outputs_diff: str
    steps: tuple[StepDiff, ...]
    answers_reused: tuple[str, ...] = ()
    code_changed: bool = False
    target: str = ""
    target_recorded: bool = False
    #: How many rows have each status, when the rows were written as they came, not held
    #: (``steps`` is then empty; see :class:`ReplayRows`).
    row_counts: tuple[tuple[str, int], ...] = ()

    @property
    def outputs_equal(self) -> bool:
        """Whether both runs completed with outputs that render the same."""
        return (
            self.outputs_source is not None
            and self.outputs_replay is not None
            and not self.outputs_diff
        )

    @property
    def identical(self) -> bool:
        """Whether the replay completed like the source, with equal outputs and matching steps.

        A replay that failed or paused is never identical; ``not reached`` rows count only
        through the outputs.
        """
        counts = self.counts
        return (
            self.replay_status == "completed"
            and self.source_status == "completed"
            and self.outputs_equal
            and not any(counts[status] for status in _DIFFERING)
        )

    @property
    def counts(self) -> Mapping[str, int]:
        """How many rows have each status (every status present, in a fixed order)."""
        return dict(self.row_counts) if self.row_counts else count_statuses(self.steps)

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/replay@1`` document (see docs/json.md).

        Outputs appear in their codec encoding (bytes, dates and registered classes as tagged
        objects), exactly as they were compared. The rows come right after the checkpoint's ids,
        before everything the replay decided (its status, outputs, counts, verdict), as ``wfctl
        replay --json`` writes them as they come, some while the replay runs.
        """
        return {
            **self.json_head(),
            "steps": [row.to_json() for row in self.steps],
            **self.json_tail(),
        }

    def json_head(self) -> dict[str, Any]:
        """The document's fields before ``steps``: what the checkpoint replayed says."""
        return replay_json_head(self.source_run_id, self.source_checkpoint_id)

    def json_tail(self) -> dict[str, Any]:
        """The document's fields after ``steps``: what is known once the replay ran and every
        row is (the rows may be written while the replay runs)."""
        return {
            "source_status": self.source_status,
            "replay_run_id": self.replay_run_id,
            "replay_head_checkpoint_id": self.replay_checkpoint_id,
            "replay_status": self.replay_status,
            "error": self.error,
            "error_type": self.error_type,
            "reused_answer_ids": list(self.answers_reused),
            "code_changed": self.code_changed,
            "target": self.target,
            "target_recorded": self.target_recorded,
            "outputs_equal": self.outputs_equal,
            "source_outputs": _encoded(self.outputs_source),
            "replay_outputs": _encoded(self.outputs_replay),
            "outputs_diff": self.outputs_diff,
            "step_counts": {
                status.replace(" ", "_"): count for status, count in self.counts.items()
            },
            "identical": self.identical,
        }


def replay_json_head(source_run_id: str, source_checkpoint_id: str) -> dict[str, Any]:
    """The ``wfctl/replay@1`` document's fields before ``steps``, known before the replay."""
    return document(
        "replay",
        {"source_run_id": source_run_id, "source_checkpoint_id": source_checkpoint_id},
    )


def _encoded(value: Any) -> Any:
    try:
        return encode(value)
    except Exception:  # only values that came out of the codec get here; never fail a report
        return render_json(repr(value))
