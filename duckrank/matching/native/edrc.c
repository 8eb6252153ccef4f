/*
 * duckrank's edrc and edrc_preferences as native code, part of the same DuckDB C API extension as
 * match.c, whose entry point (extension.c) calls duckrank_register_edrc once per database. Two
 * scalar functions:
 *
 *     duckrank_native_edrc(rec LIST, truth LIST(STRUCT(a, b)), truth_type VARCHAR, discount VARCHAR)
 *     duckrank_native_edrc_preferences(system LIST(STRUCT), truth LIST(STRUCT), system_type VARCHAR,
 *                                      truth_type VARCHAR, discount VARCHAR, likelihood DOUBLE)
 *         -> DOUBLE
 *
 * each with current_setting('memory_limit') as an optional last argument. They compute, row by row,
 * what the numpy kernels compute over Arrow batches (duckrank/metrics/preference.py holds the
 * definitions; docs/preference.md the conventions), and the macros (duckrank/engines/python_udfs.py)
 * call them when the extension is loaded and the ids are of a kind handled here: integers that fit
 * a BIGINT (any mix of widths, compared by value), or VARCHAR on every side. `*_type` is typeof() of
 * the preference argument, for the error naming it. The rank correlations (correlation.c) share
 * this step's scratch, its reading of DuckDB's vectors and its finder (preference_step.h).
 *
 * Why native: the Python UDFs pay DuckDB's export of the arguments to Arrow (as much as the whole
 * kernel for edrc) and numpy's per-call overhead on every truth layer. Here DuckDB's vectors are
 * read in place and each row costs, for edrc, one hash (or direct-address) table of its ranked
 * items, Kahn's layering of the considered truth preferences, the ancestor closure as bitsets
 * along the edges (most of them skipped), descendant counts as the column sums of those bitsets,
 * and popcounts: at most about (preferences x nodes / 64) word operations, in practice a fraction.
 * Memory: see preference_step.h.
 */
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "preference_step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The numbers of the ids of v at [offset, offset + count) into out (-1: absent or NULL). A direct
 * table is read in one loop per id type (the type's switch taken once, not per id). */
#define DIRECT_LOOP(T)                                                                             \
	do {                                                                                           \
		const T *data = (const T *)v->data + offset;                                               \
		for (idx_t i = 0; i < count; i++) {                                                        \
			uint64_t at = (uint64_t)(int64_t)data[i] - low;                                        \
			out[i] = at < span ? table[at] : -1;                                                   \
		}                                                                                          \
	} while (0)

static void find_all(const finder *f, const ids *v, idx_t offset, idx_t count, int32_t *out) {
	if (!f->direct) {
		for (idx_t i = 0; i < count; i++) {
			out[i] = find(f, v, offset + i);
		}
		return;
	}
	const int32_t *table = f->table;
	uint64_t low = (uint64_t)f->low, span = f->span;
	switch (v->type) {
	case DUCKDB_TYPE_TINYINT: DIRECT_LOOP(int8_t); break;
	case DUCKDB_TYPE_SMALLINT: DIRECT_LOOP(int16_t); break;
	case DUCKDB_TYPE_INTEGER: DIRECT_LOOP(int32_t); break;
	case DUCKDB_TYPE_UTINYINT: DIRECT_LOOP(uint8_t); break;
	case DUCKDB_TYPE_USMALLINT: DIRECT_LOOP(uint16_t); break;
	case DUCKDB_TYPE_UINTEGER: DIRECT_LOOP(uint32_t); break;
	default: DIRECT_LOOP(int64_t); break;
	}
	if (v->validity) {
		for (idx_t i = 0; i < count; i++) {
			out[i] = is_valid(v->validity, offset + i) ? out[i] : -1;
		}
	}
}

/* --- the truth and system graphs --------------------------------------------------------------- */

/* Edges between a row's nodes 0..n-1, grouped both ways, and Kahn's topological order; level = R
 * (1 on sources, else 1 + the longest path from a source). Each node's parents are in descending
 * topological order (once every node is placed), which lets the ancestor closures skip most edges
 * (see `ancestor_rows`). */
typedef struct {
	idx_t n, m, placed;
	int32_t *start;   /* n + 1: node u's children are targets[start[u] .. start[u + 1]) */
	int32_t *targets;
	int32_t *parent_start; /* n + 1: node u's parents are parents[parent_start[u] .. [u + 1]) */
	int32_t *parents;      /* given by their positions in `order` (what the closures index by) */
	int32_t *order;   /* the placed nodes, topological order */
	int32_t *level;
	int32_t *waiting; /* unplaced parents per node; > 0 after the layering only on or after a cycle */
	int32_t *position; /* per node: its index in `order` (once every node is placed) */
} graph;

/* Builds g from edges (from[e] preferred to to[e]) with GRAPH_BUFFERS of the scratch's buffers
 * from `first`. */
static int build_graph(preference_scratch *s, buffer_id first, idx_t n, const int32_t *from, const int32_t *to, idx_t m,
                       graph *g) {
	g->n = n;
	g->m = m;
	g->start = (int32_t *)reserve(s, first, (n + 1) * sizeof(int32_t));
	g->targets = (int32_t *)reserve(s, first + 1, (m + 1) * sizeof(int32_t));
	g->order = (int32_t *)reserve(s, first + 2, (n + 1) * sizeof(int32_t));
	g->level = (int32_t *)reserve(s, first + 3, (n + 1) * sizeof(int32_t));
	g->waiting = (int32_t *)reserve(s, first + 4, (n + 1) * sizeof(int32_t));
	g->parent_start = (int32_t *)reserve(s, first + 5, (n + 1) * sizeof(int32_t));
	g->parents = (int32_t *)reserve(s, first + 6, (m + 1) * sizeof(int32_t));
	g->position = (int32_t *)reserve(s, first + 7, (n + 1) * sizeof(int32_t));
	if (!g->start || !g->targets || !g->order || !g->level || !g->waiting || !g->parent_start || !g->parents ||
	    !g->position) {
		return 0;
	}
	memset(g->start, 0, (n + 1) * sizeof(int32_t));
	memset(g->parent_start, 0, (n + 1) * sizeof(int32_t));
	for (idx_t e = 0; e < m; e++) {
		g->start[from[e] + 1]++;
		g->parent_start[to[e] + 1]++;
	}
	for (idx_t u = 0; u < n; u++) {
		g->start[u + 1] += g->start[u];
		g->waiting[u] = g->parent_start[u + 1];
		g->parent_start[u + 1] += g->parent_start[u];
	}
	/* Fill each group from its end (level serves as the cursor), keeping the edges' order. */
	for (idx_t u = 0; u < n; u++) {
		g->level[u] = g->start[u + 1];
	}
	for (idx_t e = m; e-- > 0;) {
		g->targets[--g->level[from[e]]] = to[e];
	}
	idx_t tail = 0;
	for (idx_t u = 0; u < n; u++) {
		g->level[u] = 1;
		if (g->waiting[u] == 0) {
			g->order[tail++] = (int32_t)u;
		}
	}
	for (idx_t head = 0; head < tail; head++) {
		int32_t u = g->order[head], next_level = g->level[u] + 1;
		for (int32_t e = g->start[u]; e < g->start[u + 1]; e++) {
			int32_t t = g->targets[e], level = g->level[t];
			g->level[t] = level > next_level ? level : next_level; /* a max, not a branch */
			/* Parents are placed in topological order and listed from the end of their group. */
			g->parents[g->parent_start[t] + g->waiting[t] - 1] = (int32_t)head;
			/* Written whether or not t is ready (order has room for it): which node completes
			 * is random, a branch on it would be mispredicted. */
			g->order[tail] = t;
			tail += --g->waiting[t] == 0;
		}
	}
	g->placed = tail;
	if (tail == n) {
		for (idx_t k = 0; k < n; k++) {
			g->position[g->order[k]] = (int32_t)k;
		}
	}
	return 1;
}

/* The nodes of one cycle among those the layering left unplaced, each preferred to the next, into
 * `cycle` (n entries); returns their number. The walk follows, backwards, the last edge into each
 * node (as the Python path does), so it must come back to a node already seen. */
static idx_t find_cycle(const graph *g, const int32_t *from, const int32_t *to, int32_t *cycle) {
	int32_t *predecessor = g->level; /* no longer needed: the error ends the call */
	int32_t *seen = g->order;
	int32_t start = -1;
	for (idx_t u = 0; u < g->n; u++) {
		predecessor[u] = -1;
		seen[u] = -1;
	}
	for (idx_t e = 0; e < g->m; e++) {
		if (g->waiting[from[e]] > 0 && g->waiting[to[e]] > 0) {
			predecessor[to[e]] = from[e];
			start = start < 0 ? to[e] : start;
		}
	}
	idx_t walked = 0;
	int32_t node = start;
	while (seen[node] < 0) {
		seen[node] = (int32_t)walked;
		cycle[walked++] = node;
		node = predecessor[node];
	}
	idx_t first = (idx_t)seen[node], length = walked - first;
	for (idx_t i = 0; i < length / 2; i++) { /* reversed: each preferred to the next */
		int32_t t = cycle[first + i];
		cycle[first + i] = cycle[walked - 1 - i];
		cycle[walked - 1 - i] = t;
	}
	memmove(cycle, cycle + first, length * sizeof(int32_t));
	return length;
}

/* --- closures and counts over bitsets ----------------------------------------------------------- */

/* Bitsets are handled a lane of 4 words (256 bits) at a time, in GCC and clang's vector types:
 * one AVX2 instruction where the CPU has it (see ROW_KERNEL), two SSE2 ones otherwise. A row of
 * bitsets is a whole number of lanes, its buffer aligned (see `reserve`). */
typedef uint64_t lanes __attribute__((vector_size(32), may_alias));
#define LANE_BITS 256
#define LANE_WORDS 4

/* The baseline x86-64 target has neither AVX2 nor a popcount instruction (__builtin_popcountll
 * is then a call into libgcc): on x86-64 Linux the functions that run over bitsets are compiled
 * three times, and the loader picks the one the CPU runs (GCC and clang's target_clones). The
 * helpers they call are inlined into each copy. */
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#define ROW_KERNEL __attribute__((target_clones("avx2", "popcnt", "default")))
#else
#define ROW_KERNEL
#endif
#define INLINE static inline __attribute__((always_inline))

INLINE int has_bit(const uint64_t *set, idx_t bit) {
	return (set[bit / 64] >> (bit % 64)) & 1;
}

/* The truth's ancestor sets, reflexive, by topological position: row k (of `stride` words, a whole
 * number of lanes) is the set of order[k], bit j standing for order[j], the OR of its parents'
 * rows (final when read, as parents come first in that order) and its own bit. */

/* Rows of at most this many lanes (truths of up to 2,048 nodes) are computed whole, in registers
 * (`lane_count` is a constant in each copy the switch of `ancestor_rows` inlines): every parent's
 * row ORed in, one loop per row for the CPU to predict and no store and reload of the row per
 * parent. Testing first whether the row already holds a parent's bit (see `long_rows`), a branch
 * taken about half the time at random, costs more than these ORs. */
#define SHORT_LANES 8

INLINE void short_rows(const graph *g, uint64_t *rows, idx_t lane_count) {
	for (idx_t k = 0; k < g->n; k++) {
		int32_t u = g->order[k];
		lanes set[SHORT_LANES];
		/* Unrolled: `set` stays in registers only when every index is a constant. */
#pragma GCC unroll 8
		for (idx_t w = 0; w < lane_count; w++) {
			set[w] = (lanes){0, 0, 0, 0};
		}
		const int32_t *parent = g->parents + g->parent_start[u], *end = g->parents + g->parent_start[u + 1];
		for (; parent < end; parent++) {
			const lanes *other = (const lanes *)(rows + (idx_t)*parent * lane_count * LANE_WORDS);
#pragma GCC unroll 8
			for (idx_t w = 0; w < lane_count; w++) {
				set[w] |= other[w];
			}
		}
		lanes *own = (lanes *)(rows + k * lane_count * LANE_WORDS);
#pragma GCC unroll 8
		for (idx_t w = 0; w < lane_count; w++) {
			own[w] = set[w];
		}
		/* Set in memory: indexing `set` by k would keep it out of registers. */
		rows[k * lane_count * LANE_WORDS + k / 64] |= (uint64_t)1 << (k % 64);
	}
}

/* Longer rows: ancestors' bits lie in row k's first span(k) = k / 256 + 1 lanes, and only those
 * are computed. Each parent's row is read over the child's span, the same for 256 rows in a row
 * (loops the CPU predicts): its lanes past its own span are zeroed when a child first needs them
 * (`ready`, n entries, counts each row's valid lanes). A parent whose bit the row already holds
 * is skipped: it came with a nearer parent's row, which holds all of its ancestors (parents are
 * listed nearest first, so on a deep truth most are skipped). */
INLINE void long_rows(const graph *g, uint64_t *rows, idx_t stride, int32_t *ready) {
	for (idx_t k = 0; k < g->n; k++) {
		int32_t u = g->order[k];
		uint64_t *row = rows + k * stride;
		lanes *own = (lanes *)row;
		idx_t span = k / LANE_BITS + 1;
		for (idx_t w = 0; w < span; w++) {
			own[w] = (lanes){0, 0, 0, 0};
		}
		const int32_t *parent = g->parents + g->parent_start[u], *end = g->parents + g->parent_start[u + 1];
		for (; parent < end; parent++) {
			idx_t p = (idx_t)*parent;
			if (has_bit(row, p)) {
				continue;
			}
			lanes *other = (lanes *)(rows + p * stride);
			for (idx_t w = (idx_t)ready[p]; w < span; w++) { /* rarely any */
				other[w] = (lanes){0, 0, 0, 0};
			}
			ready[p] = (int32_t)span; /* spans only grow with k */
			for (idx_t w = 0; w < span; w++) {
				own[w] |= other[w];
			}
		}
		row[k / 64] |= (uint64_t)1 << (k % 64);
		ready[k] = (int32_t)span;
	}
}

/* Rows are `stride` words; short ones are written whole, long ones over their span. */
INLINE void ancestor_rows(const graph *g, uint64_t *rows, idx_t stride, int32_t *ready) {
	switch (stride / LANE_WORDS) {
	case 1: short_rows(g, rows, 1); break;
	case 2: short_rows(g, rows, 2); break;
	case 3: short_rows(g, rows, 3); break;
	case 4: short_rows(g, rows, 4); break;
	case 5: short_rows(g, rows, 5); break;
	case 6: short_rows(g, rows, 6); break;
	case 7: short_rows(g, rows, 7); break;
	case 8: short_rows(g, rows, 8); break;
	default: long_rows(g, rows, stride, ready); break;
	}
}

/* One carry-save adder: the bits of a + b + c as high (twos) and low (ones) lanes. */
#define CARRY_SAVE(high, low, a, b, c)                                                             \
	do {                                                                                           \
		lanes sum_ = (a) ^ (b);                                                                    \
		high = ((a) & (b)) | (sum_ & (c));                                                         \
		low = sum_ ^ (c);                                                                          \
	} while (0)

/* counts[j] = how many rows of `ancestor_rows` hold bit j (node order[j] and its descendants), for
 * j < n: the column sums of the bit matrix, rather than a second closure over the edges. Rows are
 * added 16 at a time per lane of columns, in a Harley-Seal tree of carry-save adders (Lemire et
 * al., "Faster population counts using AVX2 instructions", applied to 64 vertical counters per
 * word): `state` holds, per lane, the counters' ones, twos, fours and eights, then the bits of
 * the number of sixteens, bit-sliced (`depth` lanes). About six vector operations per 16 rows'
 * lane, against two per counter bit per word for adding each word in turn. Rows past n are
 * zeroed here: `rows` has room for n rounded up to 16. */
INLINE void column_counts(uint64_t *rows, idx_t n, idx_t stride, lanes *state, idx_t depth, int32_t *counts) {
	idx_t planes = 4 + depth, blocks = (n + 15) / 16;
	memset(state, 0, (stride / LANE_WORDS) * planes * sizeof(lanes));
	for (idx_t k = n; k < blocks * 16; k++) {
		memset(rows + k * stride, 0, (k / LANE_BITS + 1) * sizeof(lanes));
	}
	for (idx_t block = 0; block < blocks; block++) {
		/* The 16 rows share their span: 256 is a multiple of 16. */
		const lanes *r = (const lanes *)(rows + block * 16 * stride);
		idx_t lane_stride = stride / LANE_WORDS;
		for (idx_t w = 0; w <= block * 16 / LANE_BITS; w++) {
			lanes *c = state + w * planes;
			lanes ones = c[0], twos = c[1], fours = c[2], eights = c[3], twos_a, twos_b, fours_a, fours_b;
			lanes eights_a, eights_b, carry;
			const lanes *d = r + w;
#define ROW(i) d[(i) * lane_stride]
/* Rows i .. i + 3 into ones and twos, their carry into fours_out. */
#define FOUR_ROWS(fours_out, i)                                                                    \
	do {                                                                                           \
		CARRY_SAVE(twos_a, ones, ones, ROW(i), ROW((i) + 1));                                      \
		CARRY_SAVE(twos_b, ones, ones, ROW((i) + 2), ROW((i) + 3));                                \
		CARRY_SAVE(fours_out, twos, twos, twos_a, twos_b);                                         \
	} while (0)
			FOUR_ROWS(fours_a, 0);
			FOUR_ROWS(fours_b, 4);
			CARRY_SAVE(eights_a, fours, fours, fours_a, fours_b);
			FOUR_ROWS(fours_a, 8);
			FOUR_ROWS(fours_b, 12);
			CARRY_SAVE(eights_b, fours, fours, fours_a, fours_b);
			CARRY_SAVE(carry, eights, eights, eights_a, eights_b);
#undef FOUR_ROWS
#undef ROW
			c[0] = ones;
			c[1] = twos;
			c[2] = fours;
			c[3] = eights;
			for (idx_t p = 4; p < planes; p++) { /* the sixteens, a ripple carry */
				lanes next = c[p] & carry;
				c[p] ^= carry;
				carry = next;
			}
		}
	}
	/* Each word of 64 counters from its planes, 32 counters at a time (a loop of 32-bit shifts
	 * that compilers vectorise); `counts` has room for n rounded up to 64. */
	for (idx_t j = 0; j < n; j += 64) {
		const uint64_t *c = (const uint64_t *)(state + j / LANE_BITS * planes) + j % LANE_BITS / 64;
		int32_t *out = counts + j;
		memset(out, 0, 64 * sizeof(int32_t));
		for (idx_t p = 0; p < planes; p++) {
			uint32_t low = (uint32_t)c[p * LANE_WORDS], high = (uint32_t)(c[p * LANE_WORDS] >> 32);
			for (uint32_t b = 0; b < 32; b++) {
				out[b] += (int32_t)(((low >> b) & 1) << p);
				out[b + 32] += (int32_t)(((high >> b) & 1) << p);
			}
		}
	}
}

/* Reflexive closure sets of a graph whose nodes are numbered otherwise than by its own order (the
 * system's, in edrc_preferences), one row of `words` per node u, node v's bit being bit[v]:
 * ancestors' sets (with `ancestors`) or descendants', each the OR of its parents' (children's)
 * sets taken in topological order (reversed), skipping one whose bit the set already holds, as
 * `ancestor_rows` does. */
INLINE void closure(const graph *g, const int32_t *bit, uint64_t *sets, idx_t words, int ancestors) {
	memset(sets, 0, g->n * words * sizeof(uint64_t));
	for (idx_t u = 0; u < g->n; u++) {
		sets[u * words + (idx_t)bit[u] / 64] = (uint64_t)1 << (bit[u] % 64);
	}
	const int32_t *start = ancestors ? g->parent_start : g->start;
	const int32_t *sources = ancestors ? g->parents : g->targets;
	for (idx_t k = 0; k < g->n; k++) {
		int32_t u = g->order[ancestors ? k : g->n - 1 - k];
		lanes *own = (lanes *)(sets + (idx_t)u * words);
		for (int32_t e = start[u]; e < start[u + 1]; e++) {
			int32_t v = ancestors ? g->order[sources[e]] : sources[e]; /* parents: positions */
			if (has_bit((const uint64_t *)own, (idx_t)bit[v])) {
				continue;
			}
			const lanes *other = (const lanes *)(sets + (idx_t)v * words);
			for (idx_t w = 0; w < words / LANE_WORDS; w++) {
				own[w] |= other[w];
			}
		}
	}
}

INLINE int64_t popcount(const uint64_t *a, idx_t words) {
	int64_t count = 0;
	for (idx_t w = 0; w < words; w++) {
		count += __builtin_popcountll(a[w]);
	}
	return count;
}

INLINE int64_t popcount_and(const uint64_t *a, const uint64_t *b, idx_t words) {
	int64_t count = 0;
	for (idx_t w = 0; w < words; w++) {
		count += __builtin_popcountll(a[w] & b[w]);
	}
	return count;
}

/* --- edrc ------------------------------------------------------------------------------------ */

static const char *DISCOUNTS[] = {"linear", "logarithmic", "exponential", "ap"};

static double discounted(int kind, double rank) {
	switch (kind) {
	case 0: return rank;
	case 1: return log2(1.0 + rank);
	case 2: return exp2(rank);
	default: return rank - 1.0;
	}
}

/* The discount of a row: its index in DISCOUNTS, or -1 with the error set. */
static int discount_of(duckdb_function_info info, const char *name, const duckdb_string_t *text) {
	const char *data = string_data(text);
	uint32_t length = text->value.inlined.length;
	for (int kind = 0; kind < 4; kind++) {
		if (strlen(DISCOUNTS[kind]) == length && memcmp(DISCOUNTS[kind], data, length) == 0) {
			return kind;
		}
	}
	char problem[256];
	snprintf(problem, sizeof(problem),
	         "discount must be one of linear, logarithmic, exponential, ap; got '%.*s'",
	         length > 64 ? 64 : (int)length, data);
	set_error(info, name, problem);
	return -1;
}

/* A list-of-two-field-structs argument: the list entries, its validity and its structs' items. */
typedef struct {
	const duckdb_list_entry *entries;
	const uint64_t *valid;       /* rows */
	const uint64_t *pair_valid;  /* structs */
	ids better, worse;
} pairs;

/* Reads a preference argument; 0 (error set) unless it is a list of two-field structs. */
static int pairs_of(duckdb_function_info info, const char *name, const char *argument, duckdb_vector list,
                    duckdb_vector type_name, pairs *out) {
	duckdb_logical_type type = duckdb_vector_get_column_type(list);
	int ok = duckdb_get_type_id(type) == DUCKDB_TYPE_LIST;
	if (ok) {
		duckdb_logical_type child = duckdb_list_type_child_type(type);
		ok = duckdb_get_type_id(child) == DUCKDB_TYPE_STRUCT && duckdb_struct_type_child_count(child) == 2;
		duckdb_destroy_logical_type(&child);
	}
	duckdb_destroy_logical_type(&type);
	if (!ok) {
		const duckdb_string_t *text = (const duckdb_string_t *)duckdb_vector_get_data(type_name);
		char problem[512];
		snprintf(problem, sizeof(problem),
		         "%s must be a list of two-field structs (preferred item, other item); got %.*s", argument,
		         text->value.inlined.length > 300 ? 300 : (int)text->value.inlined.length, string_data(text));
		set_error(info, name, problem);
		return 0;
	}
	duckdb_vector structs = duckdb_list_vector_get_child(list);
	out->entries = (const duckdb_list_entry *)duckdb_vector_get_data(list);
	out->valid = duckdb_vector_get_validity(list);
	out->pair_valid = duckdb_vector_get_validity(structs);
	out->better = ids_of(duckdb_struct_vector_get_child(structs, 0));
	out->worse = ids_of(duckdb_struct_vector_get_child(structs, 1));
	return 1;
}

/* Both items of preference i named (not NULL, nor a NULL struct). */
static inline int named(const pairs *p, idx_t i) {
	return is_valid(p->pair_valid, i) && is_valid(p->better.validity, i) && is_valid(p->worse.validity, i);
}

/* A row's nodes: where each came from (its list and index), to name it in an error. */
typedef struct {
	const ids *lists[2];
	int64_t *refs; /* per node: 2 * index + list */
} node_names;

static void name_node(const node_names *names, int32_t node, char *out, size_t size) {
	int64_t ref = names->refs[node];
	id_name(names->lists[ref & 1], (idx_t)(ref >> 1), out, size);
}

static void cycle_error(duckdb_function_info info, const char *name, const char *side, const graph *g,
                        const int32_t *from, const int32_t *to, const node_names *names) {
	int32_t *cycle = (int32_t *)malloc((g->n + 1) * sizeof(int32_t));
	if (!cycle) {
		set_error(info, name, "out of memory in the native preference step");
		return;
	}
	idx_t length = find_cycle(g, from, to, cycle);
	char problem[900], item[128];
	size_t at = (size_t)snprintf(problem, sizeof(problem), "%s preferences have a cycle: ", side);
	for (idx_t i = 0; i <= length && at < sizeof(problem) - 140; i++) {
		name_node(names, cycle[i % length], item, sizeof(item));
		at += (size_t)snprintf(problem + at, sizeof(problem) - at, i ? " > %s" : "%s", item);
	}
	free(cycle);
	set_error(info, name, problem);
}

static void self_error(duckdb_function_info info, const char *name, const char *side, const ids *list, idx_t i) {
	char problem[256], item[128];
	id_name(list, i, item, sizeof(item));
	snprintf(problem, sizeof(problem), "%s prefers item %s to itself (a cycle of one item)", side, item);
	set_error(info, name, problem);
}

/* The row's truth preferences between two items `f` numbers (its `t` entries), into from/to (room
 * for t.length each); returns their number, or -1 with the error set for an item preferred to
 * itself. A NULL preference or one with a NULL item is left out (its item finds no number). */
static int64_t considered(duckdb_function_info info, const char *name, const finder *f, const pairs *truth,
                          duckdb_list_entry t, int32_t *from, int32_t *to) {
	find_all(f, &truth->better, t.offset, t.length, from);
	find_all(f, &truth->worse, t.offset, t.length, to);
	idx_t m = 0;
	for (idx_t i = 0; i < t.length; i++) {
		int32_t a = from[i], b = to[i];
		/* Kept unless about an unranked item; without a branch, as which are is random. */
		int keep = ((a | b) >= 0) & is_valid(truth->pair_valid, t.offset + i);
		if (keep & (a == b)) {
			self_error(info, name, "truth", &truth->better, t.offset + i);
			return -1;
		}
		from[m] = a;
		to[m] = b;
		m += (idx_t)keep;
	}
	return (int64_t)m;
}

/* The EDRC of one row from its nodes (0..n-1), the truth edges and, for edrc_preferences, the
 * system's graph (NULL: nodes are numbered in the system's ranked order). in_v marks the nodes of
 * V (NULL: all). 0 with the error set on a cycle or when memory runs out; *value NAN when Z = 0. */
typedef struct {
	duckdb_function_info info;
	const char *name;
	preference_scratch *s;
	idx_t items; /* the row's size, for a memory error */
	/* The call's discount and likelihood columns (NULL likelihoods: edrc) and output, which
	 * start_row reads; failed: a row's start set an error, which ends the call. */
	const duckdb_string_t *discounts;
	const uint64_t *discount_valid;
	const double *likelihoods;
	const uint64_t *likelihood_valid;
	duckdb_vector output;
	double *out;
	int failed;
} row_context;

ROW_KERNEL static int edrc_row(row_context *c, idx_t n, const int32_t *from, const int32_t *to, idx_t m,
                    const graph *system, const int32_t *system_from, const int32_t *system_to,
                    const uint8_t *in_v, const node_names *names, int kind, double likelihood,
                    double *value) {
	*value = NAN;
	graph truth;
	if (!build_graph(c->s, B_GRAPH, n, from, to, m, &truth)) {
		memory_error(c->info, c->name, c->s, c->items);
		return 0;
	}
	if (truth.placed < n) {
		cycle_error(c->info, c->name, "truth", &truth, from, to, names);
		return 0;
	}
	if (system && system->placed < n) {
		cycle_error(c->info, c->name, "system", system, system_from, system_to, names);
		return 0;
	}
	if (m == 0) {
		return 1;
	}
	/* Rows of whole lanes; the truth's rows rounded up to 16 for column_counts. */
	idx_t stride = (n + LANE_BITS - 1) / LANE_BITS * LANE_WORDS, depth = 1;
	while (((idx_t)1 << depth) <= (n + 15) / 16) { /* the bits of the number of sixteens */
		depth++;
	}
	idx_t size = n * stride * sizeof(uint64_t), lane_count = stride / LANE_WORDS;
	uint64_t *ancestors = (uint64_t *)reserve(c->s, B_BITS, (n + 15) / 16 * 16 * stride * sizeof(uint64_t));
	lanes *counters = (lanes *)reserve(c->s, B_BITS + 1, lane_count * (4 + depth) * sizeof(lanes));
	int32_t *holders = (int32_t *)reserve(c->s, B_BITS + 2, (n + 63) / 64 * 64 * sizeof(int32_t));
	uint64_t *system_above = (uint64_t *)reserve(c->s, B_BITS + 3, system ? size : stride * sizeof(uint64_t));
	uint64_t *system_below = system ? (uint64_t *)reserve(c->s, B_BITS + 4, size) : NULL, *earlier = NULL;
	if (!ancestors || !counters || !holders || !system_above || (system && !system_below)) {
		memory_error(c->info, c->name, c->s, c->items);
		return 0;
	}
	/* Bits are numbered by the truth's topological order; the system's sets use the same
	 * numbering. */
	const int32_t *bit = truth.position;
	ancestor_rows(&truth, ancestors, stride, holders); /* its `ready` counts, until overwritten */
	/* 1 + each node's number of descendants, by its bit: the rows holding that bit */
	column_counts(ancestors, n, stride, counters, depth, holders);
	if (system) {
		closure(system, bit, system_above, stride, 1);
		closure(system, bit, system_below, stride, 0);
	} else { /* the nodes ranked before the current one, filled as the loop below goes */
		earlier = system_above;
		memset(earlier, 0, stride * sizeof(uint64_t));
	}
	idx_t v_size = n;
	if (in_v) {
		v_size = 0;
		for (idx_t v = 0; v < n; v++) {
			v_size += in_v[v];
		}
	}
	/* Summed in node order, as the Python kernel's bincount sums them. */
	double numerator = 0.0, normaliser = 0.0;
	for (idx_t v = 0; v < n; v++) {
		/* v's ancestors' bits lie in its row's words up to its own */
		idx_t word = (idx_t)bit[v] / 64, low = word + 1;
		const uint64_t *own = ancestors + (idx_t)bit[v] * stride;
		int64_t above = popcount(own, low) - 1, agree = 0, unordered = 0;
		if (!system) { /* the ancestors ranked earlier */
			agree = popcount_and(own, earlier, low);
			earlier[word] |= (uint64_t)1 << (bit[v] % 64);
		}
		if (above <= 0) {
			continue; /* a source of V, or a node outside it */
		}
		int64_t below = holders[bit[v]] - 1;
		if (system) {
			agree = popcount_and(own, system_above + v * stride, low) - 1;
			unordered = above - agree - (popcount_and(own, system_below + v * stride, low) - 1);
		}
		int64_t w_size = (int64_t)v_size - 1 - below, unknown = w_size - above;
		double d = discounted(kind, (double)truth.level[v]);
		numerator += ((double)agree + likelihood * (double)unordered + 0.5 * (double)unknown) / d;
		normaliser += (double)w_size / d;
	}
	if (normaliser > 0) {
		*value = 2.0 * numerator / normaliser - 1.0;
	}
	return 1;
}

/* The error of a likelihood outside [0, 1], which it shows as Python prints a float: the shortest
 * form that reads back, with a decimal point. */
static void likelihood_error(duckdb_function_info info, const char *name, double likelihood) {
	char problem[128];
	snprintf(problem, sizeof(problem), "likelihood must lie in [0, 1]; got %.17g", likelihood);
	for (int digits = 1; digits <= 17; digits++) {
		char shortest[40];
		snprintf(shortest, sizeof(shortest), "%.*g", digits, likelihood);
		if (strtod(shortest, NULL) == likelihood) {
			int plain = !strpbrk(shortest, ".eni");
			snprintf(problem, sizeof(problem), "likelihood must lie in [0, 1]; got %s%s", shortest,
			         plain ? ".0" : "");
			break;
		}
	}
	set_error(info, name, problem);
}

#define NO_LIKELIHOOD 0 /* edrc's likelihood column: none (column 0 is never one) */

/* The context of a call of `name` (edrc_rows, edrc_preferences_rows) whose discount and likelihood
 * are columns `discount_column` and `likelihood_column` of `input`, with its scratch `s`, started
 * here against `limit`. */
static row_context call_context(duckdb_function_info info, const char *name, duckdb_data_chunk input,
                                idx_t discount_column, idx_t likelihood_column, duckdb_vector output, preference_scratch *s,
                                int64_t limit) {
	*s = new_preference_scratch(info, limit);
	duckdb_vector discount_vector = duckdb_data_chunk_get_vector(input, discount_column);
	row_context c = {info, name, s, 0};
	c.discounts = (const duckdb_string_t *)duckdb_vector_get_data(discount_vector);
	c.discount_valid = duckdb_vector_get_validity(discount_vector);
	if (likelihood_column != NO_LIKELIHOOD) {
		duckdb_vector likelihood_vector = duckdb_data_chunk_get_vector(input, likelihood_column);
		c.likelihoods = (const double *)duckdb_vector_get_data(likelihood_vector);
		c.likelihood_valid = duckdb_vector_get_validity(likelihood_vector);
	}
	c.output = output;
	c.out = (double *)duckdb_vector_get_data(output);
	return c;
}

/* The start both functions give each row: 1 when the row goes on, with its discount in *kind;
 * else 0, the row NULL when an argument is (`present` is 0: one of the lists is NULL; or the
 * discount or the likelihood is NULL, or the likelihood NaN), or c->failed set with the error when
 * the discount, the likelihood or the length of a list (`first`, `second`: the row's entries) is
 * refused, in that order. */
static int start_row(row_context *c, idx_t row, int present, const duckdb_list_entry *first,
                     const duckdb_list_entry *second, int *kind) {
	c->out[row] = 0.0;
	const double *likelihood = c->likelihoods ? &c->likelihoods[row] : NULL;
	if (!present || !is_valid(c->discount_valid, row) ||
	    (likelihood && (!is_valid(c->likelihood_valid, row) || isnan(*likelihood)))) {
		set_row_null(c->output, row);
		return 0;
	}
	*kind = discount_of(c->info, c->name, &c->discounts[row]);
	if (*kind < 0) {
		c->failed = 1;
		return 0;
	}
	if (likelihood && !(*likelihood >= 0.0 && *likelihood <= 1.0)) {
		likelihood_error(c->info, c->name, *likelihood);
		c->failed = 1;
		return 0;
	}
	if (!check_lengths(c->info, c->name, first->length, second->length)) {
		c->failed = 1;
		return 0;
	}
	return 1;
}

/* edrc(rec, truth, discount): nodes are the items of V in rec's order (first occurrences). */
static void edrc_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	const char *name = "edrc";
	idx_t rows = duckdb_data_chunk_get_size(input);
	if (rows == 0) {
		return;
	}
	duckdb_vector rec_vector = duckdb_data_chunk_get_vector(input, 0);
	pairs truth;
	if (!pairs_of(info, name, "truth", duckdb_data_chunk_get_vector(input, 1),
	              duckdb_data_chunk_get_vector(input, 2), &truth)) {
		return;
	}
	if (!is_list(rec_vector)) {
		set_error(info, name, "rec must be a list");
		return;
	}
	ids rec = ids_of(duckdb_list_vector_get_child(rec_vector));
	ids lists[3] = {rec, truth.better, truth.worse};
	int64_t limit = call_limit(info, name, lists, 3, input, 4);
	if (limit < 0) {
		return;
	}
	const duckdb_list_entry *rec_entries = (const duckdb_list_entry *)duckdb_vector_get_data(rec_vector);
	const uint64_t *rec_valid = duckdb_vector_get_validity(rec_vector);

	preference_scratch s;
	row_context c = call_context(info, name, input, 3, NO_LIKELIHOOD, output, &s, limit);
	for (idx_t row = 0; row < rows && !c.failed; row++) {
		int kind;
		if (!start_row(&c, row, is_valid(rec_valid, row) && is_valid(truth.valid, row), &rec_entries[row],
		               &truth.entries[row], &kind)) {
			continue; /* NULL, or the call ends */
		}
		duckdb_list_entry r = rec_entries[row], t = truth.entries[row];
		c.items = r.length + t.length;
		finder f;
		/* position: per rec position, -1, or the node it becomes; from/to: the edges, first as
		 * positions, then as nodes. */
		int32_t *position = (int32_t *)reserve(&s, B_POSITION, bytes_for(r.length + 1, sizeof(int32_t), 0));
		int32_t *edges = (int32_t *)reserve(&s, B_EDGES, bytes_for(2 * t.length + 1, sizeof(int32_t), 0));
		int64_t *refs = (int64_t *)reserve(&s, B_NODE_REF, bytes_for(r.length + 1, sizeof(int64_t), 0));
		if (!position || !edges || !refs || !start_finder(&s, &f, &rec, r.offset, r.length)) {
			memory_error(info, name, &s, c.items);
			break;
		}
		for (idx_t i = 0; i < r.length; i++) {
			position[i] = -1;
			if (is_valid(rec.validity, r.offset + i)) {
				int32_t *at = entry(&f, &rec, r.offset + i);
				if (*at < 0) {
					*at = (int32_t)i; /* the first occurrence counts */
				}
			}
		}
		int32_t *from = edges, *to = edges + t.length;
		int64_t considered_count = considered(info, name, &f, &truth, t, from, to);
		if (considered_count < 0) {
			break;
		}
		idx_t m = (idx_t)considered_count;
		for (idx_t e = 0; e < m; e++) {
			position[from[e]] = position[to[e]] = 0; /* in V */
		}
		idx_t n = 0;
		for (idx_t i = 0; i < r.length; i++) {
			if (position[i] == 0) {
				refs[n] = (int64_t)(r.offset + i) * 2;
				position[i] = (int32_t)n++;
			}
		}
		for (idx_t e = 0; e < m; e++) {
			from[e] = position[from[e]];
			to[e] = position[to[e]];
		}
		node_names names = {{&rec, &rec}, refs};
		if (!edrc_row(&c, n, from, to, m, NULL, NULL, NULL, NULL, &names, kind, 0.5, &c.out[row])) {
			break;
		}
		null_if_nan(output, c.out, row);
	}
	release_preference_scratch(&s);
}

/* edrc_preferences(system, truth, discount, likelihood): nodes are the system's items, numbered
 * by first appearance among its preferred items, then among its other items (as the Python path
 * numbers them, so that the sums run in the same order). */
static void edrc_preferences_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	const char *name = "edrc_preferences";
	idx_t rows = duckdb_data_chunk_get_size(input);
	if (rows == 0) {
		return;
	}
	pairs system, truth;
	if (!pairs_of(info, name, "system", duckdb_data_chunk_get_vector(input, 0),
	              duckdb_data_chunk_get_vector(input, 2), &system) ||
	    !pairs_of(info, name, "truth", duckdb_data_chunk_get_vector(input, 1),
	              duckdb_data_chunk_get_vector(input, 3), &truth)) {
		return;
	}
	ids lists[4] = {system.better, system.worse, truth.better, truth.worse};
	int64_t limit = call_limit(info, name, lists, 4, input, 6);
	if (limit < 0) {
		return;
	}

	preference_scratch s;
	row_context c = call_context(info, name, input, 4, 5, output, &s, limit);
	for (idx_t row = 0; row < rows && !c.failed; row++) {
		int kind, present = is_valid(system.valid, row) && is_valid(truth.valid, row);
		if (!start_row(&c, row, present, &system.entries[row], &truth.entries[row], &kind)) {
			continue; /* NULL, or the call ends */
		}
		double likelihood = c.likelihoods[row];
		duckdb_list_entry sys = system.entries[row], t = truth.entries[row];
		c.items = 2 * sys.length + t.length;
		finder f;
		int32_t *edges = (int32_t *)reserve(&s, B_EDGES, bytes_for(2 * (sys.length + t.length) + 1, sizeof(int32_t), 0));
		int64_t *refs = (int64_t *)reserve(&s, B_NODE_REF, bytes_for(2 * sys.length + 1, sizeof(int64_t), 0));
		uint8_t *in_v = (uint8_t *)reserve(&s, B_IN_V, bytes_for(2 * sys.length + 1, 1, 0));
		/* Hashed: a direct-address table would need the range of both sides' items. */
		if (!edges || !refs || !in_v || !start_hash(&s, &f, system.better.type == DUCKDB_TYPE_VARCHAR, 2 * sys.length)) {
			memory_error(info, name, &s, c.items);
			break;
		}
		int32_t *s_from = edges, *s_to = edges + sys.length;
		idx_t n = 0, sm = 0;
		int failed = 0;
		for (int side = 0; side < 2 && !failed; side++) {
			const ids *list = side ? &system.worse : &system.better;
			for (idx_t i = sys.offset; i < sys.offset + sys.length; i++) {
				if (!named(&system, i)) {
					continue;
				}
				int32_t *at = entry(&f, list, i);
				if (*at < 0) {
					refs[n] = (int64_t)i * 2 + side;
					*at = (int32_t)n++;
				}
			}
		}
		for (idx_t i = sys.offset; i < sys.offset + sys.length; i++) {
			if (!named(&system, i)) {
				continue;
			}
			s_from[sm] = find(&f, &system.better, i);
			s_to[sm] = find(&f, &system.worse, i);
			if (s_from[sm] == s_to[sm]) {
				self_error(info, name, "system", &system.better, i);
				failed = 1;
				break;
			}
			sm++;
		}
		if (failed) {
			break;
		}
		int32_t *from = edges + 2 * sys.length, *to = from + t.length;
		int64_t considered_count = considered(info, name, &f, &truth, t, from, to);
		if (considered_count < 0) {
			break;
		}
		idx_t m = (idx_t)considered_count;
		memset(in_v, 0, n);
		for (idx_t e = 0; e < m; e++) {
			in_v[from[e]] = in_v[to[e]] = 1;
		}
		graph system_graph;
		if (!build_graph(&s, B_GRAPH + GRAPH_BUFFERS, n, s_from, s_to, sm, &system_graph)) {
			memory_error(info, name, &s, c.items);
			break;
		}
		node_names names = {{&system.better, &system.worse}, refs};
		if (!edrc_row(&c, n, from, to, m, &system_graph, s_from, s_to, in_v, &names, kind, likelihood,
		              &c.out[row])) {
			break;
		}
		null_if_nan(output, c.out, row);
	}
	release_preference_scratch(&s);
}

/* --- registration ----------------------------------------------------------------------------- */

duckdb_state duckrank_register_edrc(duckdb_connection connection, budget *account) {
	static const duckdb_type edrc[] = {DUCKDB_TYPE_ANY, DUCKDB_TYPE_ANY, DUCKDB_TYPE_VARCHAR, DUCKDB_TYPE_VARCHAR};
	static const duckdb_type edrc_preferences[] = {DUCKDB_TYPE_ANY,     DUCKDB_TYPE_ANY,     DUCKDB_TYPE_VARCHAR,
	                                               DUCKDB_TYPE_VARCHAR, DUCKDB_TYPE_VARCHAR, DUCKDB_TYPE_DOUBLE};
	duckdb_state state = register_preference_function(connection, account, "duckrank_native_edrc", edrc, 4, edrc_rows);
	if (state == DuckDBSuccess) {
		state = register_preference_function(connection, account, "duckrank_native_edrc_preferences",
		                                     edrc_preferences, 6, edrc_preferences_rows);
	}
	return state;
}
