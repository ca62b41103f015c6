"""``wfctl ui`` over HTTP: its first line, the token, read-only answers, the pages' HTML, its end.

Every test talks to the installed ``wfctl ui`` over a real socket; the browser tests
(test_browser.py) look at the same pages in Chromium.
"""

from __future__ import annotations

import hashlib
import html
import http.client
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error as urllib_error
import urllib.parse as urllib_parse
import urllib.request as urllib_request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.cli.conftest import SAMPLES, base_env, spoil_step_record, wfctl
from tests.langgraph.stores import write_sqlite
from tests.sources.test_agent_framework_source import run_af

from .conftest import Served, runs_of, serve
from .hostile import HOSTILE


def digest(store: Path) -> str:
    """A fingerprint of every file of the store (names, sizes, bytes)."""
    seen = hashlib.sha256()
    for path in sorted(store.rglob("*")):
        seen.update(str(path.relative_to(store)).encode())
        if path.is_file():
            seen.update(path.read_bytes())
    return seen.hexdigest()


def test_the_first_line_is_the_url_with_its_token(served: Served) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]{40,}", served.url)


def test_a_request_without_the_token_is_refused(served: Served) -> None:
    # a token beyond ASCII too: it is compared as bytes, not refused by a traceback (500)
    for path in ("/", "/sizes", "/run?id=x", "/static/ui.css", "/?token=wrong", "/?token=%C3%A9"):
        code, text = served.get(path, cookie=False)
        assert code == 403, path
        assert "token" in text
    code, _ = served.get("/", cookie=False)
    assert code == 403
    request = urllib_request.Request(served.base + "/")
    request.add_header("Cookie", served.cookie.split("=")[0] + "=\u00e9")
    with pytest.raises(urllib_error.HTTPError) as raised:
        urllib_request.urlopen(request, timeout=30)
    raised.value.close()
    assert raised.value.code == 403


def test_the_token_is_traded_for_a_cookie(served: Served) -> None:
    class Keep(urllib_request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib_request.build_opener(Keep)
    with pytest.raises(urllib_error.HTTPError) as raised:
        opener.open(served.url, timeout=30)
    answer = raised.value
    answer.close()
    assert answer.code == 303
    assert answer.headers["Location"] == "/"
    cookie = answer.headers["Set-Cookie"]
    assert cookie.startswith(served.cookie + ";")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie


def test_the_redirect_keeps_an_encoded_path_encoded(served: Served) -> None:
    connection = http.client.HTTPConnection(
        urlsplit(served.base).hostname, urlsplit(served.base).port
    )
    try:
        connection.request("GET", f"/x%0D%0ASet-Cookie:%20evil=1?sort=size&token={served.token}")
        answer = connection.getresponse()
        answer.read()
    finally:
        connection.close()
    assert answer.status == 303
    assert answer.getheader("Location") == "/x%0D%0ASet-Cookie:%20evil=1?sort=size"
    assert [value for name, value in answer.getheaders() if name.lower() == "set-cookie"] == [
        served.cookie + "; HttpOnly; SameSite=Strict; Path=/"
    ]


def test_only_reading_is_served(served: Served, ui_store: Path) -> None:
    before = digest(ui_store)
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        code, _ = served.get("/", method=method)
        assert code == 405, method
    for run in runs_of(ui_store):
        assert served.get(f"/run?id={run['run_id']}")[0] == 200
    assert served.get("/sizes")[0] == 200
    assert digest(ui_store) == before


def test_the_runs_page_lists_every_run_with_its_filters(served: Served, ui_store: Path) -> None:
    runs = runs_of(ui_store)
    code, page = served.get("/")
    assert code == 200
    for run in runs:
        assert f"/run?id={run['run_id']}" in page
    assert "5 runs" in page
    code, page = served.get("/?status=failed")
    assert "1 run<" in page and runs[1]["run_id"] in page
    code, page = served.get("/?workflow=flaky*")
    assert "2 runs" in page
    code, page = served.get("/?since=2000-01-01&until=2000-01-02")
    assert "0 runs" in page
    code, page = served.get("/?since=soon")
    assert code == 400 and "invalid time" in page


def test_the_run_page_draws_a_node_per_record(served: Served, ui_store: Path) -> None:
    run = runs_of(ui_store)[0]  # flaky_service, its step retried
    code, page = served.get(f"/run?id={run['run_id']}")
    assert code == 200
    records = run["head_seq"] + 1
    assert len(re.findall(r'<g id="node&#45;\d+" class="node record"', page)) == records
    assert len(re.findall(r'<li id="rec-\d+"', page)) == records
    assert "verify-lineage: ok" in page
    assert "retrying" in page  # the retried attempts
    assert f"wfctl export {run['run_id']} --store" in page


def test_hostile_text_is_escaped_and_a_huge_value_folded(served: Served, ui_store: Path) -> None:
    run = runs_of(ui_store)[1]  # hostile.py
    for path in ("/", f"/run?id={run['run_id']}", "/sizes"):
        code, page = served.get(path)
        assert code == 200
        assert "<script>window" not in page and "<img src=x" not in page, path
    code, page = served.get(f"/run?id={run['run_id']}")
    assert html.escape("<script>window.__wfctl_pwned", quote=False) in page
    assert "ValueError" in page
    assert "more characters folded" in page
    assert len(page) < 100_000  # the 200,000-character value is not sent


def test_the_replay_page_sets_a_replay_beside_its_source(served: Served, ui_store: Path) -> None:
    replay = runs_of(ui_store)[2]  # the flaky_service replay
    code, page = served.get(f"/replay?id={replay['run_id']}")
    assert code == 200
    assert replay["origin_run_id"] in page
    assert re.search(r"cached \d+", page) and re.search(r"same \d+", page)
    code, page = served.get(f"/replay?id={replay['origin_run_id']}")
    assert code == 404 and "no replay" in page


def test_without_dot_the_run_page_says_what_to_install(ui_store: Path, tmp_path: Path) -> None:
    server = serve(ui_store, env={"PATH": str(tmp_path)})  # no dot on this PATH
    try:
        code, page = server.get(f"/run?id={runs_of(ui_store)[0]['run_id']}")
    finally:
        server.stop()
    assert code == 200
    assert "Graphviz&#39;s dot is not installed (apt-get install graphviz)" in page
    assert "<svg" not in page
    assert len(re.findall(r'<li id="rec-\d+"', page)) == runs_of(ui_store)[0]["head_seq"] + 1


def test_a_tampered_run_shows_its_verdict_not_an_error(ui_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(ui_store, store)
    run = runs_of(store)[0]
    spoil_step_record(store, run["run_id"], 3)
    server = serve(store)
    try:
        code, page = server.get(f"/run?id={run['run_id']}")
    finally:
        server.stop()
    assert code == 200
    assert re.search(r"verify-lineage: \d+ problem\(s\)", page)
    assert "checksum mismatch" in page
    assert 'id="stopped"' in page


def test_a_huge_output_diff_is_folded(served: Served, ui_store: Path) -> None:
    replay = runs_of(ui_store)[
        4
    ]  # hostile.py:large, replayed: its 200,000-character output changed
    code, page = served.get(f"/replay?id={replay['run_id']}")
    assert code == 200
    assert 'id="diff"' in page and "more characters of the diff folded" in page
    assert len(page) < 100_000


def test_an_unknown_run_is_a_page_that_says_so(served: Served) -> None:
    code, page = served.get("/run?id=nope-nope")
    assert code == 404
    assert "nope-nope" in page


def test_another_engine_s_store_is_shown_through_the_port(af_store: Path) -> None:
    server = serve(af_store)
    try:
        code, page = server.get("/")
        assert code == 200
        assert "<script>window" not in page and "<img src=x" not in page
        assert html.escape(HOSTILE[:20], quote=False) in page
        code, page = server.get("/run?id=" + urllib_parse.quote(HOSTILE))
        assert code == 200, page
        assert "<script>window" not in page and "<img src=x" not in page
        assert 'class="node record"' in page
    finally:
        code, _, err = server.stop()
    assert (code, err) == (0, "")


def test_a_forked_store_s_problems_point_at_their_nodes(tmp_path: Path) -> None:
    run_af(tmp_path, ("fan", 3))  # parallel steps: several roots, agent-framework's known fork
    server = serve(tmp_path)
    try:
        code, page = server.get("/run?id=fan")
    finally:
        server.stop()
    assert code == 200
    records = len(re.findall(r'<li id="rec-\d+"', page))
    assert len(re.findall(r'class="node record( broken)?"', page)) == records == 4
    assert "3 roots (exactly one expected)" in page
    assert len(re.findall(r'class="node record broken"', page)) >= 3
    assert len(re.findall(r'<a href="#rec-\d+">record \d+</a>', page)) >= 3


def test_a_langgraph_checkpointer_is_served_through_the_port(tmp_path: Path) -> None:
    store = write_sqlite(tmp_path / "checkpoints.sqlite")  # LangGraph's own SqliteSaver
    before = store.read_bytes()
    server = serve(store)
    try:
        code, page = server.get("/")
        threads = re.findall(r'class="run-link" href="/run\?id=([^"]+)"', page)
        assert code == 200 and len(threads) >= 5
        for thread in threads:
            code, page = server.get(f"/run?id={thread}")
            assert code == 200, thread
            records = len(re.findall(r'<li id="rec-\d+"', page))
            assert records and len(re.findall(r'class="node record', page)) == records, thread
        assert server.get("/sizes")[0] == 200
    finally:
        code, _, err = server.stop()
    assert (code, err) == (0, "")
    assert store.read_bytes() == before


def test_a_non_loopback_address_is_warned_about(ui_store: Path) -> None:
    server = serve(ui_store, "--host", "0.0.0.0")
    code, _, err = server.stop()
    assert code == 0
    assert "warning" in err and "exposed" in err and "0.0.0.0" in err


def test_a_stop_asked_before_the_server_serves_is_never_lost(ui_store: Path) -> None:
    # Ctrl-C right after the URL is printed: its handler asks the server to exit and raises
    # nothing. A KeyboardInterrupt raised instead is lost when it lands in a weak reference's
    # callback, and the server then served on (seen once in CI: the test above hung).
    from wfctl._ui._serve import serve_store

    raised: list[BaseException] = []

    def on_ready(url: str) -> None:
        handler = signal.getsignal(signal.SIGINT)
        assert callable(handler)
        try:
            handler(signal.SIGINT, None)
        except BaseException as exc:
            raised.append(exc)
            raise

    serve_store(str(ui_store), host="127.0.0.1", port=0, on_ready=on_ready)  # returns: stopped
    assert raised == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_open_hands_the_url_to_the_browser(ui_store: Path, tmp_path: Path) -> None:
    opened = tmp_path / "opened"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}.part && mv {opened}.part {opened}\n')
    browser.chmod(0o755)
    server = serve(ui_store, "--open", env={"BROWSER": str(browser)})
    try:
        end = time.monotonic() + 60
        while not opened.exists():  # bounded poll: the browser is another process
            assert time.monotonic() < end
            time.sleep(0.01)
    finally:
        server.stop()
    assert opened.read_text() == server.url


def test_sigterm_stops_it_cleanly(ui_store: Path) -> None:
    server = serve(ui_store)
    assert server.get("/")[0] == 200
    server.process.send_signal(signal.SIGTERM)
    out, err = server.process.communicate(timeout=60)
    assert (server.process.returncode, out, err) == (0, "", "")


def test_without_the_extra_it_names_the_extra(ui_store: Path) -> None:
    hidden = (
        "import sys; sys.modules['starlette'] = None; sys.argv = ['wfctl', 'ui', '--store', "
        f"{str(ui_store)!r}]; from wfctl._cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", hidden],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "wfctl: error: wfctl ui needs the ui extra: pip install 'wfctl[ui]' (missing: starlette)"
    ]


def test_a_port_in_use_is_one_line(ui_store: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = wfctl("ui", "--port", str(port), "--store", ui_store)
    assert done.code == 2
    assert done.stdout == ""
    assert done.error_line() == (
        f"wfctl: error: cannot serve on 127.0.0.1:{port}: Address already in use"
    )


def test_a_store_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    done = wfctl("ui", "--port", "0", "--store", tmp_path / "missing")
    assert done.code == 2
    assert done.error_line().startswith("wfctl: error: store ")


def test_a_postgresql_store_is_served_too(pg_url: str) -> None:
    ran = wfctl("run", SAMPLES / "flaky_service.py", "--store", pg_url)
    assert ran.code == 0, ran.stderr
    (run,) = runs_of(pg_url)
    server = serve(pg_url)
    try:
        code, page = server.get("/")
        assert code == 200 and f"/run?id={run['run_id']}" in page
        code, page = server.get(f"/run?id={run['run_id']}")
        assert code == 200 and "verify-lineage: ok" in page
        assert len(re.findall(r'<li id="rec-\d+"', page)) == run["head_seq"] + 1
        assert server.get("/sizes")[0] == 200
    finally:
        code, _, err = server.stop()
    assert (code, err) == (0, "")
