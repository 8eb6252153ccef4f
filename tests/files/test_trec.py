"""TREC run and qrels files: the readers, and duckrank's numbers on TREC files against trec_eval.

The independent source is pytrec-eval-terrier (trec_eval's own C code). It reads our random files
through a plain Python parser written here, not through duckrank's readers. trec_eval ranks a run
by score and breaks ties by docid, descending; duckrank.evaluate does the same
(to_ordered_list(item, score, '-reverse')), so the files below have many tied scores on purpose.
"""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pytest
import pytrec_eval

import duckrank
from duckrank import evaluate
from duckrank.files import trec
from duckrank.metrics import METRICS


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


# --- readers -------------------------------------------------------------------------------------

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


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["q1 Q0 d1 1 2.5"], "read_trec_run: expected 6 fields (qid Q0 docid rank score tag), "
         "got 5 in line 'q1 Q0 d1 1 2.5'"),
        (["q1 Q0 d1 1 high sysA"], "read_trec_run: score 'high' is not a number in line"),
        (["q1 Q0 d1 first 2 sysA"], "read_trec_run: rank 'first' is not an integer in line"),
    ],
)
def test_bad_run_lines_are_errors_that_quote_the_line(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    run = _write_lines(tmp_path / "bad.run", ["q0 Q0 d0 1 1 sysA", *lines])
    with pytest.raises(duckdb.Error, match=message.replace("(", r"\(").replace(")", r"\)")):
        trec.read_run(run).fetchall()


def test_bad_qrels_grade(tmp_path: Path) -> None:
    qrels = _write_lines(tmp_path / "bad.qrels", ["q1 0 d1 0.5"])
    with pytest.raises(duckdb.Error, match="read_trec_qrels: grade '0.5' is not an integer"):
        trec.read_qrels(qrels).fetchall()


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
