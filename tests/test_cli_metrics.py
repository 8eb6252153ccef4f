"""``duckrank metrics`` (issue 28): every metric, the beyond-accuracy ones and the aggregates
included, one line per name and family with its forms, 100 columns wide, and the --family and
--search filters. Expected names and forms come from the records themselves
(``duckrank.metrics.METRICS``, the beyond-accuracy and aggregate records)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from duckrank.cli import main
from duckrank.metrics import METRICS
from duckrank.render.beyond_accuracy import RECORDS as BEYOND
from duckrank.render.pointwise import RECORDS as AGGREGATES
from duckrank.reports.listing import FAMILIES, metric_listing


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["metrics", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _rows(capsys, *argv: str) -> list[dict[str, str]]:
    code, out, err = _run(capsys, *argv, "--format", "csv")
    assert (code, err) == (0, "")
    return list(csv.DictReader(io.StringIO(out)))


def test_every_metric_is_listed_with_its_forms(capsys) -> None:
    rows = _rows(capsys)
    names = {r["metric"] for r in rows}
    assert names == ({m.name for m in METRICS} | {m.name for m in BEYOND}
                     | {a.name for a in AGGREGATES})
    forms = {}
    for row in rows:
        forms.setdefault(row["metric"], set()).update(row["forms"].split(", "))
    # Every SQL form of a ranking metric, the derived MAP-truth overloads included.
    for metric in METRICS:
        assert ("MAP" if metric.truth_type else "LIST") in forms[metric.name], metric.name
    assert forms["rbo"] == {"pair"} and forms["catalog_coverage"] == {"catalogue"}
    assert forms["extended_epc"] == {"per user", "MAP"} and forms["rmse"] == {"aggregate"}
    # One row per (family, name): ndcg's two records are two families' rows, dcg's one.
    pairs = [(r["family"], r["metric"]) for r in rows]
    assert len(pairs) == len(set(pairs))
    ndcg = {r["family"]: r["forms"] for r in rows if r["metric"] == "ndcg"}
    assert ndcg == {"binary": "LIST", "graded": "MAP"}
    assert [r["forms"] for r in rows if r["metric"] == "dcg"] == ["LIST, MAP"]


def test_the_table_fits_100_columns_one_line_per_name(capsys) -> None:
    code, out, err = _run(capsys)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert max(map(len, lines)) <= 100
    headings = [line for line in lines if line and not line.startswith(" ")]
    assert [h.split()[0] for h in headings] == list(FAMILIES)
    assert all(h.split()[1:] == ["forms", "summary"] for h in headings)
    listed = [line.split()[0] for line in lines if line.startswith("  ")]
    assert listed == [r["metric"] for r in _rows(capsys)]
    line = next(line for line in lines if line.startswith("  precision_at "))
    assert line.split("  ")[1:4] == ["precision_at (precision, p)", "LIST, MAP",
                                     "Precision@k: the share of the top K that are hits."]
    cut = next(line for line in lines if line.startswith("  ips_recall "))
    assert len(cut) == 100 and cut.endswith("...")


def test_family_filters_and_an_unknown_family_lists_the_families(capsys) -> None:
    rows = _rows(capsys, "--family", "graded")
    assert {r["family"] for r in rows} == {"graded"}
    assert [r["metric"] for r in rows][:2] == ["ndcg", "dcg"]
    beyond = _rows(capsys, "--family", "similarity")
    assert [r["metric"] for r in beyond] == ["overlap_at", "jaccard_at", "rbo"]
    assert "p=0.9" in beyond[2]["options"]
    code, out, err = _run(capsys, "--family", "grade")
    assert (code, out) == (1, "")
    assert err == ("duckrank metrics: --family grade: no such family; the families: "
                   f"{', '.join(FAMILIES)}\n")
    with pytest.raises(ValueError, match="^family='grade': no such family; the families: bin"):
        metric_listing(family="grade")


def test_search_matches_names_aliases_and_summaries(capsys) -> None:
    # recip_rank is an alias of mrr; err's alias holds "reciprocal" too, as rbo's summary does
    # not: case-insensitive, in names, aliases and summaries.
    assert {(r["family"], r["metric"]) for r in _rows(capsys, "--search", "RECIP_RANK")} == {
        ("binary", "mrr")}
    found = {r["metric"] for r in _rows(capsys, "--search", "Reciprocal")}
    assert {"mrr", "err"} <= found and "rbo" not in found
    summaries = _rows(capsys, "--search", "long tail")
    assert {r["metric"] for r in summaries} >= {"long_tail_share"}
    assert all("long tail" in r["summary"].lower() for r in summaries)
    code, out, err = _run(capsys, "--family", "coverage", "--search", "entropy")
    assert code == 0 and out.split()[:3] == ["coverage", "forms", "summary"]
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["exposure_entropy"]


def test_a_search_with_no_match_says_so(capsys) -> None:
    code, out, err = _run(capsys, "--search", "zzz")
    assert (code, out) == (1, "")
    assert err == ("duckrank metrics: --search zzz: no metric has it in its name, aliases or "
                   "summary\n")
    code, out, err = _run(capsys, "--family", "novelty", "--search", "ndcg")
    assert (code, out) == (1, "")
    assert "--search ndcg: no metric of --family novelty has it" in err
    assert metric_listing(search="zzz").rows == ()


def test_json_holds_the_whole_summaries(capsys) -> None:
    code, out, _ = _run(capsys, "--family", "debiased", "--format", "json")
    assert code == 0
    records = json.loads(out)
    by_name = {m.name: m for m in BEYOND}
    assert [r["summary"] for r in records] == [by_name[r["metric"]].summary for r in records]
    assert records[0]["options"].startswith("propensities=NULL")
