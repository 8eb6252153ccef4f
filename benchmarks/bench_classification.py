"""Time the AUC, classification and pointwise metrics (issue 28: duckrank.metrics.classification
and duckrank.metrics.pointwise) against the fastest peer that has each, in one run.

* Ranked lists: ``--users`` users (default 1,000,000) with a top-``--k`` list (default 20) over an
  ``--items``-item catalogue and 5 relevant items each (some of them in the list). duckrank:
  ``avg(f_beta(...))``, ``mcc``, ``partial_auc``, ``pap``, ``lauc``, ``gauc``. Peer: RecTools 0.19
  (F1Beta, MCC, PartialAUC, PAP) on the same data as its long pandas frames (building them is
  not timed), on the first ``--peer-users`` users when it cannot take all (marked), run with
  ``--peers`` in a Python that has it: ``PYTHONPATH=. /tmp/peers/bin/python -m
  benchmarks.bench_classification --peers``.
* Pointwise: ``--rows`` (prediction, rating, probability, label) rows (default 10,000,000) in
  ``--groups`` users. duckrank: ``rmse``, ``mae``, ``r2``, ``log_loss``, ``roc_auc`` and
  ``pr_auc`` over the table, and ``rmse``, ``roc_auc``, ``pr_auc`` with GROUP BY user. Peer:
  scikit-learn on the whole table as numpy arrays (it has no grouped form: the GROUP BY lines
  have no peer line).

    .venv/bin/python -m benchmarks.bench_classification --quick   # seconds
    .venv/bin/python -m benchmarks.bench_classification           # the full sizes

Prints one line per query: median seconds over ``--repeat`` runs after a warm-up, CPU seconds,
peak memory above the memory before, and the ratio to the peer's line above it.
"""

from __future__ import annotations

import argparse

import duckdb
import numpy as np
import pyarrow as pa

import duckrank
from benchmarks.bench_stats import line, timed

SEED = 20261128


def ranked(users: int, k: int, items: int) -> pa.Table:
    """Lists of k distinct items per user (a random offset into a permutation, so no repeats)
    and 5 relevant items, about half of them in the list."""
    rng = np.random.default_rng(SEED)
    permutation = rng.permutation(items)
    start = rng.integers(0, items - k - 10, users)
    rec = permutation[start[:, None] + np.arange(k)]
    inside = permutation[start[:, None] + rng.integers(0, k, (users, 3))]
    outside = permutation[start[:, None] + k + rng.integers(0, 10, (users, 2))]
    truth = np.concatenate([inside, outside], axis=1)
    as_lists = [pa.ListArray.from_arrays(np.arange(0, users * w + 1, w, dtype=np.int32),
                                         pa.array(a.ravel(), pa.int64())) for w, a in
                ((k, rec), (truth.shape[1], truth))]
    return pa.table({"user": np.arange(users), "rec": as_lists[0], "truth": as_lists[1]})


def pointwise(rows: int, groups: int) -> pa.Table:
    rng = np.random.default_rng(SEED + 1)
    rating = rng.integers(1, 6, rows).astype(np.float64)
    label = rng.random(rows) < 0.3
    return pa.table({
        "user": rng.integers(0, groups, rows), "prediction": rating + rng.normal(0, 0.9, rows),
        "rating": rating, "probability": np.clip(0.3 + 0.2 * label + rng.normal(0, 0.2, rows),
                                                 0, 1), "label": label,
    })


def run_duckdb(con: duckdb.DuckDBPyConnection, sql: str, repeat: int):
    return timed(lambda: con.sql(sql).fetchall(), repeat)


def rectools_lines(table: pa.Table, k: int, catalog: int, repeat: int,
                   ours: dict[str, tuple]) -> None:
    import pandas as pd
    from rectools import Columns, metrics

    frame = table.to_pandas()
    reco = frame[["user", "rec"]].explode("rec").rename(
        columns={"user": Columns.User, "rec": Columns.Item})
    reco[Columns.Rank] = reco.groupby(Columns.User).cumcount() + 1
    interactions = frame[["user", "truth"]].explode("truth").rename(
        columns={"user": Columns.User, "truth": Columns.Item})
    reco, interactions = pd.DataFrame(reco), pd.DataFrame(interactions)
    catalog_ids = np.arange(catalog)
    cases = {
        "f_beta": lambda: metrics.F1Beta(k=k).calc(reco, interactions),
        "mcc": lambda: metrics.MCC(k=k).calc(reco, interactions, catalog_ids),
        "partial_auc": lambda: metrics.PartialAUC(k=5).calc(reco, interactions),
        "pap": lambda: metrics.PAP(k=5).calc(reco, interactions),
    }
    for name, call in cases.items():
        theirs = timed(call, repeat)
        line(f"  RecTools {name} ({len(frame):,} users)", theirs)
        line(f"  duckrank {name}", ours[name], theirs, "of RecTools")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--peer-users", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--peers", action="store_true", help="RecTools (its own venv)")
    parser.add_argument("--quick", action="store_true", help="10,000 users, 100,000 rows")
    args = parser.parse_args()
    if args.quick:
        args.users, args.rows, args.groups, args.peer_users = 10_000, 100_000, 1_000, 10_000

    con = duckrank.connect()
    con.execute(f"SET threads = {args.threads}")
    lists = ranked(args.users, args.k, args.items)
    con.register("lists", lists)
    k = args.k
    queries = {
        "f_beta": f"select avg(f_beta(rec, truth, {k})) from lists",
        "mcc": f"select avg(mcc(rec, truth, {k}, catalog_size := {args.items})) from lists",
        "partial_auc": "select avg(partial_auc(rec, truth, negatives := 5)) from lists",
        "pap": "select avg(pap(rec, truth, negatives := 5)) from lists",
        "lauc": f"select avg(lauc(rec, truth, {k}, candidates := {args.items})) from lists",
        "gauc": "select gauc(rec, truth) from lists",
    }
    print(f"ranked lists: {args.users:,} users, k = {k}, threads = {args.threads}")
    floor = run_duckdb(con, "select count(*) from (select unnest(rec) from lists)", args.repeat)
    line("  floor: count(*) of the unnested lists", floor)
    ours = {}
    for name, sql in queries.items():
        ours[name] = run_duckdb(con, sql, args.repeat)
        line(f"  duckrank {name}", ours[name], floor, "of the floor")
    if args.peers:
        peer_users = min(args.peer_users, args.users)
        if peer_users < args.users:
            con.register("peer_lists", lists.slice(0, peer_users))
            ours = {name: run_duckdb(con, sql.replace("from lists", "from peer_lists"),
                                     args.repeat) for name, sql in queries.items()
                    if name in ("f_beta", "mcc", "partial_auc", "pap")}
        rectools_lines(lists.slice(0, peer_users), k, args.items, args.repeat, ours)

    rows = pointwise(args.rows, args.groups)
    con.register("points", rows)
    print(f"pointwise: {args.rows:,} rows, {args.groups:,} users")
    try:
        from sklearn import metrics as sk
    except ImportError:
        sk = None
    arrays = {c: rows[c].to_numpy() for c in ("prediction", "rating", "probability", "label")}
    table_cases = {
        "rmse": ("rmse(prediction, rating)", lambda: sk.root_mean_squared_error(
            arrays["rating"], arrays["prediction"])),
        "mae": ("mae(prediction, rating)", lambda: sk.mean_absolute_error(
            arrays["rating"], arrays["prediction"])),
        "r2": ("r2(prediction, rating)", lambda: sk.r2_score(arrays["rating"],
                                                              arrays["prediction"])),
        "log_loss": ("log_loss(probability, label)", lambda: sk.log_loss(
            arrays["label"], arrays["probability"])),
        "roc_auc": ("roc_auc(probability, label)", lambda: sk.roc_auc_score(
            arrays["label"], arrays["probability"])),
        "pr_auc": ("pr_auc(probability, label)", lambda: sk.average_precision_score(
            arrays["label"], arrays["probability"])),
    }
    for name, (call, peer) in table_cases.items():
        theirs = timed(peer, args.repeat) if sk else None
        if theirs:
            line(f"  scikit-learn {name}", theirs)
        line(f"  duckrank {name}", run_duckdb(con, f"select {call} from points", args.repeat),
             theirs, "of scikit-learn")
    for name, call in (("rmse", "rmse(prediction, rating)"),
                       ("roc_auc", "roc_auc(probability, label)"),
                       ("pr_auc", "pr_auc(probability, label)")):
        line(f"  duckrank {name} per user (GROUP BY)", run_duckdb(
            con, f"select avg(v) from (select {call} as v from points group by user)",
            args.repeat))


if __name__ == "__main__":
    main()
