"""``--durability`` on ``run`` and ``resume``, and ``durability`` in ``wfctl.toml``."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import WORKFLOWS, invoke, run_id_of, wfctl

GREET = WORKFLOWS / "greet.py"
REVIEW = WORKFLOWS / "review.py"


def test_run_and_resume_commit_with_the_durability_asked_for(store: Path) -> None:
    paused = wfctl(
        "run", REVIEW, "--store", store, "--json",
        "--durability", "batch", "--batch-steps", "8", "--batch-ms", "20",
    )  # fmt: skip
    assert paused.code == 3, paused.stderr
    assert paused.json()["durability"] == {"mode": "batch", "batch_steps": 8, "batch_ms": 20.0}
    run_id = run_id_of(paused)
    resumed = wfctl(
        "resume", run_id, "--store", store, "--json", "--durability", "none",
        "-r", "0/request#0=y", "-r", "1/request#0=2",
    )  # fmt: skip
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["durability"]["mode"] == "none"
    lineage = wfctl("verify-lineage", run_id, "--store", store, "--json")
    assert lineage.code == 0, lineage.stdout


def test_the_default_is_full_and_the_config_file_can_choose(workdir: Path) -> None:
    done = invoke("run", GREET, "--json")
    assert done.code == 0 and done.json()["durability"]["mode"] == "full"
    (workdir / "wfctl.toml").write_text('durability = "batch"\nbatch_steps = 4\n', "utf-8")
    done = invoke("run", GREET, "--json")
    assert done.json()["durability"] == {"mode": "batch", "batch_steps": 4, "batch_ms": 100.0}
    done = invoke("run", GREET, "--json", "--durability", "full")  # the command line wins
    assert done.json()["durability"]["mode"] == "full"


def test_bad_durability_settings_are_one_line_and_exit_2(workdir: Path, store: Path) -> None:
    bad = wfctl("run", GREET, "--store", store, "--durability", "fast")
    assert (
        bad.code == 2 and "--durability 'fast' is not one of full, batch, none" in bad.error_line()
    )
    bad = wfctl("run", GREET, "--store", store, "--batch-steps", "0")
    assert bad.code == 2 and "--batch-steps" in bad.error_line()
    (workdir / "wfctl.toml").write_text('durability = "batch"\nbatch_ms = -1\n', "utf-8")
    bad = wfctl("run", GREET, "--store", store, cwd=workdir)
    assert bad.code == 2
    assert bad.error_line().endswith(
        "wfctl.toml: batch_ms must be over 0 and at most 3600000, not -1"
    )
    (workdir / "wfctl.toml").write_text("durability = 1\n", "utf-8")
    bad = wfctl("run", GREET, "--store", store, cwd=workdir)
    assert bad.code == 2 and bad.error_line().endswith("'durability' must be a string")
    assert not store.exists()  # refused before anything was written
