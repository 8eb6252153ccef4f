"""SQL for the off-policy estimators and diagnostics (issue 31): one aggregate macro per record
of ``duckrank.off_policy`` (a macro whose body is an aggregate expression is itself an
aggregate: ``GROUP BY`` works), and the reference part of docs/off-policy.md (between ``BEGIN``
and ``END``; the rest of that file is written by hand)."""

from __future__ import annotations

from pathlib import Path

from duckrank.off_policy import DIAGNOSTICS, ESTIMATORS, RECORDS, SLATE_ESTIMATORS
from duckrank.off_policy.record import DOCS, Diagnostic, Estimator
from duckrank.off_policy.slate import SlateEstimator
from duckrank.render.quoting import quote_literal
from duckrank.render.sections import with_section

Record = Estimator | Diagnostic | SlateEstimator


def macro(record: Record) -> str:
    return f"CREATE OR REPLACE MACRO {record.name}({record.parameter_list}) AS {record.sql}"


def comment(record: Record) -> str:
    """The text ``duckdb_functions()`` shows: summary and formula."""
    return (f"COMMENT ON MACRO {record.name} IS "
            f"{quote_literal(f'{record.summary} {record.formula}.')}")


MACROS: tuple[str, ...] = tuple(s for r in RECORDS for s in (macro(r), comment(r)))


DOC_FILE = Path(__file__).resolve().parents[2] / "docs" / "off-policy.md"
BEGIN = "<!-- off-policy functions: generated from their records, do not edit -->"
END = "<!-- end of the off-policy functions -->"


def _arguments(record: Record) -> str:
    return "\n".join(f"  - `{name}`: {DOCS.get(name, _SLATE_DOCS.get(name, ''))}"
                     for name in record.inputs)


_SLATE_DOCS = {
    "slate_id": "the slate (ranking) the row belongs to, any type, not NULL",
    "prev_pscore": "the logging policy's cascade probability of positions 1..l-1 (1 at the "
    "first position)",
    "prev_action_prob": "the evaluation policy's cascade probability of positions 1..l-1 (1 "
    "at the first position)",
}


def _section(record: Record) -> str:
    lines = [f"### `{record.name}`", "", record.summary, "",
             f"- Call: `{record.signature}`, an aggregate.", f"- Arguments:\n{_arguments(record)}"]
    if isinstance(record, Estimator | SlateEstimator):
        lines.append(f"- obp: `{record.obp_class}` (estimator_name `{record.obp_name}`).")
    if isinstance(record, SlateEstimator):
        lines.append(f"- Probabilities: {record.probabilities}.")
    if isinstance(record, Estimator) and record.hyperparameter:
        h = record.hyperparameter
        lines.append(f"- `{h.name}` (default `{h.sql_default()}`): {h.doc}. Must be "
                     f"{h.requirement()}.")
    lines += [f"- Formula: {record.formula}.", f"- Undefined: {record.undefined}",
              f"- Source: {record.source}.", ""]
    return "\n".join(lines)


def render_section() -> str:
    """The generated part of docs/off-policy.md, markers included."""
    parts = ["## Reference", "", "### Single-action estimators", "",
             *map(_section, ESTIMATORS), "### Diagnostics", "", *map(_section, DIAGNOSTICS),
             "### Slate estimators", "", *map(_section, SLATE_ESTIMATORS)]
    return "\n".join([BEGIN, "", *parts, END])


def updated(text: str) -> str:
    """``text`` (the whole doc) with its generated part replaced, or appended if absent."""
    return with_section(text, BEGIN, END, render_section())
