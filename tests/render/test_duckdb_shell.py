"""sql/duckrank.sql and duckrank's database files in the real DuckDB shell (no Python in its
process), in each DuckDB line duckrank supports (docs/integrations.md, "DuckDB without Python").

Every function of the file runs in the shell on stored inputs, and its values are compared with
those of the same query through ``duckrank.connect()`` (the expected values: the registered
functions, whose numbers the metric tests check against hand calculations and peer tools):
every metric record whose macro the file creates (trec_eval's measures included), with and
without k and with non-default option values; the scalar beyond-accuracy functions; the
ordered-list aggregates with their options and ``trec_geomean``; the TREC table macros; the
beyond-accuracy and protocol table macros on small stored tables, their rows sorted. The same
is done on a database file written by ``duckrank.connect(path)`` in the storage format older
lines read, which the shell opens without ``.read``, and on a file the shell wrote, which DuckDB
2.0 opens.

The test extra installs one shell (PyPI's duckdb-cli, pinned to the oldest supported line). A
shell of another line is tested when its executable is named in DUCKRANK_TEST_DUCKDB_SHELLS
(paths separated by os.pathsep), e.g. ``duckdb`` from ``pip download duckdb-cli==1.5.6``
unpacked in /tmp; lines without a shell are skipped, with the reason.
"""

from __future__ import annotations

import functools
import math
import os
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Iterable, Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import duckrank
from duckrank.metrics import METRICS
from duckrank.metrics.record import Metric, Option
from duckrank.off_policy import RECORDS as OFF_POLICY_RECORDS
from duckrank.render.macros import SQL_FILE

SUPPORTED_LINES = ("1.4", "1.5", "2.0")  # as docs/integrations.md states them
OLDEST_STORAGE = "v1.4.0"  # the storage_compatibility_version every supported line reads
SHELLS_VARIABLE = "DUCKRANK_TEST_DUCKDB_SHELLS"


# --- the shells ----------------------------------------------------------------------------------

def _installed_shell() -> str | None:
    """The ``duckdb`` the test extra installs next to this Python."""
    return shutil.which("duckdb", path=sysconfig.get_path("scripts"))


@functools.cache
def _line(shell: str) -> str:
    version = subprocess.run([shell, "--version"], capture_output=True, text=True, timeout=60,
                             check=True).stdout
    match = re.match(r"v(\d+\.\d+)\.", version)
    assert match, f"{shell} --version printed {version!r}"
    return match.group(1)


@functools.cache
def _shells() -> dict[str, str]:
    """DuckDB line ('1.4') -> a shell of that line."""
    named = [p for p in os.environ.get(SHELLS_VARIABLE, "").split(os.pathsep) if p]
    found: dict[str, str] = {}
    for shell in filter(None, [*named, _installed_shell()]):  # a named shell first
        found.setdefault(_line(shell), shell)
    return found


@pytest.fixture(scope="module", params=SUPPORTED_LINES)
def shell(request: pytest.FixtureRequest) -> str:
    line = request.param
    if line not in _shells():
        pytest.skip(f"no DuckDB {line} shell: the test extra installs the oldest supported line; "
                    f"name a `duckdb` of {line} in {SHELLS_VARIABLE} to test it")
    return _shells()[line]


def test_the_test_extra_installs_a_supported_shell() -> None:
    """CI runs at least one real shell: the one pyproject.toml's test extra installs."""
    installed = _installed_shell()
    assert installed, "no duckdb shell next to this Python: pip install -e '.[test]'"
    assert _line(installed) in SUPPORTED_LINES


def _run(shell: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([shell, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def _succeed(shell: str, *args: str, cwd: Path) -> None:
    result = _run(shell, *args, cwd=cwd)
    assert result.returncode == 0, f"{shell} failed:\n{result.stderr[-3000:]}"


# --- inputs --------------------------------------------------------------------------------------

def _cases(seed: int = 21, rows: int = 300) -> pa.Table:
    """Random rows over a small id space (many hits), with duplicates and NULLs in rec, empty
    and NULL lists, k from 1 to beyond the list or NULL, grades 0 to 3 in halves; and one row
    with 4,000 relevant items, so that every branch of the SQL matching step runs (its sorted
    merge takes over from about 3,600 truth items at k = 10 over 10 recommended,
    ``_merge_is_cheaper`` in duckrank/matching/sql.py; such a row costs the shell seconds)."""
    rng = np.random.default_rng(seed)
    recs, truths, ks = [], [], []
    for _ in range(rows):
        rec = [int(x) for x in rng.integers(0, 15, rng.integers(0, 14))]
        if rec and rng.random() < 0.1:
            rec[rng.integers(len(rec))] = None
        recs.append(None if rng.random() < 0.03 else rec)
        truth = sorted({int(x) for x in rng.integers(0, 15, rng.integers(0, 8))})
        truths.append(None if rng.random() < 0.03 else truth)
        ks.append(None if rng.random() < 0.05 else int(rng.integers(1, 16)))
    recs.append([int(x) for x in rng.integers(0, 10_000, 10)])
    truths.append(sorted(int(x) for x in rng.choice(10_000, 4_000, replace=False)))
    ks.append(12)
    # The long row's grades (and subtopics) are 20 of its items: MAP and subtopic truth have no
    # long-truth branch, and 4,000 of them cost the shell seconds per call (the intent-aware
    # measures' greedy ideal ranking is quadratic in the judged items).
    grades = [None if t is None else {x: float(rng.integers(0, 7)) / 2 for x in _some_judged(t, r)}
              for r, t in zip(recs, truths, strict=True)]

    def text(ids: list | None) -> list | None:
        return None if ids is None else [None if x is None else f"d{x}" for x in ids]

    return pa.table({
        "i": pa.array(range(len(recs)), pa.int64()),
        "rec": pa.array([text(r) for r in recs], pa.list_(pa.string())),
        "truth": pa.array([text(t) for t in truths], pa.list_(pa.string())),
        "irec": pa.array(recs, pa.list_(pa.int64())),
        "itruth": pa.array(truths, pa.list_(pa.int64())),
        "grades": pa.array([None if g is None else [(f"d{x}", v) for x, v in g.items()]
                            for g in grades], pa.map_(pa.string(), pa.float64())),
        # Hivemall's graded form: rec carries each item's true grade, truth the grades alone.
        "rec_grades": pa.array(
            [None if r is None or g is None else
             [{"grade": g.get(x, 0.0), "item": x} for x in r]
             for r, g in zip(recs, grades, strict=True)],
            pa.list_(pa.struct([("grade", pa.float64()), ("item", pa.int64())]))),
        "truth_grades": pa.array([None if g is None else list(g.values()) for g in grades],
                                 pa.list_(pa.float64())),
        # Subtopic qrels (the intent-aware measures): each judged item under one or two of
        # three subtopics, with the grades above.
        "subtopics": pa.array(
            [None if g is None else
             [{"subtopic": f"s{(x + j) % 3}", "item": f"d{x}", "grade": v}
              for x, v in g.items() for j in range(1 + x % 2)] for g in grades],
            pa.list_(pa.struct([("subtopic", pa.string()), ("item", pa.string()),
                                ("grade", pa.float64())]))),
        "k": pa.array(ks, pa.int64()),
    })


def _some_judged(truth: list, rec: list | None, most: int = 20) -> list:
    """The items of truth; of a truth longer than ``most``, the recommended ones first, ``most``
    in all."""
    if len(truth) <= most:
        return truth
    recommended = set(rec or ())
    return sorted(truth, key=lambda x: x not in recommended)[:most]


def _pairs(seed: int = 22) -> pa.Table:
    """Long-format rows for the ordered-list aggregates: few distinct keys (many ties), NULL
    values and keys."""
    rng = np.random.default_rng(seed)
    size = 600
    value = rng.integers(0, 40, size).astype(object)
    value[rng.random(size) < 0.05] = None
    key = rng.integers(0, 6, size).astype(np.float64).astype(object)
    key[rng.random(size) < 0.05] = None
    return pa.table({
        "g": pa.array(rng.integers(0, 25, size), pa.int64()),
        "v": pa.array(value, pa.int64()),
        "key": pa.array(key, pa.float64()),
        "s": pa.array([None if v is None else f"s{v}" for v in value], pa.string()),
    })


def _side_tables(seed: int = 23) -> dict[str, pa.Table]:
    """The inputs of the table macros: recommendations with each user's truth (an empty, a NULL
    list, a NULL item and duplicates among them), ratings (the training interactions, with
    timestamps; users with too few ratings for a split), a held-out test set with an item nobody
    rated, item embeddings and categories (not for every recommended item) and the catalogue."""
    rng = np.random.default_rng(seed)
    users = 30

    def items(low: int, high: int, size: int) -> list[str]:
        return [f"d{x}" for x in rng.integers(low, high, size)]

    recs = [items(0, 25, rng.integers(1, 9)) for _ in range(users)]
    recs[0], recs[1], recs[2][0], recs[3][1:1] = [], None, None, [recs[3][0]]
    rated = [rng.choice(20, rng.integers(0, 12), replace=False) for _ in range(users)]
    ratings = [(u, f"d{x}") for u, row in enumerate(rated) for x in row]
    held = [(u, f"d{x}") for u in range(0, users, 3) for x in rng.choice(22, 2, replace=False)
            if (u, f"d{x}") not in ratings]
    return {
        "recs": pa.table({
            "user": pa.array(range(users), pa.int64()),
            "rec": pa.array(recs, pa.list_(pa.string())),
            "truth": pa.array([sorted(set(items(0, 25, rng.integers(0, 6)))) for _ in range(users)],
                              pa.list_(pa.string())),
        }),
        "ratings": pa.table({
            "user": pa.array([u for u, _ in ratings], pa.int64()),
            "item": pa.array([x for _, x in ratings], pa.string()),
            "rating": pa.array(rng.integers(1, 6, len(ratings)), pa.float64()),
            "timestamp": pa.array(rng.integers(0, 100, len(ratings)), pa.int64()),
        }),
        "held": pa.table({"user": pa.array([u for u, _ in held], pa.int64()),
                          "item": pa.array([x for _, x in held], pa.string())}),
        "embeddings": pa.table({
            "item": pa.array([f"d{x}" for x in range(20)], pa.string()),
            "embedding": pa.array((rng.random((20, 4)) + 0.1).tolist(), pa.list_(pa.float64())),
        }),
        "categories": pa.table({"item": pa.array([f"d{x}" for x in range(22)], pa.string()),
                                "category": pa.array(items(0, 4, 22), pa.string())}),
        "items": pa.table({"item": pa.array([f"d{x}" for x in range(30)], pa.string())}),
        # time_range_folds reads TIMESTAMPs: the ratings' timestamps as hours from 2026-01-01.
        "timed": pa.table({
            "user": pa.array([u for u, _ in ratings], pa.int64()),
            "item": pa.array([x for _, x in ratings], pa.string()),
            "timestamp": pa.array(rng.integers(0, 100, len(ratings)) * 3_600_000_000
                                  + 1_767_225_600_000_000, pa.timestamp("us")),
        }),
        # The fusion macros' input: three systems' scored lists for five queries (ties, an item
        # one system lacks, a query one system did not answer).
        "runs": pa.table({
            "system": pa.array([s for q in range(5) for s in ("s0", "s1", "s2")
                                if (q, s) != (4, "s2") for _ in range(6)], pa.string()),
            "query": pa.array([f"q{q}" for q in range(5) for s in ("s0", "s1", "s2")
                               if (q, s) != (4, "s2") for _ in range(6)], pa.string()),
            "item": pa.array([f"d{(q + 2 * i + 3 * j) % 13}" for q in range(5)
                              for j, s in enumerate(("s0", "s1", "s2")) if (q, s) != (4, "s2")
                              for i in range(6)], pa.string()),
            "score": pa.array(rng.integers(0, 4, 84).astype(float), pa.float64()),
        }),
        # predicted scores beside the lists, for user_mad_rating and item_mad_rating (issue 28)
        "scored": pa.table({
            "user": pa.array(range(users), pa.int64()),
            "rec": pa.array(recs, pa.list_(pa.string())),
            "score": pa.array([None if r is None else [round(1 / (j + 1), 3) for j in range(len(r))]
                               for r in recs], pa.list_(pa.float64())),
            "truth": pa.array([[f"d{x}" for x in range(u % 3, 25, 3)] for u in range(users)],
                              pa.list_(pa.string())),
        }),
        # graded truth (item -> grade) for extended_epc and extended_efd (issue 28)
        "graded": pa.table({
            "user": pa.array(range(users), pa.int64()),
            "rec": pa.array(recs, pa.list_(pa.string())),
            "truth": pa.array([[(f"d{x}", x % 3) for x in range(u % 4, 25, 4)] if u % 5 else None
                               for u in range(users)], pa.map_(pa.string(), pa.int64())),
        }),
    }


RUN = "q1 Q0 d1 1 2.5 tagA\nq1\tQ0\td2\t2\t-1e-3\ttagA\n  q2 Q0 d9 1 7 tagA  \nq10 Q0 d1 3 0.0 b\n"
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2\t0\td9\t2\nq10 0 d4 3\n"


# --- the calls -----------------------------------------------------------------------------------

def _file_functions() -> set[str]:
    names = re.findall(r"^CREATE OR REPLACE MACRO (\w+)", SQL_FILE.read_text(), flags=re.M)
    return {n for n in names if not n.startswith("duckrank_")}


def _arguments(metric: Metric) -> list[tuple[str, str]]:
    """(rec, truth) columns of ``_cases`` for a metric record."""
    if metric.inputs == "grade_lists":
        return [("rec_grades", "truth_grades")]
    if metric.inputs == "subtopics":
        return [("rec", "subtopics")]
    if metric.truth_type.upper().startswith("MAP"):
        return [("rec", "grades")]
    if metric.inputs in ("hits", "grades"):
        return [("rec", "truth"), ("irec", "itruth")]
    return []


def _option_values(metric: Metric) -> list[dict]:
    """The defaults; each other choice alone; every option away from its default at once."""
    variants: list[dict] = [{}]
    variants += [{o.name: c} for o in metric.options for c in o.choices if c != o.default]
    if metric.options:
        variants.append({o.name: _other_value(o) for o in metric.options})
    return variants


def _other_value(option: Option) -> str | int | float:
    """A valid value other than the option's default: the last other choice, or the first of a
    few numbers its bounds accept."""
    if option.choices:
        return [c for c in option.choices if c != option.default][-1]
    if option.default is None:  # a count read from outside the list (catalog_size, depth)
        return next(v for v in (100_000, 50, 5)
                    if option.bounds is None or option.bounds.accepts(v))
    start = 0.0 if option.default is None or isinstance(option.default, str) else option.default
    candidates = (start + 1.5, start / 2, 2.0, 0.5, start + 0.05)
    return next(v for v in candidates if v != option.default
                and (option.bounds is None or option.bounds.accepts(v)))


def _sql_value(value: object) -> str:
    return f"'{value}'" if isinstance(value, str) else repr(value)


def _metric_calls() -> Iterator[tuple[str, str]]:
    """(function name, call) for every record of the file's metrics: with and without k, on
    VARCHAR and BIGINT ids; each non-default option value with k on VARCHAR ids (no more calls
    than that: binding a hundred metric macros costs DuckDB seconds)."""
    in_file = _file_functions()
    for metric in METRICS:
        arguments = _arguments(metric)
        if metric.name not in in_file or not arguments:
            continue
        for rec, truth in arguments:
            for k in (", k", ""):
                yield metric.name, f"{metric.name}({rec}, {truth}{k})"
        rec, truth = arguments[0]
        for options in _option_values(metric)[1:]:
            named = "".join(f", {n} := {_sql_value(v)}" for n, v in options.items())
            yield metric.name, f"{metric.name}({rec}, {truth}, k{named})"


# The scalar beyond-accuracy functions, on the metric rows (truth as the other list; k has no
# NULL there: a NULL k is an error for them).
SCALAR_CALLS = (
    "overlap_at(rec, truth, coalesce(k, 3))", "overlap_at(irec, itruth, 2)",
    "jaccard_at(rec, truth, coalesce(k, 3))", "jaccard_at(irec, itruth, 2)",
    "rbo(rec, truth, coalesce(k, 3))", "rbo(irec, itruth, 4, p := 0.5)",
    "rbo(rec, truth, coalesce(k, 3), variant := 'ext')",
    "rbo(rec, truth, coalesce(k, 3), p := 0.7, variant := 'prefix')",
)
# The off-policy aggregates (docs/off-policy.md), every record, over the pairs: rewards,
# probabilities in (0, 1] and [0, 1], estimates and slates made from their columns (the
# probabilities one per slate, as slate_standard_ips requires); each estimator with a lambda_
# also with lambda_ := 0.5 (in every one's domain).
_OFF_POLICY_ARGUMENTS = {
    "reward": "coalesce(key, 0)", "pscore": "(coalesce(v, 0) % 5 + 1) / 5",
    "action_prob": "(coalesce(v, 0) % 5) / 4", "q_hat": "coalesce(key, 1) / 6",
    "v_hat": "coalesce(key, 2) / 5", "slate_id": "coalesce(v, 0) % 5",
    "prev_pscore": "1.0", "prev_action_prob": "(coalesce(v, 1) % 3) / 2",
}
OFF_POLICY_CALLS = tuple(
    f"{r.name}({', '.join(_OFF_POLICY_ARGUMENTS[a] for a in r.inputs)}{extra})"
    for r in OFF_POLICY_RECORDS
    for extra in ("", *([", lambda_ := 0.5"] if getattr(r, "hyperparameter", None) else []))
)
ORDERED_OPTIONS = ("", "-reverse", "-k 3", "-k -2", "-reverse -dedup", "-dedup -k 2 -reverse")
ORDERED_CALLS = (
    "to_ordered_list(v)", "to_ordered_list(s)", "to_ordered_list(v, key)",
    "to_ordered_list(s, key)", "to_ordered_list(v, '-reverse')", "to_ordered_list(v, '-k 2')",
    *(f"to_ordered_list(v, key, '{o}')" for o in ORDERED_OPTIONS),
    "map_entries(to_ordered_kv_map(v, key))", "map_entries(to_ordered_vk_map(s, key))",
    *(f"map_entries(to_ordered_{kind}_map(v, key, '{o}'))"
      for kind in ("kv", "vk") for o in ORDERED_OPTIONS),
    "trec_geomean(key)", "trec_geomean(v)", "trec_geomean(key, floor := 0.5)",
    *OFF_POLICY_CALLS,
    # The pointwise and classification aggregates (labels 0/1 from v, scores from key).
    "rmse(key, v / 10)", "mse(key, v / 10)", "mae(key, v / 10)", "r2(key, v / 10)",
    "log_loss((key + 1) / 8, v % 2)", "log_loss((key + 1) / 8, v % 2, eps := 1e-6)",
    "roc_auc(key, v % 2)", "pr_auc(key, v % 2)",
)
# The aggregates over (rec, truth) lists, on the recommendations side table (GAUC).
LIST_AGGREGATE_CALLS = (
    "gauc(rec, truth)", "gauc(rec, truth, weighting := 'users')",
    "gauc(rec, truth, candidates := 30)",
)
# The table macros over _side_tables, each with its options away from the defaults at least once.
TABLE_CALLS = {
    "beyond_accuracy": (
        "catalog_coverage('recs', 5, catalog := 'items')",
        "catalog_coverage('recs', 3, catalog_size := 40)",
        "exposure_entropy('recs', 5)", "exposure_entropy('recs', 2, rec_col := 'truth')",
        "exposure_gini('recs', 5, catalog := 'items')",
        "exposure_gini('recs', 2, catalog_size := 50)",
        "arp('recs', 'ratings', 5)", "arp('recs', 'ratings', 3, normalize := true)",
        "self_information('recs', 'ratings', 5)",
        "self_information('recs', 'ratings', 3, normalize := true)",
        "long_tail_share('recs', 'ratings', 5)",
        "long_tail_share('recs', 'ratings', 3, head_share := 0.5)",
        "ild_embedding('recs', 'embeddings', 5)", "ild_embedding('recs', 'embeddings', 2)",
        "ild_category('recs', 'categories', 5)", "ild_category('recs', 'categories', 2)",
        "inter_user_diversity('recs', 5)",
        "inter_user_diversity('recs', 4, pairs := 50, seed := 7)",
        "serendipity('recs', 'ratings', 5, catalog := 'items')",
        "serendipity('recs', 'ratings', 3, catalog_size := 60)",
        "ips_recall('recs', 5, train := 'ratings', min_propensity := 0.01)",
        "ips_precision('recs', 3, train := 'ratings', gamma := 1, estimator := 'ips', "
        "min_propensity := 0.01)",
        "ips_ndcg('recs', 5, train := 'ratings', min_propensity := 0.05)",
        # issue 28
        "user_coverage('recs', 3)", "user_coverage('recs', 2, test := 'held', full_lists := true)",
        "sufficient_reco('recs', 4)", "sufficient_reco('recs', 2, deep := true)",
        "unrepeated_reco('recs', 5)", "unrepeated_reco('recs', 3, deep := true)",
        "arp('recs', 'ratings', 4, discount := 'rbp', persistence := 0.7)",
        "exposure_gini('recs', 3, catalog_size := 50, discount := 'log')",
        "epc('recs', 'ratings', 5)", "epc('recs', 'ratings', 3, discount := 'none')",
        "efd('recs', 'ratings', 5)", "efd('recs', 'ratings', 3, discount := 'rbp')",
        "categorical_diversity('recs', 'categories', 5)",
        "rank_biased_entropy('recs', 'categories', 5)",
        "rank_biased_entropy('recs', 'categories', 3, discount := 'none', smoothing := 1e-6)",
        "aclt('recs', 'ratings', 5)", "aplt('recs', 'ratings', 3, head := 'items')",
        "pop_reo('recs', 'ratings', 5)", "pop_rsp('recs', 'ratings', 3, head_share := 0.5)",
        "reo('recs', 'ratings', 'categories', 5, group_col := 'category')",
        "rsp('recs', 'ratings', 'categories', 3, group_col := 'category')",
        "bias_disparity('recs', 'ratings', 'recs', 'categories', 5, group_col := 'category', "
        "user_group_col := 'user')",
        "expected_exposure('recs', 5)", "expected_exposure('recs', 3, persistence := 0.8)",
        "group_expected_exposure('recs', 'categories', 4, group_col := 'category')",
        "user_mad_rating('scored', 'recs', 5, user_group_col := 'user')",
        "item_mad_rating('scored', 'categories', 3, group_col := 'category')",
        "user_mad_ranking('graded', 'recs', 5, user_group_col := 'user')",
        "item_mad_ranking('graded', 'categories', 3, threshold := 2, group_col := 'category')",
        "extended_epc('graded', 'ratings', 5)",
        "extended_efd('graded', 'ratings', 3, threshold := 2, discount := 'none')",
    ),
    "fusion": (
        "fuse_min('runs')", "fuse_max('runs', norm := 'max')", "fuse_med('runs', norm := 'sum')",
        "fuse_sum('runs', norm := 'zmuv')", "fuse_anz('runs')", "fuse_mnz('runs', norm := 'rank')",
        "fuse_gmnz('runs', gamma := 0.5)", "fuse_isr('runs')", "fuse_log_isr('runs')",
        "fuse_logn_isr('runs', sigma := 0.1)", "fuse_rrf('runs', k := 10)",
        "fuse_rbc('runs', phi := 0.8)", "fuse_bordafuse('runs', norm := 'none')",
        "fuse_w_bordafuse('runs', MAP {'s0': 0.5, 's1': 0.3, 's2': 0.2})",
        "fuse_condorcet('runs', norm := 'none')",
        "fuse_w_condorcet('runs', MAP {'s0': 0.5, 's1': 0.3, 's2': 0.2}, norm := 'none')",
        "fuse_wsum('runs', MAP {'s0': 0.25, 's1': 0.5, 's2': 0.25}, norm := "
        "'min-max-inverted')",
        "fuse_wmnz('runs', MAP {'s0': 0.25, 's1': 0.5, 's2': 0.25})",
        "fuse_mixed('runs', MAP {'s0': 0.25, 's1': 0.5, 's2': 0.25})",
        "fuse_posfuse('runs', MAP {'s0': [0.5, 0.25], 's1': [0.75], 's2': []::DOUBLE[]})",
        "fuse_probfuse('runs', MAP {'s0': [0.5, 0.25], 's1': [0.75, 0.5], 's2': [0.1, 0.2]})",
        "fuse_segfuse('runs', MAP {'s0': [0.5, 0.25], 's1': [0.75, 0.5], 's2': [0.1, 0.2]})",
        "fuse_slidefuse('runs', MAP {'s0': [0.5, 0.25, 0.1], 's1': [0.75, 0.5, 0.2], "
        "'s2': [0.1, 0.2, 0.3]}, w := 1)",
        "fuse_bayesfuse('runs', MAP {'s0': [0.5, -1.0], 's1': [0.25], 's2': []::DOUBLE[]})",
        "fuse_mapfuse('runs', MAP {'s0': 0.3, 's1': 0.5, 's2': 0.2})",
    ),
    "protocol": (
        "k_fold_split('ratings')", "k_fold_split('ratings', folds := 3, seed := 2)",
        "cold_user_split('ratings')", "cold_user_split('ratings', ratio := 0.3, seed := 1)",
        "new_users_split('ratings')", "new_users_split('ratings', ratio := 0.3)",
        "time_range_folds('timed', '1D')",
        "time_range_folds('timed', '12H', n_splits := 3, filter_already_seen := false)",
        "given_n_split('ratings', 3)", "given_n_split('ratings', 2, test_items := 1, seed := 4)",
        "leave_last_out('ratings')", "leave_last_out('ratings', test_items := 2, seed := 1)",
        "time_split('ratings', 50)",
        "ratio_split('ratings')", "ratio_split('ratings', ratio := 0.5, seed := 3)",
        "sample_candidates('ratings', 'held', n := 5)",
        "sample_candidates('ratings', 'held', n := NULL, exclude_popular := 0, seed := 2)",
    ),
}
GROUPS = ("metrics", "ordered_lists", "list_aggregates", "trec_readers", *TABLE_CALLS)


def _called(call: str) -> str:
    """The function a call of this file names."""
    return re.match(r"(?:map_entries\()?(\w+)\(", call).group(1)


def _labelled(calls: Iterable[str]) -> list[str]:
    """Each call named by its text (numbered: a name is unique), for the failure messages."""
    return [f'{call} AS "c{n} {call}"' for n, call in enumerate(calls)]


class Inputs:
    """The stored inputs (one folder for the module), the queries of each group of functions
    over them (a group runs in one shell process), and each query's values through
    ``duckrank.connect()``, computed once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        pq.write_table(_cases(), folder / "cases.parquet")
        pq.write_table(_pairs(), folder / "pairs.parquet")
        tables = _side_tables()
        for name, table in tables.items():
            pq.write_table(table, folder / f"{name}.parquet")
        (folder / "a.run").write_text(RUN)
        (folder / "a.qrels").write_text(QRELS)
        self.loads = [f"CREATE TABLE {t} AS SELECT * FROM read_parquet('{folder / t}.parquet')"
                      for t in ("cases", "pairs", *tables)]
        metric_calls = [call for _, call in _metric_calls()] + list(SCALAR_CALLS)
        metrics = ", ".join(_labelled(metric_calls))
        ordered = ", ".join(_labelled(ORDERED_CALLS))
        self.queries = {
            "metrics": [f"SELECT i, {metrics} FROM cases ORDER BY i"],
            "ordered_lists": [f"SELECT g, {ordered} FROM pairs GROUP BY g ORDER BY g"],
            "list_aggregates": [f"SELECT {', '.join(_labelled(LIST_AGGREGATE_CALLS))} FROM recs"],
            "trec_readers": [f"SELECT * FROM read_trec_{kind}('{folder / f'a.{kind}'}') "
                             "ORDER BY ALL" for kind in ("run", "qrels")],
            **{group: [f"SELECT * FROM {call} ORDER BY ALL" for call in calls]
               for group, calls in TABLE_CALLS.items()},
        }
        self.con = duckrank.connect()
        for statement in self.loads:
            self.con.execute(statement)
        self._expected: dict[str, tuple[list[str], list[tuple]]] = {}

    def copies(self, group: str, out: Path) -> list[str]:
        """Shell arguments that write each query of the group to a Parquet file in ``out``."""
        return [arg for n, query in enumerate(self.queries[group]) for arg in
                ("-c", f"COPY ({query}) TO '{out / group}_{n}.parquet' (FORMAT parquet)")]

    def check(self, group: str, out: Path) -> None:
        """The shell's values (the Parquet files) against duckrank's, to 1e-12."""
        for n, query in enumerate(self.queries[group]):
            if query not in self._expected:
                result = self.con.execute(query)
                self._expected[query] = [d[0] for d in result.description], result.fetchall()
            columns, expected = self._expected[query]
            got = duckdb.sql(f"SELECT * FROM read_parquet('{out / group}_{n}.parquet')").fetchall()
            assert len(got) == len(expected) > 0, query
            for row_got, row_expected in zip(got, expected, strict=True):
                for column, a, e in zip(columns, row_got, row_expected, strict=True):
                    assert _same(a, e), (query[:80], column, row_expected[0], a, e)


def _same(got: object, expected: object) -> bool:
    if isinstance(expected, float) and isinstance(got, float):
        if math.isnan(expected):
            return math.isnan(got)
        return got == pytest.approx(expected, rel=1e-12, abs=1e-12)
    return got == expected


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inputs]:
    made = Inputs(tmp_path_factory.mktemp("shell_inputs"))
    yield made
    made.con.close()


@pytest.fixture(scope="module")
def stored(inputs: Inputs) -> Path:
    """A database file written by ``duckrank.connect(path, config=...)`` in the storage format
    every supported line reads, with the input tables."""
    database = inputs.folder / "eval.duckdb"
    con = duckrank.connect(str(database),
                           config={"storage_compatibility_version": OLDEST_STORAGE})
    for statement in inputs.loads:
        con.execute(statement)
    con.close()
    return database


# --- the tests -----------------------------------------------------------------------------------

def test_every_function_of_the_file_is_called_here() -> None:
    called = {name for name, _ in _metric_calls()}
    table_calls = [call for calls in TABLE_CALLS.values() for call in calls]
    called |= {_called(c) for c in (*SCALAR_CALLS, *ORDERED_CALLS, *LIST_AGGREGATE_CALLS,
                                    *table_calls)}
    called |= {"read_trec_run", "read_trec_qrels"}
    # The file's plain-SQL paired t-test has its own shell test against scipy
    # (tests/stats/test_stats_sql_plain.py); a connection's paired_ttest is the Python one.
    called |= {"paired_ttest"}
    assert called == _file_functions()


@pytest.fixture(scope="module")
def read_in_shell(shell: str, inputs: Inputs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One shell process (reading the file and binding every call cost the shell seconds each
    time) writes the file's functions into a database file as docs/integrations.md says (1.4 and
    1.5 store typed macro parameters only from storage version v1.4.0, and create v1.0.0 files),
    then runs every group's queries there: a folder with their Parquet files and shell.duckdb."""
    out = tmp_path_factory.mktemp("read_in_shell")
    database = out / "shell.duckdb"
    attach = f"ATTACH '{database}' AS eval (STORAGE_VERSION '{OLDEST_STORAGE}'); USE eval"
    loads = [arg for statement in inputs.loads for arg in ("-c", statement)]
    copies = [arg for group in GROUPS for arg in inputs.copies(group, out)]
    _succeed(shell, "-c", attach, "-c", f".read {SQL_FILE}", *loads, *copies, cwd=out)
    return out


def test_the_file_in_the_shell(inputs: Inputs, read_in_shell: Path) -> None:
    """`.read sql/duckrank.sql` in the shell, then every group's functions as through duckrank."""
    for group in GROUPS:
        inputs.check(group, read_in_shell)


def test_a_file_the_shell_wrote_in_duckdb_2(inputs: Inputs, read_in_shell: Path,
                                            tmp_path: Path) -> None:
    """Plain DuckDB 2.0 (the Python package, no duckrank) opens the file the shell wrote
    read-only and its functions give duckrank's values."""
    with duckdb.connect(str(read_in_shell / "shell.duckdb"), read_only=True) as con:
        con.execute(f"COPY ({inputs.queries['metrics'][0]}) TO '{tmp_path}/metrics_0.parquet'")
    inputs.check("metrics", tmp_path)


def test_a_stored_file_in_the_shell(shell: str, inputs: Inputs, stored: Path,
                                    tmp_path: Path) -> None:
    """The shell opens a file from ``duckrank.connect(path, config=...)`` read-only, without
    ``.read``: the functions stored in it give duckrank's values."""
    copies = [arg for group in GROUPS for arg in inputs.copies(group, tmp_path)]
    _succeed(shell, "-readonly", str(stored), *copies, cwd=tmp_path)
    for group in GROUPS:
        inputs.check(group, tmp_path)


def test_a_default_file_opens_from_duckdb_2(shell: str, tmp_path: Path) -> None:
    """What docs/integrations.md says of ``duckrank.connect(path)`` without a storage option:
    the file has DuckDB 2.0's storage format, which a 1.x shell refuses."""
    database = tmp_path / "eval.duckdb"
    duckrank.connect(str(database)).close()
    result = _run(shell, "-readonly", str(database), "-c", "SELECT ndcg([1], [1])", cwd=tmp_path)
    if int(_line(shell).split(".")[0]) >= 2:
        assert result.returncode == 0, result.stderr
    else:
        assert result.returncode != 0
        assert "newer version of DuckDB" in result.stderr, result.stderr


ERROR_CALLS = (
    "ndcg(['a'], ['a'], 0)",
    "err(['a'], map {'a': 5.0})",
    "err(['a'], ['a'], max_grade := 0)",
    "dcg(['a'], ['a'], gain := 'squared')",
    "to_ordered_list(v, '-top 3') FROM (VALUES (1)) t(v)",
)


@pytest.fixture(scope="module")
def shell_errors(shell: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """What the shell prints to stderr for ERROR_CALLS, each a statement of one script on its
    standard input (reading the file once): unlike -c, a script goes on after an error."""
    script = "".join(f"SELECT {call};\n" for call in ERROR_CALLS)
    result = subprocess.run([shell], input=f".read {SQL_FILE}\n{script}", capture_output=True,
                            text=True, timeout=300, cwd=tmp_path_factory.mktemp("errors"))
    assert result.returncode != 0
    assert result.stdout == "", f"a call gave a value:\n{result.stdout}"  # every call failed
    return result.stderr


@pytest.mark.parametrize("call", ERROR_CALLS)
def test_errors_reach_the_shell(shell_errors: str, call: str) -> None:
    """A duckrank error is the same text in the shell as through duckrank.connect()."""
    with duckrank.connect(native=False) as con, pytest.raises(duckdb.Error) as raised:
        con.execute(f"SELECT {call}")
    message = str(raised.value).split("Error: ", 1)[1].splitlines()[0]
    assert message in shell_errors, (message, shell_errors)
