"""The dbt-duckdb plugin, with a real ``dbt build`` (dbt-core and dbt-duckdb, threads > 1, offline).

Expected values: the Hivemall guide's table (the Apache Hivemall user guide, "Evaluation of ranking
problems"), for the guide's dummy_rec and dummy_truth tables: for every user rec = [1, 3, 2, 6],
truth = [1, 2, 4], giving NDCG 0.7039180890341349 (top-4) / 0.6131471927654585 (top-2) and MAP
0.5555555555555555 (top-4).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

pytest.importorskip("dbt.adapters.duckdb", reason="needs duckrank[dbt]")

from duckrank.dbt import Plugin  # noqa: E402

GUIDE_NDCG_4 = 0.7039180890341349
GUIDE_NDCG_2 = 0.6131471927654585
GUIDE_MAP_4 = 0.5555555555555555

DUMMY_REC = [(1, 10.0), (3, 8.0), (2, 6.0), (6, 2.0)]
DUMMY_TRUTH = [1, 2, 4]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def _project(root: Path, database: Path, native: bool) -> None:
    rec = "userid,itemid,score\n" + "".join(
        f"{u},{i},{s}\n" for u in (1, 2, 3) for i, s in DUMMY_REC
    )
    truth = "userid,itemid\n" + "".join(f"{u},{i}\n" for u in (1, 2, 3) for i in DUMMY_TRUTH)
    # The SQL step is asked for the way a deployment does it, through env_var(), which gives the
    # plugin the string "false" (issue 13: bool("false") was True).
    plugin_config = "" if native else """config: {native: "{{ env_var('DUCKRANK_NATIVE') }}"}"""
    _write(root, {
        "dbt_project.yml": """
            name: duckrank_eval
            version: "1.0"
            config-version: 2
            profile: duckrank_eval
            flags:
              send_anonymous_usage_stats: false
              use_colors: false
            models:
              duckrank_eval:
                +materialized: table
            """,
        "profiles.yml": f"""
            duckrank_eval:
              target: dev
              outputs:
                dev:
                  type: duckdb
                  path: "{database}"
                  threads: 4
                  plugins:
                    - module: duckrank.dbt
                      {plugin_config}
            """,
        "seeds/dummy_rec.csv": rec,
        "seeds/dummy_truth.csv": truth,
        # Two independent models and one on top of them, so that threads run side by side.
        "models/ranked.sql": """
            select userid, to_ordered_list(itemid, score, '-reverse') as rec
            from {{ ref('dummy_rec') }}
            group by userid
            """,
        "models/judged.sql": """
            select userid, list(itemid) as truth
            from {{ ref('dummy_truth') }}
            group by userid
            """,
        "models/user_metrics.sql": """
            select userid,
                   ndcg(rec, truth, 4) as ndcg_at_4,
                   ndcg(rec, truth, 2) as ndcg_at_2,
                   average_precision(rec, truth, 4) as map_at_4
            from {{ ref('ranked') }} join {{ ref('judged') }} using (userid)
            """,
        # 1 when the model's connection matches through the native step (its TEMP helper
        # duckrank_native_match, which the metric macros call, calls duckrank_match), else 0.
        "models/matching_step.sql": """
            select count(*) as native from duckdb_functions()
            where function_name = 'duckrank_native_match' and database_name = 'temp'
              and macro_definition like '%duckrank_match%'
            """,
        "models/schema.yml": """
            version: 2
            models:
              - name: user_metrics
                columns:
                  - name: ndcg_at_2
                    data_tests: [not_null]
            """,
        # A singular data test: it fails when it returns rows.
        "tests/guide_values.sql": f"""
            select * from {{{{ ref('user_metrics') }}}}
            where abs(ndcg_at_4 - {GUIDE_NDCG_4}) > 1e-12
               or abs(ndcg_at_2 - {GUIDE_NDCG_2}) > 1e-12
               or abs(map_at_4 - {GUIDE_MAP_4}) > 1e-12
            """,
    })


@pytest.mark.parametrize("native", [False, True], ids=["sql step", "native step"])
def test_dbt_build_with_the_plugin(tmp_path: Path, native: bool) -> None:
    """By default the plugin opens the database so that the native matching step loads; with
    ``native: "false"`` (a string, from env_var) it uses the SQL step (README, "Speed"). The
    numbers are the guide's either way."""
    project = tmp_path / "project"
    database = tmp_path / "eval.duckdb"
    _project(project, database, native)
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_NO_VERSION_CHECK": "1",
           "DUCKRANK_NATIVE": "false"}
    result = subprocess.run(
        [sys.executable, "-m", "dbt.cli.main", "build", "--project-dir", str(project),
         "--profiles-dir", str(project), "--threads", "4"],
        cwd=project, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # 2 seeds, 4 models, 2 data tests.
    assert "PASS=8" in result.stdout, result.stdout

    with duckdb.connect(str(database), read_only=True) as con:
        rows = con.execute(
            "SELECT userid, ndcg_at_4, ndcg_at_2, map_at_4 FROM user_metrics ORDER BY userid"
        ).fetchall()
        assert [r[0] for r in rows] == [1, 2, 3]
        assert con.execute("SELECT native FROM matching_step").fetchall() == [(int(native),)]
        for _, ndcg_4, ndcg_2, map_4 in rows:
            assert ndcg_4 == pytest.approx(GUIDE_NDCG_4, abs=1e-12)
            assert ndcg_2 == pytest.approx(GUIDE_NDCG_2, abs=1e-12)
            assert map_4 == pytest.approx(GUIDE_MAP_4, abs=1e-12)
        # The pure-SQL macros the plugin registered are stored in the file and work without
        # duckrank or Python.
        assert con.execute("SELECT ndcg([1, 3, 2, 6], [1, 2, 4], 2)").fetchall()[0][0] == (
            pytest.approx(GUIDE_NDCG_2, abs=1e-12)
        )


def test_plugin_hooks_are_idempotent() -> None:
    plugin = Plugin(name="duckrank", plugin_config={})
    con = duckdb.connect()
    plugin.configure_connection(con)
    plugin.configure_connection(con)
    cursor = con.cursor()
    plugin.configure_cursor(cursor)
    plugin.configure_cursor(cursor)
    assert cursor.execute("SELECT mrr([3, 1], [1])").fetchall() == [(0.5,)]


@pytest.mark.parametrize(("value", "expected"), [
    (True, True), (False, False), (1, True), (0, False),
    ("true", True), ("false", False), ("TRUE", True), ("False", False), ("yes", True),
    ("No", False), ("1", True), ("0", False), (" false ", False),
])
def test_native_option_is_read_as_dbt_reads_booleans(value: object, expected: bool) -> None:
    """YAML booleans and numbers, and the strings env_var() gives (dbt's own boolean words)."""
    assert Plugin(name="duckrank", plugin_config={"native": value}).native is expected


def test_native_option_defaults_to_true() -> None:
    assert Plugin(name="duckrank", plugin_config={}).native is True


@pytest.mark.parametrize("value", ["flase", "", "off?", 2, 0.5, None, [False]])
def test_an_unknown_native_value_is_an_error_naming_it(value: object) -> None:
    with pytest.raises(ValueError, match=r"duckrank\.dbt plugin: config option 'native' must "
                       r"be true or false .*; got " + re.escape(repr(value))):
        Plugin(name="duckrank", plugin_config={"native": value})
