"""``duckrank.off_policy``: off-policy estimates of an evaluation policy's value from a log of
single actions (issue 31), with standard errors, bootstrap intervals and the importance-weight
diagnostics, per segment; and the ``duckrank off-policy`` command.

One query computes everything: each estimate is its record's aggregate, the SQL of its macro
(``duckrank.off_policy``'s records, docs/off-policy.md) over inputs checked once in a subquery
instead of by each estimator, and each round's value (the record's ``round_sql``, obp's
``_estimate_round_rewards``) gives the standard error, sd(round values) / sqrt(n), and the
percentile bootstrap interval of their mean (``bootstrap_ci``, duckrank's statistical-test
aggregate; obp's ``estimate_interval`` bootstraps the same round values). The self-normalised
estimators' round values divide by the segment's mean weight, joined from a grouped pass over
the log. Column names reach SQL quoted, hyperparameters as checked floats.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from duckrank.evaluation.inputs import is_polars
from duckrank.off_policy import DIAGNOSTICS, ESTIMATORS, SLATE_ESTIMATORS
from duckrank.off_policy.record import DOMAINS, checked_arguments, plain_arguments
from duckrank.off_policy.requests import Request, resolve
from duckrank.off_policy.slate import SlateEstimator, checked_slate
from duckrank.render.quoting import quote_identifier

if TYPE_CHECKING:
    import pandas

ROLES = tuple(DOMAINS)  # reward, pscore, action_prob, q_hat, v_hat
SLATE_ROLES = ("slate_id", "position", *ROLES)
DIAGNOSTIC_COLUMNS = {"ope_ess": "ess", "ope_support": "support",
                      "ope_max_weight": "max_weight", "ope_mean_weight": "mean_weight"}
FORMATS = ("table", "csv", "json")
LOG = "duckrank_off_policy_log"  # the log's view in the query: its roles as columns


OBP_ARRAYS = ("reward", "action", "pscore", "action_dist", "estimated_rewards_by_reg_model",
              "position")


def _from_obp(arrays: Mapping[str, Any]) -> Any:
    """obp's arrays (a ``bandit_feedback`` dict with ``action_dist`` and, for the estimators
    with a reward model, ``estimated_rewards_by_reg_model`` added; other keys ignored) as a
    log table (``bandit_log``)."""
    import pyarrow

    from duckrank.off_policy.arrays import bandit_log

    given = {k: arrays[k] for k in OBP_ARRAYS if arrays.get(k) is not None}
    missing = [k for k in OBP_ARRAYS[:4] if k not in given]
    if missing:
        raise ValueError(f"off_policy: obp's arrays need {', '.join(missing)}")
    return pyarrow.table(bandit_log(**given))


def _relation(con: duckdb.DuckDBPyConnection, log: Any, registered: list[str]
              ) -> duckdb.DuckDBPyRelation:
    if isinstance(log, Mapping):
        log = _from_obp(log)
    if isinstance(log, str | Path):
        path = str(log)
        if path.lower().endswith((".csv", ".csv.gz", ".tsv")):
            return con.read_csv(path)
        return con.read_parquet(path)
    if isinstance(log, duckdb.DuckDBPyRelation):
        return log
    name = f"duckrank_off_policy_{uuid.uuid4().hex}"
    con.register(name, log)
    registered.append(name)
    return con.table(name)


def _columns(relation: duckdb.DuckDBPyRelation, columns: Mapping[str, str] | None,
             by: list[str], roles: Sequence[str] = ROLES) -> dict[str, str]:
    """role -> the log's column, for the roles the log has; ``by`` columns must exist."""
    names = {c.lower(): c for c in relation.columns}
    unknown = set(columns or {}) - set(roles)
    if unknown:
        raise ValueError(f"off_policy: columns names unknown roles {sorted(unknown)}; the "
                         f"roles are {', '.join(roles)}")
    wanted = {role: (columns or {}).get(role, role) for role in roles}
    for role, column in wanted.items():
        if columns and role in columns and column.lower() not in names:
            raise ValueError(f"off_policy: the log has no {role} column {column!r}; its "
                             f"columns are {', '.join(relation.columns)}")
    for column in by:
        if column.lower() not in names:
            raise ValueError(f"off_policy: the log has no column {column!r} to group by; its "
                             f"columns are {', '.join(relation.columns)}")
    return {role: names[c.lower()] for role, c in wanted.items() if c.lower() in names}


def _checked(requests: list[Request], keys: list[str]) -> str:
    """The log with each input the requests read checked once (errors name ``off_policy`` and
    the input) and the importance weight ``w``: the estimators then read plain columns, about
    three times faster than each macro checking its own arguments."""
    roles = {"pscore", "action_prob"} | {r for record, _ in requests for r in record.inputs}
    checked = checked_arguments("off_policy")
    columns = [*keys, *(f"{checked[r]} AS {r}" for r in ROLES if r in roles),
               f"{checked['w']} AS w"]
    return f"SELECT {', '.join(columns)} FROM {LOG}"


def _query(requests: list[Request], by: list[str],
           interval: tuple[float, int, int] | None) -> str:
    """The query over ``LOG`` (the roles as columns, the segments as by0, by1, ...). Each
    estimate is its record's aggregate over the checked inputs (the macro's SQL, from the same
    record); the self-normalised estimators' round values divide by their segment's mean
    weight, joined from a grouped pass over the log."""
    keys = [f"by{i}" for i in range(len(by))]
    source = f"({_checked(requests, keys)}) l"
    if any(r.self_normalised for r, _ in requests):
        on = " AND ".join(f"l.{k} IS NOT DISTINCT FROM m.{k}" for k in keys) or "true"
        group = f" GROUP BY {', '.join(keys)}" if keys else ""
        source += (f" JOIN (SELECT {''.join(k + ', ' for k in keys)}avg(CAST(action_prob AS "
                   f"DOUBLE) / CAST(pscore AS DOUBLE)) AS mean_weight FROM {LOG}{group}) m ON {on}")
    plain = plain_arguments()
    outputs = [f"l.{k} AS {k}" for k in keys] + ["count(*) AS rounds"]
    for i, (record, lam) in enumerate(requests):
        rounds = record.round_sql("m.mean_weight", lam, plain)
        outputs += [f"{record.aggregate_sql(lam, plain)} AS e{i}",
                    f"stddev_samp({rounds}) / sqrt(count(*)) AS s{i}"]
        if interval is not None:
            level, trials, seed = interval
            outputs.append(f"bootstrap_ci({rounds}, level := {level!r}, trials := {trials}, "
                           f"seed := {seed}) AS b{i}")
    outputs += [f"{d.aggregate_sql(plain)} AS {d.name}" for d in DIAGNOSTICS]
    group = f" GROUP BY {', '.join('l.' + k for k in keys)}" if keys else ""
    return f"SELECT {', '.join(outputs)} FROM {source}{group}"


def _view_sql(roles: dict[str, str], by: list[str]) -> str:
    columns = [f"{quote_identifier(c)} AS {role}" for role, c in roles.items()]
    columns += [f"{quote_identifier(c)} AS by{i}" for i, c in enumerate(by)]
    return f"SELECT {', '.join(columns)} FROM duckrank_off_policy_input"


def off_policy(
    log: Any,
    estimators: Sequence[str] | str | None = None,
    *,
    by: str | Sequence[str] | None = None,
    lambdas: Mapping[str, float | Sequence[float]] | None = None,
    columns: Mapping[str, str] | None = None,
    interval: bool = True,
    level: float = 0.95,
    trials: int = 10000,
    seed: int = 0,
    connection: duckdb.DuckDBPyConnection | None = None,
) -> pandas.DataFrame:
    """Off-policy estimates of the evaluation policy's value, one row per (segment, estimator,
    lambda_), as a pandas DataFrame (polars when ``log`` is one).

    ``log``: one row per logged round with the columns ``reward``, ``pscore`` (the logging
    policy's probability of the logged action), ``action_prob`` (the evaluation policy's), and
    for the estimators with a reward model ``q_hat`` and ``v_hat`` (docs/off-policy.md; from
    obp's arrays, ``duckrank.off_policy.arrays.bandit_log`` makes them); other names through
    ``columns`` (role -> column). A Parquet or CSV path, a DuckDB relation, a pandas /
    polars / Arrow table, or obp's arrays as a dict (``reward``, ``action``, ``pscore``,
    ``action_dist``, and ``estimated_rewards_by_reg_model``, ``position`` where given: obp's
    ``bandit_feedback`` with those added).

    ``estimators``: SQL names or obp's estimator names (``'dm'``, ``'ips'``/``'ipw'``,
    ``'snips'``, ``'dr'``, ``'sndr'``, ``'switch_dr'``, ``'dr_os'``, ``'sg_ips'``,
    ``'sg_dr'``); default every one whose columns the log has. ``lambdas``: estimator ->
    lambda_ (obp's hyperparameter) or a list of them, default obp's. ``by``: segment columns.

    Columns: the segments, ``estimator``, ``lambda_``, ``estimate``, ``stderr`` (sd of the
    round values / sqrt(rounds)), ``ci_low`` and ``ci_high`` (a percentile bootstrap of the
    round values' mean: ``trials`` resamples, ``level``, ``seed``; ``interval=False`` skips
    it, which costs trials x rounds draws per estimator), ``rounds``, and the diagnostics of
    the segment's importance weights: ``ess``, ``support``, ``max_weight``, ``mean_weight``.
    """
    import pandas

    from duckrank.engines.duckdb import register

    by_columns = [by] if isinstance(by, str) else list(by or [])
    slates = _slate_records(estimators)
    if slates and lambdas:
        raise ValueError("off_policy: the slate estimators have no lambda_")
    con = connection
    if con is None:
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
    registered: list[str] = []
    try:
        relation = _relation(con, log, registered)
        roles = _columns(relation, columns, by_columns, SLATE_ROLES if slates else ROLES)
        for needed in ("pscore", "action_prob", *(("slate_id", "reward") if slates else ())):
            if needed not in roles:
                raise ValueError(f"off_policy: the log has no {needed} column; its columns "
                                 f"are {', '.join(relation.columns)}")
        settings = None
        if interval:
            register(con, native=False, functions=["bootstrap_ci"])
            settings = (float(level), int(trials), int(seed))
        view = relation.query("duckrank_off_policy_input", _view_sql(roles, by_columns))
        if slates:
            requests = [(record, None) for record in slates]
            sql = _slate_query(slates, set(roles), by_columns, settings)
        else:
            requests = resolve(estimators, lambdas, set(roles))
            sql = _query(requests, by_columns, settings)
        frame = view.query(LOG, sql).df()
    finally:
        for name in registered:
            con.unregister(name)
        if connection is None:
            con.close()
    result = _long(frame, requests, by_columns, interval, slates=bool(slates))
    if is_polars(log):
        import polars
        return polars.from_pandas(result)
    return pandas.DataFrame(result)


def _slate_records(names: Sequence[str] | str | None) -> list[SlateEstimator]:
    """The slate estimators named (SQL or obp names), or none when no name is one; a mix of
    slate and single-action estimators is an error (their logs differ)."""
    if names is None:
        return []
    names = [names] if isinstance(names, str) else list(names)
    by_name = {n: r for r in SLATE_ESTIMATORS for n in (r.name, r.obp_name)}
    slates = [by_name[n.lower()] for n in names if n.lower() in by_name]
    if slates and len(slates) != len(names):
        raise ValueError("off_policy: slate and single-action estimators read different logs; "
                         "ask for them in separate calls")
    return slates


def _slate_query(records: list[SlateEstimator], roles: set[str], by: list[str],
                 interval: tuple[float, int, int] | None) -> str:
    """Per segment: each slate's sum of its rows' terms (obp's round rewards summed over the
    slate's positions), then their mean (obp's sum over rows / number of slates), standard
    error and bootstrap interval (obp's ``estimate_interval`` resamples the slates too). The
    cascade DR's previous weight is the checked weight of the slate's previous position, 1 at
    its first."""
    keys = [f"by{i}" for i in range(len(by))]
    model = any(r.reads_reward_model for r in records)
    missing = [r for r in (("position", "q_hat", "v_hat") if model else ()) if r not in roles]
    if missing:
        raise ValueError(f"off_policy: slate_cascade_dr needs the columns {', '.join(missing)}"
                         ", which the log lacks")
    checked = checked_arguments("off_policy")
    columns = [*keys, f"{checked_slate('off_policy')} AS slate_id",
               f"{checked['reward']} AS reward", f"{checked['w']} AS w", "pscore",
               "action_prob"]
    if model:
        columns += ["position", f"{checked['q_hat']} AS q_hat", f"{checked['v_hat']} AS v_hat"]
    rows = f"SELECT {', '.join(columns)} FROM {LOG}"
    if model:
        partition = ", ".join([*keys, "slate_id"])
        rows = (f"SELECT *, lag(w, 1, 1.0) OVER (PARTITION BY {partition} ORDER BY position) "
                f"AS prev_w FROM ({rows})")
    plain = {**plain_arguments(), "prev_w": "prev_w"}
    sums = ", ".join(
        f"{r.one_value_per_slate('1', 'pscore', 'action_prob', f'sum({r.term(plain)})')} AS v{i}"
        for i, r in enumerate(records))
    grouping = ", ".join([*keys, "slate_id"])
    per_slate = f"SELECT {''.join(k + ', ' for k in keys)}{sums} FROM ({rows}) GROUP BY {grouping}"
    outputs = [*keys, "count(*) AS rounds"]
    for i in range(len(records)):
        outputs += [f"avg(v{i}) AS e{i}", f"stddev_samp(v{i}) / sqrt(count(*)) AS s{i}"]
        if interval is not None:
            level, trials, seed = interval
            outputs.append(f"bootstrap_ci(v{i}, level := {level!r}, trials := {trials}, "
                           f"seed := {seed}) AS b{i}")
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    return f"SELECT {', '.join(outputs)} FROM ({per_slate}){group}"


def _long(frame: pandas.DataFrame, requests: list[Request],
          by: list[str], interval: bool, slates: bool = False) -> pandas.DataFrame:
    """One row per (segment, request) from the query's one row per segment (for slates:
    ``slates``, the slates counted, and no lambda_ or weight diagnostics)."""
    import pandas

    parts = []
    for i, (record, lam) in enumerate(requests):
        part = pandas.DataFrame(index=frame.index)
        for j, name in enumerate(by):
            part[name] = frame[f"by{j}"]
        part["estimator"] = record.name
        if not slates:
            part["lambda_"] = lam
        part["estimate"] = frame[f"e{i}"]
        part["stderr"] = frame[f"s{i}"]
        if interval:
            part["ci_low"] = [None if b is None else b["ci_low"] for b in frame[f"b{i}"]]
            part["ci_high"] = [None if b is None else b["ci_high"] for b in frame[f"b{i}"]]
        if slates:
            part["slates"] = frame["rounds"]
            parts.append(part)
            continue
        part["rounds"] = frame["rounds"]
        for name, column in DIAGNOSTIC_COLUMNS.items():
            part[column] = frame[name]
        parts.append(part)
    result = pandas.concat(parts, ignore_index=True)
    return result.sort_values(by, kind="stable", ignore_index=True) if by else result


# --- the command ---------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    """Every digit of a number; NULL and NaN as null, an infinite lambda_ as "inf" (JSON has
    no infinity)."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def run(args: argparse.Namespace) -> int:
    """``duckrank off-policy``: print the estimates."""
    lambdas: dict[str, list[float]] = {}
    for text in args.lambda_ or []:
        name, _, value = text.partition("=")
        if not value:
            raise ValueError(f"--lambda must be estimator=value, got {text!r}")
        try:
            lambdas.setdefault(name.strip(), []).append(float(value))
        except ValueError:
            raise ValueError(f"--lambda {name}: not a number: {value!r}") from None
    columns = {role: getattr(args, f"{role}_column") for role in SLATE_ROLES
               if getattr(args, f"{role}_column") is not None}
    result = off_policy(
        args.log, args.estimator, by=args.by, lambdas=lambdas, columns=columns,
        interval=not args.no_interval, level=args.level, trials=args.trials, seed=args.seed,
    )
    if args.format == "csv":
        result.to_csv(sys.stdout, index=False)
    elif args.format == "json":
        records = [{k: _json_value(v) for k, v in row.items()}
                   for row in result.to_dict(orient="records")]
        sys.stdout.write(json.dumps(records, indent=2) + "\n")
    else:
        sys.stdout.write(result.to_string(index=False) + "\n")
    return 0


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``off-policy`` to the ``duckrank`` command's subparsers."""
    parser = commands.add_parser(
        "off-policy", help="off-policy estimates of a policy's value from a bandit log",
        description="Off-policy estimators of the Open Bandit Pipeline (obp 0.5) over a log "
        "with one row per round (reward, pscore, action_prob; q_hat and v_hat for the "
        "estimators with a reward model): estimates, standard errors, bootstrap intervals and "
        "the importance-weight diagnostics (docs/off-policy.md). Parquet or CSV.")
    parser.add_argument("log", help="the log file (Parquet or CSV)")
    names = ", ".join(e.name for e in ESTIMATORS)
    slates = ", ".join(e.name for e in SLATE_ESTIMATORS)
    parser.add_argument("-e", "--estimator", action="append", default=None,
                        help=f"repeat for more (default: every one the columns allow): {names}; "
                        f"or, over a log of (slate_id, position) rows, {slates}")
    parser.add_argument("--lambda", dest="lambda_", action="append", metavar="NAME=VALUE",
                        help="obp's lambda_ of an estimator, e.g. ips=10 or dr_os=inf; "
                        "repeat for more values")
    parser.add_argument("--by", action="append", default=None, help="a segment column")
    for role in SLATE_ROLES:
        parser.add_argument(f"--{role.replace('_', '-')}-column", dest=f"{role}_column",
                            default=None, help=f"the {role} column (default: {role})")
    parser.add_argument("--no-interval", action="store_true",
                        help="skip the bootstrap intervals (trials x rounds draws each)")
    parser.add_argument("--level", type=float, default=0.95, help="default 0.95")
    parser.add_argument("--trials", type=int, default=10000, help="default 10000")
    parser.add_argument("--seed", type=int, default=0, help="default 0")
    parser.add_argument("--format", choices=FORMATS, default="table")
    parser.set_defaults(handler=run)
    return parser
