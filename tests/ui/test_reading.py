"""Pages that need the whole listing never keep a request open for long: while it is read
they say so and reload themselves (a stop of ``wfctl ui`` then waits for no request).

The app is driven in-process (Starlette's TestClient) over a real source, its listing read
by a function held at a gate: how long a real listing takes is not something a test sets.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from wfctl._ui._app import build_app
from wfctl._ui._guard import cookie_name
from wfctl.sources import RunInfo, open_source


@pytest.fixture
def gated(ui_store: Path) -> Iterator[tuple[TestClient, threading.Event]]:
    gate = threading.Event()
    with open_source(ui_store) as source:

        def held_listing() -> Sequence[RunInfo]:
            assert gate.wait(60)
            return tuple(source.runs())

        app, close = build_app(
            source, str(ui_store), "t0ken", read_listing=held_listing, listing_wait=0.05
        )
        try:
            with TestClient(app, base_url="http://127.0.0.1:8765") as client:
                client.cookies.set(cookie_name(8765), "t0ken")
                yield client, gate
        finally:
            gate.set()
            close()


def test_pages_say_the_listing_is_being_read_then_show_it(
    gated: tuple[TestClient, threading.Event],
) -> None:
    client, gate = gated
    for path in ("/?status=failed", "/sizes"):
        answer = client.get(path)
        assert answer.status_code == 200
        assert 'id="partial" data-live="1"' in answer.text
        assert "the whole listing is being read" in answer.text
    gate.set()
    answer = client.get("/?status=failed")
    assert 'id="partial"' not in answer.text and "1 run<" in answer.text
    assert 'id="partial"' not in client.get("/sizes").text
