"""``duckrank beyond RUN -m catalog_coverage@10 --train TRAIN ...``: the command line's
``duckrank.reports.beyond_accuracy.beyond_accuracy`` (docs/beyond-accuracy.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from duckrank.render.spelling import COMMAND_LINE
from duckrank.reports.command_line import output_options, side_options, write_result


def run(args: argparse.Namespace) -> None:
    """``duckrank beyond``: the run's beyond-accuracy metrics, one row on stdout."""
    from duckrank.engines.beyond_accuracy import SIDE_TABLES
    from duckrank.reports.beyond_accuracy import beyond_accuracy

    tables = {name: getattr(args, name) for name in SIDE_TABLES}
    result = beyond_accuracy(
        args.run, args.metric, qrels=args.qrels, other=args.other,
        catalog_size=args.catalog_size, user_column=args.user_column,
        item_column=args.item_column, score_column=args.score_column,
        rank_column=args.rank_column, spelling=COMMAND_LINE, **tables,
    )
    write_result(list(result.columns), result.itertuples(index=False, name=None), args.format,
                 sys.stdout, args.digits)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``beyond`` to the ``duckrank`` command's subparsers."""
    from duckrank.engines.beyond_accuracy import known

    beyond = commands.add_parser(
        "beyond",
        description="Beyond-accuracy metrics of a run (one row per user, item, score): the "
        "macros of docs/beyond-accuracy.md, catalogue metrics over the whole run, per-user ones "
        "averaged over its users. Files are Parquet or CSV.",
    )
    beyond.add_argument("run", help="the run file")
    beyond.add_argument(
        "-m", "--metric", action="append", required=True,
        help="name@k or name(option=value,...)@k, e.g. catalog_coverage@10, rbo(p=0.8)@10, "
        f"ips_recall(gamma=1)@10; repeat for more. Metrics: {known()}",
    )
    beyond.add_argument("--qrels", help="the users' relevant items (user, item): for "
                        "serendipity and ips_*")
    side_options(beyond)
    beyond.add_argument("--user-column", default="user", help="user column (default: user)")
    beyond.add_argument("--item-column", default="item", help="item column (default: item)")
    ranking = beyond.add_mutually_exclusive_group()
    ranking.add_argument("--score-column", default="score",
                         help="score column of the runs, higher = better (default: score)")
    ranking.add_argument("--rank-column", default=None,
                         help="rank column of the runs instead of a score: 1 = best")
    output_options(beyond)
    beyond.set_defaults(handler=run)
    return beyond
