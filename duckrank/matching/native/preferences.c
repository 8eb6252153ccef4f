/*
 * duckrank's preference metrics (edrc, edrc_preferences and the rank correlations) as native code,
 * part of the same DuckDB C API extension as match.c, whose entry point (extension.c) calls
 * duckrank_register_preferences once per database. Three scalar functions:
 *
 *     duckrank_native_edrc(rec LIST, truth LIST(STRUCT(a, b)), truth_type VARCHAR, discount VARCHAR)
 *     duckrank_native_edrc_preferences(system LIST(STRUCT), truth LIST(STRUCT), system_type VARCHAR,
 *                                      truth_type VARCHAR, discount VARCHAR, likelihood DOUBLE)
 *     duckrank_native_correlation(function VARCHAR, rec LIST, keys LIST, grades DOUBLE[])
 *         -> DOUBLE
 *
 * each with current_setting('memory_limit') as an optional last argument. They compute, row by row,
 * what the numpy kernels compute over Arrow batches (duckrank/metrics/preference.py and
 * correlation.py hold the definitions; docs/preference.md the conventions), and the macros
 * (duckrank/engines/python_udfs.py) call them when the extension is loaded and the ids are of a
 * kind handled here: integers that fit a BIGINT (any mix of widths, compared by value), or VARCHAR
 * on every side. `*_type` is typeof() of the preference argument, for the error naming it.
 *
 * Why native: the Python UDFs pay DuckDB's export of the arguments to Arrow (as much as the whole
 * kernel for edrc) and numpy's per-call overhead on every truth layer. Here DuckDB's vectors are
 * read in place and each row costs, for edrc, one hash (or direct-address) table of its ranked
 * items, Kahn's layering of the considered truth preferences, the ancestor closure as bitsets
 * along the edges (most of them skipped), descendant counts as the column sums of those bitsets,
 * and popcounts: at most about (preferences x nodes / 64) word operations, in practice a fraction.
 *
 * Memory: each call holds one row's scratch at a time (tables, edges, graphs, bitsets: for edrc
 * 16 to 32 bytes per ranked item and per preference, plus about nodes^2 / 8 bytes per bit matrix
 * (rows of whole 256-bit lanes): one for edrc, three for edrc_preferences), reused from row to row
 * and freed at the end of the call. It is counted against memory_limit in the same account as
 * match.c's matching step (budget.h: one per database), so that the two together never hold more
 * than memory_limit: a row that would take them past it fails with an error worded as DuckDB's
 * "Out of Memory Error".
 */
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "common.h"
#include "families.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable allocation of the scratch, kept from row to row. */
typedef struct {
	void *data;
	size_t bytes;
} buffer;

/* A graph takes GRAPH_BUFFERS buffers from its first; edrc_preferences has two graphs. */
#define GRAPH_BUFFERS 8
typedef enum {
	B_SLOTS, B_POSITION, B_EDGES, B_NODE_REF, B_IN_V, B_GRAPH,
	B_BITS = B_GRAPH + 2 * GRAPH_BUFFERS, B_COUNT = B_BITS + 5
} buffer_id;

typedef struct {
	claim memory;  /* the call's part of the database's account (budget.h) */
	int no_memory; /* malloc itself failed */
	buffer buffers[B_COUNT];
} scratch;

/* Buffer `id` with room for `bytes` (its old content is not kept; bytes_for's TOO_MANY_BYTES for
 * a size that overflowed); NULL when memory_limit or malloc refuses. A buffer never had is NULL
 * even for 0 bytes, so it is at least 1 byte: a row of empty lists is not a refusal. */
static void *reserve(scratch *s, buffer_id id, int64_t bytes) {
	buffer *b = &s->buffers[id];
	if (b->data && (uint64_t)bytes <= b->bytes) {
		return b->data;
	}
	/* Doubling past 2^62 would wrap: such a size is refused as the whole int64 range. */
	if (bytes > ((int64_t)1 << 62)) {
		claim_take(&s->memory, TOO_MANY_BYTES);
		return NULL;
	}
	size_t grown = b->bytes ? b->bytes : 1024;
	while (grown < (uint64_t)bytes) {
		grown *= 2;
	}
	free(b->data);
	b->data = NULL;
	claim_give_back(&s->memory, (int64_t)b->bytes);
	b->bytes = 0;
	if (!claim_take(&s->memory, (int64_t)grown)) {
		return NULL;
	}
	/* Aligned to a cache line, so that rows of bitsets (multiples of 32 bytes) are aligned for
	 * the vector instructions; `grown` is a power of two of at least 1024, as aligned_alloc
	 * requires a multiple of the alignment. */
	b->data = aligned_alloc(64, grown);
	if (!b->data) {
		claim_give_back(&s->memory, (int64_t)grown);
		s->no_memory = 1;
		return NULL;
	}
	b->bytes = grown;
	return b->data;
}

static void release(scratch *s) {
	for (int i = 0; i < B_COUNT; i++) {
		free(s->buffers[i].data);
	}
	claim_end(&s->memory);
}

/* The error of a row whose scratch could not be had, worded as match.c's. */
static void memory_error(duckdb_function_info info, const char *name, const scratch *s, idx_t items) {
	if (s->no_memory) {
		set_error(info, name, "out of memory in the native preference step");
		return;
	}
	char problem[512];
	claim_refusal(&s->memory, "preference", items, "items", problem, sizeof(problem));
	set_error(info, name, problem);
}

/* The longest list of a row this step handles: nodes, edges and item numbers are int32 (the
 * scratch's size and speed), and edrc_preferences numbers up to twice a list's items. Every size
 * computed from a row's lengths below is bounded through this: about nodes^2 / 8 bytes at most,
 * far below 2^63, so none wraps (the table sizes go through bytes_for all the same). A longer row
 * (more than a billion items in one list) is an error naming the function, not a wrong number. */
#define MAX_ITEMS ((idx_t)INT32_MAX / 2)

/* 0, with the error set, when a list of the row is longer than MAX_ITEMS. */
static int check_lengths(duckdb_function_info info, const char *name, idx_t first, idx_t second) {
	idx_t longest = first > second ? first : second;
	if (longest <= MAX_ITEMS) {
		return 1;
	}
	char problem[200];
	snprintf(problem, sizeof(problem), "a list of %llu items is longer than the native preference step handles (%llu)",
	         (unsigned long long)longest, (unsigned long long)MAX_ITEMS);
	set_error(info, name, problem);
	return 0;
}

/* --- reading DuckDB's vectors ----------------------------------------------------------------- */

/* One list of ids: integers that fit an int64 (compared by value whatever their width) or
 * VARCHAR. */
typedef struct {
	duckdb_type type;
	const void *data;
	const uint64_t *validity;
} ids;

static inline int64_t read_int(const ids *v, idx_t i) {
	switch (v->type) {
	case DUCKDB_TYPE_TINYINT: return ((const int8_t *)v->data)[i];
	case DUCKDB_TYPE_SMALLINT: return ((const int16_t *)v->data)[i];
	case DUCKDB_TYPE_INTEGER: return ((const int32_t *)v->data)[i];
	case DUCKDB_TYPE_UTINYINT: return ((const uint8_t *)v->data)[i];
	case DUCKDB_TYPE_USMALLINT: return ((const uint16_t *)v->data)[i];
	case DUCKDB_TYPE_UINTEGER: return ((const uint32_t *)v->data)[i];
	default: return ((const int64_t *)v->data)[i];
	}
}

static int is_list(duckdb_vector vector) {
	duckdb_logical_type type = duckdb_vector_get_column_type(vector);
	int list = duckdb_get_type_id(type) == DUCKDB_TYPE_LIST;
	duckdb_destroy_logical_type(&type);
	return list;
}

static ids ids_of(duckdb_vector items) {
	duckdb_logical_type type = duckdb_vector_get_column_type(items);
	ids v = {duckdb_get_type_id(type), duckdb_vector_get_data(items), duckdb_vector_get_validity(items)};
	duckdb_destroy_logical_type(&type);
	return v;
}

/* 1 when every list holds integers fitting an int64, 2 when every one holds VARCHAR, 0 otherwise. */
static int family_of(const ids *lists, int count) {
	int integers = 1, strings = 1;
	for (int i = 0; i < count; i++) {
		integers &= fits_int64(kind_of(lists[i].type));
		strings &= lists[i].type == DUCKDB_TYPE_VARCHAR;
	}
	return integers ? 1 : strings ? 2 : 0;
}

/* An id as the errors show it, as Python's str() of an integer and repr() of a string give it
 * (the Python path's wording): 42, 'b', "it's". */
static void id_name(const ids *v, idx_t i, char *out, size_t size) {
	if (v->type != DUCKDB_TYPE_VARCHAR) {
		snprintf(out, size, "%lld", (long long)read_int(v, i));
		return;
	}
	const duckdb_string_t *s = (const duckdb_string_t *)v->data + i;
	const char *text = string_data(s);
	uint32_t length = s->value.inlined.length;
	char quote = memchr(text, '\'', length) && !memchr(text, '"', length) ? '"' : '\'';
	size_t at = 0;
	out[at++] = quote;
	for (uint32_t c = 0; c < length && at + 6 < size; c++) {
		unsigned char ch = (unsigned char)text[c];
		if (ch == '\\' || ch == (unsigned char)quote) {
			at += snprintf(out + at, size - at, "\\%c", ch);
		} else if (ch == '\n' || ch == '\t' || ch == '\r') {
			at += snprintf(out + at, size - at, "\\%c", ch == '\n' ? 'n' : ch == '\t' ? 't' : 'r');
		} else if (ch < 0x20 || ch == 0x7f) {
			at += snprintf(out + at, size - at, "\\x%02x", ch);
		} else {
			out[at++] = (char)ch;
		}
	}
	out[at++] = quote;
	out[at] = '\0';
}

/* --- finding ids: a row's items, numbered, looked up by value ----------------------------------- */

typedef struct {
	uint64_t key; /* an integer id, or a string's hash */
	const duckdb_string_t *text;
	int32_t value;
	uint32_t used;
} slot;

/* A map from one row's ids to small numbers (int32, -1 for "absent"). Integer ids spanning a range
 * of at most a few times the row's length are their own index into a direct-address table (item
 * numbers of a catalogue: no hashing); other ids go to an open-addressing hash table (linear
 * probing, at most a quarter full). */
typedef struct {
	int strings;
	int direct;
	int64_t low;
	uint64_t span;
	int32_t *table;
	slot *slots;
	uint64_t mask;
} finder;

/* An empty hash table for up to `count` ids (strings or integers); count is at most 2 * MAX_ITEMS
 * (check_lengths), so 4 * count slots is far from overflowing. */
static int start_hash(scratch *s, finder *f, int strings, idx_t count) {
	uint64_t size = 64;
	while (size < 4 * (uint64_t)count) {
		size *= 2;
	}
	f->strings = strings;
	f->direct = 0;
	f->slots = (slot *)reserve(s, B_SLOTS, bytes_for(size, sizeof(slot), 0));
	if (!f->slots) {
		return 0;
	}
	memset(f->slots, 0, size * sizeof(slot));
	f->mask = size - 1;
	return 1;
}

/* Sizes the finder for the ids of `v` at [offset, offset + count) and empties it. */
static int start_finder(scratch *s, finder *f, const ids *v, idx_t offset, idx_t count) {
	if (v->type != DUCKDB_TYPE_VARCHAR && count > 0) {
		int64_t low = INT64_MAX, high = INT64_MIN;
		for (idx_t i = offset; i < offset + count; i++) {
			if (is_valid(v->validity, i)) {
				int64_t id = read_int(v, i);
				low = id < low ? id : low;
				high = id > high ? id : high;
			}
		}
		if (low > high) { /* every id NULL */
			low = high = 0;
		}
		/* high - low, in unsigned arithmetic: ids spanning the whole int64 range (INT64_MIN and
		 * INT64_MAX in one row) differ by 2^64 - 1, and the span, one more, wraps to 0 (a table
		 * of no entries, then indexed by id - low). The test is on the difference. */
		uint64_t difference = (uint64_t)high - (uint64_t)low, room;
		if (!__builtin_mul_overflow((uint64_t)count, 4, &room) && !__builtin_add_overflow(room, 64, &room) &&
		    difference < room) {
			uint64_t span = difference + 1;
			f->strings = 0;
			f->direct = 1;
			f->low = low;
			f->span = span;
			f->table = (int32_t *)reserve(s, B_SLOTS, bytes_for(span, sizeof(int32_t), 0));
			if (!f->table) {
				return 0;
			}
			memset(f->table, 0xff, span * sizeof(int32_t));
			return 1;
		}
	}
	return start_hash(s, f, v->type == DUCKDB_TYPE_VARCHAR, count);
}

/* Id i of v as a table key (its text's hash, or the integer itself), with its text (NULL for
 * integers) and its first probe. */
static inline uint64_t key_of(const finder *f, const ids *v, idx_t i, const duckdb_string_t **text,
                              uint64_t *at) {
	if (f->strings) {
		*text = (const duckdb_string_t *)v->data + i;
		*at = hash_string(*text, HASH_FOR_LOW_BITS);
		return *at;
	}
	*text = NULL;
	uint64_t key = (uint64_t)read_int(v, i);
	*at = mix(key);
	return key;
}

/* The slot of id i of v: the one holding it, or the empty one where it would go. */
static inline slot *slot_of(const finder *f, const ids *v, idx_t i) {
	const duckdb_string_t *text;
	uint64_t at;
	uint64_t key = key_of(f, v, i, &text, &at);
	for (;; at++) {
		slot *e = &f->slots[at & f->mask];
		if (!e->used || (e->key == key && (!text || strings_equal(e->text, text)))) {
			e->key = key;
			e->text = text;
			return e;
		}
	}
}

/* Where id i of v is numbered (-1 if it is not yet): a pointer to write its number through. */
static inline int32_t *entry(const finder *f, const ids *v, idx_t i) {
	if (f->direct) {
		return &f->table[(uint64_t)read_int(v, i) - (uint64_t)f->low];
	}
	slot *e = slot_of(f, v, i);
	if (!e->used) {
		e->used = 1;
		e->value = -1;
	}
	return &e->value;
}

/* The number of id i of v, -1 when absent (or NULL). */
static inline int32_t find(const finder *f, const ids *v, idx_t i) {
	if (!is_valid(v->validity, i)) {
		return -1;
	}
	if (f->direct) {
		uint64_t at = (uint64_t)read_int(v, i) - (uint64_t)f->low;
		return at < f->span ? f->table[at] : -1;
	}
	const duckdb_string_t *text;
	uint64_t at;
	uint64_t key = key_of(f, v, i, &text, &at);
	for (;; at++) {
		const slot *e = &f->slots[at & f->mask];
		if (!e->used) {
			return -1;
		}
		if (e->key == key && (!text || strings_equal(e->text, text))) {
			return e->value;
		}
	}
}

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
static int build_graph(scratch *s, buffer_id first, idx_t n, const int32_t *from, const int32_t *to, idx_t m,
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
			CARRY_SAVE(twos_a, ones, ones, ROW(0), ROW(1));
			CARRY_SAVE(twos_b, ones, ones, ROW(2), ROW(3));
			CARRY_SAVE(fours_a, twos, twos, twos_a, twos_b);
			CARRY_SAVE(twos_a, ones, ones, ROW(4), ROW(5));
			CARRY_SAVE(twos_b, ones, ones, ROW(6), ROW(7));
			CARRY_SAVE(fours_b, twos, twos, twos_a, twos_b);
			CARRY_SAVE(eights_a, fours, fours, fours_a, fours_b);
			CARRY_SAVE(twos_a, ones, ones, ROW(8), ROW(9));
			CARRY_SAVE(twos_b, ones, ones, ROW(10), ROW(11));
			CARRY_SAVE(fours_a, twos, twos, twos_a, twos_b);
			CARRY_SAVE(twos_a, ones, ones, ROW(12), ROW(13));
			CARRY_SAVE(twos_b, ones, ones, ROW(14), ROW(15));
			CARRY_SAVE(fours_b, twos, twos, twos_a, twos_b);
			CARRY_SAVE(eights_b, fours, fours, fours_a, fours_b);
			CARRY_SAVE(carry, eights, eights, eights_a, eights_b);
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
	scratch *s;
	idx_t items; /* the row's size, for a memory error */
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

static scratch new_scratch(duckdb_function_info info, int64_t limit) {
	scratch s;
	memset(&s, 0, sizeof(s));
	s.memory = claim_start(info, limit);
	return s;
}

static void set_null(duckdb_vector output, idx_t row) {
	duckdb_vector_ensure_validity_writable(output);
	duckdb_validity_set_row_invalid(duckdb_vector_get_validity(output), row);
}

static const char NOT_HANDLED[] = "these id types are not handled by the native preference step";

/* edrc(rec, truth, discount): nodes are the items of V in rec's order (first occurrences). */
static void edrc_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	const char *name = "edrc";
	idx_t rows = duckdb_data_chunk_get_size(input);
	if (rows == 0) {
		return;
	}
	duckdb_vector rec_vector = duckdb_data_chunk_get_vector(input, 0);
	duckdb_vector discount_vector = duckdb_data_chunk_get_vector(input, 3);
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
	if (!family_of(lists, 3)) {
		set_error(info, name, NOT_HANDLED);
		return;
	}
	int64_t limit = budget_limit(info, name, input, 4);
	if (limit < 0) {
		return;
	}
	const duckdb_list_entry *rec_entries = (const duckdb_list_entry *)duckdb_vector_get_data(rec_vector);
	const uint64_t *rec_valid = duckdb_vector_get_validity(rec_vector);
	const duckdb_string_t *discounts = (const duckdb_string_t *)duckdb_vector_get_data(discount_vector);
	const uint64_t *discount_valid = duckdb_vector_get_validity(discount_vector);
	double *out = (double *)duckdb_vector_get_data(output);

	scratch s = new_scratch(info, limit);
	row_context c = {info, name, &s, 0};
	for (idx_t row = 0; row < rows; row++) {
		out[row] = 0.0;
		if (!is_valid(rec_valid, row) || !is_valid(truth.valid, row) || !is_valid(discount_valid, row)) {
			set_null(output, row);
			continue;
		}
		int kind = discount_of(info, name, &discounts[row]);
		if (kind < 0) {
			break;
		}
		duckdb_list_entry r = rec_entries[row], t = truth.entries[row];
		if (!check_lengths(info, name, r.length, t.length)) {
			break;
		}
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
		if (!edrc_row(&c, n, from, to, m, NULL, NULL, NULL, NULL, &names, kind, 0.5, &out[row])) {
			break;
		}
		if (isnan(out[row])) {
			set_null(output, row);
		}
	}
	release(&s);
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
	if (!family_of(lists, 4)) {
		set_error(info, name, NOT_HANDLED);
		return;
	}
	int64_t limit = budget_limit(info, name, input, 6);
	if (limit < 0) {
		return;
	}
	duckdb_vector discount_vector = duckdb_data_chunk_get_vector(input, 4);
	duckdb_vector likelihood_vector = duckdb_data_chunk_get_vector(input, 5);
	const duckdb_string_t *discounts = (const duckdb_string_t *)duckdb_vector_get_data(discount_vector);
	const uint64_t *discount_valid = duckdb_vector_get_validity(discount_vector);
	const double *likelihoods = (const double *)duckdb_vector_get_data(likelihood_vector);
	const uint64_t *likelihood_valid = duckdb_vector_get_validity(likelihood_vector);
	double *out = (double *)duckdb_vector_get_data(output);

	scratch s = new_scratch(info, limit);
	row_context c = {info, name, &s, 0};
	for (idx_t row = 0; row < rows; row++) {
		out[row] = 0.0;
		if (!is_valid(system.valid, row) || !is_valid(truth.valid, row) || !is_valid(discount_valid, row) ||
		    !is_valid(likelihood_valid, row) || isnan(likelihoods[row])) {
			set_null(output, row);
			continue;
		}
		int kind = discount_of(info, name, &discounts[row]);
		if (kind < 0) {
			break;
		}
		double likelihood = likelihoods[row];
		if (!(likelihood >= 0.0 && likelihood <= 1.0)) {
			likelihood_error(info, name, likelihood);
			break;
		}
		duckdb_list_entry sys = system.entries[row], t = truth.entries[row];
		if (!check_lengths(info, name, sys.length, t.length)) {
			break;
		}
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
		              &out[row])) {
			break;
		}
		if (isnan(out[row])) {
			set_null(output, row);
		}
	}
	release(&s);
}

/* --- rank correlations ------------------------------------------------------------------------ */

static int compare_doubles(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

typedef enum { SPEARMAN, KENDALL_TAU, AP_CORRELATION, FCP } correlation;

/* Per compared item of a row: how many items have a higher grade, and an equal one (itself
 * included), in the whole row and among the items above it. */
typedef struct {
	int32_t *higher, *equal, *higher_above, *equal_above;
} pair_counts;

/* Rows of at most this many compared items compare every pair (no sort: the common case of short
 * graded lists); longer rows sort, O(n log n). */
#define PAIRWISE_ITEMS 48

static void count_pairwise(const double *g, idx_t n, const pair_counts *out) {
	for (idx_t i = 0; i < n; i++) {
		int32_t higher = 0, equal = 0, higher_above = 0, equal_above = 0;
		for (idx_t j = 0; j < n; j++) {
			int32_t is_higher = g[j] > g[i], is_equal = g[j] == g[i], above = j < i;
			higher += is_higher;
			equal += is_equal;
			higher_above += is_higher & above;
			equal_above += is_equal & above;
		}
		out->higher[i] = higher;
		out->equal[i] = equal;
		out->higher_above[i] = higher_above;
		out->equal_above[i] = equal_above;
	}
}

/* The same with one sort of the grades and a Fenwick tree over their dense ranks. `sorted` holds n
 * doubles, `scratch` 4n + 4 int32. */
static void count_sorted(const double *g, idx_t n, double *sorted, int32_t *scratch, const pair_counts *out) {
	memcpy(sorted, g, n * sizeof(double));
	qsort(sorted, n, sizeof(double), compare_doubles);
	idx_t distinct = 0;
	for (idx_t i = 0; i < n; i++) {
		if (i == 0 || sorted[i] != sorted[distinct - 1]) {
			sorted[distinct++] = sorted[i];
		}
	}
	int32_t *tree = scratch, *equal_so_far = tree + distinct + 1, *total = equal_so_far + distinct + 1;
	int32_t *higher_total = total + distinct; /* per dense rank: items of a higher grade */
	memset(scratch, 0, (4 * distinct + 2) * sizeof(int32_t));
	for (idx_t i = 0; i < n; i++) {
		total[(double *)bsearch(&g[i], sorted, distinct, sizeof(double), compare_doubles) - sorted]++;
	}
	int32_t running = 0;
	for (idx_t r = distinct; r-- > 0;) {
		higher_total[r] = running;
		running += total[r];
	}
	for (idx_t i = 0; i < n; i++) {
		idx_t rank = (idx_t)((double *)bsearch(&g[i], sorted, distinct, sizeof(double), compare_doubles) - sorted);
		int32_t at_most = 0; /* items above with a grade of this rank or lower */
		for (idx_t k = rank + 1; k > 0; k -= k & (0 - k)) {
			at_most += tree[k];
		}
		for (idx_t k = rank + 1; k <= distinct; k += k & (0 - k)) {
			tree[k]++;
		}
		out->higher[i] = higher_total[rank];
		out->equal[i] = total[rank];
		out->higher_above[i] = (int32_t)i - at_most;
		out->equal_above[i] = equal_so_far[rank]++;
	}
}

/* The correlation of one row's compared grades g[0..n-1] (in the system's order), NAN where
 * undefined; the sums run in item order, as the Python kernels' bincount sums them. */
static double correlate(correlation which, const double *g, idx_t n, double *sorted, int32_t *scratch,
                        const pair_counts *counts) {
	if (n < 2) {
		return NAN;
	}
	if (n <= PAIRWISE_ITEMS) {
		count_pairwise(g, n, counts);
	} else {
		count_sorted(g, n, sorted, scratch, counts);
	}
	if ((idx_t)counts->equal[0] == n) {
		return NAN; /* every grade equal */
	}
	double mean = ((double)n + 1) / 2, covariance = 0, system_spread = 0, truth_spread = 0, share = 0;
	int64_t concordant = 0, discordant = 0, tied = 0;
	for (idx_t i = 0; i < n; i++) {
		int64_t higher_above = counts->higher_above[i], equal_above = counts->equal_above[i];
		concordant += higher_above;
		discordant += (int64_t)i - higher_above - equal_above;
		tied += equal_above;
		double truth_rank = counts->higher[i] + ((double)counts->equal[i] + 1) / 2, system_rank = (double)i + 1.0;
		covariance += (system_rank - mean) * (truth_rank - mean);
		system_spread += (system_rank - mean) * (system_rank - mean);
		truth_spread += (truth_rank - mean) * (truth_rank - mean);
		share += i > 0 ? ((double)higher_above + 0.5 * (double)equal_above) / (double)i : 0.0;
	}
	double pairs = (double)n * ((double)n - 1) / 2;
	switch (which) {
	case SPEARMAN:
		return truth_spread > 0 ? covariance / sqrt(system_spread * truth_spread) : NAN;
	case KENDALL_TAU:
		return ((double)concordant - (double)discordant) / sqrt(pairs * (pairs - (double)tied));
	case AP_CORRELATION:
		return 2.0 / ((double)n - 1) * share - 1.0;
	default:
		return (double)concordant / (double)(concordant + discordant);
	}
}

static int correlation_of(const duckdb_string_t *text, correlation *which, char name[32]) {
	static const char *names[] = {"spearman", "kendall_tau", "ap_correlation", "fcp"};
	uint32_t length = text->value.inlined.length;
	for (int i = 0; i < 4; i++) {
		if (strlen(names[i]) == length && memcmp(names[i], string_data(text), length) == 0) {
			*which = (correlation)i;
			snprintf(name, 32, "%s", names[i]);
			return 1;
		}
	}
	return 0;
}

/* 0, with the error set naming the item (as text, quoted: the correlations match ids by their
 * text), when a grade of the row is NULL, NaN or infinite. grades[i] is key k.offset + i's, its
 * validity bit grade_offset + i. */
static int check_grades(duckdb_function_info info, const char *name, const ids *keys, duckdb_list_entry k,
                        const double *grades, const uint64_t *grade_valid, idx_t grade_offset) {
	for (idx_t i = 0; i < k.length; i++) {
		double grade = grades[i];
		if (!is_valid(grade_valid, grade_offset + i) || !isfinite(grade)) {
			char problem[300], item[128], text[128];
			id_name(keys, k.offset + i, item, sizeof(item));
			if (keys->type != DUCKDB_TYPE_VARCHAR) { /* named as its text */
				snprintf(text, sizeof(text), "'%.100s'", item);
				memcpy(item, text, sizeof(item));
			}
			snprintf(problem, sizeof(problem), "the grade of item %s in truth must be a finite number, got %s",
			         item, isinf(grade) && is_valid(grade_valid, grade_offset + i)
			                   ? (grade > 0 ? "inf" : "-inf") : "NULL or NaN");
			set_error(info, name, problem);
			return 0;
		}
	}
	return 1;
}

/* correlation(function, rec, keys, grades): the items of rec that the truth grades, at their first
 * occurrence, in rec's order; keys and grades are the truth map's keys and values (the macros pass
 * map_keys(truth) and map_values(truth)). A NULL, NaN or infinite grade of a row whose rec and truth
 * are not NULL is an error naming the item (as text, quoted: the correlations match ids by their
 * text). The function is reachable from SQL like any other, so nothing the macros guarantee is
 * trusted: rec and keys must be lists, and each row's grades as long as its keys (else an error
 * naming the function and both lengths); a NULL rec, keys or grades makes the row NULL. */
static void correlation_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	static const char *internal = "duckrank_native_correlation";
	idx_t rows = duckdb_data_chunk_get_size(input);
	if (rows == 0) {
		return;
	}
	char name[32];
	snprintf(name, sizeof(name), "%s", internal);
	correlation which = SPEARMAN;
	/* The macros pass the function as a constant; each row is read all the same. */
	const duckdb_string_t *functions = (const duckdb_string_t *)duckdb_vector_get_data(
	    duckdb_data_chunk_get_vector(input, 0));
	const uint64_t *function_valid = duckdb_vector_get_validity(duckdb_data_chunk_get_vector(input, 0));
	if (is_valid(function_valid, 0) && !correlation_of(&functions[0], &which, name)) {
		set_error(info, internal, "function must be spearman, kendall_tau, ap_correlation or fcp");
		return;
	}
	duckdb_vector rec_vector = duckdb_data_chunk_get_vector(input, 1);
	duckdb_vector key_vector = duckdb_data_chunk_get_vector(input, 2);
	duckdb_vector grade_vector = duckdb_data_chunk_get_vector(input, 3);
	if (!is_list(rec_vector) || !is_list(key_vector)) {
		set_error(info, internal, "rec and keys must be lists");
		return;
	}
	ids lists[2] = {ids_of(duckdb_list_vector_get_child(rec_vector)),
	                ids_of(duckdb_list_vector_get_child(key_vector))};
	if (!family_of(lists, 2)) {
		set_error(info, name, NOT_HANDLED);
		return;
	}
	int64_t limit = budget_limit(info, name, input, 4);
	if (limit < 0) {
		return;
	}
	const duckdb_list_entry *rec_entries = (const duckdb_list_entry *)duckdb_vector_get_data(rec_vector);
	const duckdb_list_entry *key_entries = (const duckdb_list_entry *)duckdb_vector_get_data(key_vector);
	const uint64_t *rec_valid = duckdb_vector_get_validity(rec_vector);
	const uint64_t *key_valid = duckdb_vector_get_validity(key_vector);
	duckdb_vector grade_items = duckdb_list_vector_get_child(grade_vector);
	const double *grades = (const double *)duckdb_vector_get_data(grade_items);
	const uint64_t *grade_valid = duckdb_vector_get_validity(grade_items);
	const duckdb_list_entry *grade_entries = (const duckdb_list_entry *)duckdb_vector_get_data(grade_vector);
	const uint64_t *grade_list_valid = duckdb_vector_get_validity(grade_vector);
	double *out = (double *)duckdb_vector_get_data(output);

	scratch s = new_scratch(info, limit);
	for (idx_t row = 0; row < rows; row++) {
		out[row] = 0.0;
		if (!is_valid(rec_valid, row) || !is_valid(key_valid, row) || !is_valid(grade_list_valid, row)) {
			set_null(output, row);
			continue;
		}
		if (!is_valid(function_valid, row) || !correlation_of(&functions[row], &which, name)) {
			set_error(info, internal, "function must be spearman, kendall_tau, ap_correlation or fcp");
			break;
		}
		duckdb_list_entry r = rec_entries[row], k = key_entries[row];
		if (grade_entries[row].length != k.length) {
			/* Grade i is key i's: a shorter list would be read past its end. */
			char problem[200];
			snprintf(problem, sizeof(problem),
			         "%s needs one grade per key, got %llu keys and %llu grades", name,
			         (unsigned long long)k.length, (unsigned long long)grade_entries[row].length);
			set_error(info, internal, problem);
			break;
		}
		if (!check_lengths(info, name, r.length, k.length)) {
			break;
		}
		idx_t grade_offset = grade_entries[row].offset;
		if (!check_grades(info, name, &lists[1], k, grades + grade_offset, grade_valid, grade_offset)) {
			break;
		}
		idx_t most = k.length < r.length ? k.length : r.length;
		finder f;
		double *compared = (double *)reserve(&s, B_POSITION, bytes_for(2 * most + 1, sizeof(double), 0));
		int32_t *counts = (int32_t *)reserve(&s, B_EDGES, bytes_for(8 * most + 4, sizeof(int32_t), 0));
		uint8_t *consumed = (uint8_t *)reserve(&s, B_IN_V, bytes_for(k.length + 1, 1, 0));
		if (!compared || !counts || !consumed || !start_finder(&s, &f, &lists[1], k.offset, k.length)) {
			memory_error(info, name, &s, r.length + k.length);
			break;
		}
		for (idx_t i = 0; i < k.length; i++) {
			consumed[i] = 0;
			if (is_valid(lists[1].validity, k.offset + i)) {
				int32_t *at = entry(&f, &lists[1], k.offset + i);
				if (*at < 0) {
					*at = (int32_t)i;
				}
			}
		}
		idx_t n = 0;
		for (idx_t i = r.offset; i < r.offset + r.length && n < most; i++) {
			int32_t key = find(&f, &lists[0], i);
			if (key >= 0 && !consumed[key]) {
				consumed[key] = 1;
				compared[n++] = grades[grade_offset + (idx_t)key];
			}
		}
		pair_counts per_item = {counts, counts + most, counts + 2 * most, counts + 3 * most};
		out[row] = correlate(which, compared, n, compared + most, counts + 4 * most, &per_item);
		if (isnan(out[row])) {
			set_null(output, row);
		}
	}
	release(&s);
}

/* --- registration ----------------------------------------------------------------------------- */

duckdb_state duckrank_register_preferences(duckdb_connection connection, budget *account) {
	duckdb_logical_type any = duckdb_create_logical_type(DUCKDB_TYPE_ANY);
	duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
	duckdb_logical_type real = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
	duckdb_logical_type reals = duckdb_create_list_type(real);

	/* Each also takes memory_limit as a last argument (budget_register); NULLs are handled row
	 * by row. */
	duckdb_logical_type edrc[] = {any, any, varchar, varchar};
	duckdb_logical_type edrc_preferences[] = {any, any, varchar, varchar, varchar, real};
	duckdb_logical_type correlation[] = {varchar, any, any, reals};
	duckdb_state state = budget_register(connection, account, "duckrank_native_edrc", edrc, 4, real, edrc_rows, 1);
	if (state == DuckDBSuccess) {
		state = budget_register(connection, account, "duckrank_native_edrc_preferences", edrc_preferences, 6, real,
		                        edrc_preferences_rows, 1);
	}
	if (state == DuckDBSuccess) {
		state = budget_register(connection, account, "duckrank_native_correlation", correlation, 4, real,
		                        correlation_rows, 1);
	}
	duckdb_logical_type *types[] = {&any, &varchar, &real, &reals};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		duckdb_destroy_logical_type(types[i]);
	}
	return state;
}
