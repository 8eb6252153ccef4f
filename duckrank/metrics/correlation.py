"""Rank correlations between a system's ranked list and graded truth.

Sources: the lecture slides "Rank-Aware Top-N Metrics" (a recommender-systems course: Spearman's
rho with average ranks for ties, the fraction of concordant pairs), Kendall's tau-b, and AP
correlation (Yilmaz et al., as written in Ackerman & Chen, "Evaluating Rank Accuracy based on
Incomplete Pairwise Preferences", CEUR-WS Vol-811, paper 11, 2011, eq. 3).

Shared conventions, for one row: the items compared are those of ``rec`` that the truth MAP grades,
each at its first occurrence in rec (a repeated item is ignored, NULL elements are skipped); they
keep rec's order, so the system ranks them 1..n without ties. A higher grade means a more relevant
item: a pair is concordant when the system ranks the higher-graded item first, discordant when it
ranks it second, tied when the grades are equal. Every value is NULL when rec or truth is NULL,
when fewer than two items are compared or when all their grades are equal.

* ``spearman``: Pearson's correlation between the system ranks and the truth ranks (rank 1 = the
  highest grade; tied grades share their average rank).
* ``kendall_tau``: tau-b = (concordant - discordant) / sqrt(P * (P - T)), P = n(n - 1)/2 pairs,
  T = pairs with tied grades (the system ranks have no ties).
* ``ap_correlation``: tau_ap = 2/(n - 1) * sum over positions i = 2..n of C(i)/(i - 1) - 1, C(i) =
  the items above position i whose grade is higher than the grade at i, plus half of those with an
  equal grade. Yilmaz et al. define it for truth without ties; counting a tie as 1/2 is the
  expected tau_ap when the tied items are put in random order (the weights depend on the system
  positions only).
* ``fcp``: concordant / (concordant + discordant), pairs with tied grades left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import gather_ranges
from duckrank.matching.preferences import RankedGrades
from duckrank.metrics.record import Metric

np = LazyModule("numpy")

# Rows of at most this many compared items count their pairs by comparing every pair at once,
# padded to (rows x n x n) cells in groups of at most _PAIR_CELLS (no sort, a few vectorised
# passes: the common case of short graded lists); longer rows sort, in O(n log n) per row.
_PAIRWISE_ITEMS = 128
_PAIR_CELLS = 1 << 21


@dataclass(frozen=True)
class _PairCounts:
    """Per item: how many items above it in its row have a higher / an equal grade, and how many
    items of its row have a higher / an equal grade (itself included)."""

    higher_above: np.ndarray
    equal_above: np.ndarray
    higher: np.ndarray
    equal: np.ndarray


@dataclass(frozen=True)
class _GradeGroups:
    """The items sorted by (row, grade), stable (equal grades keep the system's order), and the
    index of each sorted item's group of equal grades in its row."""

    order: np.ndarray
    sorted_row: np.ndarray
    group: np.ndarray
    group_start: np.ndarray  # sorted index of the first item of each sorted item's group


def _grade_groups(r: RankedGrades) -> _GradeGroups:
    row, n = r.row, len(r.grades)
    order = np.lexsort((r.grades, row))
    sorted_row, sorted_grade = row[order], r.grades[order]
    new_group = np.r_[True, (np.diff(sorted_row) != 0) | (np.diff(sorted_grade) != 0)][:n]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    return _GradeGroups(order, sorted_row, np.cumsum(new_group) - 1, group_start)


def _sorted_counts(r: RankedGrades) -> _PairCounts:
    n = len(r.grades)
    row = r.row
    g = _grade_groups(r)
    equal_above = np.empty(n, dtype=np.int64)
    equal_above[g.order] = np.arange(n) - g.group_start
    group_size = np.bincount(g.group)[g.group]
    equal, higher = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    equal[g.order] = group_size
    # Sorted by (row, grade), a row keeps its own index range; the higher grades end it.
    higher[g.order] = r.offsets[g.sorted_row + 1] - g.group_start - group_size
    row_start = np.r_[True, np.diff(g.sorted_row) != 0][:n]
    first_group = np.maximum.accumulate(np.where(row_start, g.group, 0))
    dense_rank = np.empty(n, dtype=np.int64)  # of the item's grade among its row's grades
    dense_rank[g.order] = g.group - first_group

    # Items above with a higher dense rank, counted at the highest bit where the two ranks differ:
    # within a group of equal higher bits (kept in the system's order), an item whose bit is 0
    # counts the items before it whose bit is 1. One stable sort per bit.
    higher_above = np.zeros(n, dtype=np.int64)
    bits = int(dense_rank.max()).bit_length() if n else 0
    for b in range(bits - 1, -1, -1):
        prefix = dense_rank >> (b + 1)
        key = row * (int(prefix.max()) + 1) + prefix
        order = np.argsort(key, kind="stable")
        key = key[order]
        ones = ((dense_rank[order] >> b) & 1).astype(np.int64)
        ones_before = np.cumsum(ones) - ones
        starts = np.r_[True, np.diff(key) != 0]
        ones_before -= np.maximum.accumulate(np.where(starts, ones_before, 0))
        higher_above[order] += np.where(ones == 0, ones_before, 0)
    return _PairCounts(higher_above, equal_above, higher, equal)


def _pairwise_counts(r: RankedGrades, rows: np.ndarray, out: _PairCounts) -> None:
    """The counts of the items of ``rows`` (rows sorted by their number of items), into
    ``out``: grades padded with NaN (which compares false) to the longest row of a group."""
    counts, offsets = r.counts, r.offsets
    begin = 0
    while begin < rows.size:
        width = max(int(counts[rows[begin]]), 1)
        end = min(rows.size, begin + max(1, _PAIR_CELLS // width**2))
        width = max(int(counts[rows[end - 1]]), 1)  # the group's longest row
        end = min(end, begin + max(1, _PAIR_CELLS // width**2))
        group = rows[begin:end]
        n = counts[group]
        item = gather_ranges(offsets[group], n)
        at = np.repeat(np.arange(group.size) * width, n) + item - np.repeat(offsets[group], n)
        padded = np.full(group.size * width, np.nan)
        padded[at] = r.grades[item]
        padded = padded.reshape(group.size, width)
        # [row, j, i]: item i against item j (counted along the contiguous last axis); i < j is
        # i above j.
        higher = padded[:, None, :] > padded[:, :, None]
        equal = padded[:, None, :] == padded[:, :, None]
        above = np.tri(width, k=-1, dtype=bool)
        ones = np.ones(width, dtype=np.float32)  # counts by a matrix product: exact, and fast
        for name, cells in (("higher", higher), ("equal", equal)):
            getattr(out, name)[item] = (cells.astype(np.float32) @ ones).ravel()[at]
            cells &= above
            getattr(out, name + "_above")[item] = (cells.astype(np.float32) @ ones).ravel()[at]
        begin = end


def _pair_counts(r: RankedGrades) -> _PairCounts:
    short = r.counts <= _PAIRWISE_ITEMS
    if not short.any():
        return _sorted_counts(r)
    n = len(r.grades)
    out = _PairCounts(*(np.zeros(n, dtype=np.int64) for _ in range(4)))
    rows = np.flatnonzero(short)
    _pairwise_counts(r, rows[np.argsort(r.counts[rows], kind="stable")], out)
    long_rows = np.flatnonzero(~short)
    if long_rows.size:
        item = gather_ranges(r.offsets[long_rows], r.counts[long_rows])
        long_counts = np.r_[0, np.cumsum(r.counts[long_rows])]
        part = _sorted_counts(RankedGrades(r.grades[item], long_counts, r.valid[long_rows]))
        for name in ("higher_above", "equal_above", "higher", "equal"):
            getattr(out, name)[item] = getattr(part, name)
    return out


def _defined(r: RankedGrades, tied_pairs: np.ndarray) -> np.ndarray:
    n = r.counts
    return r.valid & (n >= 2) & (tied_pairs < n * (n - 1) // 2)


def _where(defined: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.where(defined, values, np.nan)


def _safe(denominator: np.ndarray) -> np.ndarray:
    return np.where(denominator == 0, 1, denominator)


def spearman_kernel(r: RankedGrades) -> np.ndarray:
    n = r.counts.astype(np.float64)
    row = r.row
    counts = _pair_counts(r)
    # Rank 1 = the highest grade; tied grades share their average rank.
    truth_rank = counts.higher + (counts.equal + 1) / 2
    system_rank = r.position + 1.0
    mean = (n[row] + 1) / 2
    covariance = r.row_sum((system_rank - mean) * (truth_rank - mean))
    system_spread = r.row_sum((system_rank - mean) ** 2)
    truth_spread = r.row_sum((truth_rank - mean) ** 2)
    defined = r.valid & (n >= 2) & (truth_spread > 0)
    return _where(defined, covariance / np.sqrt(_safe(system_spread * truth_spread)))


def _pairs(r: RankedGrades) -> tuple[np.ndarray, ...]:
    """Per row: concordant, discordant and tied pairs, and the pair counts per item."""
    counts = _pair_counts(r)
    lower_above = r.position - counts.higher_above - counts.equal_above
    return (
        r.row_sum(counts.higher_above),
        r.row_sum(lower_above),
        r.row_sum(counts.equal_above),
        counts,
    )


def kendall_tau_kernel(r: RankedGrades) -> np.ndarray:
    concordant, discordant, tied, _ = _pairs(r)
    n = r.counts.astype(np.float64)
    pairs = n * (n - 1) / 2
    defined = _defined(r, tied)
    return _where(defined, (concordant - discordant) / np.sqrt(_safe(pairs * (pairs - tied))))


def fcp_kernel(r: RankedGrades) -> np.ndarray:
    concordant, discordant, tied, _ = _pairs(r)
    defined = _defined(r, tied)
    return _where(defined, concordant / _safe(concordant + discordant))


def ap_correlation_kernel(r: RankedGrades) -> np.ndarray:
    _, _, tied, counts = _pairs(r)
    position = r.position
    correct = counts.higher_above + 0.5 * counts.equal_above
    share = np.where(position > 0, correct / np.maximum(position, 1), 0.0)
    n = r.counts.astype(np.float64)
    defined = _defined(r, tied)
    return _where(defined, 2.0 / _safe(n - 1) * r.row_sum(share) - 1.0)


def _record(name: str, summary: str, formula: str, kernel, peers: str, source: str) -> Metric:
    return Metric(
        name=name,
        summary=summary,
        formula=formula,
        undefined="NULL when rec or truth is NULL, when fewer than two ranked items are graded or "
        "when all their grades are equal; a NULL, NaN or infinite grade is an error naming the "
        "item.",
        sql="",
        kernel=kernel,
        inputs="ranked_grades",
        truth_type="MAP(VARCHAR, DOUBLE)",
        cutoff=False,
        peers=peers,
        source=source,
    )


SPEARMAN = _record(
    "spearman",
    "Spearman's rho between the system's order and the truth grades.",
    "Pearson correlation of system ranks and truth ranks, tied grades at their average rank",
    spearman_kernel,
    "scipy.stats.spearmanr(positions, -grades) on the compared items.",
    "Lecture slides 'Rank-Aware Top-N Metrics' (a recommender-systems course)",
)
KENDALL_TAU = _record(
    "kendall_tau",
    "Kendall's tau-b between the system's order and the truth grades.",
    "(concordant - discordant) / sqrt(P * (P - tied)), P = n(n - 1)/2",
    kendall_tau_kernel,
    "scipy.stats.kendalltau(positions, -grades) (variant 'b') on the compared items.",
    "M. G. Kendall, Biometrika 1945 (tau-b)",
)
AP_CORRELATION = _record(
    "ap_correlation",
    "AP correlation (tau_ap, Yilmaz et al.): Kendall's tau weighted towards the top of the "
    "system's list.",
    "2/(n - 1) * sum over positions i >= 2 of C(i)/(i - 1) - 1, a tie counting 1/2 in C(i)",
    ap_correlation_kernel,
    "No peer in scipy; Yilmaz et al. define no ties (a tie counts 1/2 here).",
    "Yilmaz, Aslam & Robertson, SIGIR 2008, as written in Ackerman & Chen (CEUR-WS Vol-811, "
    "paper 11, 2011)",
)
FCP = _record(
    "fcp",
    "Fraction of concordant pairs: the share of differently graded pairs the system orders "
    "higher grade first.",
    "concordant / (concordant + discordant)",
    fcp_kernel,
    "Koren's FCP for one user; equals (1 + gamma) / 2, gamma being Goodman and Kruskal's.",
    "Lecture slides 'Rank-Aware Top-N Metrics' (a recommender-systems course)",
)

METRICS = (SPEARMAN, KENDALL_TAU, AP_CORRELATION, FCP)
