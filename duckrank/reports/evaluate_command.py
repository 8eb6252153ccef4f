"""``duckrank evaluate RUN QRELS -m ndcg@10 ...`` (``duckrank.evaluate``'s command) and
``duckrank demo``, the evaluation of the built-in sample data."""

from __future__ import annotations

import argparse
import itertools
import sys
import warnings
from contextlib import ExitStack
from typing import Any

from duckrank.render.spelling import COMMAND_LINE
from duckrank.reports.command_line import (
    BATCH,
    FORMATS,
    LONG,
    column_names,
    connection,
    input_options,
    long_rows,
    metric_option,
    output_options,
    progress,
    quiet_option,
    read,
    side_options,
    write_result,
    write_rows,
    write_warnings,
)


def run(args: argparse.Namespace) -> None:
    """``duckrank evaluate``: the metrics of the run against the qrels, on stdout."""
    from duckrank.evaluation import DroppedRows, SideInputs, evaluation, needed_functions
    from duckrank.files.runs import file_format
    from duckrank.files.trec import check_order

    names = column_names(args)
    if not args.glob and all(
            (fmt if fmt != "auto" else file_format(path)) == "trec"
            for fmt, path in ((args.run_format, args.run), (args.qrels_format, args.qrels))):
        check_order(args.run, args.qrels, "duckrank evaluate RUN QRELS (duckrank trec_eval "
                    "takes QRELS RUN, as trec_eval does)")
    # Only the functions the metrics call: the others would cost most of a small file's time.
    con = connection(functions=needed_functions(args.metric, args.convention))
    run_file = read(con, args, args.run, "run", names)
    qrels = read(con, args, args.qrels, "qrels", names)
    long = args.format == LONG
    with warnings.catch_warnings(record=True) as caught, ExitStack() as stack:
        warnings.simplefilter("always", DroppedRows)
        side = SideInputs(args.other, args.train, args.catalog, args.catalog_size,
                          args.embeddings, args.categories, args.propensities, args.item_groups)
        # The evaluation computes when entered; the bar is erased before anything is written.
        with progress(con, args):
            result = stack.enter_context(evaluation(
                con, run_file, qrels, args.metric, args.by, args.per_user or long, names,
                args.ids, COMMAND_LINE, convention=args.convention, side=side))
        write_warnings("evaluate", caught)
        if long:
            keys = len(args.by) + 1  # the --by columns and the query column
            columns = [*result.columns[:keys], "metric", "value"]
            rows = long_rows(result.columns, keys, result.rows(BATCH))
            first = list(itertools.islice(rows, BATCH))
            write_result(columns, itertools.chain(first, rows), "csv", sys.stdout)
        else:
            write_rows(result.columns, result.rows(BATCH), args.format, args.digits)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``evaluate`` to the ``duckrank`` command's subparsers."""
    from duckrank.evaluation import CONVENTIONS

    evaluate = commands.add_parser(
        "evaluate",
        description="Score a run (one row per query, item, score) against judgments (one row "
        "per query, item, grade). Files are Parquet, CSV/TSV or TREC (qid Q0 docid rank score "
        "tag / qid 0 docid grade), chosen by extension (TREC when neither). Prints the mean of "
        "each metric over the queries found in both files, with the counts of queries scored, "
        "unjudged (run only) and unranked (qrels only). Beyond-accuracy metrics "
        "(catalog_coverage@10, arp@10, rbo(p=0.8)@10, ...; docs/beyond-accuracy.md) follow, "
        "over every user of the run, from the inputs named below.",
    )
    evaluate.add_argument("run", help="the run file")
    evaluate.add_argument("qrels", help="the judgments file")
    metric_option(evaluate)
    evaluate.add_argument("--by", action="append", default=[], metavar="COLUMN",
                          help="one row per value of this run column (a system, a segment)")
    evaluate.add_argument("--per-user", "--per-query", action="store_true",
                          help="one row per query (user) instead of means")
    evaluate.add_argument("--convention", choices=tuple(CONVENTIONS), default="duckrank",
                          help="whose conventions: duckrank's own, trec_eval 10.0's (P divides "
                          "by k, linear gain, undefined values score 0; docs/trec_eval.md), "
                          "pytrec_eval's (trec_eval 9.0.8) or ir_measures'")
    input_options(evaluate)
    side_options(evaluate)
    output_options(evaluate, (*FORMATS, LONG))
    quiet_option(evaluate)
    evaluate.set_defaults(handler=run)
    return evaluate


DEMOS = (
    (
        "The Hivemall guide's example (dummy_rec, dummy_truth): compare with its table "
        "(Recall 0.6666666666666666 / 0.3333333333333333, ..., NDCG 0.7039180890341349 / "
        "0.6131471927654585; the exact NDCGs are 0.70391808903413475... / 0.61314719276545841..., "
        "so both the guide and duckrank are within 2 units of the 16th digit)",
        ["dummy_rec.csv", "dummy_truth.csv"],
        ["recall@4", "recall@2", "precision@4", "precision@2", "map@4", "map@2", "auc@4",
         "auc@2", "mrr@4", "mrr@2", "ndcg@4", "ndcg@2"],
        [],
    ),
    (
        "A TREC run with two systems (tags) against graded qrels, one row per system",
        ["sample.run", "sample.qrels"],
        ["ndcg@10", "ndcg(gain=linear)@10", "err@5", "map@100", "mrr", "precision@5"],
        ["--by", "tag"],
    ),
)


def run_demo(args: argparse.Namespace) -> None:
    """``duckrank demo``: each of ``DEMOS`` shown as its command line, then evaluated."""
    from importlib import resources

    data = resources.files("duckrank") / "data"
    # The demo's commands are parsed as `duckrank evaluate ...` is.
    parser = argparse.ArgumentParser(prog="duckrank")
    add_parser(parser.add_subparsers(dest="command", required=True))
    for title, files, metrics, extra in DEMOS:
        with resources.as_file(data / files[0]) as run_file, \
                resources.as_file(data / files[1]) as qrels:
            shown = ["duckrank evaluate", *files, *(f"-m {m}" for m in metrics), *extra]
            sys.stdout.write(f"{title}:\n$ {' '.join(shown)}\n")
            sys.stdout.flush()
            argv = ["evaluate", str(run_file), str(qrels), *(f"--metric={m}" for m in metrics),
                    *extra]
            run(parser.parse_args(argv))
            sys.stdout.write("\n")
    sys.stdout.write(f"The sample files are in {data}.\n")


def add_demo_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``demo`` to the ``duckrank`` command's subparsers."""
    demo = commands.add_parser("demo")
    demo.set_defaults(handler=run_demo)
    return demo
