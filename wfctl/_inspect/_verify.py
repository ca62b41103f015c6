"""``wfctl verify-lineage`` over a store or an agent framework directory, as one report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from wfctl._config import StoreRef
from wfctl._errors import NothingVerifiedError, RunNotFoundError, WfctlError
from wfctl._storage._open import on_store, redact

from ._query import RunQuery

if TYPE_CHECKING:
    from ._lineage import LineageReport


__all__ = ["verify_runs"]


def verify_runs(
    store: StoreRef | None,
    run_ids: Sequence[str] = (),
    *,
    workflow_name: str | None = None,
    query: RunQuery | None = None,
    must_exist: bool = True,
) -> LineageReport:
    """Verify the lineage of runs in ``store`` (a store of another engine is verified through
    its source: :func:`wfctl._sources._views.verify_source`).

    ``query`` selects the runs as ``wfctl runs`` lists them (its filters only). A run that
    cannot be read gets a failed verdict naming why; the others are verified.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError: a run id is malformed.
        RunNotFoundError: a named run does not exist.
        NothingVerifiedError: no run was selected (an empty store, or filters that match no
            run), so nothing was verified: a check of nothing is not a pass.
        WfctlError: no store was given.
    """
    query = query or RunQuery()
    from ._lineage import verify_lineage

    if store is None:
        raise WfctlError("no store to verify")
    report = on_store(
        store,
        lambda storage: verify_lineage(storage, run_ids, workflow_name=workflow_name, query=query),
        must_exist=must_exist,
    )
    for verdict in report.runs:
        if verdict.checkpoints == 0 and verdict.problems == ("run not found",):
            raise RunNotFoundError(verdict.run_id)  # a named run that does not exist: bad input
    if not report.verified_count:
        where = f"store {redact(str(store))!r}"
        if report.runs:  # every run selected went before its read
            raise NothingVerifiedError(
                f"every run selected in {where} was removed while it was being verified "
                "(by a gc or an rm)"
            )
        filters = " ".join(
            ([f"workflow {workflow_name!r}"] if workflow_name is not None else [])
            + ([query.describe()] if query.narrows else [])
        )
        if run_ids:  # (named runs exist: a missing one was refused above)
            raise NothingVerifiedError(
                f"none of the runs named ({', '.join(run_ids)}) matched {filters} in {where}"
            )
        if filters:
            raise NothingVerifiedError(f"no run matched {filters} in {where}")
        raise NothingVerifiedError(f"{where} holds no run")
    return report
