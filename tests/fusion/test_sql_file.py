"""The fusion macros of sql/duckrank.sql in the real DuckDB shell (no Python in its process): the
shell the test extra installs (the oldest supported DuckDB line, 1.4) reads the file and fuses a
stored table with each kind of method (scores, positions, Borda with its added candidates,
pairwise Condorcet, a supervised method with a MAP of lists, weights), and its rows equal those of
the same query through ``duckrank.connect()`` (whose numbers test_methods_vs_ranx.py checks
against ranx)."""

from __future__ import annotations

import csv
import io
import math
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pyarrow.csv as pa_csv
import pytest

from duckrank.render.macros import SQL_FILE

from .conftest import random_runs

CALLS = [
    "fuse_sum('runs')",
    "fuse_rrf('runs', k := 10, norm := 'rank')",
    "fuse_mnz('runs', norm := 'borda')",
    "fuse_bordafuse('runs', norm := 'none')",
    "fuse_condorcet('runs', norm := 'zmuv')",
    "fuse_wsum('runs', MAP {'s0': 0.25, 's1': 0.5, 's2': 0.25}, norm := 'min-max-inverted')",
    "fuse_bayesfuse('runs', MAP {'s0': [0.5, -1.0], 's1': [0.25], 's2': []::DOUBLE[]})",
]


def _shell() -> str | None:
    return shutil.which("duckdb", path=sysconfig.get_path("scripts"))


def test_the_file_fuses_in_the_duckdb_shell(tmp_path: Path, fusion_con) -> None:
    shell = _shell()
    if shell is None:
        pytest.skip("no duckdb shell next to this Python (the test extra installs duckdb-cli)")
    table = random_runs(5, 3)
    pa_csv.write_csv(table, tmp_path / "runs.csv")
    queries = [f"SELECT '{i}' AS call, query, item, score, rank FROM {call}"
               for i, call in enumerate(CALLS)]
    script = (f".read {SQL_FILE}\n"
              "CREATE TABLE runs AS SELECT * FROM read_csv('runs.csv');\n"
              ".mode csv\n" + "\nUNION ALL\n".join(queries) + "\nORDER BY call, query, rank;\n")
    result = subprocess.run([shell, "-batch"], input=script, capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0 and not result.stderr, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    fusion_con.register("runs", table)
    expected = fusion_con.execute(
        "\nUNION ALL\n".join(queries) + "\nORDER BY call, query, rank").fetchall()
    assert len(rows) == len(expected) > 0
    for row, (call, query, item, score, rank) in zip(rows, expected, strict=True):
        assert (row["call"], row["query"], row["item"], int(row["rank"])) == (
            call, query, item, rank)
        assert math.isclose(float(row["score"]), score, rel_tol=1e-12, abs_tol=1e-12)
    assert {r["call"] for r in rows} == {str(i) for i in range(len(CALLS))}
