"""Time the beyond-accuracy macros (duckrank.metrics.beyond_accuracy) at scale, and the peers
that have the same metric.

* ``--users`` users (default 1,000,000) with a top-``--k`` list (default 10) over a
  ``--items``-item catalogue (default 100,000), item popularity Zipf-like; a second system's
  lists for the list-similarity metrics; ``--interactions`` training interactions (default
  5,000,000) drawn from the same popularity; 32-d float embeddings and 20 categories for every
  item; 5 relevant items per user (for serendipity).
* Each macro over the whole table (the catalogue metrics give one row, the per-user ones are
  averaged with ``avg``), next to ``count(*)`` of the unnested top k (the floor: reading the
  lists at all).
* With ``--peers`` (run with a Python that has them, e.g. a venv of their own: ``PYTHONPATH=.
  /tmp/peers/bin/python -m benchmarks.bench_beyond_accuracy --peers``): RecTools 0.19,
  RePlay 0.22 and Microsoft Recommenders 1.2.1 on the same data in their own input format (long
  pandas frames; building them is not timed), for the ratio. Peers whose method cannot finish at
  this size on this machine are run on the first ``--peer-users`` users (marked) or skipped
  with the reason. ``--rectools`` runs RecTools alone (CatalogCoverage, CoveredUsers,
  SufficientReco, UnrepeatedReco: a venv with RecTools, duckdb and pyarrow is enough).
  ``--recpack`` adds recpack 0.3.6's ``IPSHitRateK`` (the only peer with an
  inverse-propensity metric) against ``ips_precision``; recpack runs in a venv of its own
  (tests/metrics/test_debiased.py says how to make it).

    .venv/bin/python -m benchmarks.bench_beyond_accuracy           # 1,000,000 users
    .venv/bin/python -m benchmarks.bench_beyond_accuracy --quick   # 10,000 users, seconds

The macros run on a plain DuckDB connection with duckrank's beyond-accuracy statements (the same
SQL that ``duckrank.connect()`` registers). Prints one line per query: median seconds over
``--repeat`` runs after a warm-up, CPU seconds, peak resident memory above the memory before.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import duckdb
import numpy as np
import pyarrow as pa

from benchmarks.bench_stats import line, timed
from duckrank.render.beyond_accuracy import MACROS

SEED = 20261123


def _zipf_items(rng: np.random.Generator, n: int, items: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, items + 1) ** 0.9
    return rng.choice(items, size=n, p=weights / weights.sum())


def _lists(rng: np.random.Generator, users: int, k: int, items: int) -> pa.Array:
    """Top-k lists without repeats: 2k popularity-weighted draws per user, repeats dropped (the
    first draw of an item kept), the first k left (fewer where draws repeat too often)."""
    draws = _zipf_items(rng, users * 2 * k, items).reshape(users, 2 * k)
    order = np.argsort(draws, axis=1, kind="stable")
    ordered = np.take_along_axis(draws, order, axis=1)
    repeat = np.zeros_like(draws, dtype=bool)
    np.put_along_axis(repeat, order[:, 1:], ordered[:, 1:] == ordered[:, :-1], axis=1)
    keep = ~repeat & (np.cumsum(~repeat, axis=1) <= k)
    offsets = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int64)
    return pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(draws[keep]))


def load(con: duckdb.DuckDBPyConnection, users: int, k: int, items: int, interactions: int
         ) -> None:
    rng = np.random.default_rng(SEED)
    for name in ("recs", "other"):
        con.register("arrow_in", pa.table({"user": np.arange(users), "rec": _lists(
            rng, users, k, items), "truth": _lists(rng, users, 5, items)}))
        con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM arrow_in")
        con.unregister("arrow_in")
    train = pa.table({"user": rng.integers(0, users, interactions),
                      "item": _zipf_items(rng, interactions, items)})
    con.register("arrow_in", train)
    con.execute("CREATE OR REPLACE TABLE train AS SELECT * FROM arrow_in")
    con.unregister("arrow_in")
    vectors = rng.normal(size=(items, 32)).astype(np.float32)
    con.register("arrow_in", pa.table({
        "item": np.arange(items),
        "embedding": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 32),
    }))
    con.execute("CREATE OR REPLACE TABLE embeddings AS SELECT item, embedding::FLOAT[32] AS "
                "embedding FROM arrow_in")
    con.unregister("arrow_in")
    con.execute(f"CREATE OR REPLACE TABLE categories AS SELECT range AS item, 'c' || (hash(range) "
                f"% 20) AS category FROM range({items})")
    # The test interactions (each user's relevant items), for user_coverage's test := table.
    con.execute("CREATE OR REPLACE TABLE test AS SELECT user, unnest(truth) AS item FROM recs")
    # The training estimate (gamma 0) as a table, for the propensities := form.
    con.execute("CREATE OR REPLACE TABLE propensities AS SELECT item, sqrt(n / max(n) OVER ()) "
                "AS propensity FROM (SELECT item, count(*) AS n FROM train GROUP BY item)")


QUERIES = (
    ("catalog_coverage", "FROM catalog_coverage('recs', {k}, catalog_size := {items})"),
    ("exposure_entropy", "FROM exposure_entropy('recs', {k})"),
    ("exposure_gini", "FROM exposure_gini('recs', {k}, catalog_size := {items})"),
    ("arp", "SELECT avg(arp) FROM arp('recs', 'train', {k})"),
    ("self_information",
     "SELECT avg(self_information) FROM self_information('recs', 'train', {k})"),
    ("long_tail_share", "SELECT avg(long_tail_share) FROM long_tail_share('recs', 'train', {k})"),
    ("ild_embedding", "SELECT avg(ild_embedding) FROM ild_embedding('recs', 'embeddings', {k})"),
    ("ild_category", "SELECT avg(ild_category) FROM ild_category('recs', 'categories', {k})"),
    ("serendipity", "SELECT avg(serendipity) FROM serendipity('recs', 'train', {k}, "
     "catalog_size := {items})"),
    ("inter_user_diversity", "FROM inter_user_diversity('recs', {k}, pairs := 100000)"),
    ("overlap_at",
     "SELECT avg(overlap_at(r.rec, o.rec, {k})) FROM recs r JOIN other o USING (user)"),
    ("jaccard_at",
     "SELECT avg(jaccard_at(r.rec, o.rec, {k})) FROM recs r JOIN other o USING (user)"),
    ("rbo (min)", "SELECT avg(rbo(r.rec, o.rec, {k})) FROM recs r JOIN other o USING (user)"),
    ("rbo (ext)", "SELECT avg(rbo(r.rec, o.rec, {k}, variant := 'ext')) FROM recs r "
     "JOIN other o USING (user)"),
    # Propensities estimated from train (gamma 0); items never trained on weigh 1 / 0.01.
    ("ips_recall", "SELECT avg(ips_recall) FROM ips_recall('recs', {k}, train := 'train', "
     "min_propensity := 0.01)"),
    ("ips_precision", "SELECT avg(ips_precision) FROM ips_precision('recs', {k}, "
     "train := 'train', min_propensity := 0.01)"),
    ("ips_ndcg", "SELECT avg(ips_ndcg) FROM ips_ndcg('recs', {k}, train := 'train', "
     "min_propensity := 0.01)"),
    ("ips_ndcg (table)", "SELECT avg(ips_ndcg) FROM ips_ndcg('recs', {k}, "
     "propensities := 'propensities', min_propensity := 0.01)"),
    # Issue 28: coverage and data quality, rank-discounted novelty, fairness.
    ("user_coverage", "FROM user_coverage('recs', {k}, test := 'test')"),
    ("sufficient_reco", "SELECT avg(sufficient_reco) FROM sufficient_reco('recs', {k})"),
    ("unrepeated_reco", "SELECT avg(unrepeated_reco) FROM unrepeated_reco('recs', {k})"),
    ("arp(rbp)", "SELECT avg(arp) FROM arp('recs', 'train', {k}, discount := 'rbp')"),
    ("exposure_gini(rbp)", "FROM exposure_gini('recs', {k}, catalog_size := {items}, "
     "discount := 'rbp')"),
    ("epc", "SELECT avg(epc) FROM epc('recs', 'train', {k})"),
    ("efd", "SELECT avg(efd) FROM efd('recs', 'train', {k})"),
    ("categorical_diversity", "SELECT avg(categorical_diversity) FROM "
     "categorical_diversity('recs', 'categories', {k})"),
    ("rank_biased_entropy", "SELECT avg(rank_biased_entropy) FROM "
     "rank_biased_entropy('recs', 'categories', {k})"),
    ("aclt", "SELECT avg(aclt) FROM aclt('recs', 'train', {k})"),
    ("aplt", "SELECT avg(aplt) FROM aplt('recs', 'train', {k})"),
    ("pop_reo", "FROM pop_reo('recs', 'train', {k})"),
    ("pop_rsp", "FROM pop_rsp('recs', 'train', {k})"),
    ("reo", "FROM reo('recs', 'train', 'categories', {k}, group_col := 'category')"),
    ("rsp", "FROM rsp('recs', 'train', 'categories', {k}, group_col := 'category')"),
)


def peers(con: duckdb.DuckDBPyConnection, k: int, items: int, peer_users: int, repeat: int,
          duckrank_times: dict[str, tuple[float, float, float]]) -> None:
    """The peers on the same tables, each next to duckrank's time for the same metric."""
    import warnings

    import pandas as pd
    from recommenders.evaluation import python_evaluation as ms
    from rectools.metrics import (
        AvgRecPopularity,
        CatalogCoverage,
        Intersection,
        IntraListDiversity,
        MeanInvUserFreq,
        Serendipity,
    )
    from rectools.metrics.distances import PairwiseHammingDistanceCalculator
    from replay.metrics import Coverage, Surprisal

    warnings.simplefilter("ignore")  # the peers' pandas FutureWarnings

    def long(table: str, limit: int | None = None) -> pd.DataFrame:
        where = f"WHERE user < {limit}" if limit else ""
        return con.execute(
            f"SELECT user AS user_id, unnest(rec[1:{k}]) AS item_id, "
            f"unnest(range(1, len(rec[1:{k}]) + 1)) AS rank FROM {table} {where}").df()

    reco, ref = long("recs"), long("other")
    train = con.execute("SELECT user AS user_id, item AS item_id FROM train").df()

    def run(name: str, metric: str, fn: Callable[[], object], label: str = "") -> None:
        if metric not in duckrank_times:
            return
        line(f"  {name}{label}", timed(fn, repeat, warm_up=False), duckrank_times[metric],
             "duckrank's")

    run("RecTools CatalogCoverage", "catalog_coverage",
        lambda: CatalogCoverage(k=k, normalize=True).calc(reco, np.arange(items)))
    run("RecTools AvgRecPopularity", "arp",
        lambda: AvgRecPopularity(k=k).calc(reco, train))
    run("RecTools MeanInvUserFreq", "self_information",
        lambda: MeanInvUserFreq(k=k).calc(reco, train))
    run("RecTools Intersection", "overlap_at", lambda: Intersection(k=k).calc(reco, ref))
    truth = con.execute("SELECT user AS user_id, unnest(truth) AS item_id FROM recs").df()
    run("RecTools Serendipity", "serendipity",
        lambda: Serendipity(k=k).calc(reco, truth, train, np.arange(items)))
    replay_reco = reco.rename(columns={"user_id": "query_id"}).assign(
        rating=lambda f: -f["rank"].astype(float))[["query_id", "item_id", "rating"]]
    replay_train = train.rename(columns={"user_id": "query_id"})
    run("RePlay Surprisal", "self_information", lambda: Surprisal(k)(replay_reco, replay_train))
    run("RePlay Coverage", "catalog_coverage", lambda: Coverage(k)(replay_reco, replay_train))
    ms_reco = reco.rename(columns={"user_id": "userID", "item_id": "itemID"})[["userID", "itemID"]]
    ms_train = train.rename(columns={"user_id": "userID", "item_id": "itemID"}).drop_duplicates()
    ms_train["userID"] += 10 ** 9  # it refuses recommendations of training pairs
    run("Recommenders distributional_coverage", "exposure_entropy",
        lambda: ms.distributional_coverage(ms_train, ms_reco))
    run("Recommenders catalog_coverage", "catalog_coverage",
        lambda: ms.catalog_coverage(ms_train, ms_reco))
    # Per-user Python loops: on the first peer_users users; the ratio is to duckrank's time on
    # all users, so it understates duckrank's lead by users / peer_users.
    categories = con.execute("SELECT item, category FROM categories").df().set_index("item")
    one_hot = pd.get_dummies(categories["category"]).astype(np.float32)
    few = long("recs", peer_users)
    ild = IntraListDiversity(k=k, distance_calculator=PairwiseHammingDistanceCalculator(one_hot))
    run("RecTools IntraListDiversity (Hamming)", "ild_category", lambda: ild.calc(few),
        f" [{peer_users:,} users]")
    print("  Recommenders diversity (item_feature_vector): not run; it scores every pair of "
          f"catalogue items ({items:,}^2) in pandas apply")


def rectools_peers(con: duckdb.DuckDBPyConnection, k: int, items: int, repeat: int,
                   duckrank_times: dict[str, tuple[float, float, float]]) -> None:
    """RecTools alone (a venv with only RecTools, duckdb and pyarrow): its catalogue coverage
    and its recommendation data-quality metrics, each next to duckrank's time."""
    import warnings

    from rectools.metrics import CatalogCoverage, CoveredUsers, SufficientReco, UnrepeatedReco

    warnings.simplefilter("ignore")
    reco = con.execute(f"SELECT user AS user_id, unnest(rec[1:{k}]) AS item_id, "
                       f"unnest(range(1, len(rec[1:{k}]) + 1)) AS rank FROM recs").df()
    test = con.execute("SELECT user AS user_id, item AS item_id FROM test").df()
    for name, metric, fn in (
        ("RecTools CatalogCoverage", "catalog_coverage",
         lambda: CatalogCoverage(k=k, normalize=True).calc(reco, np.arange(items))),
        ("RecTools CoveredUsers", "user_coverage", lambda: CoveredUsers(k=k).calc(reco, test)),
        ("RecTools SufficientReco", "sufficient_reco", lambda: SufficientReco(k=k).calc(reco)),
        ("RecTools UnrepeatedReco", "unrepeated_reco", lambda: UnrepeatedReco(k=k).calc(reco)),
    ):
        if metric in duckrank_times:
            line(f"  {name}", timed(fn, repeat, warm_up=False), duckrank_times[metric],
                 "duckrank's")


def recpack_peer(con: duckdb.DuckDBPyConnection, k: int, items: int, repeat: int,
                 duckrank_times: dict[str, tuple[float, float, float]]) -> None:
    """recpack's IPSHitRateK (the sum over hits of 1 / the item's share of the truths; k x
    ips_precision(..., estimator := 'ips') with those propensities), next to duckrank's
    ips_precision. Its sparse matrices are built from the same lists first (not timed)."""
    from recpack.metrics import IPSHitRateK
    from scipy.sparse import csr_matrix

    users = con.execute("SELECT count(*) FROM recs").fetchall()[0][0]

    def matrix(column: str, scored: bool) -> csr_matrix:
        rows = con.execute(f"SELECT user, unnest({column}[1:{k}]) AS item, "
                           f"unnest(range({k}, {k} - len({column}[1:{k}]), -1)) AS score "
                           "FROM recs").fetchnumpy()
        values = rows["score"].astype(float) if scored else np.ones(len(rows["item"]))
        return csr_matrix((values, (rows["user"], rows["item"])), shape=(users, items))

    y_true, y_pred = matrix("truth", False), matrix("rec", True)

    def run() -> float:
        metric = IPSHitRateK(k)
        with np.errstate(divide="ignore"):  # items never relevant: recpack sets their 1/0 to 0
            metric.fit(y_true)
        metric.calculate(y_true, y_pred)
        return metric.value

    if "ips_precision" in duckrank_times:
        line("  recpack IPSHitRateK", timed(run, repeat, warm_up=False),
             duckrank_times["ips_precision"], "duckrank's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--interactions", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--peers", action="store_true")
    parser.add_argument("--peer-users", type=int, default=100_000)
    parser.add_argument("--rectools", action="store_true",
                        help="RecTools alone: CatalogCoverage and its data-quality metrics")
    parser.add_argument("--recpack", action="store_true",
                        help="recpack's IPSHitRateK (run with a Python that has recpack)")
    parser.add_argument("--metrics", default="",
                        help="comma-separated names from the list below (default: all)")
    parser.add_argument("--quick", action="store_true",
                        help="10,000 users, 10,000 items, 50,000 interactions")
    args = parser.parse_args()
    if args.quick:
        args.users, args.items, args.interactions = 10_000, 10_000, 50_000
        args.peer_users = min(args.peer_users, 2_000)

    con = duckdb.connect(config={"threads": args.threads})
    for statement in MACROS:
        con.execute(statement)
    load(con, args.users, args.k, args.items, args.interactions)
    print(f"{args.users:,} users x top-{args.k}, {args.items:,} items, "
          f"{args.interactions:,} interactions, {args.threads} threads")

    def sql(query: str) -> Callable[[], object]:
        return lambda: con.execute(query).fetchall()

    # A warm-up run only at small sizes: at 1,000,000 users it would double a run of minutes.
    warm_up = args.users <= 100_000
    floor = timed(sql(f"SELECT count(*) FROM (SELECT unnest(rec[1:{args.k}]) FROM recs)"),
                  args.repeat, warm_up)
    line("count(*) of the unnested top k", floor)
    times = {}
    wanted = set(filter(None, args.metrics.split(",")))
    for name, query in QUERIES:
        if wanted and name.split()[0] not in wanted:
            continue
        times[name.split()[0]] = timed(sql(query.format(k=args.k, items=args.items)),
                                       args.repeat, warm_up)
        line(name, times[name.split()[0]], floor, "count")
    if args.peers:
        peers(con, args.k, args.items, args.peer_users, args.repeat, times)
    if args.rectools:
        rectools_peers(con, args.k, args.items, args.repeat, times)
    if args.recpack:
        recpack_peer(con, args.k, args.items, args.repeat, times)
    con.close()


if __name__ == "__main__":
    main()
