"""``wfctl export``: the JSON document written a page of checkpoints at a time, the file replaced
whole or not at all, and text no encoder can write escaped instead of failing the command.

The JSON text is what ``json.dumps(document, indent=2, ensure_ascii=False)`` writes for the
whole document (floats, integers beyond 64 bits, controls, nesting deeper than orjson goes);
checkpoints are read as they are written, each verified. With ``-o`` the document goes to a new
file beside the target, renamed over it once complete: a run that fails part-way leaves the
target as it was (and no stray file), a link's target is what is replaced, and the replaced
file's mode is kept.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import (
    WORKFLOWS,
    count_reads,
    invoke,
    run_id_of,
    spoil_step_record,
    wfctl,
)
from tests.conftest import arun
from wfctl._errors import WfctlError
from wfctl._inspect import _export, _json_pages
from wfctl._inspect._documents import document, summary_json
from wfctl._inspect._export import export_run
from wfctl._inspect._show import to_toml
from wfctl._storage import FileCheckpointStorage

VALUES = WORKFLOWS / "values.py"
STEPS = 450  # checkpoints: STEPS + 2, over two pages of 200


def _expected(store: Path, run_id: str) -> dict[str, Any]:
    """The export document, made whole from the library's strict reads."""
    storage = FileCheckpointStorage(store)
    chain = arun(storage.load_chain(run_id))
    summary = arun(storage.run_summary(run_id))
    fields = {"run": summary_json(summary), "checkpoint_count": len(chain)}
    return document("export", fields | {"checkpoints": [c.to_dict() for c in chain]})


@pytest.fixture
def values_run(store: Path) -> str:
    return run_id_of(invoke("run", VALUES, "--store", store, "--json"))


@pytest.mark.parametrize("which", ["long_run", "values_run"])
def test_the_json_text_is_json_dumps_of_the_whole_document(
    store: Path, which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    run_id = request.getfixturevalue(which)
    whole = json.dumps(_expected(store, run_id), indent=2, ensure_ascii=False) + "\n"
    expected = whole.encode("utf-8", "backslashreplace")  # a lone surrogate: its JSON escape
    done = wfctl("export", run_id, "--store", store)
    assert done.code == 0, done.stderr
    assert done.stdout.encode() == expected
    target = tmp_path / "run.json"
    assert wfctl("export", run_id, "--output", target, "--store", store).code == 0
    assert target.read_bytes() == expected


def test_the_toml_text_is_the_whole_document_s(store: Path, long_run: str) -> None:
    done = wfctl("export", long_run, "--format", "toml", "--store", store)
    assert done.code == 0, done.stderr
    assert done.stdout == to_toml(_expected(store, long_run))


def test_checkpoints_are_read_as_the_text_is_written(
    store: Path, long_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = count_reads(monkeypatch)
    result = export_run(store, long_run, "json")
    assert sorted(reads.decoded) == [0, STEPS + 1]  # the summary's root and head only
    chunks = iter(result.chunks)
    next(chunks)  # a page of 200 checkpoints, no more (the root was decoded already)
    assert reads.decoded == [0, STEPS + 1, *range(1, 200)]
    list(chunks)
    assert reads.decoded == [0, STEPS + 1, *range(1, STEPS + 1)]  # each once


def test_a_page_of_big_checkpoints_is_given_as_soon_as_it_reaches_its_size(
    store: Path, long_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A page is 200 checkpoints or about PAGE_CHARS characters: at 1, every checkpoint is a
    # page, read, written and given before the next is read.
    monkeypatch.setattr(_json_pages, "PAGE_CHARS", 1)
    reads = count_reads(monkeypatch)
    chunks = iter(export_run(store, long_run, "json").chunks)
    given = [next(chunks)]  # the document's start and the root
    assert reads.decoded == [0, STEPS + 1]
    given.append(next(chunks))
    assert reads.decoded == [0, STEPS + 1, 1]
    given.append(next(chunks))
    assert reads.decoded == [0, STEPS + 1, 1, 2]
    given.extend(chunks)
    assert len(given) == STEPS + 3  # one a checkpoint, then the document's end
    assert json.loads("".join(given)) == _expected(store, long_run)


def test_a_run_that_fails_part_way_leaves_the_file_as_it_was(
    store: Path, long_run: str, tmp_path: Path
) -> None:
    spoil_step_record(store, long_run, 300)  # read after a page was written
    out = tmp_path / "out"
    out.mkdir()
    kept = out / "run.json"
    kept.write_text("the export before\n", encoding="utf-8")
    for target in (kept, out / "new.json"):
        done = wfctl("export", long_run, "--output", target, "--store", store)
        assert done.code == 2 and "journal.jsonl:301: checksum mismatch" in done.error_line()
    assert kept.read_text(encoding="utf-8") == "the export before\n"
    assert sorted(os.listdir(out)) == ["run.json"]  # no new file, no temporary file left
    shown = wfctl("export", long_run, "--store", store)  # to stdout: named after what came
    assert shown.code == 2 and "journal.jsonl:301" in shown.error_line()
    assert shown.stdout.startswith('{\n  "schema": "wfctl/export@1"')


def test_the_file_replaced_keeps_its_mode_and_a_link_keeps_pointing_at_it(
    store: Path, long_run: str, tmp_path: Path
) -> None:
    real = tmp_path / "real.json"
    real.write_text("old", encoding="utf-8")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert wfctl("export", long_run, "--output", link, "--store", store).code == 0
    assert link.is_symlink() and link.resolve() == real
    assert json.loads(real.read_text(encoding="utf-8"))["checkpoint_count"] == STEPS + 2
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    fresh = tmp_path / "fresh.json"
    assert wfctl("export", long_run, "--output", fresh, "--store", store, umask=0o027).code == 0
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640  # 0o666 less the umask, as any file


def test_a_device_is_written_in_place_and_a_directory_refused(
    store: Path, long_run: str, tmp_path: Path
) -> None:
    assert wfctl("export", long_run, "--output", os.devnull, "--store", store).code == 0
    out = tmp_path / "out"
    out.mkdir()
    done = wfctl("export", long_run, "--output", out, "--store", store)
    assert done.code == 2 and "Is a directory" in done.error_line()
    assert os.listdir(out) == []
    for empty in ("", "."):  # an empty FILE ('' from the shell) names no file
        done = wfctl("export", long_run, "--output", empty, "--store", store, cwd=out)
        assert done.code == 2 and done.stdout == ""
        assert done.error_line() == (
            "wfctl: error: Invalid value for '--output': needs a file name (see 'wfctl export "
            "--help')"
        )
    assert os.listdir(out) == []


def test_a_failing_read_is_not_called_a_failing_write(
    store: Path, long_run: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = _export.read_chain

    def failing(*args: Any, **kwargs: Any) -> Any:
        summary, records, listed = real(*args, **kwargs)

        def broken() -> Iterator[Any]:
            yield next(records)
            raise OSError(errno.EIO, "Input/output error", "journal.jsonl")

        return summary, broken(), listed

    monkeypatch.setattr(_export, "read_chain", failing)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(OSError, match="Input/output error") as raised:
        export_run(store, long_run, "json", out / "run.json")
    assert not isinstance(raised.value, WfctlError)
    assert os.listdir(out) == []
    monkeypatch.setattr(_export, "read_chain", real)
    with pytest.raises(WfctlError, match=r"cannot write .*No such file or directory"):
        export_run(store, long_run, "json", out / "no" / "run.json")


def test_text_no_encoder_writes_is_escaped_or_refused_with_one_line(
    store: Path, values_run: str
) -> None:
    lone = f"{values_run}.12"  # the step that returned a lone surrogate
    for args in (["show", lone], ["show", lone, "--json"]):
        done = wfctl(*args, "--store", store)
        assert done.code == 0, (args, done.stderr)
        assert "\\ud800 lone" in done.stdout
    deep = wfctl("export", values_run, "--format", "toml", "--store", store)
    assert deep.code == 2 and "nested deeper than wfctl can write as TOML" in deep.error_line()
    lone_only = run_id_of(invoke("run", VALUES, "--input", "12", "--store", store, "--json"))
    done = wfctl("export", lone_only, "--format", "toml", "--store", store)
    assert done.code == 2
    assert "holds text TOML cannot hold ('\\ud800', a lone surrogate)" in done.error_line()
    # 2**70: a TOML reader must refuse an integer it cannot hold, and need hold only 64 bits.
    wide = run_id_of(invoke("run", VALUES, "--input", "9", "--store", store, "--json"))
    for args in (["export", wide, "--format", "toml"], ["show", f"{wide}.9", "--toml"]):
        done = wfctl(*args, "--store", store)
        assert done.code == 2, (args, done.stdout)
        assert "holds an integer TOML cannot hold (71 bits, beyond 64)" in done.error_line()
    assert wfctl("show", f"{wide}.8", "--toml", "--store", store).code == 0  # nan: tagged


def test_a_file_it_may_not_write_is_refused_and_one_it_cannot_replace_written_in_place(
    store: Path, long_run: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = out / "run.json"
    target.write_text("old", encoding="utf-8")
    replaced = target.stat().st_ino
    export_run(store, long_run, "json", target)
    assert target.stat().st_ino != replaced  # a new file, renamed over the old one
    real = os.access
    denied: set[str] = set()
    monkeypatch.setattr(os, "access", lambda path, mode: path not in denied and real(path, mode))

    denied.add(str(target))  # read-only: refused, as writing it would be
    target.write_text("old", encoding="utf-8")
    with pytest.raises(WfctlError, match=r"cannot write .*: Permission denied"):
        export_run(store, long_run, "json", target)
    assert target.read_text(encoding="utf-8") == "old"

    denied.clear()
    denied.add(str(out))  # no new file can be made beside it: written in place
    kept = target.stat().st_ino
    export_run(store, long_run, "json", target)
    assert target.stat().st_ino == kept
    assert json.loads(target.read_text(encoding="utf-8"))["checkpoint_count"] == STEPS + 2
    assert os.listdir(out) == ["run.json"]


def test_a_file_inside_the_store_is_refused_and_the_store_left_as_it_was(
    store: Path, long_run: str, tmp_path: Path
) -> None:
    # Written to its own journal, an export replaced the run's records with the document:
    # every command then called the run corrupt. Nothing inside the store is wfctl's to write
    # at a user's word: not a run's files, not a new file, not through a link.
    journal = store / "runs" / long_run / "journal.jsonl"
    before = {path: path.read_bytes() for path in store.rglob("*") if path.is_file()}
    link = tmp_path / "innocent.json"
    link.symlink_to(journal)
    for output in (journal, store / "runs" / long_run / "export.json", store / "new.json", link):
        for json_flag in ((), ("--json",)):
            done = wfctl("export", long_run, "--output", output, "--store", store, *json_flag)
            assert done.code == 2 and done.stdout == "", (output, done)
            assert done.error_line().startswith(f"wfctl: error: cannot write {str(output)!r}")
            assert "inside the store" in done.error_line()
    after = {path: path.read_bytes() for path in store.rglob("*") if path.is_file()}
    assert after == before
    assert wfctl("verify-lineage", long_run, "--store", store).code == 0
