"""``duckrank fuse RUN... -o FUSED`` through the real command line (``duckrank.cli.main``): TREC
and Parquet in and out, the method's parameters and weights, supervised training on qrels, and
errors as a message and exit status 1. Expected rows come from ``duckrank.fuse`` (checked
against ranx in test_methods_vs_ranx.py) and, for one case, a hand calculation."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from duckrank.cli import main

BM25 = "q1 Q0 a 1 3.0 bm25\nq1 Q0 b 2 2.0 bm25\nq2 Q0 c 1 1.0 bm25\n"
DENSE = "q1 Q0 b 1 0.9 dense\nq1 Q0 c 2 0.1 dense\nq2 Q0 c 1 0.5 dense\n"


@pytest.fixture()
def runs(tmp_path: Path) -> list[str]:
    (tmp_path / "bm25.run").write_text(BM25)
    (tmp_path / "dense.run").write_text(DENSE)
    return [str(tmp_path / "bm25.run"), str(tmp_path / "dense.run")]


def test_rrf_to_a_trec_file(capsys, runs, tmp_path: Path) -> None:
    out = tmp_path / "fused.run"
    assert main(["fuse", *runs, "-o", str(out), "--method", "rrf", "--param", "k=1"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    # Hand calculation, RRF with k = 1: q1: a 1/(1+1) = 0.5; b 1/(1+2) + 1/(1+1) = 0.8333...;
    # c 1/(1+2) = 0.3333...; q2: c 1/2 + 1/2 = 1.
    rows = [line.split() for line in out.read_text().splitlines()]
    assert [(q, d, int(r)) for q, _, d, r, _, _ in rows] == [
        ("q1", "b", 1), ("q1", "a", 2), ("q1", "c", 3), ("q2", "c", 1)]
    assert [float(s) for *_, s, _ in rows] == pytest.approx([5 / 6, 0.5, 1 / 3, 1.0], rel=1e-12)
    assert {tag for *_, tag in rows} == {"rrf"}


def test_weighted_sum_to_parquet(runs, tmp_path: Path) -> None:
    out = tmp_path / "fused.parquet"
    assert main(["fuse", *runs, "-o", str(out), "--weights", "0.25", "0.75"]) == 0
    table = pq.read_table(out).sort_by([("query", "ascending"), ("rank", "ascending")])
    # min-max: bm25 q1 a 1, b 0; q2 c 0 (one score). dense q1 b 1, c 0; q2 c 0.
    # q1: a 0.25, b 0.75, c 0; q2: c 0.
    assert table.column("item").to_pylist() == ["b", "a", "c", "c"]
    assert table.column("score").to_pylist() == [0.75, 0.25, 0.0, 0.0]


def test_supervised_method_trains_on_qrels(capsys, runs, tmp_path: Path) -> None:
    qrels = tmp_path / "train.qrels"
    qrels.write_text("q1 0 b 1\nq2 0 c 1\n")
    out = tmp_path / "fused.run"
    assert main(["fuse", *runs, "-o", str(out), "--method", "posfuse", "--qrels",
                 str(qrels)]) == 0
    assert "posfuse trained on 2 queries (q1, q2)" in capsys.readouterr().out
    assert out.read_text().count("\n") == 4


@pytest.mark.parametrize(("arguments", "message"), [
    (["--method", "rbc"], "fuse: rbc needs params={'phi': ...}"),
    (["--method", "rrf", "--param", "k=-2"], "fuse: rrf's k must be a finite number >= 0"),
    (["--weights", "1"], "fuse: wsum's weights has 1 values for 2 runs"),
    (["--memory-limit", "lots"], "fuse: memory_limit must be a size with its unit, as DuckDB "
                                 "writes it ('2GB', '500MB'), got 'lots'"),
])
def test_errors(capsys, runs, tmp_path: Path, arguments, message) -> None:
    assert main(["fuse", *runs, "-o", str(tmp_path / "x.run"), *arguments]) == 1
    assert message in capsys.readouterr().err


def test_memory_limit_bounds_the_connection_and_changes_nothing(runs, tmp_path: Path) -> None:
    """--memory-limit: the same fused rows as without it (the weighted-sum case above, whose
    expected values are written out there)."""
    out = tmp_path / "fused.parquet"
    assert main(["fuse", *runs, "-o", str(out), "--weights", "0.25", "0.75",
                 "--memory-limit", "100MB"]) == 0
    table = pq.read_table(out).sort_by([("query", "ascending"), ("rank", "ascending")])
    assert table.column("item").to_pylist() == ["b", "a", "c", "c"]
    assert table.column("score").to_pylist() == [0.75, 0.25, 0.0, 0.0]


def test_memory_limit_is_for_the_connection_fuse_opens(runs) -> None:
    import duckrank

    with pytest.raises(ValueError, match="fuse: memory_limit applies to the connection fuse "
                                         "opens"):
        duckrank.fuse(runs, "rrf", connection=duckrank.connect(), memory_limit="1GB")
