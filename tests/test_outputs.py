"""Nothing lost (issue 32, docs/security.md §5): one file per train, one run per folder, a
crashed run's leftovers replaced, a manifest last, spreadsheet-safe CSV text."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from tdbtools._fs import OutputExistsError
from tdbtools._outputs import (
    LOCK_NAME,
    MANIFEST_NAME,
    claim_output_folder,
    spreadsheet_text,
    unique_stems,
)


def test_unique_stems_keep_plain_names_and_split_collisions():
    assert unique_stems(["passenger", "freight 1"]) == {"passenger": "passenger", "freight 1": "freight_1"}
    s = unique_stems(["a/b", "a:b", "A_B", "x", "x_cars"])
    assert s["x"].startswith("x-") and s["x_cars"].startswith("x_cars-")  # "x" + "_cars" clashes
    files = [s[n] + sfx for n in s for sfx in ("", "_cars", "_speed")]
    assert len({f.casefold() for f in files}) == len(files)
    assert all(s[n].startswith(("a_b-", "A_B-")) for n in ("a/b", "a:b", "A_B"))
    # Deterministic: the same names give the same stems in any order.
    assert unique_stems(["a:b", "a/b"]) == {k: v for k, v in unique_stems(["a/b", "a:b"]).items()}


def test_x_and_x_cars_do_not_share_a_file():
    s = unique_stems(["x", "x_cars"])
    names = {s["x"] + ".csv", s["x"] + "_cars.csv", s["x_cars"] + ".csv", s["x_cars"] + "_cars.csv"}
    assert len(names) == 4


@pytest.mark.parametrize("cell", ["=1+1", "+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "＝1"])
def test_formula_cells_are_made_inert(cell):
    out = spreadsheet_text(cell)
    assert out == "'" + cell
    row = next(csv.reader(io.StringIO(_line([out]), newline="")))
    assert row[0].startswith("'")


def test_plain_text_is_unchanged():
    for cell in ("Station", "", "5", "a=b", "'quoted"):
        assert spreadsheet_text(cell) == cell


def _line(cells):
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(cells)
    return buf.getvalue()


def test_second_run_into_a_folder_in_use_is_refused(tmp_path):
    out = tmp_path / "o"
    run = claim_output_folder(out, overwrite=False)
    assert (out / LOCK_NAME).is_file()
    with pytest.raises(OutputExistsError, match="in use"):
        claim_output_folder(out, overwrite=True)  # even with --overwrite
    (out / "a.csv").write_text("x\n")
    m = run.finish([out / "a.csv"])
    assert m.name == MANIFEST_NAME and not (out / LOCK_NAME).exists()
    man = json.loads(m.read_text())
    assert man["complete"] and [f["file"] for f in man["files"]] == ["a.csv"]
    assert man["files"][0]["bytes"] == 2
    # A complete folder is refused without --overwrite, taken with it.
    with pytest.raises(OutputExistsError, match="not empty"):
        claim_output_folder(out, overwrite=False)
    claim_output_folder(out, overwrite=True).release()


def test_a_crashed_runs_leftovers_are_recognised_and_replaced(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "older.csv").write_text("before the run\n")
    old = os.stat(out / "older.csv")
    os.utime(out / "older.csv", (old.st_atime - 3600, old.st_mtime - 3600))
    # A run that dies after writing a trace and a temporary file (a process that is gone).
    code = (
        "import os, sys; from pathlib import Path; from tdbtools._outputs import claim_output_folder\n"
        "out = Path(sys.argv[1]); claim_output_folder(out, overwrite=True)\n"
        "(out / 't.csv').write_text('half'); (out / '.t.csv.abc.tmp').write_text('x')\n"
        "os._exit(9)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(out)], env={**os.environ}, check=False)
    assert r.returncode == 9 and (out / LOCK_NAME).exists()
    run = claim_output_folder(out, overwrite=True)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([LOCK_NAME, "older.csv"])  # the dead run's files went, the older stayed
    run.release()


def test_a_crashed_run_alone_does_not_block_a_new_run_without_overwrite(tmp_path):
    out = tmp_path / "o"
    code = (
        "import os, sys; from pathlib import Path; from tdbtools._outputs import claim_output_folder\n"
        "out = Path(sys.argv[1]); claim_output_folder(out, overwrite=False)\n"
        "(out / '.t.csv.abc.tmp').write_text('x')\n"
        "os._exit(9)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(out)], env={**os.environ}, check=False)
    claim_output_folder(out, overwrite=False).release()


def test_trains_whose_names_map_to_one_file_get_a_trace_each(tmp_path):
    import numpy as np

    from tdbtools.physics.replay import ReplayResult

    cols = {"time": np.array([0.0, 1.0]), "distance": np.array([0.0, 2.0])}
    traces = {"IC 1": cols, "IC/1": {**cols, "distance": np.array([0.0, 3.0])}, "ic_1": cols}
    summary = {"trains": {n: {} for n in traces}}
    files = ReplayResult("s", traces, {}, (), summary, 0.0).write(tmp_path)
    csvs = sorted(p.name for p in tmp_path.glob("*.csv"))
    assert len(csvs) == 3 and len(files) == 5
    listed = json.loads((tmp_path / "summary.json").read_text())["files"]
    assert sorted(v["trace"] for v in listed.values()) == csvs
    assert (tmp_path / listed["IC/1"]["trace"]).read_text().splitlines()[-1] == "1,3"
