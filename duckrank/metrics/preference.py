"""Expected discounted rank correlation (EDRC) over incomplete pairwise preferences.

Source: Ackerman & Chen, "Evaluating Rank Accuracy based on Incomplete Pairwise Preferences"
(CEUR-WS Vol-811, paper 11; shared/seeds/000), read as in shared/notes/edrc.md.

Definitions, for one row. V is the set of items the truth has a preference about, among the items
the system ranked (a truth preference counts only when the system ranked both of its items: "we
only consider preferences relating items currently recommended by the system"). G is the graph of
those truth preferences (edge a -> b for a preferred to b), G+ its transitive closure, Ĝ+ the
system's order (a ranked list: every earlier item is preferred to every later one; a list of
preferences: their transitive closure).

* S: the items of V with no incoming edge in G. R(v): 1 for the items of S, else 1 + the longest
  path from a source to v (the paper's Algorithm 1).
* D(v): 'linear' R, 'logarithmic' log2(1 + R), 'exponential' 2^R, 'ap' R - 1 (under which EDRC
  of two complete orders is AP correlation).
* W(v) = V minus v and the items v is preferred to in G+.
* EP(v, w) for w in W(v): if G+ prefers w to v, 1 when Ĝ+ also does, 0 when Ĝ+ prefers v to w and
  ``likelihood`` (default 0.5) when Ĝ+ leaves the pair unordered; if G+ leaves v and w
  unordered, 0.5 whatever the system says (the truth is unknown).
* C(v) = sum over w in W(v) of EP(v, w);  Z = sum over v in V \\ S of |W(v)| / D(v).
* EDRC = (2 / Z) * sum over v in V \\ S of C(v) / D(v) - 1, in [-1, 1]; NULL when Z = 0 (no truth
  preference between two ranked items).

The kernel works on small integer node ids per row (``duckrank.matching.preferences`` maps item ids
to them): truth ancestors and descendants are bitsets (uint64 words), filled level by
level in topological order, every level for a whole chunk of rows in a few numpy calls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from duckrank.matching.arrays import gather_ranges
from duckrank.matching.preferences import Edges, PreferenceCycleError, PreferenceRows
from duckrank.metrics.record import Metric, Option

DISCOUNTS = ("linear", "logarithmic", "exponential", "ap")

# Bitset words held at once (ancestors, descendants and the system's, 8 bytes each): about 8 MB
# per array, which keeps a 2,048-row batch of 1,000-item lists in a few chunks.
_CHUNK_WORDS = 1 << 20
_ONE = np.uint64(1)


# --- graph passes over one chunk (global node ids 0..N-1) ----------------------------------------

def _order_by(key: np.ndarray) -> np.ndarray:
    """``np.argsort(key)`` for non-negative int64 keys, through a plain sort of key * n + index
    when that fits in 63 bits (numpy's vectorised sort is several times faster than argsort)."""
    n = len(key)
    if n == 0 or int(key.max()) >= (1 << 62) // n:
        return np.argsort(key)
    return np.sort(key * n + np.arange(n)) % n


def _levels(nodes: int, better: np.ndarray, worse: np.ndarray) -> np.ndarray:
    """R(v) of every node (Kahn's layering: a node's layer is 1 + the longest path to it from a
    source); 0 for the nodes that lie on or after a cycle. Duplicate edges are harmless."""
    in_degree = np.bincount(worse, minlength=nodes)
    children = worse[_order_by(better)]
    first_edge = np.concatenate([[0], np.cumsum(np.bincount(better, minlength=nodes))])
    level = np.zeros(nodes, dtype=np.int64)
    frontier = np.flatnonzero(in_degree == 0)
    layer = 1
    while frontier.size:
        level[frontier] = layer
        starts = first_edge[frontier]
        reached = children[gather_ranges(starts, first_edge[frontier + 1] - starts)]
        np.subtract.at(in_degree, reached, 1)
        frontier = np.unique(reached[in_degree[reached] == 0])
        layer += 1
    return level


def _cycle(better: np.ndarray, worse: np.ndarray, level: np.ndarray) -> list[int]:
    """The nodes of one cycle, each preferred to the next (and the last to the first), among the
    nodes Kahn's layering left unplaced. An error path: plain Python over one cycle."""
    stuck = level == 0
    keep = stuck[better] & stuck[worse]
    # Every unplaced node has an unplaced predecessor, so walking backwards must repeat a node.
    predecessor = dict(zip(worse[keep].tolist(), better[keep].tolist(), strict=True))
    seen: dict[int, int] = {}
    node = int(worse[keep][0])
    while node not in seen:
        seen[node] = len(seen)
        node = predecessor[node]
    return list(seen)[seen[node]:][::-1]


def _closure(
    words: int, level: np.ndarray, source: np.ndarray, target: np.ndarray, bit: np.ndarray,
    descending: bool,
) -> np.ndarray:
    """Reflexive bitsets over the nodes of each row: every node's own bit, and the nodes it
    reaches backwards along the edges source -> target (ancestors: pass better, worse and
    ``descending=False``; descendants: worse, better and ``descending=True``).

    A target's set is the OR of its sources' sets; going through the targets level by level, in
    the direction that puts every source before its targets, makes each source final before it
    is read.
    """
    nodes = len(level)
    sets = np.zeros((nodes, words), dtype=np.uint64)
    own_word, own_bit = bit >> 6, _ONE << (bit & 63).astype(np.uint64)
    sets[np.arange(nodes), own_word] = own_bit
    if source.size == 0:
        return sets
    target_level = level[target]
    if descending:
        target_level = target_level.max() - target_level
    order = _order_by(target_level * nodes + target)
    source, target = source[order], target[order]
    target_level = level[target]
    bounds = np.flatnonzero(np.diff(target_level)) + 1
    for begin, end in zip(np.r_[0, bounds], np.r_[bounds, source.size], strict=True):
        dst = target[begin:end]
        group_starts = np.r_[0, np.flatnonzero(np.diff(dst)) + 1]
        dst = dst[group_starts]
        merged = np.bitwise_or.reduceat(sets[source[begin:end]], group_starts, axis=0)
        merged[np.arange(dst.size), own_word[dst]] |= own_bit[dst]
        sets[dst] = merged
    return sets


def _popcount(bits: np.ndarray) -> np.ndarray:
    return np.bitwise_count(bits).sum(axis=1, dtype=np.int64)


def _count_below_own_bit(sets: np.ndarray, bit: np.ndarray) -> np.ndarray:
    """For each node, how many set bits lie strictly below its own bit (the nodes earlier in the
    system's ranked order)."""
    if sets.shape[1] == 0:
        return np.zeros(len(bit), dtype=np.int64)
    per_word = np.bitwise_count(sets).astype(np.int64)
    before_word = np.cumsum(per_word, axis=1) - per_word
    word, offset = bit >> 6, (bit & 63).astype(np.uint64)
    rows = np.arange(len(bit))
    partial = sets[rows, word] & ((_ONE << offset) - _ONE)
    return before_word[rows, word] + np.bitwise_count(partial).astype(np.int64)


@dataclass(frozen=True)
class _Chunk:
    """A set of rows whose nodes are numbered consecutively (global id = first node + local)."""

    rows: np.ndarray
    first_node: np.ndarray  # per chunk row
    nodes: int
    words: int


def _chunks(node_counts: np.ndarray) -> list[_Chunk]:
    """Group rows, sorted by size, into chunks of at most about _CHUNK_WORDS bitset words."""
    order = np.argsort(node_counts, kind="stable")
    counts = node_counts[order]
    words = (counts + 63) // 64
    # Sorted by size, each row's cost with its own width bounds the chunk's cost.
    chunk_of = np.cumsum(counts * words) // _CHUNK_WORDS
    bounds = np.r_[0, np.flatnonzero(np.diff(chunk_of)) + 1, len(order)]
    chunks = []
    for begin, end in zip(bounds[:-1], bounds[1:], strict=True):
        part = counts[begin:end]
        chunks.append(
            _Chunk(
                rows=order[begin:end],
                first_node=np.r_[0, np.cumsum(part)[:-1]].astype(np.int64),
                nodes=int(part.sum()),
                words=int(words[end - 1]) if end > begin else 0,
            )
        )
    return chunks


def _chunk_edges(edges: Edges, chunk: _Chunk, position: np.ndarray) -> tuple[np.ndarray, ...]:
    """The chunk's edges as global node ids."""
    take = position[edges.row] >= 0
    offset = chunk.first_node[position[edges.row[take]]]
    return offset + edges.better[take], offset + edges.worse[take]


def _discount(rank: np.ndarray, kind: np.ndarray) -> np.ndarray:
    rank = rank.astype(np.float64)
    return np.select(
        [kind == 0, kind == 1, kind == 2],
        [rank, np.log2(1.0 + rank), np.exp2(rank)],
        rank - 1.0,
    )


def edrc_kernel(
    rows: PreferenceRows, discount: np.ndarray | str = "linear",
    likelihood: np.ndarray | float = 0.5,
) -> np.ndarray:
    """EDRC of every row (NaN where NULL). ``discount`` and ``likelihood`` are per row or scalar.

    Raises PreferenceCycleError for a row whose truth (or system) preferences have a cycle, and
    ValueError for an unknown discount or a likelihood outside [0, 1].
    """
    n_rows = len(rows.node_counts)
    discount = np.broadcast_to(np.asarray(discount, dtype=object), (n_rows,))
    likelihood = np.broadcast_to(np.asarray(likelihood, dtype=np.float64), (n_rows,))
    valid = rows.valid & np.array([d is not None for d in discount], dtype=bool)
    valid &= ~np.isnan(likelihood)
    kind = np.full(n_rows, -1)
    for code, name in enumerate(DISCOUNTS):
        kind[discount == name] = code
    bad = valid & (kind < 0)
    if bad.any():
        raise ValueError(
            f"discount must be one of {', '.join(DISCOUNTS)}; got {discount[bad][0]!r}"
        )
    bad = valid & ((likelihood < 0) | (likelihood > 1))
    if bad.any():
        raise ValueError(f"likelihood must lie in [0, 1]; got {float(likelihood[bad][0])}")

    node_counts = np.where(valid, rows.node_counts, 0)
    numerator = np.zeros(n_rows)
    normaliser = np.zeros(n_rows)
    position = np.full(n_rows, -1)
    for chunk in _chunks(node_counts):
        position[:] = -1
        position[chunk.rows[node_counts[chunk.rows] > 0]] = np.flatnonzero(
            node_counts[chunk.rows] > 0
        )
        row_of_node = np.repeat(np.arange(len(chunk.rows)), node_counts[chunk.rows])
        bit = np.arange(chunk.nodes) - chunk.first_node[row_of_node]
        scores = _chunk_scores(rows, chunk, position, row_of_node, bit, kind, likelihood)
        if scores is not None:
            node_rows, c_over_d, w_over_d = scores
            numerator[chunk.rows] += np.bincount(node_rows, c_over_d, len(chunk.rows))
            normaliser[chunk.rows] += np.bincount(node_rows, w_over_d, len(chunk.rows))
    defined = valid & (normaliser > 0)
    return np.where(defined, 2.0 * numerator / np.where(defined, normaliser, 1.0) - 1.0, np.nan)


def _graph(
    edges: Edges, chunk: _Chunk, position: np.ndarray, side: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunk's distinct edges and the level of every node; raises on a cycle."""
    better, worse = _chunk_edges(edges, chunk, position)
    level = _levels(chunk.nodes, better, worse)
    has_edge = np.zeros(chunk.nodes, dtype=bool)
    has_edge[better] = has_edge[worse] = True
    if (has_edge & (level == 0)).any():
        cycle = _cycle(better, worse, level)
        chunk_row = int(np.searchsorted(chunk.first_node, cycle[0], side="right") - 1)
        local = [int(v - chunk.first_node[chunk_row]) for v in cycle]
        raise PreferenceCycleError(side, int(chunk.rows[chunk_row]), local)
    return better, worse, level


def _chunk_scores(
    rows: PreferenceRows, chunk: _Chunk, position: np.ndarray, row_of_node: np.ndarray,
    bit: np.ndarray, kind: np.ndarray, likelihood: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per non-source node of V: its chunk row, C(v) / D(v) and |W(v)| / D(v)."""
    better, worse, level = _graph(rows.truth, chunk, position, "truth")
    if better.size == 0:
        return None
    # Reflexive sets: each holds its own node, taken off the counts below.
    ancestors = _closure(chunk.words, level, better, worse, bit, descending=False)
    descendants = _closure(chunk.words, level, worse, better, bit, descending=True)
    above, below = _popcount(ancestors) - 1, _popcount(descendants) - 1

    if rows.system is None:
        agree = _count_below_own_bit(ancestors, bit)
        unordered = np.zeros_like(agree)
    else:
        s_better, s_worse, s_level = _graph(rows.system, chunk, position, "system")
        s_ancestors = _closure(chunk.words, s_level, s_better, s_worse, bit, descending=False)
        agree = _popcount(ancestors & s_ancestors) - 1
        del s_ancestors
        s_descendants = _closure(chunk.words, s_level, s_worse, s_better, bit, descending=True)
        unordered = above - agree - (_popcount(ancestors & s_descendants) - 1)

    in_v = np.zeros(chunk.nodes, dtype=bool)
    in_v[better] = in_v[worse] = True
    v_size = np.bincount(row_of_node[in_v], minlength=len(chunk.rows))
    scored = np.flatnonzero(above > 0)  # V \ S: the nodes with a truth ancestor
    node_rows = row_of_node[scored]
    batch_rows = chunk.rows[node_rows]
    w_size = v_size[node_rows] - 1 - below[scored]
    unknown = w_size - above[scored]
    c = agree[scored] + likelihood[batch_rows] * unordered[scored] + 0.5 * unknown
    d = _discount(level[scored], kind[batch_rows])
    return node_rows, c / d, w_size / d


EDRC = Metric(
    name="edrc",
    summary="Expected discounted rank correlation of a ranked list with incomplete pairwise "
    "truth preferences (Ackerman & Chen).",
    formula="(2 / Z) * sum over non-source items v of C(v) / D(v) - 1, C(v) = expected "
    "agreements with the items preferred to v or unordered with it, Z = sum of |W(v)| / D(v)",
    undefined="NULL when no truth preference relates two ranked items (Z = 0); a cycle in the "
    "truth preferences is an error naming its items.",
    sql="",
    kernel=edrc_kernel,
    inputs="preferences",
    cutoff=False,
    options=(
        Option("discount", "linear", "D(v), from the item's truth rank R.", DISCOUNTS),
    ),
    peers="No peer tool implements EDRC; values are checked against the paper's worked "
    "examples (Table 1: 2/29 as printed, 5/29 with B > E; Table 2 with 'ap': 1/3).",
    source="Ackerman & Chen, CEUR-WS Vol-811 paper 11",
)

EDRC_PREFERENCES = Metric(
    name="edrc_preferences",
    summary="EDRC where the system's output is itself a list of (possibly incomplete) "
    "preferences.",
    formula="as edrc, with EP = likelihood for a truth-ordered pair the system leaves unordered",
    undefined="NULL when no truth preference relates two items of the system's preferences; a "
    "cycle in either side's preferences is an error naming its items.",
    sql="",
    kernel=edrc_kernel,
    inputs="system_preferences",
    cutoff=False,
    first_argument="system",
    options=(
        Option("discount", "linear", "D(v), from the item's truth rank R.", DISCOUNTS),
        Option("likelihood", 0.5, "EP of a truth-ordered pair the system leaves unordered."),
    ),
    peers=EDRC.peers,
    source=EDRC.source,
)

METRICS = (EDRC, EDRC_PREFERENCES)
