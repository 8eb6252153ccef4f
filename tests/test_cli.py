"""The ``duckrank`` command line. Expected values: the Hivemall guide's table (shared/seeds/001)
for its dummy_rec / dummy_truth tables (every user: rec = [1, 3, 2, 6], truth = [1, 2, 4]), and
hand calculations written out in the tests."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from duckrank.cli import main
from duckrank.metrics import METRICS

NDCG_2 = 0.6131471927654585  # the guide's NDCG at top-2
MAP_4 = 0.5555555555555555  # the guide's MAP at top-4 (max_k)

REC_ROWS = [(u, i, s) for u in (1, 2, 3) for i, s in ((1, 10.0), (3, 8.0), (2, 6.0), (6, 2.0))]
TRUTH_ROWS = [(u, i) for u in (1, 2, 3) for i in (1, 2, 4)]


def _csv(path: Path, header: list[str], rows: list[tuple]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def guide_files(tmp_path: Path) -> tuple[Path, Path]:
    return (_csv(tmp_path / "rec.csv", ["user", "item", "score"], REC_ROWS),
            _csv(tmp_path / "truth.csv", ["user", "item"], TRUTH_ROWS))


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_evaluate_csv_files_as_csv(capsys, guide_files) -> None:
    run, qrels = guide_files
    code, out, _ = _run(capsys, "evaluate", str(run), str(qrels), "-m", "ndcg@2", "-m", "map@4",
                        "--format", "csv")
    assert code == 0
    [row] = _csv_rows(out)
    assert (row["scored"], row["unjudged"], row["unranked"], row["dropped"]) == ("3", "0", "0", "0")
    assert float(row["ndcg@2"]) == pytest.approx(NDCG_2, abs=1e-12)
    assert float(row["map@4"]) == pytest.approx(MAP_4, abs=1e-12)


def test_evaluate_parquet_per_user_json(capsys, tmp_path: Path) -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE rec(user_id INTEGER, item INTEGER, score DOUBLE)")
    con.executemany("INSERT INTO rec VALUES (?, ?, ?)", REC_ROWS)
    con.execute("CREATE TABLE truth(user_id INTEGER, item INTEGER, grade INTEGER)")
    con.executemany("INSERT INTO truth VALUES (?, ?, 1)", TRUTH_ROWS)
    run, qrels = tmp_path / "rec.parquet", tmp_path / "truth.parquet"
    con.sql("SELECT * FROM rec").write_parquet(str(run))
    con.sql("SELECT * FROM truth").write_parquet(str(qrels))
    code, out, _ = _run(capsys, "evaluate", str(run), str(qrels), "-m", "ndcg@2", "--per-user",
                        "--user-column", "user_id", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert [r["user_id"] for r in rows] == [1, 2, 3]
    assert [r["ndcg@2"] for r in rows] == pytest.approx([NDCG_2] * 3, abs=1e-12)


def test_evaluate_trec_files_by_tag_as_table(capsys, tmp_path: Path) -> None:
    """System a ranks the relevant d1 first (mrr 1), system b second (mrr 1/2); query q2 has no
    judgments (unjudged)."""
    run = tmp_path / "runs.txt"
    run.write_text("q1 Q0 d1 1 9 a\nq1 Q0 d2 2 8 a\nq1 Q0 d2 1 9 b\nq1 Q0 d1 2 8 b\n"
                   "q2 Q0 d5 1 1 a\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\n")
    code, out, _ = _run(capsys, "evaluate", str(run), str(qrels), "-m", "mrr", "--by", "tag")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["tag", "scored", "unjudged", "unranked", "dropped", "mrr"]
    assert lines[2].split() == ["a", "1", "1", "0", "0", "1.0"]
    assert lines[3].split() == ["b", "1", "0", "0", "0", "0.5"]


def test_table_digits(capsys, guide_files) -> None:
    run, qrels = guide_files
    _, out, _ = _run(capsys, "evaluate", str(run), str(qrels), "-m", "ndcg@2", "--digits", "4")
    assert out.splitlines()[2].split()[-1] == "0.6131"


def test_unknown_metric_lists_the_known_ones(capsys, guide_files) -> None:
    run, qrels = guide_files
    code, out, err = _run(capsys, "evaluate", str(run), str(qrels), "-m", "ndgc@10")
    assert code == 1 and out == ""
    assert "unknown metric 'ndgc'; known metrics:" in err
    for metric in METRICS:
        if metric.name in ("ndcg", "mrr", "average_precision"):
            assert metric.name in err


def test_paths_and_column_names_are_data_not_sql(capsys, tmp_path: Path) -> None:
    """A path and column names with quotes and semicolons reach DuckDB as parameters and quoted
    identifiers: the evaluation works and nothing else runs."""
    folder = tmp_path / "it's; DROP TABLE x; --\"q"
    folder.mkdir()
    user = 'u"; DROP TABLE x; --'
    item = "it'em; SELECT 1"
    score = 's") FROM y; --'
    run = _csv(folder / "r'un;.csv", [user, item, score], REC_ROWS)
    qrels = _csv(folder / 'q"rels;.csv', [user, item], TRUTH_ROWS)
    code, out, err = _run(
        capsys, "evaluate", str(run), str(qrels), "-m", "ndcg@2", "--format", "json",
        "--query-column", user, "--item-column", item, "--score-column", score, "--per-user",
    )
    assert code == 0, err
    rows = json.loads(out)
    assert [r[user] for r in rows] == ["1", "2", "3"]  # CSV ids are read as text
    assert [r["ndcg@2"] for r in rows] == pytest.approx([NDCG_2] * 3, abs=1e-12)


def test_missing_file_is_a_clear_error(capsys, tmp_path: Path) -> None:
    code, _, err = _run(capsys, "evaluate", str(tmp_path / "none.csv"), str(tmp_path / "x.csv"),
                        "-m", "ndcg")
    assert code == 1
    assert "none.csv" in err


def test_sql_command(capsys) -> None:
    code, out, _ = _run(capsys, "sql", "SELECT ndcg([1, 3, 2, 6], [1, 2, 4], 2) AS v",
                        "--format", "csv")
    assert code == 0
    assert float(_csv_rows(out)[0]["v"]) == pytest.approx(NDCG_2, abs=1e-12)


def test_sql_command_on_a_database_file(capsys, tmp_path: Path) -> None:
    database = str(tmp_path / "x.duckdb")
    assert _run(capsys, "sql", "CREATE TABLE t AS SELECT 1 AS i", "--database", database)[0] == 0
    code, out, _ = _run(capsys, "sql", "SELECT mrr([2, 1], [i]) AS v FROM t", "--database",
                        database, "--format", "json")
    assert code == 0
    assert json.loads(out) == [{"v": 0.5}]


def test_demo_through_the_console_script() -> None:
    """The README's quick start runs `duckrank demo`; its first table is the guide's example."""
    script = Path(sys.executable).parent / "duckrank"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "duckrank.cli"]
    result = subprocess.run([*command, "demo"], capture_output=True, text=True, timeout=120,
                            check=True)
    lines = result.stdout.splitlines()
    header = lines[2].split()
    values = dict(zip(header, lines[4].split(), strict=True))
    assert float(values["ndcg@2"]) == pytest.approx(NDCG_2, abs=1e-12)
    assert float(values["map@4"]) == pytest.approx(MAP_4, abs=1e-12)
    assert "--by tag" in result.stdout
    assert not math.isnan(float(lines[-4].split()[-1]))


# --- issue 13: errors a user can act on (17) ------------------------------------------------------

@pytest.mark.parametrize("extra", [[], ["--per-user"]])
def test_no_header_before_an_error(capsys, guide_files, extra: list[str]) -> None:
    """base applies to the jarvelin discount only: the SQL function raises while the rows are
    computed, which is before anything is written."""
    run, qrels = guide_files
    code, out, err = _run(capsys, "evaluate", str(run), str(qrels), "-m",
                          "ndcg(discount=log2,base=3)@2", "--format", "csv", *extra)
    assert (code, out) == (1, "")
    assert "base applies to discount := 'jarvelin' only" in err


def test_sql_command_no_header_before_an_error(capsys) -> None:
    code, out, err = _run(capsys, "sql", "SELECT error('boom') AS v FROM range(3)",
                          "--format", "csv")
    assert (code, out) == (1, "")
    assert "boom" in err


@pytest.mark.parametrize("digits", ["-3", "18", "two"])
def test_digits_out_of_range_is_a_clear_error(capsys, guide_files, digits: str) -> None:
    run, qrels = guide_files
    with pytest.raises(SystemExit) as raised:
        main(["evaluate", str(run), str(qrels), "-m", "ndcg", "--digits", digits])
    assert raised.value.code == 2
    assert (f"argument --digits: the decimals to show must be a whole number from 0 to 17, got "
            f"'{digits}'") in capsys.readouterr().err


def test_duplicate_metric_options_are_an_error(capsys, guide_files) -> None:
    run, qrels = guide_files
    code, out, err = _run(capsys, "evaluate", str(run), str(qrels), "-m",
                          "ndcg(gain=linear,gain=exponential)@2")
    assert (code, out) == (1, "")
    assert "option gain is given twice" in err


def test_err_max_grade_hint_in_command_line_syntax(capsys, tmp_path: Path) -> None:
    """Grades up to 5 with err's default max_grade 4: the hint is the -m to write (the SQL
    function's own message, max_grade := 5, is for SQL)."""
    run = _csv(tmp_path / "rec.csv", ["user", "item", "score"], REC_ROWS)
    qrels = _csv(tmp_path / "truth.csv", ["user", "item", "grade"],
                 [(u, i, g) for u, i in TRUTH_ROWS for g in [5 if i == 2 else 1]])
    code, out, err = _run(capsys, "evaluate", str(run), str(qrels), "-m", "err@4")
    assert (code, out) == (1, "")
    assert "the qrels have grade 5 (query " in err
    assert "above err's max_grade 4; raise it: -m 'err(max_grade=5)@4'" in err
    assert ":=" not in err and "metrics=" not in err


def test_errors_name_command_line_flags(capsys, tmp_path: Path) -> None:
    run = _csv(tmp_path / "rec.csv", ["uid", "item", "score"], REC_ROWS)
    qrels = _csv(tmp_path / "truth.csv", ["user", "item"], TRUTH_ROWS)
    code, _, err = _run(capsys, "evaluate", str(run), str(qrels), "-m", "ndcg")
    assert code == 1
    assert "--query-column" in err and "--run-columns query=NAME" in err
    assert "query_column=" not in err


# --- dropped rows (18), per-file columns and id casts (19), labels (20) ---------------------------

def test_dropped_rows_are_counted_and_reported(capsys, tmp_path: Path) -> None:
    """Two run rows without an item and one qrels row without a query are left out: dropped 3,
    and a warning on stderr says which file they came from."""
    run = _csv(tmp_path / "rec.csv", ["user", "item", "score"],
               [*REC_ROWS, (1, "", 1.0), (2, "", 1.0)])
    qrels = _csv(tmp_path / "truth.csv", ["user", "item"], [*TRUTH_ROWS, ("", 1)])
    code, out, err = _run(capsys, "evaluate", str(run), str(qrels), "-m", "ndcg@2",
                          "--format", "csv")
    assert code == 0
    [row] = _csv_rows(out)
    assert (row["scored"], row["dropped"]) == ("3", "3")
    assert float(row["ndcg@2"]) == pytest.approx(NDCG_2, abs=1e-12)
    assert ("duckrank evaluate: warning: left out 2 run rows with a NULL query, item or score "
            "and 1 qrels rows with a NULL query or item") in err


def test_parquet_run_against_csv_qrels_with_other_names_and_id_kinds(capsys,
                                                                     tmp_path: Path) -> None:
    """A Parquet run (BIGINT user_id, movie, pred) against CSV qrels (text user, item, rel):
    per-file column names and --ids varchar give the guide's numbers."""
    con = duckdb.connect()
    con.execute("CREATE TABLE rec(user_id BIGINT, movie BIGINT, pred DOUBLE)")
    con.executemany("INSERT INTO rec VALUES (?, ?, ?)", REC_ROWS)
    run = tmp_path / "rec.parquet"
    con.sql("SELECT * FROM rec").write_parquet(str(run))
    qrels = _csv(tmp_path / "truth.csv", ["user", "item", "rel"],
                 [(u, i, 1) for u, i in TRUTH_ROWS])
    argv = ["evaluate", str(run), str(qrels), "-m", "ndcg@2", "-m", "map@4", "--format", "csv",
            "--run-columns", "query=user_id,item=movie", "--run-columns", "score=pred",
            "--qrels-columns", "query=user,grade=rel"]
    code, _, err = _run(capsys, *argv)
    assert code == 1
    assert ("the query ids are BIGINT in the run ('user_id') but VARCHAR in the qrels ('user'): "
            "compare them as text with --ids varchar") in err
    code, out, err = _run(capsys, *argv, "--ids", "varchar")
    assert code == 0, err
    [row] = _csv_rows(out)
    assert float(row["ndcg@2"]) == pytest.approx(NDCG_2, abs=1e-12)
    assert float(row["map@4"]) == pytest.approx(MAP_4, abs=1e-12)


def test_rank_column_instead_of_score(capsys, tmp_path: Path) -> None:
    """The guide's rec as ranks 1..4 (1 = best) gives the guide's ndcg@2."""
    rows = [(u, i, r) for u in (1, 2, 3) for r, i in enumerate((1, 3, 2, 6), start=1)]
    run = _csv(tmp_path / "rec.csv", ["user", "item", "pos"], rows)
    qrels = _csv(tmp_path / "truth.csv", ["user", "item"], TRUTH_ROWS)
    code, out, err = _run(capsys, "evaluate", str(run), str(qrels), "-m", "ndcg@2",
                          "--rank-column", "pos", "--format", "csv")
    assert code == 0, err
    assert float(_csv_rows(out)[0]["ndcg@2"]) == pytest.approx(NDCG_2, abs=1e-12)
    with pytest.raises(SystemExit):
        main(["evaluate", str(run), str(qrels), "-m", "ndcg", "--rank-column", "pos",
              "--score-column", "s"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_graded_qrels_name_the_gain_in_the_header(capsys, tmp_path: Path) -> None:
    """Grades 0..2: ndcg@10 is the graded form, and its column says which gain."""
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 c 3 1 t\n")
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 a 0\nq1 0 b 2\nq1 0 c 1\n")
    code, out, err = _run(capsys, "evaluate", str(run), str(qrels), "-m", "ndcg@10", "-m",
                          "ndcg(relevance=binary)@10", "--format", "csv")
    assert code == 0, err
    assert out.splitlines()[0].split(",")[-2:] == ["ndcg(gain=exponential)@10",
                                                   "ndcg(relevance=binary)@10"]


def test_glob_flag_reads_every_matching_run(capsys, tmp_path: Path) -> None:
    """Users 1 and 2 in two run files; without --glob the pattern names one file, which does not
    exist. By hand: each user's only item is relevant at rank 1, so mrr = 1."""
    _csv(tmp_path / "run_a.csv", ["user", "item", "score"], [(1, 7, 1.0)])
    _csv(tmp_path / "run_b.csv", ["user", "item", "score"], [(2, 8, 1.0)])
    qrels = _csv(tmp_path / "qrels.csv", ["user", "item"], [(1, 7), (2, 8)])
    pattern = str(tmp_path / "run_*.csv")
    code, _, err = _run(capsys, "evaluate", pattern, str(qrels), "-m", "mrr")
    assert code == 1 and "does not exist" in err
    code, out, _ = _run(capsys, "evaluate", pattern, str(qrels), "-m", "mrr", "--glob",
                        "--format", "csv")
    assert code == 0
    [row] = _csv_rows(out)
    assert (row["scored"], float(row["mrr"])) == ("2", 1.0)


def test_doctor_and_version_say_which_matching_step_is_active(capsys, tmp_path: Path,
                                                              monkeypatch) -> None:
    """The build has the native step (test_native.py checks it), so both say active; a cache
    folder other users can write is refused (test_native_loading.py), and both say why."""
    code, out, _ = _run(capsys, "doctor")
    assert code == 0
    assert f"duckdb {duckdb.__version__}" in out
    assert "native matching step: active, loaded from " in out
    with pytest.raises(SystemExit):
        main(["--version"])
    assert "native matching step: active)" in capsys.readouterr().out
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared))
    code, out, _ = _run(capsys, "doctor")
    assert code == 0
    assert "native matching step: not active, using the SQL matching step" in out
    assert "can be written by other users" in out
    with pytest.raises(SystemExit):
        main(["--version"])
    assert "native matching step: off, see duckrank doctor)" in capsys.readouterr().out


def test_doctor_names_a_stale_native_library(capsys, monkeypatch) -> None:
    """The tree's library is built from its sources (test_native_loading.py checks the hash), so
    doctor says nothing of it; a library whose compiled-in hash differs (stale_reason's answer,
    given here) is named with the rebuild command."""
    code, out, _ = _run(capsys, "doctor")
    assert code == 0 and "stale" not in out
    from duckrank.matching import native

    reason = "built from sources abc, the tree's are def"
    monkeypatch.setattr(native, "stale_reason", lambda: reason)
    code, out, _ = _run(capsys, "doctor")
    assert code == 0
    assert out.splitlines()[-1] == ("native library: stale: built from sources abc, the tree's "
                                    "are def (rebuild: scripts/build-native)")


# --- long format, compare, plot -------------------------------------------------------------------

SAMPLE = Path(__file__).resolve().parents[1] / "duckrank" / "data"


def test_evaluate_long_format(capsys, guide_files) -> None:
    """One CSV row per (user, metric): every user of the guide's table has NDCG@2 and MAP@4 of
    the guide."""
    run, qrels = guide_files
    code, out, _ = _run(capsys, "evaluate", str(run), str(qrels), "-m", "ndcg@2", "-m", "map@4",
                        "--format", "long")
    assert code == 0
    rows = _csv_rows(out)
    assert [(r["user"], r["metric"]) for r in rows] == [
        (u, m) for u in ("1", "2", "3") for m in ("ndcg@2", "map@4")]
    expected = {"ndcg@2": NDCG_2, "map@4": MAP_4}
    assert all(float(r["value"]) == pytest.approx(expected[r["metric"]], abs=1e-12)
               for r in rows)


def test_compare_sample_run_by_tag(capsys) -> None:
    """The sample run's two systems (tags): bm25 ranks the judged queries 301-303, dense only 301
    and 302, so dense scores 0 on 303 (an empty list, as trec_eval -c), in evaluate and compare
    alike; 304 is not judged, in neither. Expected: evaluate's per-query values of the same
    files, and their means."""
    files = [str(SAMPLE / "sample.run"), str(SAMPLE / "sample.qrels")]
    code, out, _ = _run(capsys, "evaluate", *files, "-m", "mrr", "--by", "tag", "--format",
                        "long")
    assert code == 0
    scored = {(r["tag"], r["query"]): float(r["value"]) for r in _csv_rows(out)}
    assert scored[("dense", "303")] == 0.0
    assert {query for _, query in scored} == {"301", "302", "303"}
    code, out, _ = _run(capsys, "compare", *files, "-m", "mrr", "--by", "tag", "--format",
                        "long")
    assert code == 0
    values = {(r["system"], r["query"]): float(r["value"]) for r in _csv_rows(out)}
    assert values == scored

    code, out, _ = _run(capsys, "compare", *files, "-m", "mrr", "--by", "tag", "--format",
                        "json", "--test", "t")
    assert code == 0
    report = json.loads(out)
    assert report["systems"] == ["bm25", "dense"]
    for row in report["summary"]:
        mine = [v for (system, _), v in values.items() if system == row["system"]]
        assert row["mean"] == pytest.approx(sum(mine) / 3, abs=1e-15)
        assert row["filled"] == (1 if row["system"] == "dense" else 0)

    code, out, _ = _run(capsys, "compare", *files, "-m", "mrr", "--by", "tag")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["#", "system", "mrr"]
    assert lines[2].split()[:2] == ["a", "bm25"] and lines[3].split()[:2] == ["b", "dense"]
    mean = next(r["mean"] for r in report["summary"] if r["system"] == "bm25")
    assert lines[2].split()[2].startswith(f"{mean:.4f}")  # 4 decimals by default


@pytest.fixture
def system_files(tmp_path: Path) -> list[str]:
    """The sample run split into one TREC file per system: bm25.run, dense.run."""
    lines = (SAMPLE / "sample.run").read_text().splitlines()
    paths = []
    for tag in ("bm25", "dense"):
        path = tmp_path / f"{tag}.run"
        path.write_text("\n".join(line for line in lines if line.split()[-1] == tag) + "\n")
        paths.append(str(path))
    return paths


@pytest.mark.parametrize(("fmt", "marker"), [
    ("markdown", "| --- | --- | ---: |"), ("latex", r"\toprule"), ("csv", "system,letter,metric"),
])
def test_compare_run_files_named_by_stem(capsys, system_files, fmt, marker) -> None:
    code, out, _ = _run(capsys, "compare", *system_files, str(SAMPLE / "sample.qrels"), "-m",
                        "ndcg@10", "--baseline", "bm25", "--test", "wilcoxon", "--format", fmt)
    assert code == 0
    assert marker in out and "dense" in out


def test_compare_errors_name_flags_and_print_nothing(capsys, system_files) -> None:
    qrels = str(SAMPLE / "sample.qrels")
    code, out, err = _run(capsys, "compare", *system_files, qrels, "-m", "mrr", "--baseline",
                          "nope")
    assert (code, out) == (1, "")
    assert err == ("duckrank compare: --baseline nope is not one of the systems: bm25, dense\n")
    # The per-query values alone (--format long) check --baseline too.
    code, out, err = _run(capsys, "compare", *system_files, qrels, "-m", "mrr", "--baseline",
                          "nope", "--format", "long")
    assert (code, out) == (1, "")
    assert err == ("duckrank compare: --baseline nope is not one of the systems: bm25, dense\n")
    code, out, err = _run(capsys, "compare", *system_files, qrels, "-m", "mrr", "--by", "tag")
    assert (code, out) == (1, "")
    assert "--by tag reads the systems from one run's column" in err
    code, out, err = _run(capsys, "compare", *system_files, qrels, "-m", "mrr", "--trials", "9")
    assert (code, out) == (1, "")
    assert "--trials 9 is too few for 1 comparison per metric" in err


def test_plot_writes_the_picture(capsys, system_files, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    pytest.importorskip("duckrank.reports.plots")
    picture = tmp_path / "mrr.png"
    code, _, err = _run(capsys, "plot", *system_files, str(SAMPLE / "sample.qrels"), "-m",
                        "mrr", "--kind", "distribution", "-o", str(picture))
    assert code == 0, err
    assert picture.stat().st_size > 1000


def test_plot_errors_name_its_flags_before_scoring(capsys, system_files, tmp_path) -> None:
    """--output, --baseline and --plot-metric are checked and named as flags; the output's
    suffix before any file is read (the qrels path here does not exist)."""
    qrels = str(SAMPLE / "sample.qrels")
    code, out, err = _run(capsys, "plot", *system_files, str(tmp_path / "none.qrels"), "-m",
                          "mrr", "-o", "mrr.jpg")
    assert (code, out, err) == (1, "", "duckrank plot: --output mrr.jpg must end in .png, "
                                ".svg or .pdf (the format is taken from it)\n")
    code, _, err = _run(capsys, "plot", *system_files, qrels, "-m", "mrr", "--kind",
                        "difference", "--baseline", "nope", "-o", str(tmp_path / "x.png"))
    assert (code, err) == (1, "duckrank plot: --baseline nope is not one of the systems: bm25, "
                              "dense\n")
    code, _, err = _run(capsys, "plot", *system_files, qrels, "-m", "mrr", "-m", "map",
                        "--kind", "distribution", "-o", str(tmp_path / "x.png"))
    # dense has no list for the judged query 303: scoring warns first (the sample's data).
    assert (code, err.splitlines()) == (1, [
        "duckrank plot: warning: system 'dense': 1 judged query has no list in the run: it is "
        "scored as an empty list (0 where the metric is defined) and counted in the means and "
        "the tests, as trec_eval -c counts it",
        "duckrank plot: --kind distribution draws one metric: pass --plot-metric one of 'mrr', "
        "'map'"])
    assert not (tmp_path / "x.png").exists()


def test_plot_metric_as_requested(capsys, system_files, tmp_path) -> None:
    """The sample qrels are graded, so ndcg is labelled ndcg(gain=exponential)@k; --plot-metric
    ndcg (as the help says, and as -m names it) draws that family (the documented command)."""
    pytest.importorskip("matplotlib")
    picture = tmp_path / "curves.svg"
    code, _, err = _run(capsys, "plot", *system_files, str(SAMPLE / "sample.qrels"), "-m",
                        "ndcg@1..5", "-m", "map@1,5", "--plot-metric", "ndcg", "--kind",
                        "curves", "-o", str(picture))
    assert code == 0, err
    assert picture.read_bytes().startswith(b"<?xml") and picture.stat().st_size > 10_000


def test_beyond_command(capsys, tmp_path: Path) -> None:
    """`duckrank beyond`: two users, top 2 [10, 20] and [40, 10]; training rows 10: 4, 20: 1,
    40: 1. catalog_coverage@2 = 3 items of 10 = 0.3; arp@2 = mean of (4 + 1) / 2 and
    (1 + 4) / 2 = 2.5 (hand calculation). An unknown option is an error naming it."""
    (tmp_path / "run.csv").write_text("user,item,score\n1,10,3\n1,20,2\n1,30,1\n2,40,2\n2,10,1\n")
    (tmp_path / "train.csv").write_text("user,item\n1,10\n2,10\n3,10\n4,10\n1,20\n2,40\n")
    code, out, err = _run(capsys, "beyond", str(tmp_path / "run.csv"), "-m",
                          "catalog_coverage@2", "-m", "arp@2", "--train",
                          str(tmp_path / "train.csv"), "--catalog-size", "10", "--format", "csv")
    assert (code, err) == (0, "")
    assert out == "users,catalog_coverage@2,arp@2\n2,0.3,2.5\n"
    code, out, err = _run(capsys, "beyond", str(tmp_path / "run.csv"), "-m", "arp(p=1)@2")
    assert (code, out) == (1, "")
    assert err.startswith("duckrank beyond: beyond-accuracy metric 'arp(p=1)@2': unknown option")


def test_unknown_metric_lists_the_beyond_accuracy_metrics_too(capsys, guide_files) -> None:
    """Issue 25: the unknown-metric error of `duckrank evaluate` named no beyond-accuracy
    metric, which `evaluate -m` takes (catalog_coverage@10, arp@10, ...)."""
    run, qrels = guide_files
    code, out, err = _run(capsys, "evaluate", str(run), str(qrels), "-m", "catalog_covrage@10")
    assert code == 1 and out == ""
    assert "unknown metric 'catalog_covrage'" in err
    for name in ("catalog_coverage", "ild_embedding", "rbo", "ips_recall"):
        assert name in err


@pytest.mark.parametrize(("argv", "message"), [
    # The run's user column is 'query': before, a Binder Error about an alias "user".
    ([], "the run has no user column 'user'; its columns are: query, item, score; name the "
         "user column with --user-column"),
    (["--user-column", "query", "--item-column", "movie"],
     "the run has no item column 'movie'"),
    (["--user-column", "query", "--score-column", "s"],
     "the run has no score column 's'; its columns are: query, item, score; name the score "
     "column with --score-column"),
])
def test_beyond_names_the_column_option(capsys, tmp_path: Path, argv: list[str],
                                        message: str) -> None:
    run = _csv(tmp_path / "run.csv", ["query", "item", "score"], [(1, 10, 3.0), (1, 20, 2.0)])
    code, out, err = _run(capsys, "beyond", str(run), "-m", "catalog_coverage@2",
                          "--catalog-size", "10", *argv)
    assert (code, out) == (1, "")
    assert message in err
    # Named, it works: 2 items of 10.
    code, out, err = _run(capsys, "beyond", str(run), "-m", "catalog_coverage@2",
                          "--catalog-size", "10", "--user-column", "query", "--format", "csv")
    assert (code, out) == (0, "users,catalog_coverage@2\n1,0.2\n")


def test_beyond_names_the_side_table_and_its_column(capsys, tmp_path: Path) -> None:
    run = _csv(tmp_path / "run.csv", ["user", "item", "score"], [(1, 10, 3.0)])
    train = _csv(tmp_path / "train.csv", ["uid", "item"], [(1, 10)])
    code, _, err = _run(capsys, "beyond", str(run), "-m", "self_information@1", "--train",
                        str(train))
    assert code == 1
    assert ("the train table (--train) has no user column 'user'; its columns are: uid, item; "
            "name the user column with --user-column") in err
    categories = _csv(tmp_path / "cat.csv", ["item", "genre"], [(10, "a")])
    code, _, err = _run(capsys, "beyond", str(run), "-m", "ild_category@1", "--categories",
                        str(categories))
    assert code == 1
    assert ("the categories table (--categories) has no category column 'category'; its "
            "columns are: item, genre; name the category column with the option category_col "
            "of ild_category (ild_category(category_col=NAME)@1)") in err


def test_ips_error_names_train_not_an_internal_view(capsys, tmp_path: Path) -> None:
    """Item 30 is relevant to user 1 but not in train: before, the message named the view
    duckrank_beyond_<uuid> that holds train."""
    run = _csv(tmp_path / "run.csv", ["user", "item", "score"], [(1, 10, 3.0)])
    qrels = _csv(tmp_path / "qrels.csv", ["user", "item"], [(1, 30)])
    train = _csv(tmp_path / "train.csv", ["user", "item"], [(1, 10)])
    code, _, err = _run(capsys, "beyond", str(run), "-m", "ips_recall@1", "--qrels", str(qrels),
                        "--train", str(train))
    assert code == 1
    assert "item 30 of the truth of user 1 has no propensity: it is not in train" in err
    assert "duckrank_beyond_" not in err
