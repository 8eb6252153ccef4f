"""Render the function reference (docs/reference.md) from the metric records.

``python -m duckrank.render`` rewrites the file; a test checks it is current, so the docs
cannot drift from the definitions.
"""

from __future__ import annotations

from pathlib import Path

from duckrank.metrics import METRICS
from duckrank.metrics.record import Metric

REFERENCE_FILE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"

INTRO = """# Function reference

Generated from duckrank's metric records (`duckrank/metrics/`) by
`python -m duckrank.render`; do not edit by hand.

Every metric is a scalar SQL function, one value per row: `f(rec, truth)` or `f(rec, truth, k)`,
plus named options (`f(rec, truth, 10, gain := 'linear')`). Average over rows with `avg()`,
which skips NULLs the way trec_eval skips unjudged queries.

Conventions shared by the binary metrics (`duckrank/matching/`):

- `rec`: a LIST of item ids, best first. `truth`: a LIST of relevant ids, read as a set (an id
  listed twice counts once; NULL elements are ignored). Ids may be of any type DuckDB compares:
  every integer width, VARCHAR, UUID, ...; `INTEGER[]` against `BIGINT[]` matches 1 with 1.
- `k`: the cut-off, a positive integer of any integer type, constant or column. Omitted (or
  `'all'`): the whole of `rec`. NULL k gives NULL. Anything else that is not a positive integer
  is an error naming the function and the value. K = min(k, len(rec)).
- A hit is an item of the top K that is in truth and has not appeared earlier in rec: a
  duplicate recommendation is a miss, so no value leaves [0, 1]. NULL elements of rec keep their
  position and are never hits.
- NULL rec or NULL truth gives NULL.

Speed: pass `rec` and `truth` as columns (or build them in a CTE). An expression in their place,
such as `ndcg(list_distinct(rec), truth, 10)`, gives the same value but DuckDB evaluates it again
for every list element inside the macro's lambdas.
"""


def _metric_section(overloads: list[Metric]) -> str:
    first = overloads[0]
    lines = [f"## `{first.name}`", "", first.summary, ""]
    for metric in overloads:
        lines.append(f"- Signature: `{metric.signature}`")
        lines.append(f"- Formula: {metric.formula}.")
        lines.append(f"- NULL: {metric.undefined}")
        for option in metric.options:
            choices = f" One of {', '.join(map(repr, option.choices))}." if option.choices else ""
            lines.append(f"- `{option.name}` (default `{option.default!r}`): {option.doc}{choices}")
        if metric.peers:
            lines.append(f"- Peer tools: {metric.peers}")
        if metric.source:
            lines.append(f"- Source: {metric.source}")
    names = sorted({n for m in overloads for n in m.cli_names})
    lines.append(f"- Command-line names: {', '.join(f'`{n}`' for n in names)}")
    return "\n".join(lines) + "\n"


def render_reference() -> str:
    by_name: dict[str, list[Metric]] = {}
    for metric in METRICS:
        by_name.setdefault(metric.name, []).append(metric)
    return INTRO + "".join("\n" + _metric_section(o) for o in by_name.values())

