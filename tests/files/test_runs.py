"""Run and qrels files in Parquet and CSV (duckrank.files.runs): a path names one file, and scores
and grades are numbers or the file is rejected, naming the file (for CSV the line and the value).

Expected values are worked out by hand in each test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import duckrank
from duckrank import evaluate
from duckrank.cli import main
from duckrank.files.runs import Columns, check_numbers, read_file

# The run: query 1 ranks a (10) above b (9) above c (2) when the scores are numbers; as
# text '9' > '2' > '10' put the relevant a last (mrr 1/3 instead of 1).
RUN_LINES = ["query,item,score", "1,a,10", "1,b,9", "1,c,2", "2,x,n/a"]
QRELS_LINES = ["query,item,grade", "1,a,1", "2,x,1"]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_text_score_in_a_csv_run_is_rejected_naming_file_line_and_value(tmp_path: Path) -> None:
    run, qrels = _write(tmp_path / "r.csv", RUN_LINES), _write(tmp_path / "q.csv", QRELS_LINES)
    message = (f"the run file '{run}', line 5: score 'n/a' is not a number (column 'score') in "
               "'2,x,n/a'")
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate(run, qrels, ["mrr"])
    # Without the bad line the scores are numbers: a ranks first, mrr 1 (was 1/3 as text);
    # query 2, judged but now without a list, scores 0 by default (1.0 under trec_eval's rule).
    _write(run, RUN_LINES[:-1])
    with pytest.warns(UserWarning, match="1 judged query has no list"):
        assert evaluate(run, qrels, ["mrr"])["mrr"][0] == 0.5
        assert evaluate(run, qrels, ["mrr"], convention="trec_eval")["mrr"][0] == 1.0


def test_cli_rejects_a_text_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, qrels = _write(tmp_path / "r.csv", RUN_LINES), _write(tmp_path / "q.csv", QRELS_LINES)
    assert main(["evaluate", str(run), str(qrels), "-m", "mrr"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"the run file '{run}', line 5: score 'n/a' is not a number" in captured.err


def test_line_numbers_count_blank_lines_and_quoted_values_are_found(tmp_path: Path) -> None:
    """DuckDB skips the blank line 3 but counts it; the bad value is quoted and holds the
    delimiter."""
    lines = ["query\titem\tscore", "1\ta\t10", "", '2\t"x"\t"n/a, or\tnot"']
    run = _write(tmp_path / "r.tsv", lines)
    message = "line 4: score 'n/a, or\\tnot' is not a number"
    with pytest.raises(ValueError, match=re.escape(message)):
        read_file(duckrank.connect(), run, "run").fetchall()


def test_a_text_grade_in_csv_qrels(tmp_path: Path) -> None:
    qrels = _write(tmp_path / "q.csv", ["query,item,grade", "1,a,1", "1,b,high"])
    with pytest.raises(ValueError, match=re.escape(
            f"the qrels file '{qrels}', line 3: grade 'high' is not a number (column 'grade')")):
        read_file(duckrank.connect(), qrels, "qrels")


def test_a_long_bad_csv_line_is_quoted_in_100_characters(tmp_path: Path) -> None:
    value = "v" * 300_000
    run = _write(tmp_path / "r.csv", ["query,item,score", "1,a,1", f"1,b,{value}"])
    with pytest.raises(ValueError) as caught:
        read_file(duckrank.connect(), run, "run")
    message = str(caught.value)
    assert len(message) < 600
    assert f"line 3: score '{value[:100]}'... is not a number" in message


def test_text_that_is_all_numbers_or_null_is_read_as_numbers(tmp_path: Path) -> None:
    """A score column of empty values only is VARCHAR to DuckDB's sniffer: NULL scores, read."""
    run = _write(tmp_path / "r.csv", ["query,item,score", "1,a,", "1,b,"])
    relation = read_file(duckrank.connect(), run, "run")
    assert [str(t) for t in relation.types] == ["VARCHAR", "VARCHAR", "DOUBLE"]


def test_no_rejects_table_is_left_behind(tmp_path: Path) -> None:
    run = _write(tmp_path / "r.csv", RUN_LINES)
    con = duckrank.connect()
    with pytest.raises(ValueError):
        read_file(con, run, "run")
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchone() == (0,)


def test_a_varchar_score_in_parquet_names_file_column_and_type(tmp_path: Path) -> None:
    run = tmp_path / "r.parquet"
    pq.write_table(pa.table({"query": [1, 1], "item": ["a", "b"], "s": ["10", "9"]}), run)
    with pytest.raises(ValueError, match=re.escape(
            f"the run file '{run}': the score column 's' is VARCHAR, not a number")):
        read_file(duckrank.connect(), run, "run", columns=Columns(score="s"))


def test_boolean_grades_are_numbers(tmp_path: Path) -> None:
    qrels = tmp_path / "q.parquet"
    pq.write_table(pa.table({"query": [1], "item": ["a"], "grade": [True]}), qrels)
    assert read_file(duckrank.connect(), qrels, "qrels").fetchall() == [(1, "a", True)]


@pytest.mark.parametrize("table", [
    pd.DataFrame({"query": [1], "item": ["a"], "score": ["10"]}),
    pa.table({"query": [1], "item": ["a"], "score": ["10"]}),
])
def test_check_numbers_on_in_memory_tables(table: object) -> None:
    con = duckrank.connect()
    con.register("t", table)
    with pytest.raises(ValueError, match="the argument run: the score column 'score' is VARCHAR"):
        check_numbers(con.table("t"), "run", Columns(), "the argument run")
    check_numbers(con.table("t").select("query, item, 1.5 AS score"), "run", Columns(), "run")


# --- paths name one file -------------------------------------------------------------------------

def _two_parquet_runs(tmp_path: Path) -> Path:
    """'run[1].parquet' ranks the relevant a first (mrr 1); 'run1.parquet', which the pattern
    run[1].parquet matches, ranks it second (mrr 0.5)."""
    bracket = tmp_path / "run[1].parquet"
    pq.write_table(pa.table({"query": ["1", "1"], "item": ["a", "b"], "score": [2.0, 1.0]}),
                   bracket)
    pq.write_table(pa.table({"query": ["1", "1"], "item": ["a", "b"], "score": [1.0, 2.0]}),
                   tmp_path / "run1.parquet")
    return bracket


def test_a_parquet_path_with_brackets_names_one_file(tmp_path: Path) -> None:
    bracket = _two_parquet_runs(tmp_path)
    qrels = _write(tmp_path / "q.csv", ["query,item", "1,a"])
    assert evaluate(bracket, qrels, ["mrr"])["mrr"][0] == 1.0  # was 0.5: run1.parquet


def test_cli_reads_the_named_parquet_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bracket = _two_parquet_runs(tmp_path)
    qrels = _write(tmp_path / "q.csv", ["query,item", "1,a"])
    assert main(["evaluate", str(bracket), str(qrels), "-m", "mrr", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["mrr"] == 1.0


def test_a_csv_path_with_a_star_names_one_file(tmp_path: Path) -> None:
    star = _write(tmp_path / "r*.csv", ["query,item,score", "1,a,1"])
    _write(tmp_path / "r2.csv", ["query,item,score", "1,b,1"])
    assert read_file(duckrank.connect(), star, "run").fetchall() == [("1", "a", 1)]


def test_glob_reads_every_matching_file(tmp_path: Path) -> None:
    _two_parquet_runs(tmp_path)
    rows = read_file(duckrank.connect(), tmp_path / "run*.parquet", "run", glob=True).fetchall()
    assert len(rows) == 4


def test_missing_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "run[1].parquet"
    with pytest.raises(FileNotFoundError, match=re.escape(f"the run file '{missing}' does not")):
        read_file(duckrank.connect(), missing, "run")
    with pytest.raises(ValueError, match=re.escape("the qrels pattern")):
        read_file(duckrank.connect(), tmp_path / "*.csv", "qrels", glob=True)


def test_read_file_keeps_its_positional_parameters(tmp_path: Path) -> None:
    run = _write(tmp_path / "r.txt", ["1,a,1"])
    con = duckdb.connect()
    relation = read_file(con, run, "run", "csv", Columns(query="column0", item="column1",
                                                        score="column2"))
    assert relation.fetchall() == [("1", "a", 1)]
