/* The hash table of one row's truth that duckrank_match (match.c) and duckrank_grades and
 * duckrank_graded (graded.c) fill and probe, the scratch that holds it, and how those functions
 * read a chunk's (rec, truth, k) rows.
 *
 * Memory: each call holds a hash table of a row's truth (64 to 128 bytes per item of a long truth
 * list), the chunk's hit positions (duckrank_match) or the longest truth's grades, to sort
 * (duckrank_graded), allocated with malloc. The C API (v1.2.0 and later alike)
 * has no allocation that DuckDB counts against memory_limit (duckdb_malloc is plain malloc), so
 * the extension keeps its own account (budget.c), one per database, shared with the preference
 * functions (edrc.c, correlation.c): the bytes that all their calls in one database hold at once never go
 * past memory_limit; a call that would need more fails, naming the function, with an error
 * worded as DuckDB's "Out of Memory Error" (the SQL matching step fails on such rows with
 * DuckDB's own). The limit is memory_limit as the query sees it when the macros pass
 * `current_setting('memory_limit')` as a last argument (every function accepts one), else its
 * value when the extension was loaded. DuckDB's own memory is not visible through the C API, so
 * the account covers the extension's allocations only.
 */
#ifndef DUCKRANK_TRUTH_TABLE_H
#define DUCKRANK_TRUTH_TABLE_H

#include "budget.h"
#include "common.h"

typedef struct {
	uint64_t lo, hi;
} key128;

/* An open-addressing hash set of one row's truth items (linear probing). A slot belongs to the
 * current row when its stamp is the row's, so the table is never cleared between rows. `consumed`
 * marks an item already hit at an earlier position of rec (a repeat is a miss).
 *
 * One design for the three key families (slot64, slot128, slot_string; slot_graded adds a grade)
 * and both matching families: one allocation sized for the largest slot, one stamp, one sizing
 * (start_row), one probing. The hashes and the probing are common.h's, shared with the preference
 * step's finder (preference_step.h), which stays a table of its own for the reasons given there: a
 * map to int32 numbers rather than a set with consumed flags, no 128-bit keys, cleared by memset in
 * a buffer it shares with a direct-address table, a quarter full at every size. */
typedef struct {
	uint64_t key;
	uint32_t stamp, consumed;
} slot64;

typedef struct {
	key128 key;
	uint32_t stamp, consumed;
} slot128;

typedef struct {
	uint64_t hash;
	const duckdb_string_t *text;
	uint32_t stamp, consumed;
} slot_string;

typedef struct {
	void *slots;
	idx_t capacity;
	int shift; /* 64 - log2(slots of the current row) */
	uint32_t stamp;
	int64_t *positions; /* the chunk's hit positions, in row order */
	idx_t positions_capacity;
	idx_t positions_size;
	claim memory; /* the call's part of the database's account (budget.h) */
} truth_scratch;

typedef enum { ROW_READY, ROW_OVER_LIMIT, ROW_NO_MEMORY } row_start;

typedef struct {
	uint64_t hash;
	const duckdb_string_t *text;
	uint32_t stamp, consumed;
	double grade;
} slot_graded;

/* One allocation serves every key family: sized for the largest slot. */
#define SLOT_BYTES sizeof(slot_graded)

/* Most recommended items miss (94% in the benchmark data), and a lookup that lands on an empty
 * slot ends there: at most one eighth full, the table makes nearly every miss one probe with a
 * well-predicted branch (2.5x faster at k = 100 than half full). Past SPARSE_SLOTS it is kept at
 * most half full, to bound its memory for truth lists of millions of items. */
#define SPARSE_SLOTS 32768

/* The most truth items (and hit positions) a call handles: 2^40, a table of 2^41 slots (2^47
 * bytes, far past any memory_limit), so that the doubling below cannot wrap. A longer row is
 * refused as memory_limit refuses a row (which it would be long before). */
#define MOST_ITEMS ((idx_t)1 << 40)

/* A call's scratch, counted against `limit` in the database's account, and its release. */
truth_scratch new_truth_scratch(duckdb_function_info info, int64_t limit);
void release_truth_scratch(truth_scratch *s);

/* Sizes the table for a row with `truth_len` items and starts the row (start_row in
 * truth_table.c says how). */
row_start start_row(truth_scratch *s, idx_t truth_len, idx_t top);

#define SLOT_AT(type, s, hash, probe) (&((type *)(s)->slots)[probe_slot((hash), (s)->shift, (probe))])

/* A chunk's (rec, truth, k) rows, as both functions read them. */
typedef struct {
	const duckdb_list_entry *rec, *truth;
	const int64_t *cutoffs;
	const uint64_t *rec_valid, *truth_valid, *k_valid;
} row_inputs;

static inline row_inputs read_rows(duckdb_vector rec, duckdb_vector truth, duckdb_vector k) {
	row_inputs in = {(const duckdb_list_entry *)duckdb_vector_get_data(rec),
	                 (const duckdb_list_entry *)duckdb_vector_get_data(truth),
	                 (const int64_t *)duckdb_vector_get_data(k),
	                 duckdb_vector_get_validity(rec),
	                 duckdb_vector_get_validity(truth),
	                 duckdb_vector_get_validity(k)};
	return in;
}

/* A row whose rec, truth or k is NULL: its value is NULL. */
static inline int row_is_null(const row_inputs *in, idx_t row) {
	return !is_valid(in->rec_valid, row) || !is_valid(in->truth_valid, row) ||
	       !is_valid(in->k_valid, row);
}

/* K = min(k, len(rec)); k arrives validated, but a k below 1 would give 0, not a bad read. */
static inline idx_t top_of(const row_inputs *in, idx_t row) {
	int64_t k = in->cutoffs[row];
	idx_t length = in->rec[row].length;
	return k <= 0 ? 0 : (uint64_t)k < length ? (idx_t)k : length;
}

/* The error of a row whose scratch could not be had. */
void set_row_error(duckdb_function_info info, const char *name, const truth_scratch *s, row_start failure,
                   idx_t truth_len);

/* A LIST vector's element type; DUCKDB_TYPE_INVALID for any other vector. */
duckdb_type list_child_type(duckdb_vector list);

/* A NULL row: the struct and, as DuckDB's own struct vectors do, each of its `fields`. */
void set_null(duckdb_vector output, idx_t row, idx_t fields);

#endif
