"""The ``duckrank`` command line.

* ``duckrank evaluate RUN QRELS -m ndcg@10 -m map@100 ...``: score a run file against judgments
  (Parquet, CSV or TREC files; see ``duckrank.evaluate``, which does the work).
* ``duckrank compare RUN... QRELS -m ndcg@10 [--baseline NAME] [--test t]``: several systems'
  means with bootstrap intervals and significance marks (``duckrank.compare``).
* ``duckrank plot RUN... QRELS -m ndcg@10 --kind curves -o curves.png``: the per-query values of
  the same comparison drawn (``duckrank.reports.plots``; needs matplotlib).
* ``duckrank report RUN... QRELS -m ndcg@10 -o report.html``: the same comparison as one
  self-contained HTML page (``duckrank.reports.html_report``).
* ``duckrank beyond RUN -m catalog_coverage@10 --train TRAIN ...``: beyond-accuracy metrics
  (coverage, novelty, diversity, list similarity, IPS-weighted accuracy) of a run
  (``duckrank.reports.beyond_accuracy``).
* ``duckrank sql "SELECT ..."``: run any query on a connection with duckrank registered.
* ``duckrank metrics``: the metrics, their aliases and options, from the metric records.
* ``duckrank demo``: the evaluation of the built-in sample data.
* ``duckrank doctor``: the versions, and whether the native matching step is active and why.

Paths, column names, metric names and options are data: they reach DuckDB as query parameters,
quoted identifiers or names checked against the metric records, never as SQL text.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from duckrank._version import __version__
from duckrank.render.spelling import COMMAND_LINE

# Start-up (issue 32): `duckrank --help` and `--version` import no more than they print, and a
# command imports only what it uses, inside its functions; `build_parser` adds the arguments of
# the command being run only (``Command``). duckdb, numpy, pyarrow and the records are imported
# by the commands that use them.
if TYPE_CHECKING:
    import duckdb

    from duckrank.evaluation import ColumnNames
    from duckrank.matching import native
    from duckrank.reports.compare import Inputs, Systems

FORMATS = ("table", "csv", "json")
# `long`: one CSV row per (system or --by group, query, metric, value), as trec_eval -q and
# ir_measures' iter_calc give them.
LONG = "long"
REPORT_FORMATS = ("table", "markdown", "latex", "csv", "json", LONG)
# A double has 17 significant digits; more decimals show only the binary expansion's noise.
MAX_DIGITS = 17
BATCH = 10_000
T = TypeVar("T")


# --- output --------------------------------------------------------------------------------------

def _cell(value: Any, digits: int | None) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        return repr(value) if digits is None else f"{value:.{digits}f}"
    return str(value)


def write_result(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], fmt: str, out: TextIO,
    digits: int | None = None,
) -> None:
    """Write rows as an aligned text table, CSV (NULL is an empty field) or JSON (a list of
    objects; NULL and NaN are null). Only the table rounds numbers (to ``digits`` decimals)."""
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(["" if v is None else v for v in row] for row in rows)
    elif fmt == "json":
        def plain(value: Any) -> Any:
            return None if isinstance(value, float) and math.isnan(value) else value

        records = [{c: plain(v) for c, v in zip(columns, row, strict=True)} for row in rows]
        json.dump(records, out, indent=2, default=str)
        out.write("\n")
    else:
        rows = list(rows)
        cells = [[_cell(v, digits) for v in row] for row in rows]
        numeric = [
            all(isinstance(row[i], int | float) or row[i] is None for row in rows)
            for i in range(len(columns))
        ]
        widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]

        def line(values: Sequence[str]) -> str:
            return "  ".join(
                v.rjust(w) if right else v.ljust(w)
                for v, w, right in zip(values, widths, numeric, strict=True)
            ).rstrip()

        out.write(line(list(columns)) + "\n")
        out.write("  ".join("-" * w for w in widths) + "\n")
        for row in cells:
            out.write(line(row) + "\n")


def _write_rows(columns: Sequence[str], rows: Iterator[Sequence[Any]],
                args: argparse.Namespace) -> None:
    """Write the rows once the first batch is computed: a query that fails does so before any
    output (no header above an error message)."""
    first = list(itertools.islice(rows, BATCH))
    write_result(columns, itertools.chain(first, rows), args.format, sys.stdout, args.digits)


def long_rows(columns: Sequence[str], keys: int, rows: Iterable[Sequence[Any]]
              ) -> Iterator[tuple[Any, ...]]:
    """Wide rows (``keys`` leading key columns, then one column per metric) as long ones:
    (keys..., metric, value), one per metric, in the metrics' order."""
    metrics = columns[keys:]
    for row in rows:
        head = tuple(row[:keys])
        for metric, value in zip(metrics, row[keys:], strict=True):
            yield (*head, metric, value)


def _connection(database: str = ":memory:", functions: Sequence[str] | None = None
                ) -> duckdb.DuckDBPyConnection:
    """A connection with duckrank registered: every function, or just ``functions`` (with
    their helpers, TEMP macros; ``duckrank.connect``)."""
    from duckrank.engines.duckdb import connect

    con = connect(database, functions=functions)
    # DuckDB draws its progress bar on stdout, after two seconds of a query: on a terminal only,
    # never into a pipe or a file.
    show = "true" if sys.stdout.isatty() else "false"
    con.execute(f"SET enable_progress_bar = {show}")
    con.execute(f"SET enable_progress_bar_print = {show}")
    return con


# --- commands ------------------------------------------------------------------------------------

def _pairs(values: Sequence[str], flag: str, roles: Sequence[str]) -> dict[str, str]:
    """``--run-columns query=user_id,item=movie`` (repeatable) as a dict role -> column."""
    pairs: dict[str, str] = {}
    for text in values:
        for pair in text.split(","):
            role, equals, name = pair.partition("=")
            role = role.strip().lower()
            if not equals or not name.strip():
                raise ValueError(f"{flag}: write role=column, e.g. {flag} query=user_id; got "
                                 f"{pair!r} (roles: {', '.join(roles)})")
            if role in pairs:
                raise ValueError(f"{flag}: the {role} column is given twice")
            pairs[role] = name.strip()
    return pairs


def _names(args: argparse.Namespace) -> ColumnNames:
    from duckrank.evaluation import QRELS_ROLES, RUN_ROLES, column_names

    return column_names(
        {"query": args.query_column, "item": args.item_column, "score": args.score_column,
         "rank": args.rank_column, "grade": args.grade_column},
        _pairs(args.run_columns, "--run-columns", RUN_ROLES),
        _pairs(args.qrels_columns, "--qrels-columns", QRELS_ROLES),
        COMMAND_LINE,
    )


def _read(con: duckdb.DuckDBPyConnection, args: argparse.Namespace, path: str, kind: str,
          names: ColumnNames) -> duckdb.DuckDBPyRelation:
    from duckrank.evaluation import reader_columns
    from duckrank.files.runs import read_file

    roles = names.run if kind == "run" else names.qrels
    fmt = args.run_format if kind == "run" else args.qrels_format
    return read_file(con, path, kind, fmt, reader_columns(roles), glob=args.glob)


def _write_warnings(command: str, caught: Sequence[warnings.WarningMessage]) -> None:
    """The evaluation's DroppedRows warnings, on stderr."""
    for warning in caught:
        sys.stderr.write(f"duckrank {command}: warning: {warning.message}\n")


def _evaluate(args: argparse.Namespace) -> None:
    from duckrank.evaluation import DroppedRows, SideInputs, evaluation, needed_functions
    from duckrank.files.runs import file_format
    from duckrank.files.trec import check_order

    names = _names(args)
    if not args.glob and all(
            (fmt if fmt != "auto" else file_format(path)) == "trec"
            for fmt, path in ((args.run_format, args.run), (args.qrels_format, args.qrels))):
        check_order(args.run, args.qrels, "duckrank evaluate RUN QRELS (duckrank trec_eval "
                    "takes QRELS RUN, as trec_eval does)")
    # Only the functions the metrics call: the others would cost most of a small file's time.
    con = _connection(functions=needed_functions(args.metric, args.convention))
    run = _read(con, args, args.run, "run", names)
    qrels = _read(con, args, args.qrels, "qrels", names)
    long = args.format == LONG
    with warnings.catch_warnings(record=True) as caught, ExitStack() as stack:
        warnings.simplefilter("always", DroppedRows)
        side = SideInputs(args.other, args.train, args.catalog, args.catalog_size,
                          args.embeddings, args.categories, args.propensities, args.item_groups)
        # The evaluation computes when entered; the bar is erased before anything is written.
        with _progress(con, args):
            result = stack.enter_context(evaluation(
                con, run, qrels, args.metric, args.by, args.per_user or long, names, args.ids,
                COMMAND_LINE, convention=args.convention, side=side))
        _write_warnings("evaluate", caught)
        if long:
            keys = len(args.by) + 1  # the --by columns and the query column
            columns = [*result.columns[:keys], "metric", "value"]
            rows = long_rows(result.columns, keys, result.rows(BATCH))
            first = list(itertools.islice(rows, BATCH))
            write_result(columns, itertools.chain(first, rows), "csv", sys.stdout)
        else:
            _write_rows(result.columns, result.rows(BATCH), args)


def _inputs(args: argparse.Namespace, con: duckdb.DuckDBPyConnection,
            systems: Systems) -> Inputs:
    from duckrank.reports.compare import Inputs

    names = _names(args)
    qrels = _read(con, args, args.qrels, "qrels", names)
    # The runs stay paths: compare reads them (parsing text files once for its several scans).
    return Inputs(systems, qrels, args.metric, names, args.ids, args.glob, COMMAND_LINE,
                  args.run_format)


def _files(args: argparse.Namespace) -> Systems:
    """The RUN files: one system per file (named by its stem), or with --by one file holding
    every system (checked before anything is read)."""
    from duckrank.reports.compare import systems_of

    return systems_of(args.runs[0] if args.by and len(args.runs) == 1 else args.runs, args.by,
                      COMMAND_LINE)


def _scored(args: argparse.Namespace, work: Callable[[duckdb.DuckDBPyConnection, Inputs], T]
            ) -> T:
    """``work`` on the inputs, with the evaluation's warnings on stderr."""
    from duckrank.evaluation import DroppedRows
    from duckrank.reports.compare.api import _needed_functions

    files = _files(args)
    # What duckrank.compare registers: the metrics' functions and the report's aggregates.
    con = _connection(functions=_needed_functions(args.metric))
    with warnings.catch_warnings(record=True) as caught, _progress(con, args):
        warnings.simplefilter("always", DroppedRows)
        done = work(con, _inputs(args, con, files))
    _write_warnings(args.command, caught)
    return done


def _progress(con: duckdb.DuckDBPyConnection, args: argparse.Namespace) -> Any:
    """The bar of ``duckrank COMMAND`` on stderr while ``con`` works (on a terminal only;
    ``duckrank.reports.progress.watch``); with --quiet none, DuckDB's own on stdout included."""
    from duckrank.reports.progress import watch

    quiet = getattr(args, "quiet", False)
    if quiet:
        con.execute("SET enable_progress_bar_print = false")
    return watch(con, f"duckrank {args.command}", quiet=quiet)


def _first_baseline(args: argparse.Namespace) -> str | None:
    """The system drawn first and differences are taken against: the first --baseline."""
    return args.baseline[0] if args.baseline else None


def _options(args: argparse.Namespace) -> Any:
    """compare's and report's ``Options``, checked before anything is read."""
    from duckrank.reports.compare import Options

    baselines = args.baseline or []
    options = Options(
        baseline=tuple(baselines) if len(baselines) > 1 else _first_baseline(args),
        test=args.test, alpha=args.alpha,
        correction=None if args.correction == "none" else args.correction, level=args.level,
        trials=args.trials, seed=args.seed,
    )
    options.check(COMMAND_LINE)
    return options


def _compare(args: argparse.Namespace) -> None:
    from duckrank.reports.compare import DIGITS, comparison, per_query

    options = _options(args)
    if args.format == LONG:  # the per-query values only: no tests, no intervals
        values = _scored(args, lambda con, inputs: per_query(con, inputs, _first_baseline(args)))
        write_result(values.column_names, zip(*(c.to_pylist() for c in values.columns),
                                               strict=True), "csv", sys.stdout)
        return
    report = _scored(args, lambda con, inputs: comparison(con, inputs, options))
    digits = DIGITS if args.digits is None else args.digits
    text = {
        "table": lambda: report.table(digits), "markdown": lambda: report.to_markdown(digits),
        "latex": lambda: report.to_latex(digits), "csv": report.to_csv,
        "json": lambda: report.to_json() + "\n",
    }[args.format]()
    sys.stdout.write(text)


def _plot(args: argparse.Namespace) -> None:
    # What can fail without the data fails before the evaluation: the output's suffix,
    # matplotlib, and (in per_query) --baseline.
    from duckrank.reports.compare import per_query
    from duckrank.reports.plots import draw, figure_class, output_format

    output_format(args.output, COMMAND_LINE)
    try:
        figure_class()
    except ModuleNotFoundError as error:
        if error.name != "matplotlib":
            raise
        raise ValueError(str(error).removeprefix("plot: ")) from None  # says what to install
    # The values only: no tests, no intervals.
    values = _scored(args, lambda con, inputs: per_query(con, inputs, _first_baseline(args)))
    draw(values, args.output, args.kind, args.plot_metric, _first_baseline(args),
         spelling=COMMAND_LINE)
    sys.stderr.write(f"duckrank plot: wrote {args.output}\n")


def _report(args: argparse.Namespace) -> None:
    """compare's work, then the HTML page: the listed queries' rankings are read on the same
    connection (the runs as compare read them) and the page written to --output."""
    from duckrank.reports.compare import comparison
    from duckrank.reports.html_report import check_output, page_data, ranking_depth, write_html
    from duckrank.reports.rankings import read_rankings

    check_output(args.output, COMMAND_LINE)  # before anything is read
    options = _options(args)

    def work(con: duckdb.DuckDBPyConnection, inputs: Inputs) -> tuple[Any, Any, Any]:
        report = comparison(con, inputs, options)
        data = page_data(report, args.shown)
        return report, data, read_rankings(con, inputs, data.listed, ranking_depth(report))

    report, data, rankings = _scored(args, work)
    write_html(report, args.output, rankings, data=data, digits=args.digits)
    sys.stderr.write(f"duckrank report: wrote {args.output}\n")


def _sql(args: argparse.Namespace) -> None:
    con = _connection(args.database)
    result = con.sql(args.query)
    if result is not None:
        _write_rows(result.columns, result.iter_rows(batch_size=BATCH), args)


def _native_line(status: native.Status) -> str:
    if status.active:
        return f"native matching step: active, {status.reason}"
    return ("native matching step: not active, using the SQL matching step (same numbers, "
            f"slower): {status.reason}")


def _doctor(args: argparse.Namespace) -> None:
    """What a bug report needs: versions, and which matching step ``duckrank.connect()`` gets and
    why (exit status 0 either way: the SQL step gives the same numbers)."""
    import duckdb

    from duckrank.matching import native

    sys.stdout.write(
        f"duckrank {__version__}\nduckdb {duckdb.__version__}\n"
        f"python {sys.version.split()[0]}\n{_native_line(native.status())}\n"
    )
    # A developer's tree: a library built from other sources than those beside it is stale.
    stale = native.stale_reason()
    if stale is not None:
        sys.stdout.write(f"native library: stale: {stale} (rebuild: scripts/build-native)\n")


class _VersionAction(argparse.Action):
    """``--version``, computed only when asked: it loads the native step to say whether it works."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the versions and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        import duckdb

        from duckrank.matching import native

        state = "active" if native.status().active else "off, see duckrank doctor"
        sys.stdout.write(f"duckrank {__version__} (duckdb {duckdb.__version__}; native matching "
                         f"step: {state})\n")
        parser.exit()


def _metrics(args: argparse.Namespace) -> None:
    from duckrank.reports.listing import metric_listing

    listing = metric_listing()  # what a notebook shows too
    write_result(listing.columns, listing.rows, args.format, sys.stdout)


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


def _demo(args: argparse.Namespace) -> None:
    from importlib import resources

    data = resources.files("duckrank") / "data"
    parser = build_parser(["evaluate"])
    for title, files, metrics, extra in DEMOS:
        with resources.as_file(data / files[0]) as run, resources.as_file(data / files[1]) as qrels:
            shown = ["duckrank evaluate", *files, *(f"-m {m}" for m in metrics), *extra]
            sys.stdout.write(f"{title}:\n$ {' '.join(shown)}\n")
            sys.stdout.flush()
            argv = ["evaluate", str(run), str(qrels), *(f"--metric={m}" for m in metrics), *extra]
            _evaluate(parser.parse_args(argv))
            sys.stdout.write("\n")
    sys.stdout.write(f"The sample files are in {data}.\n")


# --- arguments -----------------------------------------------------------------------------------

def _digits(text: str) -> int:
    try:
        digits = int(text)
    except ValueError:
        digits = -1
    if not 0 <= digits <= MAX_DIGITS:
        raise argparse.ArgumentTypeError(
            f"the decimals to show must be a whole number from 0 to {MAX_DIGITS}, got {text!r}"
        )
    return digits


def _output_options(parser: argparse.ArgumentParser, formats: Sequence[str] = FORMATS,
                    digits: str = "every digit") -> None:
    parser.add_argument("--format", choices=formats, default="table",
                        help="output format (default: table)")
    parser.add_argument("--digits", type=_digits, default=None, metavar=f"0..{MAX_DIGITS}",
                        help=f"decimals shown in the table (default: {digits})")


def _metric_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-m", "--metric", action="append", required=True,
        help="a metric: name[@k] or name(option=value,...)[@k], e.g. ndcg@10, map@100, "
        "ndcg(gain=linear)@10; repeat for more (`duckrank metrics` lists them)",
    )


def _input_options(parser: argparse.ArgumentParser) -> None:
    """How the run and qrels files are read: column names, id comparison, formats, globs."""
    from duckrank.evaluation import ID_MODES, QRELS_ROLES, RUN_ROLES
    from duckrank.files.runs import FILE_FORMATS

    parser.add_argument("--query-column", "--user-column", default=None,
                        help="query (user) column of both files (default: query, else user)")
    parser.add_argument("--item-column", default=None, help="item column (default: item)")
    ranking = parser.add_mutually_exclusive_group()
    ranking.add_argument("--score-column", default=None,
                         help="score column of the run, higher = better (default: score)")
    ranking.add_argument("--rank-column", default=None,
                         help="rank column of the run instead of a score: 1 = best")
    parser.add_argument(
        "--grade-column", default=None,
        help="grade column of the qrels (default: grade; without one, every row is relevant)",
    )
    parser.add_argument(
        "--run-columns", action="append", default=[], metavar="ROLE=COLUMN,...",
        help=f"column names of the run only, e.g. query=user_id,item=movie (roles: "
        f"{', '.join(RUN_ROLES)}); they win over the options for both files",
    )
    parser.add_argument(
        "--qrels-columns", action="append", default=[], metavar="ROLE=COLUMN,...",
        help=f"column names of the qrels only, e.g. query=user (roles: {', '.join(QRELS_ROLES)})",
    )
    parser.add_argument(
        "--ids", choices=ID_MODES, default="typed",
        help="typed: query and item ids must be of one kind in both files (default); varchar: "
        "compare them as text (a BIGINT run against a CSV's text ids)",
    )
    parser.add_argument(
        "--glob", action="store_true",
        help="read RUN and QRELS as file patterns (DuckDB glob syntax: *, ?, [...], **) and "
        "read every matching file together; without it a path names one file and *, ? and [ "
        "are part of its name",
    )
    parser.add_argument("--run-format", choices=FILE_FORMATS, default="auto")
    parser.add_argument("--qrels-format", choices=FILE_FORMATS, default="auto")


def _add_evaluate(commands: Any) -> None:
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
    _metric_option(evaluate)
    evaluate.add_argument("--by", action="append", default=[], metavar="COLUMN",
                          help="one row per value of this run column (a system, a segment)")
    evaluate.add_argument("--per-user", "--per-query", action="store_true",
                          help="one row per query (user) instead of means")
    evaluate.add_argument("--convention", choices=tuple(CONVENTIONS), default="duckrank",
                          help="whose conventions: duckrank's own, trec_eval 10.0's (P divides "
                          "by k, linear gain, undefined values score 0; docs/trec_eval.md), "
                          "pytrec_eval's (trec_eval 9.0.8) or ir_measures'")
    _input_options(evaluate)
    _side_options(evaluate)
    _output_options(evaluate, (*FORMATS, LONG))
    _quiet_option(evaluate)
    evaluate.set_defaults(handler=_evaluate)


def _level(text: str) -> float | None:
    if text.lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"the confidence level must be a number in (0, 1) or none, got {text!r}"
        ) from None


def _comparison_inputs(parser: argparse.ArgumentParser) -> None:
    """RUN... QRELS, the metrics, --baseline and --by: what compare and plot share."""
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="the run files, one per system (named by the file's stem), or one "
                        "file with a system column and --by")
    parser.add_argument("qrels", metavar="QRELS", help="the judgments file")
    _metric_option(parser)
    parser.add_argument("--baseline", action="append", default=None, metavar="NAME",
                        help="compare every other system with this one (default: every pair); "
                        "repeat it for several baselines (the plots draw against the first)")
    parser.add_argument("--by", default=None, metavar="COLUMN",
                        help="the systems are the values of this column of one RUN file")
    _input_options(parser)


def _test_help() -> str:
    """--test's help, from the records of the tests the report runs: "randomization (Fisher's,
    --trials sign flips; default), t (paired t-test) or wilcoxon (signed-rank)"."""
    from duckrank.reports.compare import DEFAULT_TEST

    said = [f"{alias} ({test.report.help}{'; default' if alias == DEFAULT_TEST else ''})"
            for alias, test in _report_tests().items() if test.report is not None]
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])} or {said[-1]}"


def _add_compare(commands: Any) -> None:
    from duckrank.reports.compare import DIGITS

    compare = commands.add_parser(
        "compare",
        description="Score several systems on the same queries: each system's mean of each "
        "metric with a percentile bootstrap interval, and a superscript letter for each system "
        "it beats significantly (against --baseline, or pairwise), corrected over each metric's "
        "comparisons. A judged query a system did not rank scores 0 for it (as trec_eval -c).",
    )
    _comparison_inputs(compare)
    _test_options(compare)
    _output_options(compare, REPORT_FORMATS, f"{DIGITS}")
    _quiet_option(compare)
    compare.set_defaults(handler=_compare)


def _test_options(parser: argparse.ArgumentParser) -> None:
    """How compare and report test: --test, --alpha, --correction, --level, --trials, --seed."""
    from duckrank.reports.compare import CORRECTIONS, DEFAULT_TEST, TRIALS

    parser.add_argument("--test", choices=tuple(_report_tests()), default=DEFAULT_TEST,
                        help=_test_help())
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level (default: 0.05)")
    parser.add_argument("--correction", default="holm",
                        choices=[c or "none" for c in CORRECTIONS],
                        help="over each metric's comparisons (default: holm)")
    parser.add_argument("--level", type=_level, default=0.95,
                        help="confidence level of the bootstrap intervals, or none (default: "
                        "0.95)")
    parser.add_argument("--trials", type=int, default=TRIALS,
                        help=f"bootstrap resamples and randomization trials (default: {TRIALS})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling")


def _quiet_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar (it is drawn on stderr, on a terminal only)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return value


def _add_report(commands: Any) -> None:
    from duckrank.reports.compare import DIGITS
    from duckrank.reports.html_report import SHOWN

    report = commands.add_parser(
        "report",
        description="The comparison of duckrank compare as one self-contained HTML page (no "
        "network): the systems x metrics table with significance marks, the comparisons' "
        "p-values, metric@k curves, per-query differences against --baseline (else the first "
        "system) sorted by size, and a chosen query's two rankings side by side with the judged "
        "items marked.",
    )
    _comparison_inputs(report)
    _test_options(report)
    report.add_argument("-o", "--output", required=True, help="the page: a .html path")
    report.add_argument("--shown", type=_positive, default=SHOWN, metavar="N",
                        help=f"the largest gains and losses listed per metric and system, whose "
                        f"rankings the page shows (default: {SHOWN})")
    report.add_argument("--digits", type=_digits, default=DIGITS, metavar=f"0..{MAX_DIGITS}",
                        help=f"decimals shown (default: {DIGITS})")
    _quiet_option(report)
    report.set_defaults(handler=_report)


def _add_plot(commands: Any) -> None:
    from duckrank.reports.plots import KINDS as PLOT_KINDS

    plot = commands.add_parser(
        "plot",
        description="Draw the per-query values of a comparison (the inputs of duckrank "
        "compare) to a PNG, SVG or PDF file; needs matplotlib (pip install 'duckrank[plots]').",
    )
    _comparison_inputs(plot)
    plot.add_argument("--kind", choices=PLOT_KINDS, default="curves",
                      help="curves: the mean of metric@k against k per system; distribution: "
                      "the per-query values of one metric per system; difference: each "
                      "system's per-query difference to --baseline")
    plot.add_argument("--plot-metric", default=None, metavar="METRIC",
                      help="what to draw when -m gives several: a family for curves (ndcg, "
                      "for ndcg@1,5,10), a column label otherwise (ndcg@10)")
    plot.add_argument("-o", "--output", required=True,
                      help="the picture: a .png, .svg or .pdf path")
    _quiet_option(plot)
    plot.set_defaults(handler=_plot)


def _side_options(parser: argparse.ArgumentParser) -> None:
    """What the beyond-accuracy metrics read besides the run (``duckrank beyond`` and
    ``duckrank evaluate``): a second system's run and the side tables, Parquet or CSV files."""
    group = parser.add_argument_group(
        "beyond-accuracy inputs", "files the beyond-accuracy metrics read "
        "(docs/beyond-accuracy.md), with the run's user and item column names")
    group.add_argument("--other", help="a second system's run: for overlap_at, jaccard_at, rbo")
    group.add_argument("--train", help="training interactions (user, item): popularity, "
                       "novelty, serendipity, propensities")
    group.add_argument("--catalog", help="the catalogue's items (item)")
    group.add_argument("--catalog-size", type=int, help="the number of items in the catalogue")
    group.add_argument("--embeddings", help="item embeddings (item, embedding)")
    group.add_argument("--categories", help="item categories (item, category)")
    group.add_argument("--propensities", help="item propensities (item, propensity) for "
                       "ips_*; without it they are estimated from --train")
    group.add_argument("--item-groups", help="item groups (item, group) for reo, rsp")


def _beyond(args: argparse.Namespace) -> None:
    from duckrank.engines import beyond_accuracy as beyond_engine
    from duckrank.reports.beyond_accuracy import beyond_accuracy

    tables = {name: getattr(args, name) for name in beyond_engine.SIDE_TABLES}
    result = beyond_accuracy(
        args.run, args.metric, qrels=args.qrels, other=args.other,
        catalog_size=args.catalog_size, user_column=args.user_column,
        item_column=args.item_column, score_column=args.score_column,
        rank_column=args.rank_column, spelling=COMMAND_LINE, **tables,
    )
    write_result(list(result.columns), result.itertuples(index=False, name=None), args.format,
                 sys.stdout, args.digits)


def _add_beyond(commands: Any) -> None:
    from duckrank.engines import beyond_accuracy as beyond_engine

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
        f"ips_recall(gamma=1)@10; repeat for more. Metrics: {beyond_engine.known()}",
    )
    beyond.add_argument("--qrels", help="the users' relevant items (user, item): for "
                        "serendipity and ips_*")
    _side_options(beyond)
    beyond.add_argument("--user-column", default="user", help="user column (default: user)")
    beyond.add_argument("--item-column", default="item", help="item column (default: item)")
    ranking = beyond.add_mutually_exclusive_group()
    ranking.add_argument("--score-column", default="score",
                         help="score column of the runs, higher = better (default: score)")
    ranking.add_argument("--rank-column", default=None,
                         help="rank column of the runs instead of a score: 1 = best")
    _output_options(beyond)
    beyond.set_defaults(handler=_beyond)


def _trec_eval(args: argparse.Namespace) -> int:
    """Print trec_eval's output for parsed ``args``; errors go to stderr, exit status 1."""
    import duckdb

    from duckrank.reports import trec_eval

    try:
        options = trec_eval.options_from_flags(args)
        trec_eval.write_lines(args.qrels, args.run, args.measures, options)
    except (ValueError, duckdb.Error) as error:
        sys.stderr.write(f"duckrank trec_eval: {error}\n")
        return 1
    return 0


def _add_trec_eval(commands: Any) -> None:
    """``duckrank trec_eval``: trec_eval's flags, short and long (``duckrank.reports.trec_eval``
    does the work)."""
    parser = commands.add_parser(
        "trec_eval",
        description="Evaluate a TREC run against qrels and print what trec_eval prints "
        "(measure, query, value lines). Without -m: trec_eval's official measures. See "
        "docs/trec_eval.md.",
    )
    parser.add_argument("qrels", help="the qrels file (qid iteration docid grade)")
    parser.add_argument("run", help="the run file (qid Q0 docid rank score tag)")
    parser.add_argument("-q", "--query_eval_wanted", dest="per_query", action="store_true",
                        help="also print each query's values")
    parser.add_argument("-m", "--measure", dest="measures", action="append", default=[],
                        metavar="MEASURE[.PARAMS]",
                        help="a measure, e.g. map, P.5,10, ndcg_cut.10, "
                        "iprec_at_recall..10,.20, ndcg.1=3,2=9, set_F.0.5, or official, set, "
                        "all_trec; repeatable (default: official)")
    parser.add_argument("-c", "--complete_rel_info_wanted", dest="complete",
                        action="store_true",
                        help="evaluate every query of the qrels: one the run lacks scores 0")
    parser.add_argument("-n", "--nosummary", dest="summary", action="store_false",
                        help="print no summary (with -q: the per-query values only)")
    parser.add_argument("-M", "--Max_retrieved_per_topic", dest="max_docs", type=int,
                        default=None, metavar="N", help="keep the first N documents per query")
    parser.add_argument("-l", "--level_for_rel", dest="level", type=int, default=1,
                        metavar="N", help="relevant means grade >= N (default 1)")
    parser.add_argument("-J", "--Judged_docs_only", dest="judged_only", action="store_true",
                        help="drop the unjudged documents of each ranking (after -M)")
    parser.add_argument("-N", "--Number_docs_in_coll", dest="num_docs", type=int, default=0,
                        metavar="N", help="documents in the collection (utility's 4th term)")
    parser.add_argument("-Z", "--Zscore", dest="zscores", metavar="FILE",
                        help="print z-scores by FILE's 'qid measure mean stddev' lines")
    parser.add_argument("-R", "--Rel_info_format", dest="rel_info_format", default="qrels",
                        metavar="FORMAT", help="qrels (default) or qrels_jg")
    parser.add_argument("-T", "--Results_format", dest="results_format",
                        default="trec_results", metavar="FORMAT", help="trec_results only")
    parser.add_argument("-D", "--Debug_level", dest="debug", default="0", metavar="N[.QID]",
                        help="0 only; 0.QID evaluates the query QID alone")
    parser.add_argument("-o", "--Output_old_results_format", dest="old_format",
                        action="store_true", help="ignored, as trec_eval 10 ignores it")
    parser.add_argument("--compat", choices=("10.0", "9.0.8"), default="10.0",
                        help="the trec_eval reproduced: 10.0 (NIST's; default) or 9.0.8 "
                        "(pytrec-eval-terrier's)")
    parser.set_defaults(handler=_trec_eval)


def _add_sql(commands: Any) -> None:
    sql = commands.add_parser("sql")
    sql.add_argument("query", help="SQL to run (the result of the last statement is printed)")
    sql.add_argument("--database", default=":memory:",
                     help="DuckDB database file (default: in memory)")
    _output_options(sql)
    sql.set_defaults(handler=_sql)


def _add_metrics(commands: Any) -> None:
    metrics = commands.add_parser("metrics")
    metrics.add_argument("--format", choices=FORMATS, default="table")
    metrics.set_defaults(handler=_metrics)


def _add_demo(commands: Any) -> None:
    demo = commands.add_parser("demo")
    demo.set_defaults(handler=_demo)


def _add_doctor(commands: Any) -> None:
    doctor = commands.add_parser("doctor")
    doctor.set_defaults(handler=_doctor)


def _add_experiment(commands: Any) -> None:
    from duckrank.reports import experiment

    experiment.add_parser(commands)


def _add_off_policy(commands: Any) -> None:
    from duckrank.reports import off_policy

    off_policy.add_parser(commands)


def _add_fuse(commands: Any) -> None:
    from duckrank.reports.fusion import command

    command.add_parser(commands)


@dataclass(frozen=True)
class Command:
    """A command of ``duckrank``: its name and the line ``duckrank --help`` shows for it, and
    the function that adds its subparser (``add(commands)`` calls ``commands.add_parser(name,
    ...)`` and sets ``handler=``; ``help`` is given to it). ``build_parser`` calls ``add`` only
    for the command being run, so that only its arguments' modules are imported."""

    name: str
    help: str
    add: Callable[[Any], Any]


class _Subparsers:
    """The subparsers action as a ``Command.add`` sees it: its ``add_parser`` gets the
    command's ``help``, the one text ``duckrank --help`` shows whether the command is added."""

    def __init__(self, commands: Any, command: Command) -> None:
        self._commands, self._help = commands, command.help

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return self._commands.add_parser(name, **{**kwargs, "help": self._help})


# The commands, in the order `duckrank --help` lists them: a new command is one more entry (a
# ``Command``; a plain add function is accepted too, and is then added on every start).
COMMANDS = (
    Command("evaluate", "score a run against judgments (qrels)", _add_evaluate),
    Command("compare", "compare systems: means, intervals and significance marks", _add_compare),
    Command("plot", "draw a comparison: metric@k curves, distributions, differences", _add_plot),
    Command("report", "a comparison as one HTML page: table, curves, per-query differences, "
            "rankings", _add_report),
    Command("trec_eval", "trec_eval's command: its measures, flags and output", _add_trec_eval),
    Command("experiment", "reproduce a source document's experiment", _add_experiment),
    Command("beyond", "beyond-accuracy metrics of a run (coverage, novelty, diversity, ...)",
            _add_beyond),
    Command("fuse", "fuse runs into one (rank fusion: RRF, CombSUM, Borda, ..., as ranx)",
            _add_fuse),
    Command("off-policy", "off-policy estimates of a policy's value from a bandit log (obp's "
            "estimators)", _add_off_policy),
    Command("sql", "run a query with duckrank registered", _add_sql),
    Command("metrics", "list the metrics and their options", _add_metrics),
    Command("demo", "evaluate the built-in sample data", _add_demo),
    Command("doctor", "versions, and whether the native matching step is active (and why)",
            _add_doctor),
)


def _command_name(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs: its first word that is not an option (the top-level options,
    ``--help`` and ``--version``, take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``argv``, only the command it runs gets its arguments
    (the others are listed by ``--help`` and never parsed)."""
    parser = argparse.ArgumentParser(
        prog="duckrank", description="Ranking-evaluation metrics on DuckDB.",
    )
    parser.add_argument("--version", action=_VersionAction)
    commands = parser.add_subparsers(dest="command", required=True)
    running = None if argv is None else _command_name(argv)
    for command in COMMANDS:
        if not isinstance(command, Command):
            command(commands)
        elif argv is None or command.name == running:
            command.add(_Subparsers(commands, command))
        else:
            commands.add_parser(command.name, help=command.help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    import duckdb  # the commands' errors: ValueError or DuckDB's

    try:
        status = args.handler(args)
    except (ValueError, duckdb.Error) as error:
        sys.stderr.write(f"duckrank {args.command}: {error}\n")
        return 1
    except BrokenPipeError:  # `duckrank ... | head`
        sys.stderr.close()
        return 0
    # Handlers that print their own errors return their exit status; the others return None.
    return status or 0


def _report_tests() -> dict[str, Any]:
    """``duckrank.stats.REPORT_TESTS``, read through this module (``__getattr__``), where a
    test may replace it."""
    return sys.modules[__name__].REPORT_TESTS


def __getattr__(name: str) -> Any:
    """``REPORT_TESTS``, imported on first use: ``duckrank --help`` imports no statistics."""
    if name == "REPORT_TESTS":
        from duckrank.stats import REPORT_TESTS

        return REPORT_TESTS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    sys.exit(main())
