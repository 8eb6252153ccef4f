"""The matching step of subtopic (intent) judgments, in SQL and in numpy over Arrow batches: what
the intent-aware measures of ``duckrank.metrics.diversity`` read.

truth is a row's subtopic qrels, a LIST of STRUCT(subtopic, item, grade): the rows (query,
subtopic, doc, grade) of a TREC diversity qrels file grouped by query (``list({'subtopic': s,
'item': d, 'grade': g})``). As ndeval reads them, relevance is binary: an item is relevant to a
subtopic when its grade there is >= min_grade; only subtopics with a relevant item count (N);
items are matched as text (``rec[i]::VARCHAR`` against ``item::VARCHAR``), each once (a repeat in
rec is not relevant again); entries with a NULL subtopic, item or grade are left out; a grade
that is NaN or infinite is an error naming the function.

What a row gives the measures:

* ``pairs``: for each rank i of rec (the whole list) and subtopic s its item is relevant to,
  (i, s, r) with r the ranks above i relevant to s (its redundancy), in rank order;
* N, the subtopics with a relevant item, and ``R`` per subtopic its relevant items;
* ``candidates``: the relevant items, each with its subtopics, in the order the greedy ideal
  ranking breaks ties by (item text descending, ndeval's order: measured against pyndeval),
  from which the measures build the ideal (``duckrank.metrics.diversity.ideal_gains``).
"""

from __future__ import annotations

from dataclasses import dataclass

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import combined

np = LazyModule("numpy")
pa = LazyModule("pyarrow")
pc = LazyModule("pyarrow.compute")


@dataclass(frozen=True)
class Subtopics:
    """A batch matched against subtopic qrels, flattened. Pairs: ``pair_row``, ``pair_rank``
    (1-based), ``pair_subtopic`` (an index into the batch's subtopics), ``pair_before`` (r).
    Subtopics: ``subtopic_row``, ``relevant`` (R). Candidates (ideal order within a row):
    ``candidate_row``; their subtopics ``candidate_pair`` (candidate index) with
    ``candidate_subtopic``. Per row: ``N``, ``L`` (len(rec)), ``k`` (the cut-off), ``valid``."""

    pair_row: np.ndarray
    pair_rank: np.ndarray
    pair_subtopic: np.ndarray
    pair_before: np.ndarray
    subtopic_row: np.ndarray
    relevant: np.ndarray
    candidate_row: np.ndarray
    candidate_pair: np.ndarray
    candidate_subtopic: np.ndarray
    N: np.ndarray
    L: np.ndarray
    k: np.ndarray
    valid: np.ndarray


def _keys(rows: np.ndarray, text: pa.Array) -> np.ndarray:
    """One text key per (row, text) pair, for grouping with np.unique."""
    joined = pc.binary_join_element_wise(pa.array(rows.astype(str)), text, "\x1f")
    return np.asarray(joined.to_numpy(zero_copy_only=False), dtype=object)


def _rank_within(groups: np.ndarray, order_key: np.ndarray) -> np.ndarray:
    """For each element: how many elements of its group come before it by ``order_key``."""
    order = np.lexsort((order_key, groups))
    sorted_groups = groups[order]
    # Each element's group starts where the sorted groups first take its value.
    before = np.empty(len(order), np.int64)
    before[order] = np.arange(len(order)) - np.searchsorted(sorted_groups, sorted_groups)
    return before


def _truth_entries(truth: pa.ListArray, min_grade: float, function: str
                   ) -> tuple[np.ndarray, pa.Array, pa.Array]:
    """(row, subtopic text, item text) of the relevant entries of truth."""
    entries = truth.flatten()
    if not pa.types.is_struct(entries.type) or not {"subtopic", "item", "grade"} <= {
            entries.type.field(i).name for i in range(entries.type.num_fields)}:
        raise TypeError(f"{function}: truth must be a list of STRUCT(subtopic, item, grade), "
                        f"got {truth.type}")
    rows = pc.list_parent_indices(truth).to_numpy().astype(np.int64)  # flatten()'s rows
    subtopic = pc.cast(entries.field("subtopic"), pa.string())
    item = pc.cast(entries.field("item"), pa.string())
    grade_array = pc.cast(entries.field("grade"), pa.float64())
    grade = pc.fill_null(grade_array, np.nan).to_numpy(zero_copy_only=False)
    known = (subtopic.is_valid().to_numpy(zero_copy_only=False)
             & item.is_valid().to_numpy(zero_copy_only=False)
             & grade_array.is_valid().to_numpy(zero_copy_only=False))
    if np.any(known & ~np.isfinite(grade)):
        bad = grade[known & ~np.isfinite(grade)][0]
        raise ValueError(f"{function}: truth holds a grade that is not a finite number: {bad}")
    keep = known & (np.where(known, grade, -np.inf) >= min_grade)
    mask = pa.array(keep)
    return rows[keep], subtopic.filter(mask), item.filter(mask)


def match_subtopics(rec: pa.Array | pa.ChunkedArray, truth: pa.Array | pa.ChunkedArray,
                    cut: np.ndarray | None, min_grade: float = 1.0,
                    function: str = "match_subtopics") -> Subtopics:
    """The ``Subtopics`` of a batch (see the module's text)."""
    rec, truth = combined(rec), combined(truth)
    valid = rec.is_valid().to_numpy(zero_copy_only=False) & truth.is_valid().to_numpy(
        zero_copy_only=False)
    lengths = pc.fill_null(pc.list_value_length(rec), 0).to_numpy().astype(np.int64)
    k = lengths.astype(np.float64) if cut is None else np.asarray(cut, np.float64)
    valid &= ~np.isnan(k)
    rows, subtopic, item = _truth_entries(truth, min_grade, function)
    keep = valid[rows]
    rows, subtopic, item = rows[keep], subtopic.filter(pa.array(keep)), item.filter(
        pa.array(keep))

    subtopic_keys, subtopic_id = np.unique(_keys(rows, subtopic), return_inverse=True)
    subtopic_row = np.zeros(len(subtopic_keys), np.int64)
    subtopic_row[subtopic_id] = rows
    candidate_keys, candidate_id = np.unique(_keys(rows, item), return_inverse=True)
    candidate_row = np.zeros(len(candidate_keys), np.int64)
    candidate_row[candidate_id] = rows
    # Ideal order within a row: item text descending (ndeval breaks the greedy's ties so).
    text = np.asarray(item.to_numpy(zero_copy_only=False), dtype=object)
    candidate_text = np.empty(len(candidate_keys), dtype=object)
    candidate_text[candidate_id] = text
    _, text_rank = np.unique(candidate_text, return_inverse=True) if len(candidate_text) else (
        None, np.zeros(0, np.int64))
    order = np.lexsort((-text_rank, candidate_row))
    renumber = np.empty(len(order), np.int64)
    renumber[order] = np.arange(len(order))
    candidate_row = candidate_row[order]
    pairs = np.unique(np.stack([renumber[candidate_id], subtopic_id]), axis=1) if len(rows) \
        else np.zeros((2, 0), np.int64)
    candidate_pair, candidate_subtopic = pairs[0], pairs[1]
    relevant = np.bincount(candidate_subtopic, minlength=len(subtopic_keys))
    N = np.bincount(subtopic_row, minlength=len(valid))

    # rec: each item's first occurrence, matched to the candidates of its row.
    rec_values = pc.cast(rec.flatten(), pa.string())
    rec_rows = pc.list_parent_indices(rec).to_numpy().astype(np.int64)
    rec_rank = np.arange(len(rec_rows)) - np.searchsorted(rec_rows, rec_rows) + 1
    present = rec_values.is_valid().to_numpy(zero_copy_only=False) & valid[rec_rows]
    rec_keys = _keys(rec_rows[present], rec_values.filter(pa.array(present)))
    rec_rows, rec_rank = rec_rows[present], rec_rank[present]
    _, first = np.unique(rec_keys, return_index=True)
    first_seen = np.zeros(len(rec_keys), bool)
    first_seen[first] = True
    if len(candidate_keys):
        found = np.minimum(np.searchsorted(candidate_keys, rec_keys), len(candidate_keys) - 1)
        hit = first_seen & (candidate_keys[found] == rec_keys)
    else:
        found, hit = np.zeros(len(rec_keys), np.int64), np.zeros(len(rec_keys), bool)
    hit_candidate = renumber[found[hit]]
    hit_rank = rec_rank[hit]
    # Every (rank, subtopic) of the hits: the candidate's pairs, gathered.
    pair_start = np.searchsorted(candidate_pair, hit_candidate)
    pair_count = np.searchsorted(candidate_pair, hit_candidate, side="right") - pair_start
    take = np.repeat(pair_start, pair_count) + (np.arange(pair_count.sum())
                                                - np.repeat(np.cumsum(pair_count) - pair_count,
                                                            pair_count))
    pair_subtopic = candidate_subtopic[take]
    pair_rank = np.repeat(hit_rank, pair_count)
    pair_row = subtopic_row[pair_subtopic]
    pair_before = _rank_within(pair_subtopic, pair_rank)
    order = np.lexsort((pair_subtopic, pair_rank, pair_row))
    return Subtopics(
        pair_row[order], pair_rank[order], pair_subtopic[order], pair_before[order],
        subtopic_row, relevant, candidate_row, candidate_pair, candidate_subtopic, N,
        lengths, np.where(valid, k, 0).astype(np.int64), valid,
    )


# --- SQL ------------------------------------------------------------------------------------------
# The same reading in SQL over one row: ``subtopics_sql`` gives a STRUCT with N, R, pairs (each a
# STRUCT(i, s, r)) and candidates (a LIST of subtopic-index lists, in the greedy's order), bound by
# a lambda over a one-element list in the macro body (duckrank.render.macros).

def subtopics_sql(function: str, rec: str, truth: str, min_grade: str) -> str:
    """The row's match as a SQL STRUCT (see above); ``function`` is the SQL name for errors."""
    relevant = (f"list_filter({truth}, lambda e: e.subtopic IS NOT NULL AND e.item IS NOT NULL "
                f"AND e.grade IS NOT NULL AND e.grade::DOUBLE >= {min_grade})")
    bad = (f"list_filter({truth}, lambda e: e.subtopic IS NOT NULL AND e.item IS NOT NULL AND "
           "NOT isfinite(e.grade::DOUBLE))")
    error = (f"error({function} || ': truth holds a grade that is not a finite number: ' || "
             f"{bad}[1].grade::VARCHAR)")
    names = "list_sort(list_distinct(list_transform(srow.rel, lambda e: e.subtopic::VARCHAR)))"
    items = ("list_reverse_sort(list_distinct(list_transform(srow.rel, "
             "lambda e: e.item::VARCHAR)))")
    candidates = (
        "list_transform(snames.items, lambda d: list_sort(list_distinct(list_transform("
        "list_filter(srow.rel, lambda e: e.item::VARCHAR = d), "
        "lambda e: list_position(snames.subs, e.subtopic::VARCHAR)))))"
    )
    counts = ("list_transform(range(1, len(snames.subs) + 1), lambda s: len(list_filter("
              "scand.candidates, lambda c: list_contains(c, s))))")
    ranked = (
        "flatten(list_transform(srow.text, lambda x, i: CASE WHEN x IS NOT NULL AND "
        "list_contains(snames.items, x) AND list_position(srow.text, x) = i THEN "
        "list_transform(scand.candidates[list_position(snames.items, x)], "
        "lambda s: {'i': i, 's': s}) ELSE [] END))"
    )
    # The ranked pairs bound once (sr), each with the pairs above it of its subtopic counted.
    pairs = ("list_transform([" + ranked + "], lambda sr: list_transform(sr, lambda p, j: "
             "{'i': p.i, 's': p.s, 'r': len(list_filter(list_slice(sr, 1, j - 1), "
             "lambda q: q.s = p.s))}))[1]")
    return (
        f"list_transform([{{'rel': {relevant}, 'text': CAST({rec} AS VARCHAR[])}}], "
        f"lambda srow: CASE WHEN len({bad}) > 0 THEN {error} ELSE "
        f"list_transform([{{'subs': {names}, 'items': {items}}}], lambda snames: "
        f"list_transform([{{'candidates': {candidates}}}], lambda scand: "
        f"{{'N': len(snames.subs), 'R': {counts}, 'pairs': {pairs}, "
        f"'candidates': scand.candidates}})[1])[1] END)[1]"
    )


def ideal_gains_sql(candidates: str, subtopics: str, alpha: str) -> str:
    """The greedy ideal ranking's gains over a row's ``candidates`` (LIST of subtopic-index
    lists, in tie order): at each step the unused candidate of the largest gain
    sum_s (1 - alpha)^(times s was covered), the first of equal gains; a LIST of the gains."""
    gains = (
        f"list_transform({candidates}, lambda c, ci: CASE WHEN st.used[ci] THEN -1.0 ELSE "
        f"list_sum(list_transform(c, lambda s: pow(1 - {alpha}::DOUBLE, st.counts[s]))) END)"
    )
    step = (
        f"list_transform([{gains}], lambda g: list_transform([list_position(g, list_max(g))], "
        f"lambda b: {{'counts': list_transform(st.counts, lambda n, s: n + CASE WHEN "
        f"list_contains({candidates}[b], s) THEN 1 ELSE 0 END), 'used': list_transform("
        f"st.used, lambda u, ci: u OR ci = b), 'gains': list_append(st.gains, g[b])}})[1])[1]"
    )
    start = (f"{{'counts': list_transform(range({subtopics}), lambda s: 0), "
             f"'used': list_transform({candidates}, lambda c: false), "
             f"'gains': []::DOUBLE[]}}")
    # One step per candidate: list_reduce over len + 1 copies of the start state (the first is
    # the start), as DuckDB 1.4's list_reduce takes no initial value of another type.
    return (f"list_reduce(list_transform(range(len({candidates}) + 1), lambda t: {start}), "
            f"lambda st, t: {step}).gains")
