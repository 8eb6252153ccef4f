"""What the ``duckrank`` commands share: writing a result (an aligned table, CSV, JSON or long
CSV), the output, metric, input and progress options, reading the run and qrels files by their
column options, and the connection a command works on.

The commands' own parsers and runners sit beside the reports they drive (``evaluate_command``,
``compare/command.py``, ``beyond_accuracy``, ``listing``, ``fusion/command.py``, ...);
``duckrank.cli`` lists them. Start-up (issue 32): this module imports only the standard library at
its top; what a function needs of duckrank, duckdb or the records is imported inside it.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from duckrank.render.spelling import COMMAND_LINE

if TYPE_CHECKING:
    import duckdb

    from duckrank.evaluation import ColumnNames

FORMATS = ("table", "csv", "json")
# `long`: one CSV row per (system or --by group, query, metric, value), as trec_eval -q and
# ir_measures' iter_calc give them.
LONG = "long"
REPORT_FORMATS = ("table", "markdown", "latex", "csv", "json", LONG)
# A double has 17 significant digits; more decimals show only the binary expansion's noise.
MAX_DIGITS = 17
BATCH = 10_000


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


def write_rows(columns: Sequence[str], rows: Iterator[Sequence[Any]], fmt: str,
               digits: int | None = None) -> None:
    """Write the rows to stdout once the first batch is computed: a query that fails does so
    before any output (no header above an error message)."""
    first = list(itertools.islice(rows, BATCH))
    write_result(columns, itertools.chain(first, rows), fmt, sys.stdout, digits)


def long_rows(columns: Sequence[str], keys: int, rows: Iterable[Sequence[Any]]
              ) -> Iterator[tuple[Any, ...]]:
    """Wide rows (``keys`` leading key columns, then one column per metric) as long ones:
    (keys..., metric, value), one per metric, in the metrics' order."""
    metrics = columns[keys:]
    for row in rows:
        head = tuple(row[:keys])
        for metric, value in zip(metrics, row[keys:], strict=True):
            yield (*head, metric, value)


def connection(database: str = ":memory:", functions: Sequence[str] | None = None
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


def memory_limit_option(parser: argparse.ArgumentParser) -> None:
    """The ``--memory-limit SIZE`` flag of the commands that read whole files into DuckDB
    (``fuse``, ``trec_eval``): its value goes to ``connect_within``."""
    parser.add_argument("--memory-limit", default=None, metavar="SIZE",
                        help="bound the memory DuckDB uses (e.g. 2GB; what does not fit is "
                        "spilled to disk); default: DuckDB's, 80%% of the machine's memory")


def connect_within(function: str, memory_limit: str | None, **connect_args: Any
                   ) -> duckdb.DuckDBPyConnection:
    """``duckrank.connect(**connect_args)`` under DuckDB's ``memory_limit`` when given (a size
    as DuckDB writes it: what does not fit is spilled to disk). A size DuckDB cannot read is a
    ValueError naming ``function``."""
    import duckdb

    from duckrank.engines.duckdb import connect

    config = {} if memory_limit is None else {"memory_limit": memory_limit}
    try:
        return connect(config=config, **connect_args)
    except duckdb.ParserException as error:  # DuckDB's word for a size it cannot read
        if memory_limit is None:
            raise
        raise ValueError(f"{function}: memory_limit must be a size with its unit, as DuckDB "
                         f"writes it ('2GB', '500MB'), got {memory_limit!r} ({error})") from None


def opened_here(function: str, connection: object, memory_limit: str | None) -> None:
    """A ``memory_limit`` bounds the connection ``function`` opens; with a ``connection`` given
    it would be ignored in silence: an error."""
    if connection is not None and memory_limit is not None:
        raise ValueError(f"{function}: memory_limit applies to the connection {function} opens; "
                         "with connection=..., SET memory_limit on that connection")


def progress(con: duckdb.DuckDBPyConnection, args: argparse.Namespace) -> Any:
    """The bar of ``duckrank COMMAND`` on stderr while ``con`` works (on a terminal only;
    ``duckrank.reports.progress.watch``); with --quiet none, DuckDB's own on stdout included."""
    from duckrank.reports.progress import watch

    quiet = getattr(args, "quiet", False)
    if quiet:
        con.execute("SET enable_progress_bar_print = false")
    return watch(con, f"duckrank {args.command}", quiet=quiet)


def write_warnings(command: str, caught: Sequence[warnings.WarningMessage]) -> None:
    """The evaluation's DroppedRows warnings, on stderr."""
    for warning in caught:
        sys.stderr.write(f"duckrank {command}: warning: {warning.message}\n")


# --- reading the run and qrels files -------------------------------------------------------------

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


def column_names(args: argparse.Namespace) -> ColumnNames:
    """The run's and the qrels' column names, from ``input_options``' flags."""
    from duckrank.evaluation import QRELS_ROLES, RUN_ROLES
    from duckrank.evaluation import column_names as names

    return names(
        {"query": args.query_column, "item": args.item_column, "score": args.score_column,
         "rank": args.rank_column, "grade": args.grade_column,
         "subtopic": args.subtopic_column},
        _pairs(args.run_columns, "--run-columns", RUN_ROLES),
        _pairs(args.qrels_columns, "--qrels-columns", QRELS_ROLES),
        COMMAND_LINE,
    )


def read(con: duckdb.DuckDBPyConnection, args: argparse.Namespace, path: str, kind: str,
         names: ColumnNames) -> duckdb.DuckDBPyRelation:
    """The run (``kind`` 'run') or qrels file at ``path``, read by ``input_options``' flags."""
    from duckrank.evaluation import reader_columns
    from duckrank.files.runs import read_file

    roles = names.run if kind == "run" else names.qrels
    fmt = args.run_format if kind == "run" else args.qrels_format
    return read_file(con, path, kind, fmt, reader_columns(roles), glob=args.glob)


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


def positive(text: str) -> int:
    """An argument's type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive whole number, got {text!r}")
    return value


def digits_option(parser: argparse.ArgumentParser, default: int | None, shown: str) -> None:
    """--digits: the decimals a table shows (``shown`` says what the default shows)."""
    parser.add_argument("--digits", type=_digits, default=default, metavar=f"0..{MAX_DIGITS}",
                        help=f"decimals shown {shown}")


def output_options(parser: argparse.ArgumentParser, formats: Sequence[str] = FORMATS,
                   digits: str = "every digit") -> None:
    """--format and --digits."""
    parser.add_argument("--format", choices=formats, default="table",
                        help="output format (default: table)")
    digits_option(parser, None, f"in the table (default: {digits})")


def quiet_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar (it is drawn on stderr, on a terminal only)")


def metric_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-m", "--metric", action="append", required=True,
        help="a metric: name[@k] or name(option=value,...)[@k], e.g. ndcg@10, map@100, "
        "ndcg(gain=linear)@10; repeat for more (`duckrank metrics` lists them)",
    )


def input_options(parser: argparse.ArgumentParser) -> None:
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
        "--subtopic-column", default=None,
        help="subtopic column of the qrels, read by the intent-aware measures (alpha_nDCG@20, "
        "ERR_IA@20, ...; default: subtopic; iteration for a TREC diversity qrels file)",
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


def side_options(parser: argparse.ArgumentParser) -> None:
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
    group.add_argument("--item-groups", help="item groups (item, group) for reo, rsp, "
                       "group_expected_exposure")
