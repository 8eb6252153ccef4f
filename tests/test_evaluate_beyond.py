"""duckrank.evaluate (and ``duckrank evaluate``) with beyond-accuracy requests beside the accuracy
ones. Expected values: ``duckrank.reports.beyond_accuracy.beyond_accuracy`` on the same generated
data (that function is tested against the macros, and the macros against RecTools, RePlay and
Recommenders, in tests/metrics/test_beyond_accuracy.py), the accuracy columns of the same
evaluation without beyond requests, and hand calculations written out in the tests."""

from __future__ import annotations

import io
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

import duckrank
from duckrank.cli import main
from duckrank.evaluation import needed_functions
from duckrank.reports.beyond_accuracy import beyond_accuracy

ACCURACY = ["ndcg@5", "map@10", "recall@3", "mrr"]
# One request of every beyond-accuracy metric, with options, each kind and each side table.
BEYOND = ["catalog_coverage@5", "exposure_entropy@5", "exposure_gini@5", "arp@5",
          "self_information(normalize=true)@5", "long_tail_share@5", "ild_embedding@5",
          "ild_category@5", "inter_user_diversity(seed=3)@5", "overlap_at@5", "jaccard_at@3",
          "rbo(p=0.8)@5", "serendipity@5", "ips_recall@5", "ips_precision(estimator=ips)@5",
          "ips_ndcg@5"]
ITEMS = 30


def _run(rng: np.random.Generator, users: int) -> pd.DataFrame:
    """A long run: 0 to 9 rows per user, scores of one decimal (ties), user 0 without rows."""
    rows = [(u, int(i), round(float(rng.random()), 1)) for u in range(1, users)
            for i in rng.choice(ITEMS, size=int(rng.integers(0, 10)), replace=False)]
    return pd.DataFrame(rows, columns=["uid", "item", "score"])


@pytest.fixture(scope="module")
def data() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(17)
    # Users 35..39 of the run are absent from the qrels (unjudged); grade 0 is not relevant.
    qrels = pd.DataFrame({"uid": rng.integers(0, 35, 80), "item": rng.integers(0, ITEMS, 80),
                          "grade": rng.integers(0, 3, 80)})
    return {
        "run": _run(rng, 40),
        "other": _run(rng, 40),
        "qrels": qrels.drop_duplicates(["uid", "item"]),
        "train": pd.DataFrame({"uid": rng.integers(0, 50, 200),
                               "item": rng.integers(0, ITEMS, 200)}),
        "embeddings": pd.DataFrame({"item": range(ITEMS),
                                    "embedding": [list(rng.normal(size=4)) for _ in range(ITEMS)]}),
        "categories": pd.DataFrame({"item": range(ITEMS), "category": rng.integers(0, 4, ITEMS)}),
        "propensities": pd.DataFrame({"item": range(ITEMS),
                                      "propensity": rng.uniform(0.05, 1.0, ITEMS)}),
    }


@pytest.fixture(scope="module")
def shared() -> duckdb.DuckDBPyConnection:
    """One connection for the module (registering every function takes a second or two); each
    evaluation drops what it made (test_views_are_dropped)."""
    connection = duckrank.connect()
    yield connection
    connection.close()


def _side(data: dict[str, pd.DataFrame]) -> dict:
    return {name: data[name] for name in ("other", "train", "embeddings", "categories",
                                          "propensities")} | {"catalog_size": 40}


def test_values_equal_beyond_accuracy(data, shared) -> None:
    got = duckrank.evaluate(data["run"], data["qrels"], [*ACCURACY, *BEYOND],
                            query_column="uid", connection=shared, **_side(data))
    expected = beyond_accuracy(data["run"], BEYOND, qrels=data["qrels"], user_column="uid",
                               grade_column="grade", connection=shared, **_side(data))
    assert list(got.columns[-len(BEYOND):]) == BEYOND
    for request in BEYOND:
        assert got[request][0] == pytest.approx(expected[request][0], abs=1e-12), request
        assert not np.isnan(got[request][0]), request


def test_accuracy_columns_unchanged(data, shared) -> None:
    alone = duckrank.evaluate(data["run"], data["qrels"], ACCURACY, query_column="uid",
                              connection=shared)
    together = duckrank.evaluate(data["run"], data["qrels"], [*BEYOND[:4], *ACCURACY],
                                 query_column="uid", connection=shared, **_side(data))
    pd.testing.assert_frame_equal(together[list(alone.columns)], alone)


def test_rank_column_files_and_cutoff_lists(data, tmp_path: Path) -> None:
    """A run ranked by a rank column in a CSV file (ids read as text, so is the train CSV),
    ``arp@3,5`` expanded: equal to beyond_accuracy on the same files."""
    ranked = data["run"].assign(rank=data["run"].groupby("uid")["score"]
                                .rank(ascending=False, method="first")).drop(columns="score")
    ranked.to_csv(tmp_path / "run.csv", index=False)
    data["qrels"].to_csv(tmp_path / "qrels.csv", index=False)
    data["train"].to_csv(tmp_path / "train.csv", index=False)
    files = {"run": str(tmp_path / "run.csv"), "train": str(tmp_path / "train.csv")}
    got = duckrank.evaluate(files["run"], str(tmp_path / "qrels.csv"), ["ndcg@3", "arp@3,5"],
                            query_column="uid", rank_column="rank", train=files["train"])
    expected = beyond_accuracy(files["run"], ["arp@3", "arp@5"], train=files["train"],
                               user_column="uid", rank_column="rank")
    assert list(got.columns[-2:]) == ["arp@3", "arp@5"]
    assert got[["arp@3", "arp@5"]].iloc[0].tolist() == pytest.approx(
        expected[["arp@3", "arp@5"]].iloc[0].tolist(), abs=1e-12)


def test_by_groups_by_hand(shared) -> None:
    """Two systems (and a NULL system) over users 1 and 2, k = 2; train rows: item 10 four
    times, 20 once, 40 once (popularity 4, 1, 1; 30 and 50: 0).
    System a: user 1 [10, 20] (30 cut), user 2 [40, 10]: coverage {10, 20, 40} of 10 = 0.3;
    arp user 1 (4 + 1) / 2 = 2.5, user 2 (1 + 4) / 2 = 2.5: 2.5.
    System b: user 1 [30], user 2 [50, 10]: coverage {30, 50, 10} = 0.3; arp user 1 0 / 1 = 0,
    user 2 (0 + 4) / 2 = 2: 1.0.
    System NULL: user 1 [20]: coverage 0.1; arp 1.0.
    ndcg@2 (qrels: user 1 {20}, user 2 {10}): a: user 1 1/log2(3), user 2 1/log2(3);
    b: user 1 0, user 2 1/log2(3) -> mean 1/(2 log2 3); NULL: user 1 1, user 2 (judged, not
    ranked by that group) 0 -> 0.5."""
    run = pd.DataFrame({
        "system": ["a", "a", "a", "a", "a", "b", "b", "b", None],
        "user": [1, 1, 1, 2, 2, 1, 2, 2, 1],
        "item": [10, 20, 30, 40, 10, 30, 50, 10, 20],
        "score": [3.0, 2.0, 1.0, 2.0, 1.0, 1.0, 2.0, 1.0, 1.0],
    })
    qrels = pd.DataFrame({"user": [1, 2], "item": [20, 10]})
    train = pd.DataFrame({"user": [1, 2, 3, 4, 1, 2], "item": [10, 10, 10, 10, 20, 40]})
    got = duckrank.evaluate(run, qrels, ["ndcg@2", "catalog_coverage@2", "arp@2"], by="system",
                            train=train, catalog_size=10, connection=shared)
    assert got["system"].tolist()[:2] == ["a", "b"] and pd.isna(got["system"][2])
    third = 1 / np.log2(3)
    assert got["ndcg@2"].tolist() == pytest.approx([third, third / 2, 0.5], abs=1e-12)
    assert got["catalog_coverage@2"].tolist() == pytest.approx([0.3, 0.3, 0.1], abs=1e-12)
    assert got["arp@2"].tolist() == pytest.approx([2.5, 1.0, 1.0], abs=1e-12)


def test_beyond_requests_alone(data, shared) -> None:
    """Only beyond requests: the counts, then their columns."""
    got = duckrank.evaluate(data["run"], data["qrels"], ["exposure_entropy@5"],
                            query_column="uid", connection=shared)
    assert list(got.columns) == ["scored", "unjudged", "unranked", "dropped",
                                 "exposure_entropy@5"]
    expected = beyond_accuracy(data["run"], "exposure_entropy@5", user_column="uid",
                               connection=shared)
    assert got["exposure_entropy@5"][0] == pytest.approx(expected["exposure_entropy@5"][0],
                                                         abs=1e-12)


def test_connect_registers_the_beyond_macros() -> None:
    """evaluate() without a connection registers only what it calls: the beyond macros too."""
    assert {"arp", "rbo"} <= set(needed_functions(["ndcg@10", "arp@10", "rbo(p=0.8)@5,10"]))


@pytest.mark.parametrize(("metrics", "given", "message"), [
    (["arp@10"], {}, "evaluate: 'arp@10': arp needs train=, which is not given"),
    (["ild_embedding@10"], {"train": "x"}, "ild_embedding needs embeddings="),
    (["catalog_coverage@10"], {}, "catalog_coverage needs catalog= or catalog_size="),
    (["ips_ndcg@10"], {}, "ips_ndcg needs propensities= or train="),
    (["rbo(p=0.8)@10"], {}, "rbo needs other="),
    (["ndcg@10", "exposure_gini@10"], {"per_user": True},
     "evaluate: 'exposure_gini@10' is one value for the whole run; it cannot be given "
     "per_user=True"),
    (["arp@10"], {"per_user": True, "train": "x"},
     "evaluate: 'arp@10' is given as a mean over the run's users; it cannot be given "
     "per_user=True"),
    (["arp@10"], {"train": "train.txt"}, "train='train.txt': give a Parquet or CSV file"),
    (["arp"], {"train": "x"}, "arp.*write name@k"),
])
def test_errors_name_the_argument(data, metrics, given, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        duckrank.evaluate(data["run"], data["qrels"], metrics, query_column="uid", **given)


def test_other_run_needs_the_runs_columns(data, shared) -> None:
    with pytest.raises(ValueError, match="the other run has no query column 'uid'.*other="):
        duckrank.evaluate(data["run"], data["qrels"], ["overlap_at@5"], query_column="uid",
                          other=data["other"].rename(columns={"uid": "u"}), connection=shared)


def test_command_line(data, tmp_path: Path, capsys) -> None:
    """``duckrank evaluate`` takes the side tables with ``duckrank beyond``'s options and prints
    the numbers of evaluate(); a missing one names its flag."""
    for name in ("run", "qrels", "train"):
        data[name].to_parquet(tmp_path / f"{name}.parquet")
    files = [str(tmp_path / "run.parquet"), str(tmp_path / "qrels.parquet")]
    metrics = ["-m", "ndcg@5", "-m", "arp@5", "-m", "catalog_coverage@5"]
    assert main(["evaluate", *files, *metrics, "--query-column", "uid", "--train",
                 str(tmp_path / "train.parquet"), "--catalog-size", "40",
                 "--format", "csv"]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    expected = duckrank.evaluate(*files, ["ndcg@5", "arp@5", "catalog_coverage@5"],
                                 query_column="uid", train=str(tmp_path / "train.parquet"),
                                 catalog_size=40)
    assert printed.iloc[0].tolist() == pytest.approx(expected.iloc[0].tolist(), abs=1e-12)
    assert main(["evaluate", *files, "-m", "arp@5", "--query-column", "uid"]) == 1
    assert capsys.readouterr().err == ("duckrank evaluate: 'arp@5': arp needs --train, which "
                                       "is not given\n")


def test_views_are_dropped(data, shared) -> None:
    """The evaluation's views and tables (beyond's included) are gone after it."""
    def count(sql: str) -> int:
        return shared.sql(sql).fetchall()[0][0]

    views = "SELECT count(*) FROM duckdb_views() WHERE NOT internal"
    tables = "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'duckrank_%'"
    before = count(views)
    run = data["run"].assign(system=data["run"]["uid"] % 2)
    duckrank.evaluate(run, data["qrels"], ["ndcg@5", "arp@5", "overlap_at@5"], by="system",
                      query_column="uid", train=data["train"], other=data["other"],
                      connection=shared)
    assert (count(views), count(tables)) == (before, 0)


def test_a_side_file_is_read_by_its_exact_name(shared, tmp_path: Path) -> None:
    """``train='train[1].csv'`` names that file, not the glob pattern matching ``train1.csv``
    (issue 25). By hand: user 1's top 2 is [10, 20]; in train[1].csv item 10 is rated twice and
    20 once: arp (2 + 1) / 2 = 1.5 (train1.csv, where 10 is rated once, would give 1.0)."""
    run = pd.DataFrame({"user": [1, 1], "item": [10, 20], "score": [2.0, 1.0]})
    qrels = pd.DataFrame({"user": [1], "item": [20]})
    pd.DataFrame({"user": [1, 2, 3], "item": [10, 10, 20]}).to_csv(tmp_path / "train[1].csv",
                                                                   index=False)
    pd.DataFrame({"user": [1, 2], "item": [10, 20]}).to_csv(tmp_path / "train1.csv", index=False)
    got = duckrank.evaluate(run, qrels, ["arp@2"], train=str(tmp_path / "train[1].csv"),
                            connection=shared)
    assert got["arp@2"].tolist() == [1.5]
    with pytest.raises(ValueError, match=r"train='.*nope\.csv': the train file '.*nope\.csv' "
                                         "does not exist"):
        duckrank.evaluate(run, qrels, ["arp@2"], train=str(tmp_path / "nope.csv"),
                          connection=shared)
