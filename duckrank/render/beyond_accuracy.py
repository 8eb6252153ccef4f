"""SQL for the beyond-accuracy metrics (coverage, popularity, novelty, diversity; issue 17): the
shared helper macros and one macro per record of ``duckrank.metrics.beyond_accuracy``, a TABLE
macro for the metrics that read tables and a scalar macro for those of two lists; and the
reference part of docs/beyond-accuracy.md (between ``BEGIN`` and ``END``; the rest of that file
is written by hand)."""

from __future__ import annotations

from pathlib import Path

from duckrank.metrics import debiased
from duckrank.metrics.beyond_accuracy import HELPERS, METRICS, BeyondMetric
from duckrank.options import Option
from duckrank.render.sections import with_section

# Every beyond-accuracy record: coverage, popularity, diversity, list similarity, and the
# inverse-propensity weighted accuracy of duckrank.metrics.debiased.
RECORDS: tuple[BeyondMetric, ...] = (*METRICS, *debiased.METRICS)


def by_name(name: str) -> BeyondMetric:
    """The record of a beyond-accuracy metric by its SQL name (case-insensitive)."""
    for metric in RECORDS:
        if metric.name == name.lower():
            return metric
    known = ", ".join(m.name for m in RECORDS)
    raise KeyError(f"unknown beyond-accuracy metric {name!r}; known: {known}")


def metric_macro(metric: BeyondMetric) -> str:
    table = "" if metric.kind == "pair" else "TABLE\n"
    return (
        f"CREATE OR REPLACE MACRO {metric.name}({metric.parameter_list}) AS {table}{metric.sql}"
    )


MACROS: tuple[str, ...] = (*HELPERS, *(metric_macro(m) for m in RECORDS))


DOC_FILE = Path(__file__).resolve().parents[2] / "docs" / "beyond-accuracy.md"
BEGIN = "<!-- beyond-accuracy metrics: generated from their records, do not edit -->"
END = "<!-- end of the beyond-accuracy metrics -->"
KINDS = {
    "catalogue": "a table macro; one row for the whole recommendations table",
    "per_user": "a table macro; one row per user of recs: `user` and the value",
    "pair": "a scalar macro; one value per row",
    "per_group": "a table macro; one row per pair of groups (not an evaluate request)",
}


def _domain(option: Option) -> str:
    """What a valid value is, as the metrics' reference says it (nothing for a name)."""
    if option.choices:
        return f". One of {', '.join(map(repr, option.choices))}."
    return f". Must be {option.requirement()}." if option.checked else ""


def _section(metric: BeyondMetric) -> str:
    parameters = "\n".join(
        f"  - `{p.name}`{'' if p.default is None else f' (default `{p.default}`)'}: {p.doc}"
        f"{_domain(p.option)}" for p in metric.parameters
    )
    return "\n".join([
        f"### `{metric.name}`", "", metric.summary, "",
        f"- Call: `{metric.signature}`: {KINDS[metric.kind]}.",
        f"- Parameters:\n{parameters}",
        f"- Formula: {metric.formula}.",
        f"- Undefined: {metric.undefined}",
        f"- Conventions: {metric.conventions}",
        f"- Peers: {metric.peers}",
        f"- Source: {metric.source}.",
        "", "<details><summary>SQL</summary>", "", "```sql", metric_macro(metric), "```", "",
        "</details>", "",
    ])


def render_section() -> str:
    """The generated part of docs/beyond-accuracy.md, markers included."""
    overview = ["| function | kind | value |", "| --- | --- | --- |"]
    overview += [f"| `{m.name}` | {m.kind} | {m.summary} |" for m in RECORDS]
    parts = ["## Reference", "", "\n".join(overview), "", *map(_section, RECORDS)]
    return "\n".join([BEGIN, "", *parts, END])


def updated(text: str) -> str:
    """``text`` (the whole doc) with its generated part replaced, or appended if absent."""
    return with_section(text, BEGIN, END, render_section())

