"""People see stored values decoded (ISO text for a datetime), never the storage's tagged form."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import WORKFLOWS, run_id_of, wfctl

TYPED = WORKFLOWS / "typed.py"


def test_run_log_and_replay_show_values_as_people_read_them(store: Path) -> None:
    done = wfctl("run", TYPED, "--store", store)
    assert done.code == 0, done.stderr
    assert '"when": "2026-01-02T03:04:05+00:00"' in done.stdout
    assert '"price": "1.10"' in done.stdout and '"raw": "b\'hi\'"' in done.stdout
    assert '"00000000-0000-0000-0000-000000000001"' in done.stdout
    assert "$t" not in done.stdout

    run_id = run_id_of(wfctl("run", TYPED, "--store", store, "--json"))
    log = wfctl("log", run_id, "--store", store)
    assert log.code == 0, log.stderr
    assert 'result: {"when": "2026-01-02T03:04:05+00:00"' in log.stdout
    assert "$t" not in log.stdout

    replay = wfctl("replay", "-c", f"{run_id}.1", "--store", store)
    assert replay.code == 0, replay.stderr
    assert '"2026-01-02T03:04:05+00:00"' in replay.stdout
    assert "$t" not in replay.stdout and "datetime.datetime(" not in replay.stdout


def test_request_data_is_shown_decoded(store: Path, tmp_path: Path) -> None:
    flow = tmp_path / "asks.py"
    flow.write_text(
        "from datetime import date\n"
        "from wfctl import RunContext, workflow\n\n"
        "@workflow(name='asks')\n"
        "async def asks(ctx: RunContext) -> str:\n"
        "    day = await ctx.request_info({'since': date(2026, 1, 2)}, int)\n"
        "    return str(day)\n",
        encoding="utf-8",
    )
    paused = wfctl("run", flow, "--store", store)
    assert paused.code == 3, paused.stderr
    assert '{"since": "2026-01-02"}' in paused.stdout and "$t" not in paused.stdout
    run_id = paused.stdout.split()[1]
    template = (store / "runs" / run_id / "answers.toml").read_text(encoding="utf-8")
    assert '"since": "2026-01-02"' in template and "$t" not in template
    done = wfctl("resume", run_id, "-r", "request#0=3", "--store", store)
    assert done.code == 0, done.stderr
    log = wfctl("log", run_id, "--store", store)
    assert "→ answer request#0 = 3" in log.stdout and "$t" not in log.stdout


def test_log_v_shows_a_step_s_arguments_decoded(store: Path, tmp_path: Path) -> None:
    flow = tmp_path / "dated.py"
    flow.write_text(
        "from datetime import date\n"
        "from wfctl import step, workflow\n\n"
        "@step\n"
        "async def until(day: date, *, span: tuple[int, int]) -> str:\n"
        "    return day.isoformat()\n\n"
        "@workflow(name='dated')\n"
        "async def dated() -> str:\n"
        "    return await until(date(2026, 1, 2), span=(1, 2))\n",
        encoding="utf-8",
    )
    done = wfctl("run", flow, "--store", store, "--json")
    assert done.code == 0, done.stderr
    log = wfctl("log", run_id_of(done), "-v", "--store", store)
    assert log.code == 0, log.stderr
    assert 'args: ("2026-01-02", span=[1, 2])' in log.stdout
    assert "$t" not in log.stdout
