/*
 * What the native preference step's two families share: edrc.c (edrc, edrc_preferences) and
 * correlation.c (spearman, kendall_tau, ap_correlation and fcp through
 * duckrank_native_correlation). Included after capi.h and DUCKDB_EXTENSION_EXTERN; the cold parts
 * (a row's scratch, reading DuckDB's vectors, sizing a finder) are defined once in
 * preference_step.c, and what the per-item loops call (reading an id, a finder's lookups) is
 * static inline here, so each family's loops inline it as before.
 *
 * Memory: each call holds one row's scratch at a time (tables, edges, graphs, bitsets: for edrc
 * 16 to 32 bytes per ranked item and per preference, plus about nodes^2 / 8 bytes per bit matrix
 * (rows of whole 256-bit lanes): one for edrc, three for edrc_preferences), reused from row to row
 * and freed at the end of the call. It is counted against memory_limit in the same account as
 * match.c's matching step (budget.h: one per database), so that the two together never hold more
 * than memory_limit: a row that would take them past it fails with an error worded as DuckDB's
 * "Out of Memory Error".
 */
#ifndef DUCKRANK_PREFERENCE_STEP_H
#define DUCKRANK_PREFERENCE_STEP_H

#include "common.h"
#include "families.h"

#include <stdint.h>

/* --- a row's scratch ------------------------------------------------------------------------- */

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
} preference_scratch;

/* Buffer `id` with room for `bytes` (its old content is not kept; bytes_for's TOO_MANY_BYTES for
 * a size that overflowed); NULL when memory_limit or malloc refuses. A buffer never had is NULL
 * even for 0 bytes, so it is at least 1 byte: a row of empty lists is not a refusal. */
void *reserve(preference_scratch *s, buffer_id id, int64_t bytes);

/* A call's empty scratch, counted against `limit` (budget_limit), and its release. */
preference_scratch new_preference_scratch(duckdb_function_info info, int64_t limit);
void release_preference_scratch(preference_scratch *s);

/* The error of a row whose scratch could not be had, worded as match.c's. */
void memory_error(duckdb_function_info info, const char *name, const preference_scratch *s, idx_t items);

/* The longest list of a row this step handles: nodes, edges and item numbers are int32 (the
 * scratch's size and speed), and edrc_preferences numbers up to twice a list's items. Every size
 * computed from a row's lengths below is bounded through this: about nodes^2 / 8 bytes at most,
 * far below 2^63, so none wraps (the table sizes go through bytes_for all the same). A longer row
 * (more than a billion items in one list) is an error naming the function, not a wrong number. */
#define MAX_ITEMS ((idx_t)INT32_MAX / 2)

/* 0, with the error set, when a list of the row is longer than MAX_ITEMS. */
int check_lengths(duckdb_function_info info, const char *name, idx_t first, idx_t second);

/* --- reading DuckDB's vectors ----------------------------------------------------------------- */

/* One list of ids: integers that fit an int64 (compared by value whatever their width) or
 * VARCHAR. */
typedef struct {
	duckdb_type type;
	const void *data;
	const uint64_t *validity;
} ids;

/* An integer id (preference_family_of admits only the kinds that fit an int64). Not common.h's
 * read64: its switch also reads floats, dates and unsigned 64-bit ids, and going through it made
 * a whole kendall_tau run over lists of 1,000 BIGINT ids about 5% slower. */
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

/* 1 when `vector` is a LIST. */
int is_list(duckdb_vector vector);

/* The ids of a list's child vector, read in place. */
ids ids_of(duckdb_vector items);

/* 1 when every list holds integers fitting an int64, 2 when every one holds VARCHAR, 0 otherwise. */
int preference_family_of(const ids *lists, int count);

/* The memory_limit of a call (budget_limit; `arguments` before it) whose ids are `lists`; -1 with
 * the error set when their kind is not handled here (preference_family_of) or the limit is not a
 * size. */
int64_t call_limit(duckdb_function_info info, const char *name, const ids *lists, int count,
                   duckdb_data_chunk input, idx_t arguments);

/* An id as the errors show it, as Python's str() of an integer and repr() of a string give it
 * (the Python path's wording): 42, 'b', "it's". */
void id_name(const ids *v, idx_t i, char *out, size_t size);

/* --- registering, and a row's result -------------------------------------------------------- */

/* Registers `name`, a DOUBLE-valued scalar function of `count` arguments (at most 8) of the types
 * `types` (DUCKDB_TYPE_LIST stands for DOUBLE[]), computed by `rows`, with memory_limit as an
 * optional last argument (budget_register) and NULLs handled row by row. */
duckdb_state register_preference_function(duckdb_connection connection, budget *account, const char *name,
                                          const duckdb_type *types, idx_t count, duckdb_scalar_function_t rows);

/* Row `row` of `output` NULL. */
void set_row_null(duckdb_vector output, idx_t row);

/* Row `row` of `output` NULL when its value, out[row], is NaN. */
void null_if_nan(duckdb_vector output, const double *out, idx_t row);

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
 * probing, at most a quarter full).
 *
 * Its hash table shares with the matching step's truth table (truth_table.h) what is the same need:
 * the hash of each key family and the probing (common.h: hash64, hash_string, probe_slot), so equal
 * ids hash alike in both. It is kept a table of its own, not a fourth slot type of the truth table,
 * for what differs (merging them would cost one or the other its layout or its memory):
 * - it is a map, not a set: a slot holds the id's number (int32), written through entry() while
 *   the row's graphs are built, where the truth table holds a consumed flag (and a grade);
 * - it has no 128-bit family (the preference step takes integers that fit an int64, and VARCHAR);
 * - it is emptied by a memset of the row's slots, not by a row stamp: stamps need memory that
 *   only ever held this table's slots, and its memory is the scratch's B_SLOTS buffer, which holds
 *   the direct-address table on other rows and which reserve() neither keeps nor zeroes when it
 *   grows; clearing is linear in the row, the graphs' work after it (sorting, closures, Fenwick
 *   counts) is not;
 * - it is sized at most a quarter full at every size, the fill it was measured with; the truth
 *   table's eighth (half past SPARSE_SLOTS) comes from its own measurements, on lookups that
 *   mostly miss (truth_table.h), and neither was measured at the other's fill;
 * - the direct-address table in front of it is the finder's alone; the truth table was never
 *   measured with one. */
typedef struct {
	int strings;
	int direct;
	int64_t low;
	uint64_t span;
	int32_t *table;
	slot *slots;
	int shift; /* 64 - log2(slots) (probe_slot) */
} finder;

/* An empty hash table for up to `count` ids (strings or integers); count is at most 2 * MAX_ITEMS
 * (check_lengths), so 4 * count slots is far from overflowing. */
int start_hash(preference_scratch *s, finder *f, int strings, idx_t count);

/* Sizes the finder for the ids of `v` at [offset, offset + count) and empties it. */
int start_finder(preference_scratch *s, finder *f, const ids *v, idx_t offset, idx_t count);

/* Id i of v as a table key (its text's hash, or the integer itself), with its text (NULL for
 * integers) and its hash. */
static inline uint64_t key_of(const finder *f, const ids *v, idx_t i, const duckdb_string_t **text,
                              uint64_t *at) {
	if (f->strings) {
		*text = (const duckdb_string_t *)v->data + i;
		*at = hash_string(*text);
		return *at;
	}
	*text = NULL;
	uint64_t key = (uint64_t)read_int(v, i);
	*at = hash64(key);
	return key;
}

/* The slot of id i of v: the one holding it, or the empty one where it would go. */
static inline slot *slot_of(const finder *f, const ids *v, idx_t i) {
	const duckdb_string_t *text;
	uint64_t at;
	uint64_t key = key_of(f, v, i, &text, &at);
	for (idx_t probe = 0;; probe++) {
		slot *e = &f->slots[probe_slot(at, f->shift, probe)];
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
	for (idx_t probe = 0;; probe++) {
		const slot *e = &f->slots[probe_slot(at, f->shift, probe)];
		if (!e->used) {
			return -1;
		}
		if (e->key == key && (!text || strings_equal(e->text, text))) {
			return e->value;
		}
	}
}

#endif
