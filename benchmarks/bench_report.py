"""Time the HTML report against the comparison it shows (issue 30's goal: the report with its HTML
page within 1.5x of the comparison alone), measured in one run on the same files.

The data is ``bench_compare``'s: ``--systems`` TREC runs of ``--users`` queries, ``--depth``
items each, binary qrels; the metrics are its four (ndcg@10, map@100, mrr, precision@5). Lines:

* ``compare``: ``duckrank.compare`` with its defaults (randomization test, ``--trials``
  trials, Holm, 95% bootstrap intervals), then the text table: what ``duckrank compare`` does;
* ``compare + HTML page``: the same, then the page (``duckrank report``'s work): the queries
  listed, their rankings read from the run files, the page written;
* ``HTML page alone``: the page's part of the line above, on the report already made.

One run each by default (``--repeat``: the median of more); the machine is shared, so read the
ratio, measured in the same run.

    .venv/bin/python -m benchmarks.bench_report            # 5 systems x 100,000 queries
    .venv/bin/python -m benchmarks.bench_report --quick    # 5 systems x 5,000 queries
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path
from typing import Any

import duckrank
from benchmarks.bench_compare import METRICS, write_files
from benchmarks.bench_stats import line, timed
from duckrank.evaluation import column_names
from duckrank.reports.compare import TRIALS, Inputs, Report, systems_of
from duckrank.reports.html_report import page_data, ranking_depth, write_html
from duckrank.reports.rankings import read_rankings


def compare(runs: list[Path], qrels: Path, trials: int) -> Report:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = duckrank.compare(runs, str(qrels), list(METRICS), trials=trials)
    report.table()
    return report


def page(report: Report, runs: list[Path], qrels: Path, out: Path) -> int:
    """The HTML page of ``report``, its rankings read from the files; returns its bytes. The
    connection has only the TREC readers (``duckrank report`` reads on compare's own)."""
    con = duckrank.connect(functions=["read_trec_run", "read_trec_qrels"])
    data = page_data(report)
    try:
        inputs = Inputs(systems_of(runs, None), str(qrels), report.metrics, column_names({}))
        rankings = read_rankings(con, inputs, data.listed, ranking_depth(report))
    finally:
        con.close()
    write_html(report, out, rankings, data=data)
    return out.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--systems", type=int, default=5)
    parser.add_argument("--depth", type=int, default=20, help="items per query in each run")
    parser.add_argument("--trials", type=int, default=TRIALS,
                        help=f"randomization trials and bootstrap resamples (default {TRIALS}, "
                        "compare's)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="5,000 queries: a smoke run")
    args = parser.parse_args()
    users = 5_000 if args.quick else args.users
    runs, qrels = write_files(users, args.systems, args.depth)
    print(f"{args.systems} systems x {users:,} queries x {args.depth} items, {len(METRICS)} "
          f"metrics, every pair, randomization test, {args.trials:,} trials, 95% intervals "
          "(TREC files)")
    made: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "report.html"
        alone = timed(lambda: made.__setitem__("report", compare(runs, qrels, args.trials)),
                      args.repeat, warm_up=False)
        line("compare", alone)
        both = timed(lambda: page(compare(runs, qrels, args.trials), runs, qrels, out),
                     args.repeat, warm_up=False)
        line("compare + HTML page", both, alone, "compare's")
        html = timed(lambda: made.__setitem__("size", page(made["report"], runs, qrels, out)),
                     args.repeat, warm_up=False)
        line("HTML page alone", html, alone, "compare's")
        print(f"page: {made['size'] / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
