/*
 * duckrank's matching step as native code: a DuckDB C API extension. Its binary matching,
 *
 *     duckrank_match(function VARCHAR, rec LIST, truth LIST, k BIGINT)
 *         -> STRUCT(K BIGINT, pos BIGINT[], n BIGINT, cut BIGINT)
 *
 * the same value as the SQL form in duckrank/matching/ (``matched_sql``), whose docstring holds
 * the conventions: K = min(k, len(rec)); pos = the ascending 1-based positions i <= K whose item
 * is in truth and does not occur earlier in rec; n = the number of distinct non-NULL truth items;
 * cut = k.
 * The metrics' formulas stay in SQL over that struct (the records in duckrank/metrics).
 *
 * Why native: the SQL form costs a lambda step per list element, about 20 ns in DuckDB 2.0; a hash
 * set of the row's truth makes the whole match a few ns per element, inside DuckDB's vectorised
 * execution and on all its threads (no Python, no GIL).
 *
 * Which id types come here is decided by the macros (``native_handles_sql`` in matching/sql.py):
 * integers of any width (compared by value, as SQL does), and pairs of one same type among UUID,
 * VARCHAR, BLOB, DATE, the timestamps, BOOLEAN, FLOAT and DOUBLE. Any other pair goes to the SQL
 * form; receiving one here is an error naming the function.
 *
 * `k` arrives validated (``cutoff_sql``) and rows with a NULL rec, truth or k are NULL.
 *
 * The graded functions are in graded.c; the hash table of a row's truth that both fill, and the
 * memory it takes, in truth_table.h; the entry point that registers every family in extension.c.
 */
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "families.h"
#include "truth_table.h"

#include <stdlib.h>
#include <string.h>

/* How a row's two lists are compared: as 64-bit keys, 128-bit keys or strings. */
typedef enum { BY_64, BY_128, BY_STRING, BY_NOTHING } key_family;

static key_family family_of(id_kind rec, id_kind truth, duckdb_type rec_type, duckdb_type truth_type) {
	if (rec == K_NONE || truth == K_NONE) {
		return BY_NOTHING;
	}
	if (is_integer(rec) && is_integer(truth)) {
		/* UHUGEINT values >= 2^127 share their 128 bits with negative signed values. */
		if ((rec == K_UHUGE) != (truth == K_UHUGE) && (rec <= K_I64 || truth <= K_I64 || rec == K_HUGE ||
		                                               truth == K_HUGE)) {
			return BY_NOTHING;
		}
		if ((fits_int64(rec) && fits_int64(truth)) || (rec == K_U64 && truth == K_U64)) {
			return BY_64;
		}
		return BY_128;
	}
	if (rec_type != truth_type) {
		return BY_NOTHING;
	}
	return rec == K_STRING ? BY_STRING : rec == K_UUID ? BY_128 : BY_64;
}

/* Integers of every width land on the same 128 bits for the same value (HUGEINT is stored as
 * lower 64 bits + signed upper, so sign extension agrees with it); UUIDs are their 16 bytes. */
static inline key128 read128(id_kind kind, const void *data, idx_t i) {
	key128 key = {0, 0};
	if (kind == K_HUGE || kind == K_UHUGE || kind == K_UUID) {
		memcpy(&key, (const char *)data + 16 * i, 16);
	} else {
		key.lo = read64(kind, data, i);
		key.hi = kind <= K_I64 && (int64_t)key.lo < 0 ? UINT64_MAX : 0;
	}
	return key;
}
typedef struct {
	id_kind kind;
	const void *data;
	const uint64_t *validity;
} id_list;

/* The two steps of a row for one key family: insert truth (returns n, its distinct non-NULL
 * items), then look up the top K of rec (appends the hit positions, returns their count). */
#define DEFINE_MATCH(suffix, slot_type, key_type, READ, HASH, EQUAL, STORE)                                      \
	/* The slot holding the key, or the empty slot where it would go. */                                      \
	ALWAYS_INLINE slot_type *lookup_##suffix(truth_scratch *s, key_type key, uint64_t hash) {                        \
		for (idx_t probe = 0;; probe++) {                                                                      \
			slot_type *e = SLOT_AT(slot_type, s, hash, probe);                                                 \
			if (e->stamp != s->stamp || EQUAL(e, key, hash)) {                                                 \
				return e;                                                                                      \
			}                                                                                                  \
		}                                                                                                      \
	}                                                                                                          \
	ALWAYS_INLINE int64_t insert_##suffix(truth_scratch *s, id_kind kind, const id_list *l, idx_t offset, idx_t len) { \
		(void)kind; /* the string readers need no kind */                                                     \
		int64_t distinct = 0;                                                                                  \
		for (idx_t i = offset; i < offset + len; i++) {                                                        \
			if (is_valid(l->validity, i)) {                                                                    \
				key_type key = READ(kind, l->data, i);                                                         \
				uint64_t hash = HASH(key);                                                                     \
				slot_type *e = lookup_##suffix(s, key, hash);                                                  \
				if (e->stamp != s->stamp) {                                                                    \
					STORE(e, key, hash);                                                                       \
					e->stamp = s->stamp;                                                                       \
					e->consumed = 0;                                                                           \
					distinct++;                                                                                \
				}                                                                                              \
			}                                                                                                  \
		}                                                                                                      \
		return distinct;                                                                                       \
	}                                                                                                          \
	ALWAYS_INLINE idx_t find_##suffix(truth_scratch *s, id_kind kind, const id_list *l, idx_t offset, idx_t top) {    \
		(void)kind;                                                                                            \
		idx_t hits = 0;                                                                                        \
		for (idx_t i = offset; i < offset + top; i++) {                                                        \
			if (is_valid(l->validity, i)) {                                                                    \
				key_type key = READ(kind, l->data, i);                                                         \
				slot_type *e = lookup_##suffix(s, key, HASH(key));                                             \
				if (e->stamp == s->stamp && !e->consumed) {                                                    \
					e->consumed = 1;                                                                           \
					s->positions[s->positions_size + hits++] = (int64_t)(i - offset + 1);                      \
				}                                                                                              \
			}                                                                                                  \
		}                                                                                                      \
		s->positions_size += hits;                                                                             \
		return hits;                                                                                           \
	}

#define EQUAL64(e, k, h) ((e)->key == (k))
#define STORE64(e, k, h) ((e)->key = (k))
DEFINE_MATCH(64, slot64, uint64_t, read64, hash64, EQUAL64, STORE64)

#define HASH128(key) hash128((key).lo, (key).hi)
#define EQUAL128(e, k, h) ((e)->key.lo == (k).lo && (e)->key.hi == (k).hi)
#define STORE128(e, k, h) ((e)->key = (k))
DEFINE_MATCH(128, slot128, key128, read128, HASH128, EQUAL128, STORE128)

#define READ_STRING(kind, data, i) ((const duckdb_string_t *)(data) + (i))
#define EQUAL_STRING(e, k, h) ((e)->hash == (h) && strings_equal((e)->text, (k)))
#define STORE_STRING(e, k, h) ((e)->hash = (h), (e)->text = (k))
DEFINE_MATCH(string, slot_string, const duckdb_string_t *, READ_STRING, hash_string, EQUAL_STRING,
             STORE_STRING)

/* One row: n, and the hits appended to the scratch. The common kinds get their own copies of
 * the loops (the kind is a constant in each call, so the reading switch folds away). */
static void match_row(truth_scratch *s, key_family family, const id_list *rec, const id_list *truth,
                      duckdb_list_entry r, duckdb_list_entry t, idx_t top, int64_t *n, idx_t *hits) {
	switch (family) {
	case BY_64:
		if (truth->kind == K_I64) {
			*n = insert_64(s, K_I64, truth, t.offset, t.length);
		} else if (truth->kind == K_I32) {
			*n = insert_64(s, K_I32, truth, t.offset, t.length);
		} else {
			*n = insert_64(s, truth->kind, truth, t.offset, t.length);
		}
		if (*n == 0 || top == 0) {
			return;
		}
		if (rec->kind == K_I64) {
			*hits = find_64(s, K_I64, rec, r.offset, top);
		} else if (rec->kind == K_I32) {
			*hits = find_64(s, K_I32, rec, r.offset, top);
		} else {
			*hits = find_64(s, rec->kind, rec, r.offset, top);
		}
		return;
	case BY_128:
		*n = insert_128(s, truth->kind, truth, t.offset, t.length);
		if (*n > 0 && top > 0) {
			*hits = find_128(s, rec->kind, rec, r.offset, top);
		}
		return;
	case BY_STRING:
		*n = insert_string(s, K_STRING, truth, t.offset, t.length);
		if (*n > 0 && top > 0) {
			*hits = find_string(s, K_STRING, rec, r.offset, top);
		}
		return;
	default:
		return;
	}
}

/* The metric a duckrank_match call serves, its first argument (the macros pass a constant; a NULL
 * one, possible from SQL, is not read: its bytes are not a string). */
static const char *name_of(duckdb_vector function_name, char buffer[128]) {
	duckdb_string_t *names = (duckdb_string_t *)duckdb_vector_get_data(function_name);
	if (!names || !is_valid(duckdb_vector_get_validity(function_name), 0)) {
		return "duckrank_match";
	}
	uint32_t len = names[0].value.inlined.length;
	if (len >= 128) {
		len = 127;
	}
	memcpy(buffer, string_data(&names[0]), len);
	buffer[len] = '\0';
	return buffer;
}

static void match_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	idx_t rows = duckdb_data_chunk_get_size(input);
	duckdb_vector function_name = duckdb_data_chunk_get_vector(input, 0);
	duckdb_vector rec_vector = duckdb_data_chunk_get_vector(input, 1);
	duckdb_vector truth_vector = duckdb_data_chunk_get_vector(input, 2);
	duckdb_vector k_vector = duckdb_data_chunk_get_vector(input, 3);

	char name_buffer[128];
	const char *name = name_of(function_name, name_buffer);
	duckdb_type rec_type = list_child_type(rec_vector), truth_type = list_child_type(truth_vector);
	key_family family = family_of(kind_of(rec_type), kind_of(truth_type), rec_type, truth_type);
	if (family == BY_NOTHING) {
		set_error(info, name, "these id types are not handled by the native matching step");
		return;
	}
	int64_t limit = budget_limit(info, name, input, 4);
	if (limit < 0) {
		return;
	}
	duckdb_vector rec_items = duckdb_list_vector_get_child(rec_vector);
	duckdb_vector truth_items = duckdb_list_vector_get_child(truth_vector);
	id_list rec = {kind_of(rec_type), duckdb_vector_get_data(rec_items), duckdb_vector_get_validity(rec_items)};
	id_list truth = {kind_of(truth_type), duckdb_vector_get_data(truth_items),
	                 duckdb_vector_get_validity(truth_items)};
	row_inputs in = read_rows(rec_vector, truth_vector, k_vector);

	int64_t *tops = (int64_t *)duckdb_vector_get_data(duckdb_struct_vector_get_child(output, 0));
	duckdb_vector pos_out = duckdb_struct_vector_get_child(output, 1);
	duckdb_list_entry *pos_entries = (duckdb_list_entry *)duckdb_vector_get_data(pos_out);
	int64_t *counts = (int64_t *)duckdb_vector_get_data(duckdb_struct_vector_get_child(output, 2));
	int64_t *cuts = (int64_t *)duckdb_vector_get_data(duckdb_struct_vector_get_child(output, 3));

	truth_scratch s = new_truth_scratch(info, limit);
	for (idx_t row = 0; row < rows; row++) {
		pos_entries[row].offset = s.positions_size;
		pos_entries[row].length = 0;
		tops[row] = 0;
		counts[row] = 0;
		cuts[row] = in.cutoffs[row];
		if (row_is_null(&in, row)) {
			set_null(output, row, 4);
			continue;
		}
		duckdb_list_entry r = in.rec[row], t = in.truth[row];
		idx_t top = top_of(&in, row);
		tops[row] = (int64_t)top;
		row_start started = start_row(&s, t.length, top);
		if (started != ROW_READY) {
			set_row_error(info, name, &s, started, t.length);
			release_truth_scratch(&s);
			return;
		}
		match_row(&s, family, &rec, &truth, r, t, top, &counts[row], &pos_entries[row].length);
	}

	if (duckdb_list_vector_reserve(pos_out, s.positions_size) == DuckDBSuccess &&
	    duckdb_list_vector_set_size(pos_out, s.positions_size) == DuckDBSuccess) {
		if (s.positions_size > 0) {
			int64_t *positions = (int64_t *)duckdb_vector_get_data(duckdb_list_vector_get_child(pos_out));
			memcpy(positions, s.positions, s.positions_size * sizeof(int64_t));
		}
	} else {
		set_error(info, name, "out of memory in the native matching step");
	}
	release_truth_scratch(&s);
}

static duckdb_logical_type match_type(void) {
	duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
	duckdb_logical_type bigints = duckdb_create_list_type(bigint);
	duckdb_logical_type members[4] = {bigint, bigints, bigint, bigint};
	const char *names[4] = {"K", "pos", "n", "cut"};
	duckdb_logical_type result = duckdb_create_struct_type(members, names, 4);
	duckdb_destroy_logical_type(&bigints);
	duckdb_destroy_logical_type(&bigint);
	return result;
}

duckdb_state duckrank_register_match(duckdb_connection connection, budget *account) {
	duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
	duckdb_logical_type any = duckdb_create_logical_type(DUCKDB_TYPE_ANY);
	duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
	duckdb_logical_type result = match_type();
	duckdb_logical_type parameters[] = {varchar, any, any, bigint}; /* + memory_limit */
	duckdb_state state = budget_register(connection, account, "duckrank_match", parameters, 4, result, match_rows, 0);
	duckdb_logical_type *types[] = {&varchar, &any, &bigint, &result};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		duckdb_destroy_logical_type(types[i]);
	}
	return state;
}
