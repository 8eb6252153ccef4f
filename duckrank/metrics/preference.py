"""Expected discounted rank correlation (EDRC) over incomplete pairwise preferences.

Source: Ackerman & Chen, "Evaluating Rank Accuracy based on Incomplete Pairwise Preferences"
(CEUR-WS Vol-811, paper 11, 2011), section 4, read as docs/preference.md says (where the paper's
worked example has a gap).

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
to them): truth ancestors are bitsets (uint64 words), filled layer by layer in topological
order, every layer for a whole chunk of rows in a few numpy calls; descendant counts are the
column sums of those bit matrices (docs/preference.md, "Speed"). The native step
(duckrank/matching/native/edrc.c) computes the same values row by row, in the same order
of summation; this kernel serves the ids it does not handle and Spark.
"""

from __future__ import annotations

from dataclasses import dataclass

from duckrank.lazy import LazyModule
from duckrank.matching.arrays import gather_ranges
from duckrank.matching.preferences import Edges, PreferenceCycleError, PreferenceRows
from duckrank.metrics.record import Metric, Option

np = LazyModule("numpy")

DISCOUNTS = ("linear", "logarithmic", "exponential", "ap")

# Bitset words held at once (ancestors, descendants and the system's, 8 bytes each): about 8 MB
# per array, which keeps a 2,048-row batch of 1,000-item lists in a few chunks.
_CHUNK_WORDS = 1 << 20
# Nodes of a chunk: up to 2^16 their ids sort as 16-bit keys (a radix sort).
_CHUNK_NODES = 1 << 16


# --- graph passes over one chunk (global node ids 0..N-1) ----------------------------------------

def _group_order(key: np.ndarray, size: int) -> np.ndarray:
    """A stable permutation that groups ``key`` (values in 0..size-1) in ascending order: a radix
    sort on 16-bit keys when they fit (numpy sorts int64 keys several times slower)."""
    if size <= min(_CHUNK_NODES, 1 << 16):
        return np.argsort(key.astype(np.uint16), kind="stable")
    return np.argsort(key, kind="stable")


def _starts(counts: np.ndarray) -> np.ndarray:
    return np.cumsum(counts) - counts


@dataclass(frozen=True)
class _Graph:
    """One chunk's edges (global node ids), grouped both ways, and its topological layers.

    ``layers[i]`` holds the nodes of R = i + 1 (R: 1 on sources, else 1 + the longest path from
    a source, the paper's Algorithm 1); every edge goes from a lower layer to a higher one.
    """

    nodes: int
    parents: np.ndarray  # the edges' better nodes, grouped by worse node
    parent_start: np.ndarray  # per node
    parent_count: np.ndarray
    children: np.ndarray  # the edges' worse nodes, grouped by better node
    child_start: np.ndarray
    child_count: np.ndarray
    level: np.ndarray  # R per node; 0 for a node on or after a cycle
    layers: list[np.ndarray]

    @staticmethod
    def of(nodes: int, better: np.ndarray, worse: np.ndarray) -> _Graph:
        parent_count = np.bincount(worse, minlength=nodes)
        child_count = np.bincount(better, minlength=nodes)
        parents = better[_group_order(worse, nodes)]
        children = worse[_group_order(better, nodes)]
        child_start = _starts(child_count)
        # Kahn's layering: a node joins the frontier when its last parent leaves it.
        waiting = parent_count.copy()
        level = np.zeros(nodes, dtype=np.int64)
        stamp = np.zeros(nodes, dtype=np.int64)
        frontier = np.flatnonzero(waiting == 0)
        layers = []
        while frontier.size:
            layers.append(frontier)
            level[frontier] = len(layers)
            reached = children[gather_ranges(child_start[frontier], child_count[frontier])]
            np.subtract.at(waiting, reached, 1)
            ready = reached[waiting[reached] == 0]
            # A node reached from several frontier nodes is listed once (its last listing).
            stamp[ready] = np.arange(ready.size)
            frontier = ready[stamp[ready] == np.arange(ready.size)]
        return _Graph(nodes, parents, _starts(parent_count), parent_count, children,
                      child_start, child_count, level, layers)

    def closure(self, sets: np.ndarray, own_word: np.ndarray, own_bit: np.ndarray,
                ancestors: bool) -> np.ndarray:
        """Reflexive bitsets, written into ``sets`` (nodes x words) and returned: every node's
        own bit and those of its ancestors (or descendants).

        A node's set is the OR of its parents' (children's) sets; going layer by layer (from
        the last layer for descendants) makes each of them final before it is read. (Skipping
        the transitively redundant edges, most of a dense graph's, was measured slower: the
        bitset ORs are the cheap part, the per-edge bookkeeping is not.)
        """
        words = sets.shape[1]
        sets.fill(0)
        sets.ravel()[np.arange(self.nodes) * words + own_word] = own_bit
        # Whole rows of bitsets are moved as single opaque items (several times faster than
        # numpy's fancy indexing of a 2-d array).
        rows = sets.view(f"V{8 * words}").ravel()
        if ancestors:
            layers, source, start, count = self.layers[1:], self.parents, \
                self.parent_start, self.parent_count
        else:
            layers, source, start, count = self.layers[-2::-1], self.children, \
                self.child_start, self.child_count
        for layer in layers:
            layer = layer[count[layer] > 0]
            if layer.size == 0:
                continue
            n = count[layer]
            read = rows.take(source[gather_ranges(start[layer], n)])
            merged = np.bitwise_or.reduceat(read.view(np.uint64).reshape(-1, words),
                                            _starts(n), axis=0)
            merged.ravel()[np.arange(layer.size) * words + own_word[layer]] |= own_bit[layer]
            rows[layer] = merged.view(rows.dtype).ravel()
        return sets


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


def _popcount(bits: np.ndarray) -> np.ndarray:
    return np.bitwise_count(bits).sum(axis=1, dtype=np.int64)


def _holders(sets: np.ndarray, chunk: _Chunk, node_counts: np.ndarray) -> np.ndarray:
    """For each node, how many sets of its row hold its bit: with ancestor sets, 1 + its number
    of descendants. Counting a row's columns (its bits unpacked to bytes and summed) costs less
    than a second closure over the edges."""
    held = np.empty(chunk.nodes, dtype=np.int64)
    if chunk.words == 1:  # many small rows: all at once
        bits = np.unpackbits(sets.view(np.uint8), axis=1, bitorder="little").astype(np.int32)
        rows = np.flatnonzero(node_counts)
        sums = np.add.reduceat(bits, chunk.first_node[rows], axis=0)
        for_node = np.repeat(rows, node_counts[rows])
        held[:] = sums[np.searchsorted(rows, for_node), np.arange(chunk.nodes) -
                       chunk.first_node[for_node]]
        return held
    for first, n in zip(chunk.first_node.tolist(), node_counts.tolist(), strict=True):
        if n:
            bits = sets[first:first + n, : (n + 63) // 64].view(np.uint8)
            held[first:first + n] = np.unpackbits(bits, axis=1, bitorder="little").sum(
                axis=0, dtype=np.int64)[:n]
    return held


def _count_below_own_bit(sets: np.ndarray, bit: np.ndarray) -> np.ndarray:
    """For each node, how many set bits lie strictly below its own bit (the nodes earlier in the
    system's ranked order)."""
    nodes, words = sets.shape
    # Bits per word, summed over the words below each node's own: word-major, so that the
    # running sum runs over whole rows of nodes at a time.
    before_word = np.zeros((words + 1, nodes), dtype=np.int32)
    np.cumsum(np.bitwise_count(sets).T, axis=0, out=before_word[1:])
    word, offset = bit >> 6, (bit & 63).astype(np.uint64)
    rows = np.arange(nodes)
    one = np.uint64(1)
    partial = sets.ravel()[rows * words + word] & ((one << offset) - one)
    return before_word[word, rows] + np.bitwise_count(partial)


@dataclass(frozen=True)
class _Chunk:
    """A set of rows whose nodes are numbered consecutively (global id = first node + local)."""

    rows: np.ndarray
    first_node: np.ndarray  # per chunk row
    nodes: int
    words: int


def _chunks(node_counts: np.ndarray) -> list[_Chunk]:
    """Group rows, sorted by size, into chunks of at most about _CHUNK_WORDS bitset words and
    _CHUNK_NODES nodes (beyond that, one row's own size)."""
    order = np.argsort(node_counts, kind="stable")
    counts = node_counts[order]
    words = (counts + 63) // 64
    # Sorted by size, each row's cost with its own width bounds the chunk's cost.
    cost = np.maximum(counts * words / _CHUNK_WORDS, counts / _CHUNK_NODES)
    chunk_of = np.floor(np.cumsum(cost)).astype(np.int64)
    bounds = np.r_[0, np.flatnonzero(np.diff(chunk_of)) + 1, len(order)]
    chunks = []
    for begin, end in zip(bounds[:-1], bounds[1:], strict=True):
        part = counts[begin:end]
        if end > begin and part[-1] > 0:
            chunks.append(_Chunk(
                rows=order[begin:end], first_node=_starts(part), nodes=int(part.sum()),
                words=int(words[end - 1]),
            ))
    return chunks


class _Space:
    """Two bitset buffers reused by every chunk of a call: fresh large arrays cost a page fault
    per 4 kB on every chunk."""

    def __init__(self, size: int) -> None:
        self.buffers = [np.empty(size, dtype=np.uint64) for _ in range(2)]

    def bitsets(self, i: int, chunk: _Chunk) -> np.ndarray:
        return self.buffers[i][: chunk.nodes * chunk.words].reshape(chunk.nodes, chunk.words)


@dataclass(frozen=True)
class _RowEdges:
    """A batch's edges (grouped by row, in row order) and each row's range among them."""

    edges: Edges
    start: np.ndarray
    count: np.ndarray

    @staticmethod
    def of(edges: Edges, n_rows: int) -> _RowEdges:
        if edges.row.size and (np.diff(edges.row) < 0).any():
            order = np.argsort(edges.row, kind="stable")
            edges = Edges(edges.row[order], edges.better[order], edges.worse[order])
        count = np.bincount(edges.row, minlength=n_rows)
        return _RowEdges(edges, _starts(count), count)

    def of_chunk(self, chunk: _Chunk) -> tuple[np.ndarray, np.ndarray]:
        """The chunk's edges as global node ids."""
        count = self.count[chunk.rows]
        at = gather_ranges(self.start[chunk.rows], count)
        offset = np.repeat(chunk.first_node, count)
        return offset + self.edges.better[at], offset + self.edges.worse[at]


def _kept(edges: Edges, valid: np.ndarray) -> Edges:
    """The edges of the valid rows: a row made NULL by its options (a NULL discount or
    likelihood) keeps its matched edges but gets no nodes, and its edges must not land on the
    nodes of the rows numbered after it."""
    keep = valid[edges.row]
    return edges if keep.all() else Edges(edges.row[keep], edges.better[keep], edges.worse[keep])


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
    truth = _RowEdges.of(_kept(rows.truth, valid), n_rows)
    system = None if rows.system is None else _RowEdges.of(_kept(rows.system, valid), n_rows)
    numerator = np.zeros(n_rows)
    normaliser = np.zeros(n_rows)
    chunks = _chunks(node_counts)
    space = _Space(max((c.nodes * c.words for c in chunks), default=0))
    for chunk in chunks:
        scores = _chunk_scores(truth, system, chunk, node_counts, kind, likelihood, space)
        if scores is not None:
            node_rows, c_over_d, w_over_d = scores
            numerator[chunk.rows] += np.bincount(node_rows, c_over_d, len(chunk.rows))
            normaliser[chunk.rows] += np.bincount(node_rows, w_over_d, len(chunk.rows))
    defined = valid & (normaliser > 0)
    return np.where(defined, 2.0 * numerator / np.where(defined, normaliser, 1.0) - 1.0, np.nan)


def _graph(edges: _RowEdges, chunk: _Chunk, side: str) -> tuple[_Graph, np.ndarray, np.ndarray]:
    """The chunk's graph and its edges (global node ids); raises on a cycle."""
    better, worse = edges.of_chunk(chunk)
    graph = _Graph.of(chunk.nodes, better, worse)
    placed = sum(layer.size for layer in graph.layers)
    if placed < chunk.nodes:  # Kahn's layering stops at a cycle
        cycle = _cycle(better, worse, graph.level)
        chunk_row = int(np.searchsorted(chunk.first_node, cycle[0], side="right") - 1)
        local = [int(v - chunk.first_node[chunk_row]) for v in cycle]
        raise PreferenceCycleError(side, int(chunk.rows[chunk_row]), local)
    return graph, better, worse


def _chunk_scores(
    truth: _RowEdges, system: _RowEdges | None, chunk: _Chunk, node_counts: np.ndarray,
    kind: np.ndarray, likelihood: np.ndarray, space: _Space,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per non-source node of V: its chunk row, C(v) / D(v) and |W(v)| / D(v)."""
    graph, better, worse = _graph(truth, chunk, "truth")
    # A cycle in the system's preferences is an error even where no truth preference is
    # considered (as the native step checks it).
    s_graph = None if system is None else _graph(system, chunk, "system")[0]
    if better.size == 0:
        return None
    row_of_node = np.repeat(np.arange(len(chunk.rows)), node_counts[chunk.rows])
    bit = np.arange(chunk.nodes) - chunk.first_node[row_of_node]
    own_word, own_bit = bit >> 6, np.uint64(1) << (bit & 63).astype(np.uint64)
    # Reflexive sets: each holds its own node, taken off the counts below.
    ancestors = graph.closure(space.bitsets(0, chunk), own_word, own_bit, ancestors=True)
    below = _holders(ancestors, chunk, node_counts[chunk.rows]) - 1
    above = _popcount(ancestors) - 1

    if system is None:
        agree = _count_below_own_bit(ancestors, bit)
        unordered = np.zeros_like(agree)
    else:
        agree = _popcount(
            ancestors & s_graph.closure(space.bitsets(1, chunk), own_word, own_bit, True)
        ) - 1
        s_below = s_graph.closure(space.bitsets(1, chunk), own_word, own_bit, False)
        unordered = above - agree - (_popcount(ancestors & s_below) - 1)

    in_v = np.zeros(chunk.nodes, dtype=bool)
    in_v[better] = in_v[worse] = True
    v_size = np.bincount(row_of_node[in_v], minlength=len(chunk.rows))
    scored = np.flatnonzero(above > 0)  # V \ S: the nodes with a truth ancestor
    node_rows = row_of_node[scored]
    batch_rows = chunk.rows[node_rows]
    w_size = v_size[node_rows] - 1 - below[scored]
    unknown = w_size - above[scored]
    c = agree[scored] + likelihood[batch_rows] * unordered[scored] + 0.5 * unknown
    d = _discount(graph.level[scored], kind[batch_rows])
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
