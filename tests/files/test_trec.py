"""TREC run and qrels files: the readers, and duckrank's numbers on TREC files against trec_eval.

The independent source is pytrec-eval-terrier (trec_eval's own C code). It reads our random files
through a plain Python parser written here, not through duckrank's readers. trec_eval ranks a run
by score and breaks ties by docid, descending; duckrank.evaluate does the same
(to_ordered_list(item, score, '-reverse')), so the files below have many tied scores on purpose.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
import pytrec_eval

import duckrank
from duckrank import evaluate
from duckrank.cli import main
from duckrank.files import trec
from duckrank.files.trec import MissingFileError
from duckrank.metrics import METRICS
from duckrank.render.macros import SQL_FILE


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


# --- readers -------------------------------------------------------------------------------------

def _plain() -> duckdb.DuckDBPyConnection:
    """A DuckDB without duckrank, with the TREC macros of sql/duckrank.sql (what a user of the
    DuckDB shell has)."""
    con = duckdb.connect()
    con.execute(SQL_FILE.read_text())
    return con


def _error(read: Callable[[], object]) -> str:
    with pytest.raises(duckdb.Error) as caught:
        read()
    return str(caught.value)


def test_read_run_any_whitespace_blank_lines_and_crlf(tmp_path: Path) -> None:
    run = tmp_path / "x.run"
    run.write_bytes(
        b"q1 Q0 d1 1 2.5 sysA\r\n\n  q1\tQ0   d'2 2 -1e3 sysA  \n\t\nq2 Q0 d\"3 1 0 sysB"
    )
    rows = trec.read_run(run).fetchall()
    assert rows == [
        ("q1", "Q0", "d1", 1, 2.5, "sysA"),
        ("q1", "Q0", "d'2", 2, -1000.0, "sysA"),
        ("q2", "Q0", 'd"3', 1, 0.0, "sysB"),
    ]


def test_single_space_and_single_tab_lines_read_as_any_blanks(tmp_path: Path) -> None:
    """Lines split on single spaces or single tabs take a plain split (render/trec.py); the
    others the regular expression: the rows are the same either way (by hand)."""
    run = tmp_path / "t.run"
    run.write_bytes(b"q1\tQ0\td1\t1\t2.5\tsysA\n"  # single tabs
                    b"q1 Q0 d2 2 2 sysA extra\n"  # single spaces, a field after the tag
                    b"q1\tQ0 d3\t3 1 sysA\n"  # both: the general split
                    b"q1 Q0 d4 4 0 sysA \n"  # a trailing space: the general split
                    b"q1 Q0 d5 5 -1 sysA\f\n")  # a form feed: the general split
    assert trec.read_run(run).fetchall() == [
        ("q1", "Q0", f"d{i}", i, score, "sysA")
        for i, score in enumerate([2.5, 2.0, 1.0, 0.0, -1.0], 1)
    ]


def test_read_qrels_types(tmp_path: Path) -> None:
    qrels = _write_lines(tmp_path / "x.qrels", ["401 0 FBIS3-10082 1", "401 0 FT934-1 -2"])
    relation = trec.read_qrels(qrels)
    assert relation.columns == ["query", "iteration", "item", "grade"]
    assert [str(t) for t in relation.types] == ["VARCHAR", "VARCHAR", "VARCHAR", "BIGINT"]
    assert relation.fetchall() == [("401", "0", "FBIS3-10082", 1), ("401", "0", "FT934-1", -2)]


def test_sql_table_macros(tmp_path: Path) -> None:
    run = _write_lines(tmp_path / "r.txt", ["7 Q0 a 1 3 t", "7 Q0 b 2 2 t"])
    con = duckrank.connect()
    rows = con.execute(
        "SELECT query, list(item ORDER BY rank) FROM read_trec_run($1) GROUP BY query", [str(run)]
    ).fetchall()
    assert rows == [("7", ["a", "b"])]


# trec_eval 10's reading rules (get_qrels.c, get_trec_results.c and its 10.0 release notes):
# comment lines start with '#', fields are split on C's isspace (which holds \v and \f), a run
# line's fields after the tag are ignored, a qrels line has 4 fields.
COMMENTED_QRELS = [
    "# pool depth 100",  # 4 fields: read as a judgment of query '#' before
    "   # an indented comment",
    "",
    "401 0 d#1 1",  # a '#' inside an id is data
    "401\v0\fd2 0",
    "402 0 d3 -1",  # negative: non-relevant, not an error
]
COMMENTED_RUN = [
    "# run: bm25 k1=0.9 b=0.4",
    "401 Q0 d#1 1 2.5 bm25 extra fields after the tag",
    "401 Q0 d2 2 2.0 bm25",
    "402 Q0 d3 1 1.0 bm25",
]


@pytest.mark.parametrize("reader", ["python", "plain duckdb"])
def test_comments_and_fields_as_trec_eval_10(tmp_path: Path, reader: str) -> None:
    qrels = _write_lines(tmp_path / "c.qrels", COMMENTED_QRELS)
    run = _write_lines(tmp_path / "c.run", COMMENTED_RUN)
    if reader == "python":
        judged, ranked = trec.read_qrels(qrels).fetchall(), trec.read_run(run).fetchall()
    else:
        con = _plain()
        judged = con.execute("SELECT * FROM read_trec_qrels($1)", [str(qrels)]).fetchall()
        ranked = con.execute("SELECT * FROM read_trec_run($1)", [str(run)]).fetchall()
    assert judged == [("401", "0", "d#1", 1), ("401", "0", "d2", 0), ("402", "0", "d3", -1)]
    assert ranked == [("401", "Q0", "d#1", 1, 2.5, "bm25"), ("401", "Q0", "d2", 2, 2.0, "bm25"),
                      ("402", "Q0", "d3", 1, 1.0, "bm25")]


def test_comment_lines_change_no_number(tmp_path: Path) -> None:
    """The comment line '# pool depth 100' was a judgment of query '#' (an unranked query);
    the values equal trec_eval's on the judgments without the comment."""
    qrels = _write_lines(tmp_path / "c.qrels", ["# pool depth 100", "401 0 d1 0", "401 0 d2 1"])
    run = _write_lines(tmp_path / "c.run", ["401 Q0 d1 1 2.5 t", "401 Q0 d2 2 2.0 t"])
    frame = evaluate(run, qrels, ["map@10", "mrr"])
    assert (frame["scored"][0], frame["unranked"][0]) == (1, 0)
    expected = pytrec_eval.RelevanceEvaluator(
        {"401": {"d1": 0, "d2": 1}}, {"map_cut.10", "recip_rank"}
    ).evaluate({"401": {"d1": 2.5, "d2": 2.0}})["401"]
    assert frame["map@10"][0] == pytest.approx(expected["map_cut_10"], abs=1e-12)
    assert frame["mrr"][0] == pytest.approx(expected["recip_rank"], abs=1e-12)


def test_negative_grades_are_non_relevant_in_graded_metrics(tmp_path: Path) -> None:
    """trec_eval (pytrec-eval-terrier) gives a negative grade gain 0."""
    qrels = _write_lines(tmp_path / "n.qrels", ["1 0 a -1", "1 0 b 2", "1 0 c 1", "1 0 d 0"])
    run = _write_lines(tmp_path / "n.run", ["1 Q0 a 1 5 t", "1 Q0 b 2 4 t", "1 Q0 c 3 3 t"])
    expected = pytrec_eval.RelevanceEvaluator(
        {"1": {"a": -1, "b": 2, "c": 1, "d": 0}}, {"ndcg_cut.10"}
    ).evaluate({"1": {"a": 5.0, "b": 4.0, "c": 3.0}})["1"]["ndcg_cut_10"]
    frame = evaluate(run, qrels, ["ndcg(gain=linear)@10"])
    assert frame["ndcg(gain=linear)@10"][0] == pytest.approx(expected, abs=1e-12)


def _bad_line_message(fn: str, path: Path, line: int, problem: str, quoted: str) -> str:
    return f"{fn}: file '{path}', line {line}: {problem} in '{quoted}'"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("q1 Q0 d1 1 2.5", "expected at least 6 fields (qid Q0 docid rank score tag), got 5"),
        ("q1 Q0 d1 1 high sysA", "score 'high' is not a number"),
        # DuckDB casts '1_000' to 1000 where trec_eval's atof reads 1: neither is taken
        ("q1 Q0 d1 1 1_000 sysA", "score '1_000' is not a number"),
        ("q1 Q0 d1 1 nan sysA", "score 'nan' is not a number"),
        ("q1 Q0 d1 first 2 sysA", "rank 'first' is not an integer"),
    ],
)
@pytest.mark.parametrize("reader", ["python", "plain duckdb"])
def test_bad_run_lines_are_errors_naming_file_and_line(
    tmp_path: Path, line: str, problem: str, reader: str
) -> None:
    """The bad line is line 4: a comment and a blank line count (lines of the file, from 1)."""
    run = _write_lines(tmp_path / "bad.run", ["# c", "q0 Q0 d0 1 1 sysA", "", line])
    if reader == "python":
        message = _error(lambda: trec.read_run(run).fetchall())
    else:
        message = _error(lambda: _plain().execute("SELECT * FROM read_trec_run($1)", [str(run)]))
    assert _bad_line_message("read_trec_run", run, 4, problem, line) in message


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("q1 0 d1 0.5", "grade '0.5' is not an integer"),
        ("q1 0 d1 1 5", "expected 4 fields (qid iteration docid grade), got 5"),
        ("q1 0 d1", "expected 4 fields (qid iteration docid grade), got 3"),
    ],
)
def test_bad_qrels_lines(tmp_path: Path, line: str, problem: str) -> None:
    qrels = _write_lines(tmp_path / "bad.qrels", ["q1 0 d0 1", line])
    message = _error(lambda: trec.read_qrels(qrels).fetchall())
    assert _bad_line_message("read_trec_qrels", qrels, 2, problem, line) in message


def test_line_numbers_of_a_crlf_file(tmp_path: Path) -> None:
    qrels = tmp_path / "w.qrels"
    qrels.write_bytes(b"q1 0 d0 1\r\n\r\nq1 0 d1 x\r\n")
    message = _error(lambda: trec.read_qrels(qrels).fetchall())
    assert _bad_line_message("read_trec_qrels", qrels, 3, "grade 'x' is not an integer",
                             "q1 0 d1 x") in message


@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_a_nul_byte_is_an_error_never_a_cut_line(tmp_path: Path, kind: str) -> None:
    """Before, a NUL ended the line without a word: 'q1 0 d1 1<NUL>7' was read as grade 1."""
    path = tmp_path / f"nul.{kind}"
    good, bad = (b"q1 Q0 d0 1 1 t", b"q1 Q0 d1 2 1 t\x00 x") if kind == "run" else (
        b"q1 0 d0 1", b"q1 0 d1 1\x007")
    path.write_bytes(good + b"\n" + bad + b"\n")
    read = trec.read_run if kind == "run" else trec.read_qrels
    message = _error(lambda: read(path).fetchall())
    quoted = bad.decode().replace("\x00", "\\0")
    assert _bad_line_message(f"read_trec_{kind}", path, 2, "a NUL byte (shown as \\0)",
                             quoted) in message


def test_a_long_bad_line_is_quoted_in_100_characters(tmp_path: Path) -> None:
    """A 2 MB line (beyond DuckDB's own 2 MB line limit, whose error prints the whole line)."""
    qrels = tmp_path / "long.qrels"
    long_line = "q1 0 " + "d" * 2_000_000 + " 1 extra"
    qrels.write_text("q1 0 d0 1\n" + long_line + "\n")
    message = _error(lambda: trec.read_qrels(qrels).fetchall())
    assert len(message) < 600
    assert (f"line 2: expected 4 fields (qid iteration docid grade), got 5 in "
            f"'{long_line[:100]}'... ({len(long_line)} characters)") in message


# --- paths name one file -------------------------------------------------------------------------

def _two_runs(tmp_path: Path) -> tuple[Path, Path]:
    """'run[1].run' (relevant item first: mrr 1) and 'run1.run', which the pattern run[1].run
    matches (relevant item second: mrr 0.5)."""
    bracket = _write_lines(tmp_path / "run[1].run", ["1 Q0 a 1 2 t", "1 Q0 b 2 1 t"])
    plain = _write_lines(tmp_path / "run1.run", ["1 Q0 b 1 2 t", "1 Q0 a 2 1 t"])
    return bracket, plain


def test_a_path_with_glob_characters_names_one_file(tmp_path: Path) -> None:
    bracket, _ = _two_runs(tmp_path)
    qrels = _write_lines(tmp_path / "q.qrels", ["1 0 a 1"])
    assert [r[2] for r in trec.read_run(bracket).fetchall()] == ["a", "b"]
    assert _plain().execute("SELECT item FROM read_trec_run($1)",
                            [str(bracket)]).fetchall() == [("a",), ("b",)]
    assert evaluate(bracket, qrels, ["mrr"])["mrr"][0] == 1.0  # was 0.5: run1.run


@pytest.mark.parametrize("name", ["run*.run", "run?.run"])
def test_a_star_in_a_path_is_a_name_not_every_match(tmp_path: Path, name: str) -> None:
    _two_runs(tmp_path)
    star = _write_lines(tmp_path / name, ["1 Q0 c 1 2 t"])
    assert trec.read_run(star).fetchall() == [("1", "Q0", "c", 1, 2.0, "t")]


def test_glob_reads_every_match_and_numbers_lines_per_file(tmp_path: Path) -> None:
    _two_runs(tmp_path)
    pattern = str(tmp_path / "run?.run")
    assert [r[2] for r in trec.read_run(pattern, glob=True).fetchall()] == ["b", "a"]
    every = trec.read_run(str(tmp_path / "run*.run"), glob=True).fetchall()
    assert len(every) == 4
    _write_lines(tmp_path / "run2.run", ["1 Q0 c 1 2 t", "1 Q0 d 2 x t"])
    message = _error(lambda: trec.read_run(pattern, glob=True).fetchall())
    assert f"file '{tmp_path / 'run2.run'}', line 2: score 'x' is not a number" in message


def test_missing_file_and_empty_pattern_name_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "run[2].run"
    with pytest.raises(FileNotFoundError, match=re.escape(f"the run file '{missing}' does not")):
        trec.read_run(missing)
    with pytest.raises(ValueError, match="the qrels file .* is a folder, not a file"):
        trec.read_qrels(tmp_path)
    with pytest.raises(MissingFileError, match="the run pattern .* matches no file"):
        trec.read_run(tmp_path / "none*.run", glob=True)


def test_cli_reads_the_named_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bracket, _ = _two_runs(tmp_path)
    qrels = _write_lines(tmp_path / "q.qrels", ["1 0 a 1"])
    assert main(["evaluate", str(bracket), str(qrels), "-m", "mrr", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["mrr"] == 1.0
    assert main(["evaluate", str(tmp_path / "run[2].run"), str(qrels), "-m", "mrr"]) == 1
    assert f"the run file '{tmp_path / 'run[2].run'}' does not exist" in capsys.readouterr().err


# --- agreement with trec_eval --------------------------------------------------------------------

def _random_trec(tmp_path: Path, seed: int, grades: list[int]) -> tuple[Path, Path]:
    rng = random.Random(seed)
    run, qrels = [], []
    for q in range(1, 31):
        docs = [f"doc{d}" for d in range(rng.randint(5, 40))]
        judged = rng.sample(docs, rng.randint(1, len(docs)))
        relevant = rng.choice(judged)  # at least one relevant document: trec_eval scores it
        for doc in judged:
            grade = max(grades) if doc == relevant else rng.choice(grades)
            qrels.append(f"{q} 0 {doc} {grade}")
        retrieved = rng.sample(docs, rng.randint(1, len(docs)))
        for rank, doc in enumerate(retrieved, 1):
            score = rng.randint(0, 8) / 2  # few distinct scores: many ties
            run.append(f"{q} Q0 {doc} {rank} {score} sys")
    return _write_lines(tmp_path / "r.run", run), _write_lines(tmp_path / "r.qrels", qrels)


def _trec_eval(run: Path, qrels: Path, measures: set[str]) -> dict[str, dict[str, float]]:
    judgments: dict[str, dict[str, int]] = {}
    for line in qrels.read_text().split("\n"):
        if line:
            qid, _, doc, grade = line.split()
            judgments.setdefault(qid, {})[doc] = int(grade)
    ranking: dict[str, dict[str, float]] = {}
    for line in run.read_text().split("\n"):
        if line:
            qid, _, doc, _, score, _ = line.split()
            ranking.setdefault(qid, {})[doc] = float(score)
    return pytrec_eval.RelevanceEvaluator(judgments, measures).evaluate(ranking)


# duckrank request -> trec_eval measure, where the definitions agree (see docs/reference.md):
# precision_at divides by min(k, len(rec)) and trec_eval's P by k, so P is compared only where
# every list is at least k long.
BINARY_PAIRS = {
    "ndcg@10": "ndcg_cut_10",
    "map@100": "map_cut_100",
    "map@5": "map_cut_5",
    "mrr": "recip_rank",
    "recall@10": "recall_10",
    "hitrate@5": "success_5",
}


def _per_query(run: Path, qrels: Path, requests: list[str]) -> dict[str, dict[str, float]]:
    frame = evaluate(run, qrels, requests, per_user=True)
    return {
        str(row["query"]): {r: row[r] for r in requests} for _, row in frame.iterrows()
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_binary_metrics_equal_trec_eval(tmp_path: Path, seed: int) -> None:
    run, qrels = _random_trec(tmp_path, seed, grades=[0, 1])
    expected = _trec_eval(run, qrels, {"ndcg_cut.10", "map_cut.5,100", "recip_rank",
                                       "recall.10", "success.5"})
    ours = _per_query(run, qrels, list(BINARY_PAIRS))
    assert set(ours) == set(expected)
    for qid, values in expected.items():
        for request, measure in BINARY_PAIRS.items():
            assert ours[qid][request] == pytest.approx(values[measure], abs=1e-12), (
                qid, request
            )


def test_precision_equals_trec_eval_p_when_lists_reach_k(tmp_path: Path) -> None:
    run, qrels = _random_trec(tmp_path, 4, grades=[0, 1])
    expected = _trec_eval(run, qrels, {"P.1"})
    ours = _per_query(run, qrels, ["precision@1"])
    for qid, values in expected.items():
        assert ours[qid]["precision@1"] == pytest.approx(values["P_1"], abs=1e-12)


def test_means_equal_trec_eval_all(tmp_path: Path) -> None:
    """trec_eval's 'all' line is the mean over the queries of the run that have judgments."""
    run, qrels = _random_trec(tmp_path, 5, grades=[0, 1])
    expected = _trec_eval(run, qrels, {"ndcg_cut.10", "recip_rank"})
    mean = evaluate(run, qrels, ["ndcg@10", "mrr"])
    for request, measure in (("ndcg@10", "ndcg_cut_10"), ("mrr", "recip_rank")):
        trec_all = sum(v[measure] for v in expected.values()) / len(expected)
        assert mean[request][0] == pytest.approx(trec_all, abs=1e-12)
    assert mean["scored"][0] == len(expected)


def _linear_graded_ndcg_available() -> bool:
    return any(
        m.name == "ndcg" and m.truth_type.upper().startswith("MAP")
        and any(o.name == "gain" and "linear" in o.choices for o in m.options)
        for m in METRICS
    )


@pytest.mark.skipif(not _linear_graded_ndcg_available(),
                    reason="the graded ndcg with gain := 'linear' is not in the registry")
@pytest.mark.parametrize("seed", [6, 7])
def test_graded_ndcg_with_linear_gain_equals_trec_eval(tmp_path: Path, seed: int) -> None:
    """trec_eval's ndcg_cut uses the grade itself as the gain (linear) and log2(i + 1)."""
    run, qrels = _random_trec(tmp_path, seed, grades=[0, 1, 2, 3])
    expected = _trec_eval(run, qrels, {"ndcg_cut.5,10"})
    ours = _per_query(run, qrels, ["ndcg(gain=linear)@10", "ndcg(gain=linear)@5"])
    for qid, values in expected.items():
        assert ours[qid]["ndcg(gain=linear)@10"] == pytest.approx(values["ndcg_cut_10"], abs=1e-12)
        assert ours[qid]["ndcg(gain=linear)@5"] == pytest.approx(values["ndcg_cut_5"], abs=1e-12)


def test_binary_metrics_on_graded_qrels_count_grade_above_zero(tmp_path: Path) -> None:
    """With graded qrels the binary metrics see the items of grade > 0, as trec_eval's
    relevance_level 1 does."""
    run, qrels = _random_trec(tmp_path, 8, grades=[0, 1, 2, 3])
    expected = _trec_eval(run, qrels, {"map_cut.100", "recip_rank"})
    ours = _per_query(run, qrels, ["map@100", "mrr"])
    for qid, values in expected.items():
        assert ours[qid]["map@100"] == pytest.approx(values["map_cut_100"], abs=1e-12)
        assert ours[qid]["mrr"] == pytest.approx(values["recip_rank"], abs=1e-12)
