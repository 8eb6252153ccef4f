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

Binary metrics on graded truth: every binary metric also takes `truth` as a
`MAP(VARCHAR, DOUBLE)` of item -> grade, with `min_grade`: relevant means grade >= min_grade
(NULL, the default: grade > 0, trec_eval's rule). rec items are matched by their text, as the
graded metrics match them. A negative grade is never relevant (trec_eval: in the pool but
unjudged); a NULL, NaN or infinite grade is an error naming the item.

trec_eval's measures (`duckrank/metrics/trec_eval.py`): rec is the ranking in trec_eval's order
(score descending, then docno descending); K = min(k, len(rec)) is trec_eval's num_ret. They give
trec_eval's value where trec_eval divides by a count that is 0 (0 for a query without relevant
items), NULL only for NULL inputs. The measures that need judgments (`bpref`, `infap`, `unjudged`,
`num_nonrel_judged_ret`, `rbp_resid`, `relstring`, `ndcg_rel`, `rndcg`, `normalized_gain`) take
MAP truth only and read it as trec_eval reads qrels: grade >= 0 judged (relevant or not by
`min_grade`), negative in the pool but unjudged, an item missing from truth not in the pool.
trec_eval's gm_map and gm_bpref average geometrically: `trec_geomean(x, floor := 1e-5)` is the
aggregate exp(avg(ln(greatest(x, floor)))), trec_eval's floor MIN_GEO_MEAN included, e.g.
`select trec_geomean(bpref(rec, truth)) from runs`.

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
            bounds = (f" Must be {option.bounds.text()}."
                      if option.bounds and option.bounds.in_doc else "")
            default = option.sql_default()
            lines.append(f"- `{option.name}` (default `{default}`): {option.doc}{choices}{bounds}")
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

