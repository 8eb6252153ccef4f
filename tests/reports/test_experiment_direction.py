"""The experiment's Wilcoxon cells say which way each difference goes (issue 30): a two-sided
p-value alone (p=3.1e-10) read as an improvement where xCLiMF was worse than PopRec.

Expected values: the mean differences recomputed from the experiment's own per-user values
(``per_user``) with pandas; the signs in the text from those."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from duckrank.reports.experiment import DIRECTION, run_xclimf_experiment


def _movielens() -> Path:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        pytest.skip("pyspark (a test dependency) is not installed: its wheel holds the sample")
    return Path(spec.origin).parent / "data" / "mllib" / "als" / "sample_movielens_ratings.txt"


def test_each_p_value_carries_its_direction() -> None:
    result = run_xclimf_experiment(_movielens(), given=(5,), epochs=2)
    per_user = result.per_user.to_pandas()
    wide = per_user.pivot_table(index=["metric", "user"], columns="system", values="value")
    row = next(r for r in result.table1.to_pylist() if r["system"] == "xCLiMF")
    signs = []
    for metric, column in (("NDCG@5", "ndcg"), ("ERR@5", "err")):
        both = wide.loc[metric][["xCLiMF", "PopRec"]].dropna()
        expected = (both["xCLiMF"] - both["PopRec"]).mean()
        assert row[f"{column}_diff"] == pytest.approx(expected, rel=1e-12)
        signs.append("+" if expected > 0 else "-" if expected < 0 else "=")
    line = next(text for text in result.text.splitlines() if text.startswith("  Wilcoxon"))
    assert line.split()[1:] == [signs[0], f"p={row['ndcg_p']:.2g}",
                                signs[1], f"p={row['err_p']:.2g}"]
    assert f"{DIRECTION} PopRec" in result.text
    for row in result.table3.to_pylist():
        if row["system"] == "xCLiMF":
            assert row["mrr_diff"] is not None and row["err_diff"] is not None
        else:
            assert row["mrr_diff"] is None and row["mrr_p"] is None
