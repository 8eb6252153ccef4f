"""The metric listing (``duckrank metrics``; ``metric_listing()`` in Python): every metric, the
ranking metrics of ``duckrank.metrics.METRICS``, the beyond-accuracy ones and the aggregates, one
row per name and family with its aliases, forms, options and summary. A notebook shows it as a
table (``_repr_html_``, ``_repr_markdown_``); ``text()`` is the command's table, 100 columns wide.

A family is the module that defines the records (``binary``, ``graded``, ``trec_eval``, ...; the
beyond-accuracy families are those of ``duckrank.metrics.beyond`` and ``debiased``). A name two
families define (``ndcg``: binary gains, graded gains) is a row in each, with each one's summary.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from duckrank.metrics import (
    METRICS,
    binary,
    classification,
    correlation,
    cwl,
    debiased,
    diversity,
    graded,
    judged_only,
    peers,
    pointwise,
    preference,
    prefs,
    trec_eval,
)
from duckrank.metrics.beyond import coverage, fairness, novelty, similarity
from duckrank.metrics.beyond import diversity as beyond_diversity
from duckrank.metrics.beyond_accuracy import BeyondMetric
from duckrank.metrics.pointwise import Aggregate
from duckrank.metrics.record import Metric
from duckrank.render.quoting import markdown_text
from duckrank.render.spelling import COMMAND_LINE, PYTHON, Spelling
from duckrank.reports.html import table

COLUMNS = ("metric", "aliases", "family", "forms", "options", "summary")
WIDTH = 100  # the table's width: a terminal's, and a page's code block

# The families, in the order listed: each one module's records. The MAP-truth overloads that
# ``duckrank.metrics.METRICS`` derives from a record (``binary.graded_truth_overload``) are
# forms of that record's row.
FAMILIES: dict[str, tuple[Metric | BeyondMetric | Aggregate, ...]] = {
    "binary": binary.METRICS,
    "trec_eval": (*trec_eval.BINARY, *trec_eval.JUDGED),
    "graded": graded.METRICS,
    "preference": preference.METRICS,
    "prefs": prefs.METRICS,  # trec_eval 10's preference measures (docs/trec_eval.md)
    "correlation": correlation.METRICS,
    "peers": peers.METRICS,
    "intent_aware": diversity.METRICS,  # ndeval's (docs/diversity.md)
    "cwl": cwl.METRICS,
    "judged_only": judged_only.METRICS,
    "classification": (*classification.METRICS, *classification.AGGREGATES),
    "pointwise": pointwise.METRICS,
    "coverage": coverage.METRICS,
    "novelty": novelty.METRICS,
    "diversity": beyond_diversity.METRICS,
    "similarity": similarity.METRICS,
    "fairness": fairness.METRICS,
    "debiased": debiased.METRICS,
}


@dataclass(frozen=True)
class MetricListing:
    """The rows of ``COLUMNS``, one per (family, name), families in ``FAMILIES``' order and the
    names in their records' order."""

    rows: tuple[tuple[str, ...], ...]
    columns: tuple[str, ...] = COLUMNS

    def to_markdown(self) -> str:
        """A Markdown (GitHub) table; every text shown as written (``markdown_text``)."""
        def row(values: tuple[str, ...]) -> str:
            return "| " + " | ".join(markdown_text(v) for v in values) + " |"

        return "\n".join([row(self.columns), "|" + " --- |" * len(self.columns),
                          *map(row, self.rows)]) + "\n"

    def to_html(self) -> str:
        """One HTML ``<table>`` (every text escaped)."""
        return table(self.columns, self.rows, table_attributes=' class="metrics"')

    def text(self, width: int = WIDTH) -> str:
        """The metrics under their family's name, one line each: the name with its aliases, its
        forms, and its summary cut to fit ``width`` columns (options: the CSV and JSON). Each
        family is a block of its own alignment, its heading naming the columns."""
        blocks = ["\n".join(_block(family, list(rows), width))
                  for family, rows in itertools.groupby(self.rows, key=lambda row: row[2])]
        return "\n\n".join(blocks) + "\n"

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_html_(self) -> str:
        return self.to_html()


def _block(family: str, rows: Sequence[tuple[str, ...]], width: int) -> list[str]:
    """A family's lines of ``MetricListing.text``: the heading (the family in the names'
    column, then the columns' names), and a line per row."""
    names = [f"{name} ({aliases})" if aliases else name for name, aliases, *_ in rows]
    name_width = max(len(family) - 2, *map(len, names))
    forms_width = max(len("forms"), *(len(row[3]) for row in rows))
    room = width - (2 + name_width + 2 + forms_width + 2)

    def line(name: str, forms: str, summary: str) -> str:
        if len(summary) > room:
            summary = summary[:max(room - 3, 0)].rstrip() + "..."[:room]
        return f"  {name:<{name_width}}  {forms:<{forms_width}}  {summary}".rstrip()

    heading = f"{family:<{2 + name_width}}  {'forms':<{forms_width}}  summary"
    return [heading, *(line(name, row[3], row[5]) for name, row in zip(names, rows, strict=True))]


def _truth(metric: Metric) -> str:
    return "MAP" if metric.truth_type.upper().startswith("MAP") else "LIST"


def _form(record: Metric | BeyondMetric | Aggregate) -> str:
    """How a record is called: ``LIST``/``MAP``, a function of one list and its truth of that
    type; ``per user``, ``catalogue``, ``per group``, a table macro over a run (a value per
    user, for the run, per group), ``pair``, a function of two systems' lists (with ``MAP``
    when the truth is graded); ``aggregate``, an aggregate over rows."""
    if isinstance(record, Metric):
        return _truth(record)
    if isinstance(record, BeyondMetric):
        kind = record.kind.replace("_", " ")
        return f"{kind}, MAP" if record.truth == "map" else kind
    return "aggregate"


def _options(record: Metric | BeyondMetric | Aggregate) -> str:
    """``name=default``, with a text option's choices: ``gain=exponential (exponential|...)``."""
    if isinstance(record, Metric):
        return ", ".join(
            f"{o.name}={o.default}" + (f" ({'|'.join(o.choices)})" if o.choices else "")
            for o in record.options)
    if isinstance(record, BeyondMetric):
        return ", ".join(f"{p.name}={p.default}" for p in record.parameters
                         if p.default is not None)
    # An aggregate's parameters are its macro's: the options are those written `name := value`.
    return ", ".join(part.replace(" := ", "=") for part in record.parameters.split(", ")
                     if " := " in part)


def _rows(family: str, records: Sequence[Metric | BeyondMetric | Aggregate],
          derived: Sequence[Metric]) -> list[tuple[str, ...]]:
    """One row per name of ``records``: its first record's aliases, options and summary, and
    the forms of its records and of the ``derived`` overloads of that name."""
    rows = []
    for name in dict.fromkeys(r.name for r in records):
        same = [r for r in records if r.name == name]
        forms = dict.fromkeys([*map(_form, same),
                               *(_truth(m) for m in derived if m.name == name)])
        first = same[0]
        aliases = first.aliases if isinstance(first, Metric) else ()
        rows.append((name, ", ".join(aliases), family, ", ".join(forms), _options(first),
                     first.summary))
    return rows


def metric_listing(family: str | None = None, search: str | None = None,
                   spelling: Spelling = PYTHON) -> MetricListing:
    """Every metric (``FAMILIES``) with its aliases, family, forms (``_form``), options
    (``name=default (choice|choice)``) and summary; with ``family``, that family's only; with
    ``search``, those whose name, aliases or summary contain it (case-insensitive). An unknown
    family is an error naming the families; ``spelling``: how it names the argument."""
    if family is not None and family not in FAMILIES:
        raise ValueError(f"{spelling.argument('family', family)}: no such family; the "
                         f"families: {', '.join(FAMILIES)}")
    listed = {id(r) for records in FAMILIES.values() for r in records}
    derived = [m for m in METRICS if id(m) not in listed]
    wanted = None if search is None else search.lower()
    rows = [
        row
        for name, records in FAMILIES.items() if family in (None, name)
        for row in _rows(name, records, derived)
        if wanted is None or any(wanted in row[i].lower() for i in (0, 1, 5))
    ]
    return MetricListing(tuple(rows))


# --- duckrank metrics ----------------------------------------------------------------------------

def run(args: argparse.Namespace) -> None:
    """``duckrank metrics``: the listing as text (``MetricListing.text``), CSV or JSON."""
    from duckrank.reports.command_line import write_result

    listing = metric_listing(args.family, args.search, COMMAND_LINE)
    if not listing.rows:
        where = "" if args.family is None else f" of --family {args.family}"
        raise ValueError(f"--search {args.search}: no metric{where} has it in its name, "
                         "aliases or summary")
    if args.format == "table":
        sys.stdout.write(listing.text())
    else:
        write_result(listing.columns, listing.rows, args.format, sys.stdout)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``metrics`` to the ``duckrank`` command's subparsers."""
    from duckrank.reports.command_line import FORMATS

    parser = commands.add_parser(
        "metrics",
        description="Every metric, under its family: its name and aliases (what -m takes), its "
        "forms and its summary. Forms: LIST or MAP, a function of one ranked list and its truth "
        "(a list of relevant items; a map item -> grade); per user, catalogue, per group, a "
        "table macro over a whole run (docs/beyond-accuracy.md); pair, a function of two "
        "systems' lists; aggregate, a SQL aggregate over rows. --format csv or json adds the "
        "options and the whole summaries.",
    )
    parser.add_argument("--family", default=None, metavar="NAME",
                        help=f"only this family's metrics: {', '.join(FAMILIES)}")
    parser.add_argument("--search", default=None, metavar="TEXT",
                        help="only the metrics whose name, aliases or summary contain TEXT "
                        "(case-insensitive)")
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.set_defaults(handler=run)
    return parser
