"""The comparisons of a report, as SQL on the per-query table: each system's mean and bootstrap
interval, the test over every (metric, pair of systems), the correction of each metric's family
(``duckrank.stats.corrections``, in numpy; ``adjusted_sql`` is the same as SQL for the methods
that have a SQL form), the marks, and the ``Report`` they make (``_report``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from duckrank.render.quoting import quote_identifier
from duckrank.reports.compare.options import Options, _named, _plural
from duckrank.reports.compare.report import DIGITS, LETTERS, Report, _plain
from duckrank.reports.compare.scoring import _long, _Scored
from duckrank.stats.corrections import Correction
from duckrank.stats.corrections import correction as correction_of
from duckrank.stats.effect import PAIRED_EFFECT_SIZE
from duckrank.stats.record import InReport, StatTest
from duckrank.stats.resampling import BOOTSTRAP_CI


def _marks(comparisons: list[dict[str, Any]]) -> dict[tuple[int, int], str]:
    """(system index, metric index) -> the letters of the systems it beats (significant, and the
    higher mean), in the systems' order."""
    beaten: dict[tuple[int, int], set[int]] = {}
    for row in comparisons:
        if row["significant"] and row["mean_diff"]:
            winner, loser = ((row["a"], row["b"]) if row["mean_diff"] > 0
                             else (row["b"], row["a"]))
            beaten.setdefault((winner, row["metric"]), set()).add(loser)
    return {key: "".join(LETTERS[i] for i in sorted(losers)) for key, losers in beaten.items()}


def adjusted_sql(tested: str, correction: str | None) -> str:
    """SELECT the rows of ``tested`` (columns metric, a, b, p_value, ...) with ``p_adjusted``:
    the family is each metric's comparisons with a p-value (m of them), sorted by p-value (ties
    by a, b), and the correction is its record's SQL term (``duckrank.stats.corrections``) as a
    window function: single, or the running maximum (step-down) or minimum (step-up) over that
    order, capped at 1; None: p. A NULL p-value stays NULL. The report itself corrects in numpy
    (``Correction.adjust``, every method); this is the same for the methods with a SQL form."""
    if correction is None:
        return f"SELECT *, p_value AS p_adjusted FROM {tested}"
    method = correction_of(correction)
    if method.sql_term is None:
        raise ValueError(f"adjusted_sql: correction={correction!r} has no SQL form (see "
                         "duckrank.stats.corrections); its numpy form is "
                         f"duckrank.stats.corrections.BY_NAME[{correction!r}].adjust")
    order = "PARTITION BY metric ORDER BY p_value NULLS LAST, a, b"
    term = method.sql_term.format(
        p="p_value", m="count(p_value) OVER (PARTITION BY metric)",
        i=f"row_number() OVER ({order})")
    frame = {"down": f"max(duckrank_term) OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING "
                     "AND CURRENT ROW)",
             "up": f"min(duckrank_term) OVER ({order} ROWS BETWEEN CURRENT ROW AND UNBOUNDED "
                   "FOLLOWING)",
             "single": "duckrank_term"}[method.shape]
    # (least() skips NULLs: a NULL p-value must not become 1.)
    return f"""
        SELECT * EXCLUDE (duckrank_term),
               CASE WHEN p_value IS NOT NULL THEN least(1.0, {frame}) END AS p_adjusted
        FROM (SELECT *, {term} AS duckrank_term FROM {tested})"""


def _adjusted(metrics: list[int], p_values: list[float | None],
              correction: Correction | None) -> list[float | None]:
    """The adjusted p-values of the comparisons, each metric's family corrected on its own
    (None stays None and is not in the family)."""
    p = np.array([np.nan if v is None else v for v in p_values], dtype=np.float64)
    if correction is None:
        return [_plain(v) for v in p.tolist()]
    out = np.full(len(p), np.nan)
    metric = np.asarray(metrics)
    for value in np.unique(metric):
        family = metric == value
        out[family] = correction.adjust(p[family])
    return [_plain(v) for v in out.tolist()]


def _report(con: duckdb.DuckDBPyConnection, scored: _Scored, o: Options,
            polars: bool) -> Report:
    systems, labels, per_query, temporary = (scored.systems, scored.labels, scored.table,
                                             scored.temporary)
    pairs = o.pairs(systems)
    interval = _named(BOOTSTRAP_CI, o)

    def call(test: StatTest, arguments: str, named: Mapping[str, Any]) -> str:
        return f"{test.name}({arguments}{''.join(f', {n} := ${n}' for n in named)})"

    ci = (f"{call(BOOTSTRAP_CI, 'value', interval)}" if o.level is not None
          else "NULL::STRUCT(ci_low DOUBLE, ci_high DOUBLE)")
    summary = con.sql(f"""
        SELECT system, metric, n, filled, mean, ci.ci_low AS ci_low, ci.ci_high AS ci_high
        FROM (SELECT system, metric, count(value) AS n,
                     count(*) FILTER (WHERE filled) AS filled, avg(value) AS mean, {ci} AS ci
              FROM {per_query} GROUP BY ALL)
        ORDER BY system, metric""",
        params=interval if o.level is not None else {}).to_arrow_table().to_pylist()

    # A test with ``from_variance`` (the t-test) is computed from DuckDB's count, avg and
    # var_samp (Welford: exact digits even when the differences are constant, where
    # paired_ttest's one-pass sums refuse the whole query) with its formula (``student_t``),
    # in ``_tested``; the others are their aggregates, with their options from the report's.
    # A cell without a p-value gets its reason (``_note``) and the rest of the report stands.
    test, by_variance = o.stat_test, o.in_report.from_variance is not None
    named = {} if by_variance else _named(test, o)
    test_call = ("struct_pack(variance := var_samp(x.value - y.value))" if by_variance
                 else call(test, "x.value, y.value", named))
    # Against a baseline (k - 1 comparisons, a bootstrap each), the intervals of the mean
    # difference and of d_z: ``paired_effect_size``, whose mean interval is
    # ``paired_bootstrap_ci``'s digit for digit. d_z itself comes from DuckDB's avg and
    # stddev_samp for every comparison.
    paired_interval = _named(PAIRED_EFFECT_SIZE, o)
    difference = (f", {call(PAIRED_EFFECT_SIZE, 'x.value, y.value', paired_interval)} AS d"
                  if o.level is not None and o.baseline is not None
                  else ", NULL::STRUCT(ci_low DOUBLE, ci_high DOUBLE, d_z_low DOUBLE, "
                  "d_z_high DOUBLE) AS d")
    params: dict[str, Any] = dict(named)
    if o.level is not None and o.baseline is not None:
        params |= paired_interval
    statistic = ("t.statistic" if not by_variance and "statistic" in test.field_names
                 else "NULL::DOUBLE")
    p_value = "NULL::DOUBLE" if by_variance else "t.p_value"
    variance = "t.variance" if by_variance else "NULL::DOUBLE"
    cells = con.sql(f"""
        SELECT metric, a, b, n, mean_diff, {statistic} AS statistic, {p_value} AS p_value,
               d.ci_low AS ci_low, d.ci_high AS ci_high, {variance} AS variance, lowest,
               highest, not_finite, d_z, d.d_z_low AS d_z_low, d.d_z_high AS d_z_high, wins,
               ties, losses
        FROM (
          SELECT x.metric, p.a, p.b, count(x.value - y.value) AS n,
                 avg(x.value - y.value) AS mean_diff, {test_call} AS t{difference},
                 min(x.value - y.value) AS lowest, max(x.value - y.value) AS highest,
                 count(*) FILTER (WHERE NOT isfinite(x.value - y.value)) AS not_finite,
                 CASE WHEN stddev_samp(x.value - y.value) > 0 THEN avg(x.value - y.value)
                      / stddev_samp(x.value - y.value) END AS d_z,
                 count(*) FILTER (WHERE x.value > y.value) AS wins,
                 count(*) FILTER (WHERE x.value = y.value) AS ties,
                 count(*) FILTER (WHERE x.value < y.value) AS losses
          FROM (VALUES {', '.join(f'({a}, {b})' for a, b in pairs)}) p(a, b)
          JOIN {per_query} x ON x.system = p.a
          JOIN {per_query} y ON y.system = p.b AND y.query = x.query AND y.metric = x.metric
          GROUP BY ALL)""", params=params).to_arrow_table()
    tested = _tested(cells, o.in_report)
    tested = tested.append_column("p_adjusted", pa.array(_adjusted(
        tested["metric"].to_pylist(), tested["p_value"].to_pylist(), o.corrected),
        pa.float64()))
    name = temporary("registered")
    con.register(name, tested)
    compared = con.sql(f"""
        SELECT metric, a, b, n, mean_diff, statistic, p_value, p_adjusted,
               coalesce(p_adjusted <= $alpha, false) AS significant, ci_low, ci_high, note,
               d_z, d_z_low, d_z_high, wins, ties, losses
        FROM {quote_identifier(name)} ORDER BY metric, a, b""",
        params={"alpha": o.alpha}).to_arrow_table().to_pylist()

    marks = _marks(compared)
    summary_table = pa.table({
        "system": [systems[r["system"]] for r in summary],
        "letter": [LETTERS[r["system"]] for r in summary],
        "metric": [labels[r["metric"]] for r in summary],
        **{name: pa.array([r[name] for r in summary], pa.int64()) for name in ("n", "filled")},
        **{name: pa.array([r[name] for r in summary], pa.float64())
           for name in ("mean", "ci_low", "ci_high")},
        "beats": [marks.get((r["system"], r["metric"]), "") for r in summary],
    })
    comparisons_table = pa.table({
        "metric": [labels[r["metric"]] for r in compared],
        "system": [systems[r["a"]] for r in compared],
        "other": [systems[r["b"]] for r in compared],
        **{name: pa.array([r[name] for r in compared], pa.int64() if name == "n"
                          else pa.float64())
           for name in ("n", "mean_diff", "statistic", "p_value", "p_adjusted")},
        "significant": pa.array([r["significant"] for r in compared], pa.bool_()),
        **{name: pa.array([r[name] for r in compared], pa.float64())
           for name in ("ci_low", "ci_high")},
        "note": pa.array([r["note"] for r in compared], pa.string()),
        **{name: pa.array([r[name] for r in compared], pa.float64())
           for name in ("d_z", "d_z_low", "d_z_high")},
        **{name: pa.array([r[name] for r in compared], pa.int64())
           for name in ("wins", "ties", "losses")},
    })
    return Report(tuple(systems), tuple(labels), o, summary_table, comparisons_table,
                  _long(con, scored), polars)


def _tested(cells: pa.Table, test: InReport) -> pa.Table:
    """The comparisons' rows (metric, a, b, n, mean_diff, statistic, p_value, ci_low, ci_high,
    note): for a test computed ``from_variance`` (the t-test), its statistic and p from n,
    mean_diff and the variance; for every test, where p_value is NULL, ``note`` says why."""
    rows = cells.to_pylist()
    if test.from_variance is not None:
        nan = float("nan")
        statistic, p_value = test.from_variance(
            np.array([r["n"] for r in rows], dtype=np.float64),
            np.array([nan if r["mean_diff"] is None else r["mean_diff"] for r in rows]),
            np.array([nan if r["variance"] is None else r["variance"] for r in rows]))
        for row, t, p in zip(rows, statistic.tolist(), p_value.tolist(), strict=True):
            # Equal differences have no variance: t is ±inf or 0/0 (scipy says inf, p = 0),
            # a statistic the t distribution does not describe; paired_ttest refuses them.
            constant = row["lowest"] is not None and row["lowest"] == row["highest"]
            row["statistic"], row["p_value"] = (None, None) if constant else (_plain(t), _plain(p))
    for row in rows:
        row["note"] = None if row["p_value"] is not None else _note(row, test)
    names = ("metric", "a", "b", "n", "mean_diff", "statistic", "p_value", "ci_low", "ci_high",
             "note", "d_z", "d_z_low", "d_z_high", "wins", "ties", "losses")
    types = {"metric": pa.int64(), "a": pa.int64(), "b": pa.int64(), "n": pa.int64(),
             "note": pa.string(), "wins": pa.int64(), "ties": pa.int64(), "losses": pa.int64()}
    return pa.table({name: pa.array([r[name] for r in rows], types.get(name, pa.float64()))
                     for name in names})


def _note(row: dict[str, Any], test: InReport) -> str:
    """Why a comparison has no p-value."""
    if row["not_finite"]:
        return (f"{_plural(row['not_finite'], 'difference')} not finite (NaN or infinite): "
                "no p-value is defined")
    if row["n"] < 2:
        return (f"{row['n']} {'query' if row['n'] == 1 else 'queries'} with a value for both "
                "systems; a test needs 2")
    if row["lowest"] == row["highest"]:
        value = f"{row['lowest']:+.{DIGITS}g}" if row["lowest"] else "0"
        return f"every difference is {value}{test.constant}"
    return "the test is undefined for these values"
