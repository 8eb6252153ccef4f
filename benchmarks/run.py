"""duckrank's benchmark suite: one command, deterministic data, each measurement in a fresh process.

    .venv/bin/python -m benchmarks.run            # everything (about 30 min on 2 cores)
    .venv/bin/python -m benchmarks.run --quick    # a smoke run, under a minute
    .venv/bin/python -m benchmarks.run --only main --users 1000000 --threads 2

Data (benchmarks.data) is written to benchmarks/data/ on first use. The main grid times every
binary metric as ``SELECT avg(metric(rec, truth, k)) FROM ev`` over an in-memory table loaded from
Parquet, at k = 10 and 100, 100,000 and 1,000,000 users, BIGINT and VARCHAR ids, 1 and 2
threads, next to two references measured the same way:

* the scan floor: DuckDB summing the same list elements (``list_sum(rec[1:k])`` and
  ``list_sum(truth)``; for VARCHAR the sum of the strings' lengths);
* the list read: the cheapest query that reads both list columns (``count(rec[1])`` and
  ``count(truth[1])``), what any query over them pays before computing anything;
* hand-written SQL for ndcg: UNNEST with positions, JOIN to truth, GROUP BY (what an analyst
  writes without duckrank);
* for ndcg, the performance study's fastest macro (``study_ndcg_sql``), which skips the
  duplicate and NULL conventions: the gap is what the definition costs;
* for ndcg, duckrank's own SQL matching step (``duckrank.connect(native=False)``), the path
  without the native step: the gap is what the native step buys.

Extras: ranx and pytrec-eval-terrier (100,000 users, where installed), to_ordered_list on
10,000,000 long rows, the peak memory of streaming 1,000,000
and 10,000,000 users straight from Parquet, and that of ``duckrank evaluate`` on long-format
Parquet at 1,000,000 and 10,000,000 users (benchmarks/bench_long_memory.py). The sections of
``OWN_SCRIPTS`` (edrc, the statistical tests, comparison reports, ``duckrank trec_eval``, the
beyond-accuracy metrics, the protocol, the models, Spark, long tables, the tie order, start-up,
trec_eval's C binary, ir_measures' families, classification, inference, the HTML report, fusion,
off-policy estimators) run their own
``benchmarks/bench_<section>.py`` in a fresh process, each against the peers it names.

Every row prints as it finishes; ``--json`` keeps them all. The machine is shared: compare the
ratios, measured in the same run, rather than absolute seconds.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb

from benchmarks.bench_long_memory import long_memory
from benchmarks.data import DATA_DIR, dataset
from benchmarks.goals import goal_lines
from duckrank.metrics.binary import METRICS

ROOT = Path(__file__).resolve().parent.parent
BINARY = [m.name for m in METRICS]
HAND = "hand SQL ndcg"
FLOOR = "scan floor"
READ = "list read"
READ_SQL = "SELECT count(rec[1]) + count(truth[1]) FROM ev"
STUDY = "study C_auto ndcg (no dedup)"
SQL_FORM = "ndcg, SQL matching step"


def floor_sql(k: int, ids: str) -> str:
    if ids == "bigint":
        return f"SELECT sum(list_sum(rec[1:{k}])) + sum(list_sum(truth)) FROM ev"
    return (
        f"SELECT sum(list_sum(list_transform(rec[1:{k}], lambda x: strlen(x)))) "
        "+ sum(list_sum(list_transform(truth, lambda x: strlen(x)))) FROM ev"
    )


def hand_ndcg_sql(k: int) -> str:
    """binary nDCG@k the way it is written without duckrank (ignores repeated items)."""
    return f"""
        WITH recs AS (SELECT uid, unnest(rec[1:{k}]) AS item,
                             generate_subscripts(rec[1:{k}], 1) AS pos FROM ev),
             truths AS (SELECT uid, unnest(truth) AS item FROM ev),
             dcg AS (SELECT uid, sum(1.0 / log2(pos + 1)) AS dcg
                     FROM recs JOIN truths USING (uid, item) GROUP BY uid),
             ideal AS (SELECT uid, sum(1.0 / log2(i + 1)) AS idcg
                       FROM (SELECT uid, unnest(range(1, least({k}, len(truth)) + 1)) AS i
                             FROM ev) GROUP BY uid)
        SELECT avg(coalesce(dcg, 0) / idcg) FROM ideal LEFT JOIN dcg USING (uid)"""


def study_ndcg_sql(k: int) -> str:
    """The performance study's fastest macro (C_auto, shared notes): no duplicate handling and
    len(truth) for n. The gap to duckrank's ndcg is the price of the definition's conventions."""
    dcg = (f"CASE WHEN {k} <= 20 THEN list_sum(list_transform(rec[1:{k}], lambda x, i: "
           "list_contains(truth, x)::DOUBLE / log2(i + 1))) ELSE coalesce(list_sum(list_transform("
           "list_transform(truth, lambda t: list_position(rec, t)), lambda p: CASE WHEN p <= "
           f"{k} THEN 1.0 / log2(p + 1) ELSE 0.0 END)), 0.0) END")
    ideal = (f"list_sum(list_transform(range(1, least({k}, len(truth)) + 1), "
             "lambda i: 1.0 / log2(i + 1)))")
    return f"SELECT avg({dcg} / {ideal}) FROM ev"


def load(path: Path) -> list[str]:
    return [f"CREATE TABLE ev AS SELECT * FROM read_parquet('{path}')"]


def measure(spec: dict[str, Any], timeout: float = 1800) -> dict[str, Any]:
    """Run benchmarks.measure in a fresh interpreter and return its result (or the error)."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.measure", json.dumps(spec)],
            cwd=ROOT, capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


class Report:
    """Collects rows, prints each as it comes, writes them all as JSON at the end."""

    def __init__(self, json_path: Path | None) -> None:
        self.rows: list[dict[str, Any]] = []
        self.json_path = json_path
        self.started = time.time()

    def section(self, title: str, header: str) -> None:
        print(f"\n### {title}\n\n{header}\n" + "|".join(["---"] * (header.count("|") - 1))
              .join(["|", "|"]), flush=True)

    def add(self, row: dict[str, Any], line: str) -> None:
        self.rows.append(row)
        print(line, flush=True)

    def save(self) -> None:
        if self.json_path:
            self.json_path.write_text(json.dumps({"environment": environment(), "rows": self.rows},
                                                 indent=1))


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def main_grid(report: Report, users: list[int], ids: list[str], threads: list[int],
              ks: list[int], metrics: list[str]) -> None:
    report.section(
        "Binary metrics: SELECT avg(metric(rec, truth, k)) FROM ev (median of 3 warm runs)",
        "| users | ids | threads | k | query | s | rows/s | ×floor | ×hand | cpu s | peak Δ MB |",
    )
    for n in users:
        for id_kind in ids:
            path = dataset(n, id_kind)
            for t in threads:
                for k in ks:
                    base: dict[str, float] = {}
                    ndcg = f"SELECT avg(ndcg(rec, truth, {k})) FROM ev"
                    queries = [(FLOOR, floor_sql(k, id_kind), True), (READ, READ_SQL, True),
                               (HAND, hand_ndcg_sql(k), True),
                               (STUDY, study_ndcg_sql(k), True), (SQL_FORM, ndcg, False)] + [
                        (m, f"SELECT avg({m}(rec, truth, {k})) FROM ev", True) for m in metrics]
                    for name, sql, native in queries:
                        r = measure({"kind": "sql", "setup": load(path), "query": sql,
                                     "threads": t, "native": native})
                        row = {"section": "main", "users": n, "ids": id_kind, "threads": t,
                               "k": k, "query": name, **r}
                        if "error" in r:
                            report.add(row, f"| {n:,} | {id_kind} | {t} | {k} | {name} | "
                                            f"error: {r['error']} |")
                            continue
                        base.setdefault(name, r["seconds"])
                        s = r["seconds"]
                        row["x_floor"] = s / base[FLOOR] if FLOOR in base else None
                        row["x_hand"] = s / base[HAND] if HAND in base else None
                        report.add(row, (
                            f"| {n:,} | {id_kind} | {t} | {k} | {name} | {s:.3f} | "
                            f"{n / s / 1e6:.2f} M | {_fmt(row['x_floor'])} | "
                            f"{_fmt(row['x_hand'])} | {r['cpu_seconds']:.3f} | "
                            f"{r['peak_mb']:.0f} |"))


def peers(report: Report, users: int, ks: list[int]) -> None:
    report.section(
        f"ranx and pytrec-eval-terrier, ndcg@k, {users:,} users, BIGINT ids",
        "| tool | k | export s | compute s | total s | ×duckrank ndcg | value |",
    )
    path = dataset(users, "bigint")
    ours = {}
    for k in ks:
        r = measure({"kind": "sql", "setup": load(path), "threads": 2,
                     "query": f"SELECT avg(ndcg(rec, truth, {k})) FROM ev"})
        ours[k] = r.get("seconds")
        report.add({"section": "peers", "tool": "duckrank", "k": k, **r},
                   f"| duckrank | {k} | 0 | {_fmt(r.get('seconds'), 3)} | "
                   f"{_fmt(r.get('seconds'), 3)} | 1.00 | {r.get('value')} |")
    for tool, module in (("ranx", "ranx"), ("pytrec", "pytrec_eval")):
        try:
            __import__(module)
        except ImportError:
            report.add({"section": "peers", "tool": tool, "error": "not installed"},
                       f"| {tool} | – | not installed | | | | |")
            continue
        r = measure({"kind": tool, "setup": load(path), "threads": 2, "ks": ks, "repeat": 3})
        if "error" in r:
            report.add({"section": "peers", "tool": tool, **r}, f"| {tool} | error: {r['error']}")
            continue
        for k in ks:
            kr = r["by_k"][str(k)]
            total = kr["export_seconds"] + kr["seconds"]
            ratio = total / ours[k] if ours.get(k) else None
            report.add({"section": "peers", "tool": tool, "k": k, **kr}, (
                f"| {tool} | {k} | {kr['export_seconds']:.2f} | {kr['seconds']:.3f} | "
                f"{total:.2f} | {_fmt(ratio, 1)} | {kr['value']} |"))


def ordered_list(report: Report, rows: int) -> None:
    users, per_user = rows // 100, 100
    setup = [f"""CREATE TABLE long AS SELECT i // {per_user} AS uid,
                     (i * 7919) % 1000003 AS item, ((i * 104729) % 10007) / 10007.0 AS score
                 FROM range({rows}) t(i)"""]
    report.section(f"to_ordered_list: {rows:,} long rows, {users:,} users x {per_user} items",
                   "| query | s | rows/s | ×native list(ORDER BY) | peak Δ MB |")
    native = None
    for name, agg in (("native list(item ORDER BY score DESC)", "list(item ORDER BY score DESC)"),
                      ("to_ordered_list(item, score, '-reverse')",
                       "to_ordered_list(item, score, '-reverse')")):
        r = measure({"kind": "sql", "setup": setup, "threads": 2,
                     "query": f"SELECT sum(len(l)) FROM (SELECT uid, {agg} AS l FROM long "
                              "GROUP BY uid)"})
        if "error" in r:
            report.add({"section": "ordered_list", "query": name, **r}, f"| {name} | error: "
                       f"{r['error']} |")
            continue
        native = native or r["seconds"]
        report.add({"section": "ordered_list", "query": name, "rows": rows, **r}, (
            f"| {name} | {r['seconds']:.3f} | {rows / r['seconds'] / 1e6:.1f} M | "
            f"{r['seconds'] / native:.2f} | {r['peak_mb']:.0f} |"))


def streaming(report: Report, user_counts: list[int]) -> None:
    report.section("Streaming from Parquet: SELECT avg(ndcg(rec, truth, 10)) FROM read_parquet(..)"
                   ", 2 threads", "| users | s | rows/s | peak RSS MB | peak Δ MB |")
    for n in user_counts:
        path = dataset(n, "bigint")
        r = measure({"kind": "sql", "threads": 2, "repeat": 1,
                     "query": f"SELECT avg(ndcg(rec, truth, 10)) FROM read_parquet('{path}')"})
        if "error" in r:
            report.add({"section": "streaming", "users": n, **r}, f"| {n:,} | error: "
                       f"{r['error']} |")
            continue
        report.add({"section": "streaming", "users": n, **r}, (
            f"| {n:,} | {r['seconds']:.2f} | {n / r['seconds'] / 1e6:.2f} M | "
            f"{r['rss_mb']:.0f} | {r['peak_mb']:.0f} |"))


def own_script(report: Report, section: str, title: str, arguments: list[str]) -> None:
    """A section measured by its own script (``benchmarks/bench_<section>.py``) in a fresh
    process; its output goes into the report as it printed it."""
    module = f"benchmarks.bench_{section}"
    print(f"\n### {section} ({title}; benchmarks/bench_{section}.py, its own output)\n",
          flush=True)
    try:
        done = subprocess.run([sys.executable, "-m", module, *arguments], cwd=ROOT,
                              capture_output=True, text=True, timeout=3600)
        output = done.stdout.strip() or done.stderr.strip().splitlines()[-1]
    except subprocess.TimeoutExpired:
        output = "timed out after 3600 s"
    report.add({"section": section, "arguments": arguments, "output": output},
               "\n".join(f"    {line}" for line in output.splitlines()))


def environment() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version(), "duckdb": duckdb.__version__}
    for package in ("numpy", "pyarrow", "ranx", "pytrec-eval-terrier"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "not installed"
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo
                if line.startswith("model name")), platform.processor())
    cores = sum(line.startswith("processor") for line in cpuinfo)
    memory = int(Path("/proc/meminfo").read_text().split()[1]) / 1024 / 1024
    return {"date": time.strftime("%Y-%m-%d %H:%M %Z"),
            "machine": f"{cpu}, {cores} vCPU, {memory:.0f} GiB", **found}


# Sections measured by their own script, benchmarks/bench_<section>.py: section -> (title, the
# script's arguments for the full run).
OWN_SCRIPTS = {
    "edrc": ("10,000 users, 1,000-item lists; rank correlations at 1,000,000 users",
             ["--users", "10000", "--corr-users", "1000000", "--repeat", "1", "--no-warm-up"]),
    "stats": ("1,000,000 pairs, 100,000 users, 10,000 trials, with ranx", ["--ranx"]),
    "compare": ("5 systems x 100,000 users, 4 metrics, t-test and 100-trial randomization, "
                "with ranx", []),
    "trec_eval": ("duckrank trec_eval against pytrec_eval and ir_measures", []),
    "beyond_accuracy": ("1,000,000 users x top 10, 100,000-item catalogue", []),
    "protocol": ("splits and candidate sampling, 100,000 users x 100,000 items", []),
    "models": ("xCLiMF training, 100,000 and 1,000,000 ratings", []),
    "spark": ("Spark local[2], 100,000 users, k = 10: native SQL, Arrow UDF, MLlib, scan",
              ["--ids", "bigint", "--k", "10", "--runs", "3", "--blocks", "ndcg", "mllib",
               "--mllib-rdd"]),
    "graded": ("300,000 users x top 100, BIGINT and VARCHAR ids: binary ndcg vs graded "
               "ndcg/dcg/err at k = 10 and 100", []),
    "long": ("end to end from long Parquet: 1,000,000 users x 100 items; peak RSS at "
             "1,000,000 and 10,000,000 users", []),
    "option_cost": ("300,000 users x top 100 BIGINT, k = 10: the options' defaults vs the "
                    "macros before them", []),
    "tie_order": ("evaluate on 40,000 users x 100 BIGINT ids: ties by the id's text vs by its "
                  "value, native top-K, SQL top-K and whole list", []),
    # The eighth session's families, each against the peer a user would otherwise pick.
    "startup": ("import, connect, --help, --version, evaluate and trec_eval on the sample, "
                "against `import duckdb`", []),
    "trec_eval_c": ("duckrank trec_eval -m all_trec against NIST's trec_eval 10.0 binary", []),
    "ir_measures": ("ir_measures' names, ndeval's and cwl_eval's families against ir_measures, "
                    "pyndeval and cwl-eval", []),
    "classification": ("AUC, classification and pointwise metrics against RecTools and "
                       "scikit-learn", []),
    "inference": ("Tukey's HSD and ANOVA over 10 systems x 100,000 queries against ranx and "
                  "statsmodels", []),
    "report": ("compare with its HTML page against compare alone, 5 systems x 100,000 queries",
               []),
    "fusion": ("rank fusion and its grid optimiser against ranx 0.3.21", []),
    "off_policy": ("10,000,000 logged rounds against obp's estimate_policy_values", []),
    # The tenth session's.
    "prefs": ("trec_eval 10's prefs_* measures as SQL functions, 10,000 queries, against "
              "duckrank trec_eval -R prefs and the trec_eval 10.0 binary", []),
}
SECTIONS = (
    "main", "peers", "ordered_list", "streaming", "long_memory", *OWN_SCRIPTS
)


def main() -> None:
    parser = argparse.ArgumentParser(description="duckrank benchmark suite")
    parser.add_argument("--quick", action="store_true", help="a smoke run, under a minute")
    parser.add_argument("--only", nargs="*", choices=SECTIONS, help="run only these sections")
    parser.add_argument("--users", type=int, nargs="*", help="user counts of the main grid")
    parser.add_argument("--ids", nargs="*", choices=("bigint", "varchar"))
    parser.add_argument("--threads", type=int, nargs="*")
    parser.add_argument("--k", type=int, nargs="*")
    parser.add_argument("--metrics", nargs="*", choices=BINARY)
    parser.add_argument("--json", type=Path, default=DATA_DIR / "results.json",
                        help="where to write every row (default benchmarks/data/results.json)")
    args = parser.parse_args()

    sections = args.only or (("main",) if args.quick else SECTIONS)
    users = args.users or ([100_000] if args.quick else [100_000, 1_000_000])
    ids = args.ids or (["bigint"] if args.quick else ["bigint", "varchar"])
    threads = args.threads or ([2] if args.quick else [1, 2])
    ks = args.k or [10, 100]
    metrics = args.metrics or (["ndcg", "precision_at", "auc"] if args.quick else BINARY)

    print("## duckrank benchmarks\n")
    for key, value in environment().items():
        print(f"- {key}: {value}")
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    report = Report(args.json)
    if "main" in sections:
        main_grid(report, users, ids, threads, ks, metrics)
    if "peers" in sections:
        peers(report, 100_000, ks)
    if "ordered_list" in sections:
        ordered_list(report, 10_000_000)
    if "streaming" in sections:
        streaming(report, [1_000_000, 10_000_000])
    if "long_memory" in sections:
        long_memory(report, [1_000_000, 10_000_000])
    for section, (title, arguments) in OWN_SCRIPTS.items():
        if section in sections:
            own_script(report, section, title, arguments)
    report.save()
    print("\n### Goals\n\n" + "\n".join(goal_lines(report.rows)))
    print(f"\n(total {time.time() - report.started:.0f} s)")


if __name__ == "__main__":
    main()
