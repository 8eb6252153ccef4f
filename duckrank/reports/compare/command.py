"""The comparison's three commands, one set of inputs each (RUN... QRELS, the metrics, the
systems) drawn three ways: ``duckrank compare`` (the report as text, Markdown, LaTeX, CSV or
JSON), ``duckrank plot`` (the per-query values drawn, ``duckrank.reports.plots``) and
``duckrank report`` (the HTML page, ``duckrank.reports.html_report``)."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from duckrank.render.spelling import COMMAND_LINE
from duckrank.reports.command_line import (
    REPORT_FORMATS,
    column_names,
    connection,
    digits_option,
    input_options,
    metric_option,
    output_options,
    positive,
    progress,
    quiet_option,
    read,
    write_result,
    write_warnings,
)
from duckrank.reports.compare import options as compare_options

if TYPE_CHECKING:
    import duckdb

    from duckrank.reports.compare import Inputs, Options, Systems

T = TypeVar("T")


# --- what the three commands share ---------------------------------------------------------------

def _files(args: argparse.Namespace) -> Systems:
    """The RUN files: one system per file (named by its stem), or with --by one file holding
    every system (checked before anything is read)."""
    return compare_options.systems_of(
        args.runs[0] if args.by and len(args.runs) == 1 else args.runs, args.by, COMMAND_LINE)


def _scored(args: argparse.Namespace, work: Callable[[duckdb.DuckDBPyConnection, Inputs], T]
            ) -> T:
    """``work`` on the inputs, with the evaluation's warnings on stderr."""
    from duckrank.evaluation import DroppedRows
    from duckrank.reports.compare.api import _needed_functions
    from duckrank.reports.compare.scoring import Inputs

    systems = _files(args)
    # What duckrank.compare registers: the metrics' functions and the report's aggregates.
    con = connection(functions=_needed_functions(args.metric))
    with warnings.catch_warnings(record=True) as caught, progress(con, args):
        warnings.simplefilter("always", DroppedRows)
        names = column_names(args)
        qrels = read(con, args, args.qrels, "qrels", names)
        # The runs stay paths: compare reads them (parsing text files once for its several
        # scans).
        inputs = Inputs(systems, qrels, args.metric, names, args.ids, args.glob, COMMAND_LINE,
                        args.run_format)
        done = work(con, inputs)
    write_warnings(args.command, caught)
    return done


def _first_baseline(args: argparse.Namespace) -> str | None:
    """The system drawn first and differences are taken against: the first --baseline."""
    return args.baseline[0] if args.baseline else None


def _options(args: argparse.Namespace) -> Options:
    """compare's and report's ``Options``, checked before anything is read."""
    baselines = args.baseline or []
    options = compare_options.Options(
        baseline=tuple(baselines) if len(baselines) > 1 else _first_baseline(args),
        test=args.test, alpha=args.alpha,
        correction=None if args.correction == "none" else args.correction, level=args.level,
        trials=args.trials, seed=args.seed,
    )
    options.check(COMMAND_LINE)
    return options


def _comparison_inputs(parser: argparse.ArgumentParser) -> None:
    """RUN... QRELS, the metrics, --baseline and --by: what the three commands share."""
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="the run files, one per system (named by the file's stem), or one "
                        "file with a system column and --by")
    parser.add_argument("qrels", metavar="QRELS", help="the judgments file")
    metric_option(parser)
    parser.add_argument("--baseline", action="append", default=None, metavar="NAME",
                        help="compare every other system with this one (default: every pair); "
                        "repeat it for several baselines (the plots draw against the first)")
    parser.add_argument("--by", default=None, metavar="COLUMN",
                        help="the systems are the values of this column of one RUN file")
    input_options(parser)


def _level(text: str) -> float | None:
    if text.lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"the confidence level must be a number in (0, 1) or none, got {text!r}"
        ) from None


def _test_help() -> str:
    """--test's help, from the records of the tests the report runs: "randomization (Fisher's,
    --trials sign flips; default), t (paired t-test) or wilcoxon (signed-rank)"."""
    default = compare_options.DEFAULT_TEST
    said = [f"{alias} ({test.report.help}{'; default' if alias == default else ''})"
            for alias, test in compare_options.REPORT_TESTS.items() if test.report is not None]
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])} or {said[-1]}"


def _test_options(parser: argparse.ArgumentParser) -> None:
    """How compare and report test: --test, --alpha, --correction, --level, --trials, --seed."""
    parser.add_argument("--test", choices=tuple(compare_options.REPORT_TESTS),
                        default=compare_options.DEFAULT_TEST, help=_test_help())
    parser.add_argument("--alpha", type=float, default=0.05,
                        help="significance level (default: 0.05)")
    parser.add_argument("--correction", default="holm",
                        choices=[c or "none" for c in compare_options.CORRECTIONS],
                        help="over each metric's comparisons (default: holm)")
    parser.add_argument("--level", type=_level, default=0.95,
                        help="confidence level of the bootstrap intervals, or none (default: "
                        "0.95)")
    trials = compare_options.TRIALS
    parser.add_argument("--trials", type=int, default=trials,
                        help=f"bootstrap resamples and randomization trials (default: {trials})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling")


# --- duckrank compare ----------------------------------------------------------------------------

def run_compare(args: argparse.Namespace) -> None:
    """``duckrank compare``: the report in --format on stdout (long: the per-query values)."""
    from duckrank.reports.compare import DIGITS, comparison, per_query

    options = _options(args)
    if args.format == "long":  # the per-query values only: no tests, no intervals
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


def add_compare_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``compare`` to the ``duckrank`` command's subparsers."""
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
    output_options(compare, REPORT_FORMATS, f"{DIGITS}")
    quiet_option(compare)
    compare.set_defaults(handler=run_compare)
    return compare


# --- duckrank plot -------------------------------------------------------------------------------

def run_plot(args: argparse.Namespace) -> None:
    """``duckrank plot``: the per-query values drawn to --output."""
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


def add_plot_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``plot`` to the ``duckrank`` command's subparsers."""
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
    quiet_option(plot)
    plot.set_defaults(handler=run_plot)
    return plot


# --- duckrank report -----------------------------------------------------------------------------

def run_report(args: argparse.Namespace) -> None:
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


def add_report_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``report`` to the ``duckrank`` command's subparsers."""
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
    report.add_argument("--shown", type=positive, default=SHOWN, metavar="N",
                        help=f"the largest gains and losses listed per metric and system, whose "
                        f"rankings the page shows (default: {SHOWN})")
    digits_option(report, DIGITS, f"(default: {DIGITS})")
    quiet_option(report)
    report.set_defaults(handler=run_report)
    return report
