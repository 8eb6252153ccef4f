"""The ``duckrank`` command line: the table of its commands (``COMMANDS``), the parser and
``main``. Each command's arguments and runner sit beside the report it drives, and what several
share (output, input and progress options, ``write_result``) in
``duckrank.reports.command_line``:

* ``duckrank evaluate RUN QRELS -m ndcg@10 -m map@100 ...``: score a run file against judgments
  (Parquet, CSV or TREC files; see ``duckrank.evaluate``, which does the work;
  ``duckrank.reports.evaluate_command``, with ``duckrank demo``, the built-in sample's).
* ``duckrank compare RUN... QRELS -m ndcg@10 [--baseline NAME] [--test t]``: several systems'
  means with bootstrap intervals and significance marks (``duckrank.compare``);
  ``duckrank plot RUN... QRELS -m ndcg@10 --kind curves -o curves.png``: the per-query values of
  the same comparison drawn (``duckrank.reports.plots``; needs matplotlib); ``duckrank report
  RUN... QRELS -m ndcg@10 -o report.html``: the same comparison as one self-contained HTML page
  (``duckrank.reports.html_report``). The three: ``duckrank.reports.compare.command``.
* ``duckrank beyond RUN -m catalog_coverage@10 --train TRAIN ...``: beyond-accuracy metrics
  (coverage, novelty, diversity, list similarity, IPS-weighted accuracy) of a run
  (``duckrank.reports.beyond_accuracy``; ``duckrank.reports.beyond_command``).
* ``duckrank metrics [--family NAME] [--search TEXT]``: the metrics, their aliases, forms and
  options, from the metric records (``duckrank.reports.listing``).
* ``duckrank trec_eval``, ``experiment``, ``fuse`` and ``off-policy``: their reports' commands
  (``duckrank.reports.trec_eval``, ``experiment``, ``fusion.command``, ``off_policy``).
* ``duckrank sql "SELECT ..."``: run any query on a connection with duckrank registered.
* ``duckrank doctor``: the versions, and whether the native matching step is active and why.

Paths, column names, metric names and options are data: they reach DuckDB as query parameters,
quoted identifiers or names checked against the metric records, never as SQL text.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from duckrank._version import __version__

# Start-up (issue 32): `duckrank --help` and `--version` import no more than they print, and a
# command imports only what it uses, inside its functions; `build_parser` adds the arguments of
# the command being run only (``Command``). duckdb, numpy, pyarrow and the records are imported
# by the commands that use them.
if TYPE_CHECKING:
    from duckrank.matching import native


def _sql(args: argparse.Namespace) -> None:
    from duckrank.reports.command_line import BATCH, connection, write_rows

    con = connection(args.database)
    result = con.sql(args.query)
    if result is not None:
        write_rows(result.columns, result.iter_rows(batch_size=BATCH), args.format, args.digits)


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


def _trec_eval(args: argparse.Namespace) -> int:
    """Print trec_eval's output for parsed ``args``; errors go to stderr, exit status 1."""
    import duckdb

    from duckrank.reports import trec_eval

    try:
        options = trec_eval.options_from_flags(args)
        trec_eval.write_lines(args.qrels, args.run, args.measures, options)
    except (ValueError, duckdb.Error) as error:
        sys.stderr.write(_error_line("trec_eval", error, args))
        return 1
    return 0


def _error_line(command: str, error: Exception, args: argparse.Namespace) -> str:
    """The line ``duckrank COMMAND`` prints for an error; DuckDB's out-of-memory advice names its
    own settings, so under --memory-limit the line names the flag."""
    import duckdb

    limit = getattr(args, "memory_limit", None)
    hint = (f" (the command ran under --memory-limit {limit}: give it more, or leave it out)"
            if limit is not None and isinstance(error, duckdb.OutOfMemoryException) else "")
    return f"duckrank {command}: {error}{hint}\n"


def _add_trec_eval(commands: Any) -> None:
    """``duckrank trec_eval``: trec_eval's flags, short and long (``duckrank.reports.trec_eval``
    does the work)."""
    from duckrank.reports.command_line import memory_limit_option

    parser = commands.add_parser(
        "trec_eval",
        description="Evaluate a TREC run against qrels and print what trec_eval prints "
        "(measure, query, value lines). Without -m: trec_eval's official measures. See "
        "docs/trec_eval.md.",
    )
    parser.add_argument("qrels", help="the qrels file (qid iteration docid grade; -R: other "
                        "formats)")
    parser.add_argument("run", help="the run file (qid Q0 docid rank score tag)")
    parser.add_argument("-q", "--query_eval_wanted", dest="per_query", action="store_true",
                        help="also print each query's values")
    parser.add_argument("-m", "--measure", dest="measures", action="append", default=[],
                        metavar="MEASURE[.PARAMS]",
                        help="a measure, e.g. map, P.5,10, ndcg_cut.10, "
                        "iprec_at_recall..10,.20, ndcg.1=3,2=9, set_F.0.5, or official, set, "
                        "all_trec, qrels_jg, prefs, all_prefs; repeatable (default: official)")
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
                        metavar="FORMAT", help="qrels (default), qrels_jg, prefs (qid jg jsg "
                        "docid level) or qrels_prefs")
    parser.add_argument("-T", "--Results_format", dest="results_format",
                        default="trec_results", metavar="FORMAT", help="trec_results only")
    parser.add_argument("-D", "--Debug_level", dest="debug", default="0", metavar="N[.QID]",
                        help="0 only; 0.QID evaluates the query QID alone")
    parser.add_argument("-o", "--Output_old_results_format", dest="old_format",
                        action="store_true", help="ignored, as trec_eval 10 ignores it")
    parser.add_argument("--compat", choices=("10.0", "9.0.8"), default="10.0",
                        help="the trec_eval reproduced: 10.0 (NIST's; default) or 9.0.8 "
                        "(pytrec-eval-terrier's)")
    memory_limit_option(parser)
    parser.set_defaults(handler=_trec_eval)


def _add_sql(commands: Any) -> None:
    from duckrank.reports.command_line import output_options

    sql = commands.add_parser("sql")
    sql.add_argument("query", help="SQL to run (the result of the last statement is printed)")
    sql.add_argument("--database", default=":memory:",
                     help="DuckDB database file (default: in memory)")
    output_options(sql)
    sql.set_defaults(handler=_sql)


def _add_doctor(commands: Any) -> None:
    doctor = commands.add_parser("doctor")
    doctor.set_defaults(handler=_doctor)


def _from(module: str, function: str = "add_parser") -> Callable[[Any], Any]:
    """The ``Command.add`` of a command whose parser ``module``'s ``function`` adds: the module
    is imported only when that command is added. (Imported by name, so tests/test_layout.py
    does not see it; every such module is in duckrank.reports, a layer below this one.)"""
    def add(commands: Any) -> Any:
        return getattr(importlib.import_module(module), function)(commands)

    return add


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
    Command("evaluate", "score a run against judgments (qrels)",
            _from("duckrank.reports.evaluate_command")),
    Command("compare", "compare systems: means, intervals and significance marks",
            _from("duckrank.reports.compare.command", "add_compare_parser")),
    Command("plot", "draw a comparison: metric@k curves, distributions, differences",
            _from("duckrank.reports.compare.command", "add_plot_parser")),
    Command("report", "a comparison as one HTML page: table, curves, per-query differences, "
            "rankings", _from("duckrank.reports.compare.command", "add_report_parser")),
    Command("trec_eval", "trec_eval's command: its measures, flags and output", _add_trec_eval),
    Command("experiment", "reproduce a source document's experiment",
            _from("duckrank.reports.experiment")),
    Command("beyond", "beyond-accuracy metrics of a run (coverage, novelty, diversity, ...)",
            _from("duckrank.reports.beyond_command")),
    Command("fuse", "fuse runs into one (rank fusion: RRF, CombSUM, Borda, ..., as ranx)",
            _from("duckrank.reports.fusion.command")),
    Command("off-policy", "off-policy estimates of a policy's value from a bandit log (obp's "
            "estimators)", _from("duckrank.reports.off_policy")),
    Command("sql", "run a query with duckrank registered", _add_sql),
    Command("metrics", "list the metrics and their options", _from("duckrank.reports.listing")),
    Command("demo", "evaluate the built-in sample data",
            _from("duckrank.reports.evaluate_command", "add_demo_parser")),
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
        sys.stderr.write(_error_line(args.command, error, args))
        return 1
    except BrokenPipeError:  # `duckrank ... | head`
        sys.stderr.close()
        return 0
    # Handlers that print their own errors return their exit status; the others return None.
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
