"""``wfctl runs --json`` is written by orjson where its text is the standard library's.

The document must stay byte for byte what ``json.dumps(document, indent=2,
ensure_ascii=False)`` wrote; these compare the two on awkward text and count which encoder
wrote it. They import the CLI module on purpose: ``indented_json`` is its writer.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from wfctl._cli import _app


def _runs_document(text: str, number: int = 3) -> dict[str, Any]:
    run = {
        "run_id": "r1",
        "workflow": text,
        "status": "corrupt",
        "head_checkpoint_id": None,
        "head_seq": number,
        "created_at": "2026-12-01T10:00:00.000000Z",
        "updated_at": None,
        "origin_run_id": None,
        "origin_checkpoint_id": None,
        "pending_request_ids": [text, "k2"],
        "problem": f"{text}: bad",
        "waiting": None,
    }
    return {
        "schema": "wfctl/runs@1",
        "store": text,
        "runs": [run, {**run, "pending_request_ids": []}],
    }


AWKWARD = [
    "plain",
    'quotes " and \\ backslash / slash',
    "controls \x00\x01\x1b[2J\x1f \x7f del \t tab \n lf \r cr \b \f",
    "unicode é ü 中文 🎉 \u2028 \u2029 \u202e \ufeff",
    "",
]


@pytest.mark.parametrize("text", AWKWARD)
def test_the_document_is_written_as_the_standard_library_writes_it(text: str) -> None:
    document = _runs_document(text)
    assert _app.indented_json(document) == json.dumps(document, indent=2, ensure_ascii=False)
    assert _app.indented_json({}) == json.dumps({}, indent=2)


@pytest.mark.parametrize(
    "document",
    [_runs_document("lone \ud800 surrogate"), _runs_document("big", 2**70)],
)
def test_what_orjson_refuses_is_written_by_the_standard_library(document: dict[str, Any]) -> None:
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(document)
    assert _app.indented_json(document) == json.dumps(document, indent=2, ensure_ascii=False)


def test_an_ordinary_document_never_reaches_the_standard_library(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(*args: object, **kwargs: object) -> str:
        raise AssertionError("written by the standard library")

    monkeypatch.setattr(json, "dumps", refused)
    for text in AWKWARD:
        assert '"schema": "wfctl/runs@1"' in _app.indented_json(_runs_document(text))
