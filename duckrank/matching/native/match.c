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
 * Two functions serve the graded metrics over MAP truth. The graded metrics (``graded_match_sql``
 * in matching/sql.py is the SQL form):
 *
 *     duckrank_graded(rec LIST, truth MAP(VARCHAR, DOUBLE), k BIGINT)
 *         -> STRUCT(K BIGINT, pos BIGINT[], grades DOUBLE[], ideal DOUBLE[], n BIGINT, cut BIGINT,
 *                   bad BIGINT)
 *
 * what their formulas read, the hits only (a grade of 0 adds nothing to a DCG and leaves ERR's
 * cascade unchanged, so the formulas run over a few elements, not over the top K): pos = the
 * ascending ranks i <= K whose item has a positive grade and occurs there first, grades = those
 * grades, ideal = the min(k, n) largest positive grades of truth, largest first, n = the number
 * of positive grades, cut = k, bad = the 1-based index in truth of the first grade that is NULL,
 * NaN, infinite or negative (0 for none; the macros then raise the error naming its item, and
 * read no other field). trec_eval's gain measures read the grades of the whole top K:
 *
 *     duckrank_grades(rec LIST, truth MAP(VARCHAR, DOUBLE), k BIGINT) -> DOUBLE[]
 *
 * truth[item] for an item's first occurrence, 0 for a repeat, a NULL item, an item without a
 * grade or with a NULL grade. For both, rec is VARCHAR or an integer type of at most 64 bits, and
 * truth a MAP(VARCHAR, DOUBLE) or, for integer ids, a MAP(BIGINT, DOUBLE): the macros' two typed
 * overloads (DuckDB chooses the BIGINT one for a rec of integers and casts a map of any other key
 * type to the VARCHAR one). BIGINT keys meet rec's ids by value. An integer id matches a VARCHAR
 * key that is its decimal text (as `x::VARCHAR = key` says), so each such key is read once as the
 * integer it is the canonical text of (none for '07', '+7', '-0', ' 7') and rec's ids are compared
 * by value.
 *
 * Memory: each call holds a hash table of a row's truth (64 to 128 bytes per item of a long truth
 * list), the chunk's hit positions (duckrank_match) or the longest truth's grades, to sort
 * (duckrank_graded), allocated with malloc. The C API (v1.2.0 and later alike)
 * has no allocation that DuckDB counts against memory_limit (duckdb_malloc is plain malloc), so
 * the extension keeps its own account (budget.c), one per database, shared with the preference
 * functions (preferences.c): the bytes that all their calls in one database hold at once never go
 * past memory_limit; a call that would need more fails, naming the function, with an error
 * worded as DuckDB's "Out of Memory Error" (the SQL matching step fails on such rows with
 * DuckDB's own). The limit is memory_limit as the query sees it when the macros pass
 * `current_setting('memory_limit')` as a last argument (every function accepts one), else its
 * value when the extension was loaded. DuckDB's own memory is not visible through the C API, so
 * the account covers the extension's allocations only.
 */
#define DUCKDB_EXTENSION_NAME duckrank_native
#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 2
#define DUCKDB_EXTENSION_API_VERSION_PATCH 0
#include "duckdb_extension.h"

DUCKDB_EXTENSION_EXTERN

#include "budget.h"
#include "preferences.h"
#include "topk.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* How an element of an id list is stored. */
typedef enum {
	K_I8, K_I16, K_I32, K_I64,  /* signed integers */
	K_U8, K_U16, K_U32, K_U64,  /* unsigned integers */
	K_HUGE, K_UHUGE, K_UUID,    /* 16 bytes */
	K_F32, K_F64,               /* floats: -0.0 is read as 0.0 and every NaN as one NaN, as SQL compares */
	K_BOOL, K_DATE, K_TIMESTAMP, /* compared by their bytes, same type only */
	K_STRING,                   /* VARCHAR, BLOB */
	K_NONE
} id_kind;

static id_kind kind_of(duckdb_type type) {
	switch (type) {
	case DUCKDB_TYPE_TINYINT: return K_I8;
	case DUCKDB_TYPE_SMALLINT: return K_I16;
	case DUCKDB_TYPE_INTEGER: return K_I32;
	case DUCKDB_TYPE_BIGINT: return K_I64;
	case DUCKDB_TYPE_UTINYINT: return K_U8;
	case DUCKDB_TYPE_USMALLINT: return K_U16;
	case DUCKDB_TYPE_UINTEGER: return K_U32;
	case DUCKDB_TYPE_UBIGINT: return K_U64;
	case DUCKDB_TYPE_HUGEINT: return K_HUGE;
	case DUCKDB_TYPE_UHUGEINT: return K_UHUGE;
	case DUCKDB_TYPE_UUID: return K_UUID;
	case DUCKDB_TYPE_FLOAT: return K_F32;
	case DUCKDB_TYPE_DOUBLE: return K_F64;
	case DUCKDB_TYPE_BOOLEAN: return K_BOOL;
	case DUCKDB_TYPE_DATE: return K_DATE;
	case DUCKDB_TYPE_TIMESTAMP:
	case DUCKDB_TYPE_TIMESTAMP_S:
	case DUCKDB_TYPE_TIMESTAMP_MS:
	case DUCKDB_TYPE_TIMESTAMP_NS:
	case DUCKDB_TYPE_TIMESTAMP_TZ: return K_TIMESTAMP;
	case DUCKDB_TYPE_VARCHAR:
	case DUCKDB_TYPE_BLOB: return K_STRING;
	default: return K_NONE;
	}
}

static int is_integer(id_kind kind) {
	return kind <= K_UHUGE;
}

/* Integers that fit an int64 whatever their type: any two of these compare by value as int64. */
static int fits_int64(id_kind kind) {
	return kind <= K_I64 || (kind >= K_U8 && kind <= K_U32);
}

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

ALWAYS_INLINE uint64_t read64(id_kind kind, const void *data, idx_t i) {
	switch (kind) {
	case K_I8: return (uint64_t)(int64_t)((const int8_t *)data)[i];
	case K_I16: return (uint64_t)(int64_t)((const int16_t *)data)[i];
	case K_I32: return (uint64_t)(int64_t)((const int32_t *)data)[i];
	case K_I64: case K_U64: case K_TIMESTAMP: return ((const uint64_t *)data)[i];
	case K_U8: case K_BOOL: return ((const uint8_t *)data)[i];
	case K_U16: return ((const uint16_t *)data)[i];
	case K_U32: case K_DATE: return ((const uint32_t *)data)[i];
	case K_F32: case K_F64: {
		double v = kind == K_F32 ? (double)((const float *)data)[i] : ((const double *)data)[i];
		v = isnan(v) ? NAN : v == 0.0 ? 0.0 : v;
		uint64_t bits;
		memcpy(&bits, &v, 8);
		return bits;
	}
	default: return 0;
	}
}

typedef struct {
	uint64_t lo, hi;
} key128;

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

static inline uint64_t mix(uint64_t x) {
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static inline const char *string_data(const duckdb_string_t *s) {
	return s->value.inlined.length <= 12 ? s->value.inlined.inlined : s->value.pointer.ptr;
}

/* A string of up to 12 bytes is stored inline and zero-padded, so its 16 bytes (length, then
 * content) identify it; a longer one is hashed over its bytes. */
static inline uint64_t hash_string(const duckdb_string_t *s) {
	uint64_t words[2];
	memcpy(words, s, 16);
	uint32_t len = s->value.inlined.length;
	if (len <= 12) {
		return (words[0] ^ mix(words[1])) * 0x9e3779b97f4a7c15ULL;
	}
	const unsigned char *p = (const unsigned char *)s->value.pointer.ptr;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ len;
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t chunk;
		memcpy(&chunk, p, 8);
		h = (h ^ chunk) * 0xff51afd7ed558ccdULL;
	}
	uint64_t tail = 0;
	memcpy(&tail, p, len);
	return mix(h ^ tail) * 0x9e3779b97f4a7c15ULL;
}

static inline int strings_equal(const duckdb_string_t *a, const duckdb_string_t *b) {
	uint64_t x[2], y[2];
	memcpy(x, a, 16);
	memcpy(y, b, 16);
	if (x[0] != y[0]) { /* length and the first 4 bytes */
		return 0;
	}
	if (a->value.inlined.length <= 12) {
		return x[1] == y[1];
	}
	return memcmp(a->value.pointer.ptr, b->value.pointer.ptr, a->value.inlined.length) == 0;
}

/* An open-addressing hash set of one row's truth items (linear probing). A slot belongs to the
 * current row when its stamp is the row's, so the table is never cleared between rows. `consumed`
 * marks an item already hit at an earlier position of rec (a repeat is a miss). */
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
} scratch;

/* A call's scratch, counted against `limit` in the database's account. */
static scratch new_scratch(duckdb_function_info info, int64_t limit) {
	scratch s;
	memset(&s, 0, sizeof(s));
	s.memory = claim_start(info, limit);
	return s;
}

static void release(scratch *s) {
	free(s->slots);
	free(s->positions);
	claim_end(&s->memory);
}

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

/* Sizes the table for a row with `truth_len` items and starts the row. */
static row_start start_row(scratch *s, idx_t truth_len, idx_t top) {
	idx_t most_hits = top < truth_len ? top : truth_len;
	if (truth_len > MOST_ITEMS || s->positions_size + most_hits > MOST_ITEMS) {
		claim_take(&s->memory, TOO_MANY_BYTES); /* refused; the error reports it */
		return ROW_OVER_LIMIT;
	}
	idx_t size = 64;
	int bits = 6;
	while (size < 2 * truth_len || (size < 8 * truth_len && 8 * truth_len <= SPARSE_SLOTS)) {
		size *= 2;
		bits++;
	}
	if (size > s->capacity) {
		/* The old table goes first, so a call holds one table at a time. */
		free(s->slots);
		s->slots = NULL;
		claim_give_back(&s->memory, (int64_t)(s->capacity * SLOT_BYTES));
		s->capacity = 0;
		s->stamp = 0;
		if (!claim_take(&s->memory, (int64_t)(size * SLOT_BYTES))) {
			return ROW_OVER_LIMIT;
		}
		s->slots = calloc(size, SLOT_BYTES);
		if (!s->slots) {
			claim_give_back(&s->memory, (int64_t)(size * SLOT_BYTES));
			return ROW_NO_MEMORY;
		}
		s->capacity = size;
	}
	s->shift = 64 - bits;
	s->stamp++; /* a call sees at most one vector of rows, so the stamp cannot wrap */
	if (s->positions_size + most_hits > s->positions_capacity) {
		idx_t grown = s->positions_capacity ? s->positions_capacity : 4096;
		while (grown < s->positions_size + most_hits) {
			grown *= 2;
		}
		int64_t more = (int64_t)((grown - s->positions_capacity) * sizeof(int64_t));
		if (!claim_take(&s->memory, more)) {
			return ROW_OVER_LIMIT;
		}
		int64_t *bigger = (int64_t *)realloc(s->positions, grown * sizeof(int64_t));
		if (!bigger) {
			claim_give_back(&s->memory, more);
			return ROW_NO_MEMORY;
		}
		s->positions = bigger;
		s->positions_capacity = grown;
	}
	return ROW_READY;
}

typedef struct {
	id_kind kind;
	const void *data;
	const uint64_t *validity;
} id_list;

ALWAYS_INLINE int is_valid(const uint64_t *validity, idx_t i) {
	return !validity || (validity[i / 64] >> (i % 64)) & 1;
}

#define SLOT_AT(type, s, hash, probe) (&((type *)(s)->slots)[(((hash) >> (s)->shift) + (probe)) & ((((idx_t)1) << (64 - (s)->shift)) - 1)])

/* The two steps of a row for one key family: insert truth (returns n, its distinct non-NULL
 * items), then look up the top K of rec (appends the hit positions, returns their count). */
#define DEFINE_MATCH(suffix, slot_type, key_type, READ, HASH, EQUAL, STORE)                                      \
	/* The slot holding the key, or the empty slot where it would go. */                                      \
	ALWAYS_INLINE slot_type *lookup_##suffix(scratch *s, key_type key, uint64_t hash) {                        \
		for (idx_t probe = 0;; probe++) {                                                                      \
			slot_type *e = SLOT_AT(slot_type, s, hash, probe);                                                 \
			if (e->stamp != s->stamp || EQUAL(e, key, hash)) {                                                 \
				return e;                                                                                      \
			}                                                                                                  \
		}                                                                                                      \
	}                                                                                                          \
	ALWAYS_INLINE int64_t insert_##suffix(scratch *s, id_kind kind, const id_list *l, idx_t offset, idx_t len) { \
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
	ALWAYS_INLINE idx_t find_##suffix(scratch *s, id_kind kind, const id_list *l, idx_t offset, idx_t top) {    \
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

/* Fibonacci hashing reads the product's top bits; folding the high half in first keeps ids that
 * differ only in their high bits (shifted or packed ids) apart. */
#define HASH64(key) (((key) ^ ((key) >> 29)) * 0x9e3779b97f4a7c15ULL)
#define EQUAL64(e, k, h) ((e)->key == (k))
#define STORE64(e, k, h) ((e)->key = (k))
DEFINE_MATCH(64, slot64, uint64_t, read64, HASH64, EQUAL64, STORE64)

#define HASH128(key) (((key).lo ^ mix((key).hi)) * 0x9e3779b97f4a7c15ULL)
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
static void match_row(scratch *s, key_family family, const id_list *rec, const id_list *truth,
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

/* A chunk's (rec, truth, k) rows, as both functions read them. */
typedef struct {
	const duckdb_list_entry *rec, *truth;
	const int64_t *cutoffs;
	const uint64_t *rec_valid, *truth_valid, *k_valid;
} row_inputs;

static row_inputs read_rows(duckdb_vector rec, duckdb_vector truth, duckdb_vector k) {
	row_inputs in = {(const duckdb_list_entry *)duckdb_vector_get_data(rec),
	                 (const duckdb_list_entry *)duckdb_vector_get_data(truth),
	                 (const int64_t *)duckdb_vector_get_data(k),
	                 duckdb_vector_get_validity(rec),
	                 duckdb_vector_get_validity(truth),
	                 duckdb_vector_get_validity(k)};
	return in;
}

/* A row whose rec, truth or k is NULL: its value is NULL. */
static int row_is_null(const row_inputs *in, idx_t row) {
	return !is_valid(in->rec_valid, row) || !is_valid(in->truth_valid, row) ||
	       !is_valid(in->k_valid, row);
}

/* K = min(k, len(rec)); k arrives validated, but a k below 1 would give 0, not a bad read. */
static idx_t top_of(const row_inputs *in, idx_t row) {
	int64_t k = in->cutoffs[row];
	idx_t length = in->rec[row].length;
	return k <= 0 ? 0 : (uint64_t)k < length ? (idx_t)k : length;
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

static void set_error(duckdb_function_info info, const char *name, const char *problem) {
	char message[640];
	snprintf(message, sizeof(message), "%s: %s", name, problem);
	duckdb_scalar_function_set_error(info, message);
}

/* The error of a row whose scratch could not be had. */
static void set_row_error(duckdb_function_info info, const char *name, const scratch *s, row_start failure,
                          idx_t truth_len) {
	if (failure == ROW_NO_MEMORY) {
		set_error(info, name, "out of memory in the native matching step");
		return;
	}
	char problem[512];
	claim_refusal(&s->memory, "matching", truth_len, "truth items", problem, sizeof(problem));
	set_error(info, name, problem);
}

static duckdb_type list_child_type(duckdb_vector list) {
	duckdb_logical_type type = duckdb_vector_get_column_type(list);
	duckdb_type result = DUCKDB_TYPE_INVALID;
	if (duckdb_get_type_id(type) == DUCKDB_TYPE_LIST) {
		duckdb_logical_type child = duckdb_list_type_child_type(type);
		result = duckdb_get_type_id(child);
		duckdb_destroy_logical_type(&child);
	}
	duckdb_destroy_logical_type(&type);
	return result;
}

/* A NULL row: the struct and, as DuckDB's own struct vectors do, each of its `fields`. */
static void set_null(duckdb_vector output, idx_t row, idx_t fields) {
	duckdb_vector_ensure_validity_writable(output);
	duckdb_validity_set_row_invalid(duckdb_vector_get_validity(output), row);
	for (idx_t field = 0; field < fields; field++) {
		duckdb_vector child = duckdb_struct_vector_get_child(output, field);
		duckdb_vector_ensure_validity_writable(child);
		duckdb_validity_set_row_invalid(duckdb_vector_get_validity(child), row);
	}
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

	scratch s = new_scratch(info, limit);
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
			release(&s);
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
	release(&s);
}

/* A graded truth as both graded functions read it: MAP(VARCHAR, DOUBLE), or MAP(BIGINT, DOUBLE)
 * when rec holds integers. Those are the macros' two typed overloads (DuckDB chooses the BIGINT
 * one for a rec of integers and casts any other map to the VARCHAR one), so a map of integer keys
 * arrives as integers, without a cast of every key to text. */
typedef struct {
	const duckdb_string_t *keys;  /* VARCHAR keys, or NULL */
	const int64_t *integer_keys; /* BIGINT keys, or NULL */
	const double *grades;
	const uint64_t *grade_valid;
} graded_truth;

/* truth's key type, or DUCKDB_TYPE_INVALID when truth is no MAP with DOUBLE values. */
static duckdb_type graded_key_type(duckdb_vector truth_vector) {
	duckdb_logical_type type = duckdb_vector_get_column_type(truth_vector);
	duckdb_type key = DUCKDB_TYPE_INVALID;
	if (duckdb_get_type_id(type) == DUCKDB_TYPE_MAP) {
		duckdb_logical_type key_type = duckdb_map_type_key_type(type);
		duckdb_logical_type value_type = duckdb_map_type_value_type(type);
		if (duckdb_get_type_id(value_type) == DUCKDB_TYPE_DOUBLE) {
			key = duckdb_get_type_id(key_type);
		}
		duckdb_destroy_logical_type(&key_type);
		duckdb_destroy_logical_type(&value_type);
	}
	duckdb_destroy_logical_type(&type);
	return key;
}

/* Reads truth for rec's id kind; 0, with the error set, for a truth of any other type. */
static int read_graded_truth(duckdb_function_info info, const char *name, id_kind rec, duckdb_vector truth_vector,
                             graded_truth *truth) {
	duckdb_type key = graded_key_type(truth_vector);
	if (key != DUCKDB_TYPE_VARCHAR && !(key == DUCKDB_TYPE_BIGINT && rec != K_STRING)) {
		set_error(info, name, "truth must be a MAP(VARCHAR, DOUBLE), or a MAP(BIGINT, DOUBLE) for integer ids");
		return 0;
	}
	duckdb_vector entries = duckdb_list_vector_get_child(truth_vector);
	duckdb_vector values = duckdb_struct_vector_get_child(entries, 1);
	const void *keys = duckdb_vector_get_data(duckdb_struct_vector_get_child(entries, 0));
	truth->keys = key == DUCKDB_TYPE_VARCHAR ? (const duckdb_string_t *)keys : NULL;
	truth->integer_keys = key == DUCKDB_TYPE_BIGINT ? (const int64_t *)keys : NULL;
	truth->grades = (const double *)duckdb_vector_get_data(values);
	truth->grade_valid = duckdb_vector_get_validity(values);
	return 1;
}

/* How rec's ids meet the keys: as text, or as integers. An integer id matches a key exactly when
 * the key is the id's text (what SQL's x::VARCHAR = key says), that is when the key is the
 * id's canonical decimal form; so the keys are read as integers once (a key in any other form
 * matches no integer id) and rec's ids are compared by value, without writing them as text. */
typedef enum { KEYS_AS_TEXT, KEYS_AS_SIGNED, KEYS_AS_UNSIGNED } key_reading;

static key_reading key_reading_of(id_kind rec) {
	return rec == K_STRING ? KEYS_AS_TEXT : rec == K_U64 ? KEYS_AS_UNSIGNED : KEYS_AS_SIGNED;
}

/* The key as the 64 bits of the integer whose text it is; 0 when it is no integer's text
 * (leading zeros, '+', '-0', spaces, out of range). */
static int key_integer(const duckdb_string_t *key, key_reading reading, uint64_t *value) {
	uint32_t len = key->value.inlined.length;
	const char *p = string_data(key);
	int negative = len > 0 && p[0] == '-';
	if (negative && reading == KEYS_AS_UNSIGNED) {
		return 0;
	}
	uint32_t first = negative ? 1 : 0;
	uint32_t digits = len - first;
	if (digits == 0 || digits > 20 || (p[first] == '0' && (digits > 1 || negative))) {
		return 0;
	}
	uint64_t magnitude = 0;
	for (uint32_t i = first; i < len; i++) {
		if (p[i] < '0' || p[i] > '9') {
			return 0;
		}
		uint64_t digit = (uint64_t)(p[i] - '0');
		if (magnitude > (UINT64_MAX - digit) / 10) {
			return 0;
		}
		magnitude = magnitude * 10 + digit;
	}
	if (reading == KEYS_AS_SIGNED && magnitude > (negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX)) {
		return 0;
	}
	*value = negative ? 0 - magnitude : magnitude;
	return 1;
}

/* The slot of a key: for integer readings `hash` holds the integer itself and `text` is NULL. */
ALWAYS_INLINE slot_graded *lookup_graded(scratch *s, key_reading reading, const duckdb_string_t *text,
                                         uint64_t key) {
	uint64_t hash = reading == KEYS_AS_TEXT ? key : HASH64(key);
	for (idx_t probe = 0;; probe++) {
		slot_graded *e = SLOT_AT(slot_graded, s, hash, probe);
		if (e->stamp != s->stamp ||
		    (e->hash == key && (reading != KEYS_AS_TEXT || strings_equal(e->text, text)))) {
			return e;
		}
	}
}

/* Puts a row's truth in the table: each key with its grade (0 for a NULL grade). */
static void insert_graded(scratch *s, key_reading reading, const graded_truth *truth, duckdb_list_entry t) {
	for (idx_t i = t.offset; i < t.offset + t.length; i++) { /* map keys are unique */
		uint64_t key;
		const duckdb_string_t *text = truth->keys ? &truth->keys[i] : NULL;
		if (truth->integer_keys) {
			/* rec holds integers; an unsigned id never equals a negative key */
			if (reading == KEYS_AS_UNSIGNED && truth->integer_keys[i] < 0) {
				continue;
			}
			key = (uint64_t)truth->integer_keys[i];
		} else if (reading == KEYS_AS_TEXT) {
			key = hash_string(text);
		} else if (!key_integer(text, reading, &key)) {
			continue;
		}
		slot_graded *e = lookup_graded(s, reading, text, key);
		e->stamp = s->stamp;
		e->hash = key;
		e->text = text;
		e->consumed = 0;
		e->grade = is_valid(truth->grade_valid, i) ? truth->grades[i] : 0.0;
	}
}

/* The grade of rec's item i for its first occurrence (marking the item consumed), else 0. */
ALWAYS_INLINE double take_grade(scratch *s, key_reading reading, id_kind kind, const void *rec_data,
                                const uint64_t *rec_valid, idx_t i) {
	if (!is_valid(rec_valid, i)) {
		return 0.0;
	}
	const duckdb_string_t *text = NULL;
	uint64_t key;
	if (reading == KEYS_AS_TEXT) {
		text = (const duckdb_string_t *)rec_data + i;
		key = hash_string(text);
	} else {
		key = read64(kind, rec_data, i);
	}
	slot_graded *e = lookup_graded(s, reading, text, key);
	if (e->stamp != s->stamp || e->consumed) {
		return 0.0;
	}
	e->consumed = 1;
	return e->grade;
}

/* rec's element type, checked: VARCHAR or an integer type of at most 64 bits; K_NONE, with the
 * error set, for any other. */
static id_kind graded_rec_kind(duckdb_function_info info, const char *name, duckdb_vector rec_vector) {
	id_kind kind = kind_of(list_child_type(rec_vector));
	if (kind != K_STRING && !fits_int64(kind) && kind != K_U64) {
		set_error(info, name, "rec must hold VARCHAR or integer ids");
		return K_NONE;
	}
	return kind;
}

static void grade_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	idx_t rows = duckdb_data_chunk_get_size(input);
	duckdb_vector rec_vector = duckdb_data_chunk_get_vector(input, 0);
	duckdb_vector truth_vector = duckdb_data_chunk_get_vector(input, 1);
	duckdb_vector k_vector = duckdb_data_chunk_get_vector(input, 2);
	id_kind kind = graded_rec_kind(info, "duckrank_grades", rec_vector);
	if (kind == K_NONE) {
		return;
	}
	key_reading reading = key_reading_of(kind);
	int64_t limit = budget_limit(info, "duckrank_grades", input, 3);
	if (limit < 0) {
		return;
	}
	duckdb_vector rec_items = duckdb_list_vector_get_child(rec_vector);
	const void *rec_data = duckdb_vector_get_data(rec_items);
	const uint64_t *rec_item_valid = duckdb_vector_get_validity(rec_items);
	graded_truth truth;
	if (!read_graded_truth(info, "duckrank_grades", kind, truth_vector, &truth)) {
		return;
	}
	row_inputs in = read_rows(rec_vector, truth_vector, k_vector);

	duckdb_list_entry *out_entries = (duckdb_list_entry *)duckdb_vector_get_data(output);
	idx_t total = 0;
	for (idx_t row = 0; row < rows; row++) {
		total += row_is_null(&in, row) ? 0 : top_of(&in, row);
	}
	if (duckdb_list_vector_reserve(output, total) != DuckDBSuccess) {
		set_error(info, "duckrank_grades", "out of memory in the native matching step");
		return;
	}
	double *out = (double *)duckdb_vector_get_data(duckdb_list_vector_get_child(output));

	scratch s = new_scratch(info, limit);
	idx_t written = 0;
	for (idx_t row = 0; row < rows; row++) {
		out_entries[row].offset = written;
		out_entries[row].length = 0;
		if (row_is_null(&in, row)) {
			duckdb_vector_ensure_validity_writable(output);
			duckdb_validity_set_row_invalid(duckdb_vector_get_validity(output), row);
			continue;
		}
		duckdb_list_entry r = in.rec[row], t = in.truth[row];
		idx_t top = top_of(&in, row);
		row_start started = start_row(&s, t.length, 0);
		if (started != ROW_READY) {
			set_row_error(info, "duckrank_grades", &s, started, t.length);
			break;
		}
		insert_graded(&s, reading, &truth, t);
		for (idx_t i = r.offset; i < r.offset + top; i++) {
			out[written++] = take_grade(&s, reading, kind, rec_data, rec_item_valid, i);
		}
		out_entries[row].length = top;
	}
	duckdb_list_vector_set_size(output, written);
	release(&s);
}

/* A row's ideal list: its `count` positive grades, sorted largest first in place. Insertion
 * sort for the short lists truth usually is (no call per comparison), qsort past them. */
static int larger_first(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

static void sort_largest_first(double *grades, idx_t count) {
	if (count > 64) {
		qsort(grades, count, sizeof(double), larger_first);
		return;
	}
	for (idx_t i = 1; i < count; i++) {
		double g = grades[i];
		idx_t j = i;
		for (; j > 0 && grades[j - 1] < g; j--) {
			grades[j] = grades[j - 1];
		}
		grades[j] = g;
	}
}

/* The struct duckrank_graded returns, its fields in this order. */
enum { G_K, G_POS, G_GRADES, G_IDEAL, G_N, G_CUT, G_BAD, G_FIELDS };

/* A list field's child data, grown to hold `size` elements; NULL when DuckDB cannot. */
static void *list_field(duckdb_vector list, idx_t size) {
	if (duckdb_list_vector_reserve(list, size) != DuckDBSuccess ||
	    duckdb_list_vector_set_size(list, size) != DuckDBSuccess) {
		return NULL;
	}
	return duckdb_vector_get_data(duckdb_list_vector_get_child(list));
}

/* duckrank_graded: what the graded metrics' formulas read, over the hits only (zero grades add
 * nothing to a DCG and leave ERR's cascade unchanged). See the top of this file. */
static void graded_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	static const char *name = "duckrank_graded";
	idx_t rows = duckdb_data_chunk_get_size(input);
	duckdb_vector rec_vector = duckdb_data_chunk_get_vector(input, 0);
	duckdb_vector truth_vector = duckdb_data_chunk_get_vector(input, 1);
	duckdb_vector k_vector = duckdb_data_chunk_get_vector(input, 2);
	id_kind kind = graded_rec_kind(info, name, rec_vector);
	if (kind == K_NONE) {
		return;
	}
	key_reading reading = key_reading_of(kind);
	int64_t limit = budget_limit(info, name, input, 3);
	if (limit < 0) {
		return;
	}
	duckdb_vector rec_items = duckdb_list_vector_get_child(rec_vector);
	const void *rec_data = duckdb_vector_get_data(rec_items);
	const uint64_t *rec_item_valid = duckdb_vector_get_validity(rec_items);
	graded_truth truth;
	if (!read_graded_truth(info, name, kind, truth_vector, &truth)) {
		return;
	}
	row_inputs in = read_rows(rec_vector, truth_vector, k_vector);

	duckdb_vector field[G_FIELDS];
	for (idx_t f = 0; f < G_FIELDS; f++) {
		field[f] = duckdb_struct_vector_get_child(output, f);
	}
	/* The lists' sizes are bounded before any row is read: at most min(K, len(truth)) hits and
	 * min(k, len(truth)) ideal grades per row. */
	idx_t most_hits = 0, most_ideal = 0, longest_truth = 0;
	for (idx_t row = 0; row < rows; row++) {
		if (!row_is_null(&in, row)) {
			idx_t top = top_of(&in, row), t = in.truth[row].length;
			uint64_t k = (uint64_t)in.cutoffs[row];
			most_hits += top < t ? top : t;
			most_ideal += k < t ? (idx_t)k : t;
			longest_truth = t > longest_truth ? t : longest_truth;
		}
	}
	int64_t *pos = (int64_t *)list_field(field[G_POS], most_hits);
	double *hit_grades = (double *)list_field(field[G_GRADES], most_hits);
	double *ideal = (double *)list_field(field[G_IDEAL], most_ideal);
	if ((most_hits && (!pos || !hit_grades)) || (most_ideal && !ideal)) {
		set_error(info, name, "out of memory in the native matching step");
		return;
	}
	int64_t *tops = (int64_t *)duckdb_vector_get_data(field[G_K]);
	int64_t *counts = (int64_t *)duckdb_vector_get_data(field[G_N]);
	int64_t *cuts = (int64_t *)duckdb_vector_get_data(field[G_CUT]);
	int64_t *bads = (int64_t *)duckdb_vector_get_data(field[G_BAD]);
	duckdb_list_entry *pos_entries = (duckdb_list_entry *)duckdb_vector_get_data(field[G_POS]);
	duckdb_list_entry *grade_entries = (duckdb_list_entry *)duckdb_vector_get_data(field[G_GRADES]);
	duckdb_list_entry *ideal_entries = (duckdb_list_entry *)duckdb_vector_get_data(field[G_IDEAL]);

	scratch s = new_scratch(info, limit);
	/* A row's positive grades, to be sorted: scratch memory, counted against memory_limit. */
	int64_t sort_bytes = bytes_for(longest_truth, sizeof(double), 0);
	double *positive = NULL;
	if (!claim_take(&s.memory, sort_bytes)) {
		set_row_error(info, name, &s, ROW_OVER_LIMIT, longest_truth);
		return;
	}
	positive = (double *)malloc(sort_bytes ? (size_t)sort_bytes : 1);
	if (!positive) {
		set_row_error(info, name, &s, ROW_NO_MEMORY, longest_truth);
		release(&s);
		return;
	}
	idx_t hits = 0, ideals = 0;
	for (idx_t row = 0; row < rows; row++) {
		pos_entries[row].offset = grade_entries[row].offset = hits;
		ideal_entries[row].offset = ideals;
		pos_entries[row].length = grade_entries[row].length = ideal_entries[row].length = 0;
		tops[row] = counts[row] = bads[row] = 0;
		cuts[row] = in.cutoffs[row];
		if (row_is_null(&in, row)) {
			set_null(output, row, G_FIELDS);
			continue;
		}
		duckdb_list_entry r = in.rec[row], t = in.truth[row];
		idx_t top = top_of(&in, row);
		tops[row] = (int64_t)top;
		/* The grades: the first bad one (NULL, NaN, infinite, negative) makes the row an error
		 * in the macros, which name its item; nothing else of the row is needed then. */
		idx_t n = 0;
		for (idx_t i = t.offset; i < t.offset + t.length; i++) {
			double g = truth.grades[i];
			if (!is_valid(truth.grade_valid, i) || !isfinite(g) || g < 0) {
				bads[row] = (int64_t)(i - t.offset + 1);
				break;
			}
			if (g > 0) {
				positive[n++] = g;
			}
		}
		if (bads[row] > 0) {
			continue;
		}
		counts[row] = (int64_t)n;
		if (n == 0) {
			continue; /* every metric is NULL: no relevant item */
		}
		sort_largest_first(positive, n);
		idx_t cut = (uint64_t)in.cutoffs[row] < n ? (idx_t)in.cutoffs[row] : n;
		memcpy(ideal + ideals, positive, cut * sizeof(double));
		ideal_entries[row].length = cut;
		ideals += cut;
		if (top == 0) {
			continue;
		}
		row_start started = start_row(&s, t.length, 0);
		if (started != ROW_READY) {
			set_row_error(info, name, &s, started, t.length);
			break;
		}
		insert_graded(&s, reading, &truth, t);
		idx_t row_hits = 0;
		for (idx_t i = r.offset; i < r.offset + top; i++) {
			double g = take_grade(&s, reading, kind, rec_data, rec_item_valid, i);
			if (g > 0) {
				pos[hits + row_hits] = (int64_t)(i - r.offset + 1);
				hit_grades[hits + row_hits] = g;
				row_hits++;
			}
		}
		pos_entries[row].length = grade_entries[row].length = row_hits;
		hits += row_hits;
	}
	duckdb_list_vector_set_size(field[G_POS], hits);
	duckdb_list_vector_set_size(field[G_GRADES], hits);
	duckdb_list_vector_set_size(field[G_IDEAL], ideals);
	free(positive);
	release(&s);
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

static duckdb_logical_type graded_type(void) {
	duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
	duckdb_logical_type real = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
	duckdb_logical_type bigints = duckdb_create_list_type(bigint);
	duckdb_logical_type reals = duckdb_create_list_type(real);
	duckdb_logical_type members[G_FIELDS] = {bigint, bigints, reals, reals, bigint, bigint, bigint};
	const char *names[G_FIELDS] = {"K", "pos", "grades", "ideal", "n", "cut", "bad"};
	duckdb_logical_type result = duckdb_create_struct_type(members, names, G_FIELDS);
	duckdb_logical_type *types[] = {&bigint, &real, &bigints, &reals};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		duckdb_destroy_logical_type(types[i]);
	}
	return result;
}

DUCKDB_EXTENSION_ENTRYPOINT(duckdb_connection connection, duckdb_extension_info info,
                            struct duckdb_extension_access *access) {
	/* One account for every function registered here, preferences.c's too (budget.h); the
	 * reference budget_new gives is this function's, dropped at its end. */
	budget *account = budget_new(connection);
	if (!account) {
		access->set_error(info, "duckrank_native: out of memory");
		return false;
	}

	duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
	duckdb_logical_type any = duckdb_create_logical_type(DUCKDB_TYPE_ANY);
	duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
	duckdb_logical_type result = match_type();
	duckdb_logical_type real = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
	duckdb_logical_type grade_list = duckdb_create_list_type(real);

	duckdb_logical_type match_parameters[] = {varchar, any, any, bigint}; /* + memory_limit */
	duckdb_state state = budget_register(connection, account, "duckrank_match", match_parameters, 4, result,
	                                     match_rows, 0);
	/* truth: MAP(VARCHAR, DOUBLE) or MAP(BIGINT, DOUBLE), checked by read_graded_truth */
	duckdb_logical_type grade_parameters[] = {any, any, bigint}; /* + memory_limit */
	if (state == DuckDBSuccess) {
		state = budget_register(connection, account, "duckrank_grades", grade_parameters, 3, grade_list,
		                        grade_rows, 0);
	}
	duckdb_logical_type graded = graded_type();
	if (state == DuckDBSuccess) {
		state = budget_register(connection, account, "duckrank_graded", grade_parameters, 3, graded, graded_rows,
		                        0);
	}
	if (state == DuckDBSuccess) {
		state = duckrank_register_preferences(connection, account);
	}
	if (state == DuckDBSuccess) {
		state = duckrank_register_top_k(connection);
	}

	duckdb_logical_type *types[] = {&varchar, &any, &bigint, &result, &real, &grade_list, &graded};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		duckdb_destroy_logical_type(types[i]);
	}
	budget_drop(account);
	if (state != DuckDBSuccess) {
		access->set_error(info, "duckrank_native: could not register its functions");
		return false;
	}
	return true;
}
