"""The plain-SQL paired t-test (``duckrank.render.stats_sql``: DuckDB without Python).

Expected values: ``scipy.stats.ttest_rel`` and ``2 * scipy.stats.t.sf(|t|, df)`` to 1e-9; the
same macros in the DuckDB 1.4 shell (the oldest supported line, installed by the test extra as
PyPI's duckdb-cli) against the same scipy values."""

from __future__ import annotations

import math
import shutil
import subprocess
import sysconfig

import duckdb
import numpy as np
import pytest

from duckrank.render.stats_sql import MACROS

stats = pytest.importorskip("scipy.stats")

GRID = [(df, t) for df in (1, 2, 3, 5, 10, 30, 99, 1000, 10**4, 10**5, 10**6, 10**7)
        for t in (1e-6, 0.01, 0.3, 1.0, 1.99, 2.01, 3.0, 5.0, 10.0, 40.0)]


@pytest.fixture(scope="module")
def plain() -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the plain-SQL macros only (no duckrank registration)."""
    con = duckdb.connect()
    for statement in MACROS:
        con.execute(statement)
    yield con
    con.close()


def _close(ours: float | None, expected: float) -> bool:
    return ours is not None and math.isclose(ours, expected, rel_tol=1e-9, abs_tol=1e-300)


def test_student_t_p_values_equal_scipy(plain) -> None:
    values = ", ".join(f"({t!r}::DOUBLE, {df}::DOUBLE)" for df, t in GRID)
    got = plain.execute(f"SELECT duckrank_t_two_sided(t, df) FROM (VALUES {values}) v(t, df)"
                        ).fetchall()
    for (df, t), (ours,) in zip(GRID, got, strict=True):
        assert _close(ours, 2 * stats.t.sf(t, df)), (df, t, ours)


def test_paired_ttest_equals_scipy(plain) -> None:
    rng = np.random.default_rng(8)
    cases = [(n, rng.random(n), shift) for n in (2, 3, 10, 200, 5000)
             for shift in (0.0, 0.01, 0.2)]
    for n, x, shift in cases:
        y = np.clip(x - shift + rng.normal(0, 0.1, n), 0, 1)
        plain.register("pairs", {"x": x, "y": y})
        ours = plain.execute("SELECT paired_ttest(x, y) FROM pairs").fetchall()[0][0]
        plain.unregister("pairs")
        expected = stats.ttest_rel(x, y)
        assert ours["n"] == n and _close(ours["mean_diff"], float(np.mean(x - y)))
        assert _close(ours["statistic"], expected.statistic)
        assert _close(ours["p_value"], expected.pvalue)


def test_groups_nulls_and_undefined_cases(plain) -> None:
    rows = plain.execute("""
        SELECT g, paired_ttest(x, y) FROM (VALUES
            (1, 0.5, 0.2), (1, 0.9, 0.1), (1, NULL, 0.3), (1, 0.4, 0.35),
            (2, 0.5, 0.5), (2, 0.25, 0.25),
            (3, 0.75, 0.5), (3, 0.5, 0.25),
            (4, 0.5, 0.1),
            (5, 'nan'::DOUBLE, 0.1), (5, 0.5, 0.2), (5, 0.4, 0.3),
            (6, 'inf'::DOUBLE, 0.1), (6, 0.5, 0.2), (6, 0.4, 0.1)) t(g, x, y)
        GROUP BY g ORDER BY g""").fetchall()
    by_group = {g: row for g, row in rows}
    expected = stats.ttest_rel([0.5, 0.9, 0.4], [0.2, 0.1, 0.35])
    assert by_group[1]["n"] == 3 and _close(by_group[1]["p_value"], expected.pvalue)
    assert _close(by_group[1]["mean_y"], (0.2 + 0.1 + 0.35) / 3)  # the NULL x's pair left out
    for g in (2, 3, 4, 5, 6):  # all 0; all 0.25 (no variance); one pair; NaN; inf: no t, no p
        assert by_group[g]["statistic"] is None and by_group[g]["p_value"] is None, g
    assert by_group[3]["mean_diff"] == 0.25 and by_group[4]["n"] == 1
    assert by_group[6]["mean_diff"] == float("inf")


def test_in_the_oldest_supported_shell() -> None:
    shell = shutil.which("duckdb", path=sysconfig.get_path("scripts"))
    if shell is None:
        pytest.skip("no DuckDB shell (the test extra installs duckdb-cli)")
    cases = [(20, 2.5), (10**6, 1.2), (3, 0.3), (1000, 40.0)]
    query = "SELECT " + ", ".join(f"duckrank_t_two_sided({t!r}, {df})" for df, t in cases)
    script = ";\n".join([*MACROS, query]) + ";\n"
    output = subprocess.run([shell, "-csv", "-noheader"], input=script, capture_output=True,
                            text=True, timeout=120, check=True).stdout
    values = [float(v) for v in output.strip().splitlines()[-1].split(",")]
    for (df, t), ours in zip(cases, values, strict=True):
        assert _close(ours, 2 * stats.t.sf(t, df)), (df, t, ours)
