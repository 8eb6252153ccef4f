"""The off-policy aggregates from sql/duckrank.sql in the real DuckDB shell (no Python in its
process; PyPI's duckdb-cli of the test extra, the oldest supported DuckDB line): GROUP BY
works and the values are the hand calculations of test_single_action.py."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sysconfig

import pyarrow.csv as pacsv
import pytest

from duckrank.render.macros import SQL_FILE

from .conftest import HAND

SHELL = shutil.which("duckdb", path=sysconfig.get_path("scripts"))


@pytest.mark.skipif(SHELL is None, reason="no DuckDB shell (pip install duckdb-cli)")
def test_the_file_in_the_shell(tmp_path) -> None:
    log = tmp_path / "hand.csv"
    pacsv.write_csv(HAND, log)
    script = (
        f".read '{SQL_FILE}'\n.mode csv\n"
        f"CREATE TABLE hand AS SELECT * FROM read_csv('{log}');\n"
        "SELECT segment, ips(reward, pscore, action_prob) AS ips, "
        "snips(reward, pscore, action_prob) AS snips, "
        "dr(reward, pscore, action_prob, q_hat, v_hat, lambda_ := 1) AS dr, "
        "dr_os(reward, pscore, action_prob, q_hat, v_hat) AS dr_os, "
        "ope_ess(pscore, action_prob) AS ess, "
        "slate_independent_ips(segment, reward, pscore, action_prob) AS sips "
        "FROM hand GROUP BY ALL ORDER BY segment;\n"
        "SELECT ips(reward, 0, action_prob) FROM hand;\n"
    )
    done = subprocess.run([SHELL, "-batch"], input=script, capture_output=True, text=True,
                          timeout=120)
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    # By hand (conftest.HAND): segment a has w = 0.5, 2 and r = 1, 0; segment b w = 1, 0 and
    # r = 1, 0. ips a = 0.5 / 2, snips a = 0.5 / 2.5; dr (lambda_ 1: w' = 0.5, 1 | 1, 0)
    # a = (0.5 + 0.5 * 0.4 + 0.3 + 1 * -0.2) / 2, b = (0.7 + 1 * 0.1 + 0.4 + 0) / 2;
    # dr_os (lambda_ 0) is dm: a = (0.5 + 0.3) / 2, b = (0.7 + 0.4) / 2;
    # ess a = 2.5^2 / 4.25, b = 1; slate_independent_ips with one slate per segment is the
    # sum over its rows of r w: a 0.5, b 1.
    assert [r["segment"] for r in rows] == ["a", "b"]
    expected = {"ips": (0.25, 0.5), "snips": (0.2, 1.0), "dr": (0.4, 0.6),
                "dr_os": (0.4, 0.55), "ess": (6.25 / 4.25, 1.0), "sips": (0.5, 1.0)}
    for column, values in expected.items():
        assert [float(r[column]) for r in rows] == pytest.approx(values, rel=1e-12), column
    assert "ips: pscore must be in (0, 1], got 0" in done.stderr
