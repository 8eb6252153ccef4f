/*
 * duckrank's graded matching as native code, part of the DuckDB C API extension whose entry point
 * (extension.c) calls duckrank_register_graded once per database. Two functions serve the graded metrics over
 * MAP truth. The graded metrics (``graded_match_sql`` in matching/sql.py is the SQL form):
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
 * Memory: the hash table of a row's truth (truth_table.h) and the longest truth's grades, to
 * sort (duckrank_graded), counted in the database's account (budget.h).
 */
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "families.h"
#include "truth_table.h"

#include <stdlib.h>
#include <string.h>

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
ALWAYS_INLINE slot_graded *lookup_graded(truth_scratch *s, key_reading reading, const duckdb_string_t *text,
                                         uint64_t key) {
	uint64_t hash = reading == KEYS_AS_TEXT ? key : hash64(key);
	for (idx_t probe = 0;; probe++) {
		slot_graded *e = SLOT_AT(slot_graded, s, hash, probe);
		if (e->stamp != s->stamp ||
		    (e->hash == key && (reading != KEYS_AS_TEXT || strings_equal(e->text, text)))) {
			return e;
		}
	}
}

/* Puts one truth key in the table with its grade (0 for a NULL grade). */
ALWAYS_INLINE void put_graded(truth_scratch *s, key_reading reading, const graded_truth *truth, idx_t i,
                              const duckdb_string_t *text, uint64_t key) {
	slot_graded *e = lookup_graded(s, reading, text, key);
	e->stamp = s->stamp;
	e->hash = key;
	e->text = text;
	e->consumed = 0;
	e->grade = is_valid(truth->grade_valid, i) ? truth->grades[i] : 0.0;
}

/* Puts a row's truth in the table: each key with its grade. One loop per form of the keys, so
 * that no test of the form is left in the loop (map keys are unique). */
static void insert_graded(truth_scratch *s, key_reading reading, const graded_truth *truth, duckdb_list_entry t) {
	idx_t end = t.offset + t.length;
	if (truth->integer_keys) {
		/* rec holds integers; an unsigned id never equals a negative key */
		int unsigned_ids = reading == KEYS_AS_UNSIGNED;
		for (idx_t i = t.offset; i < end; i++) {
			if (!(unsigned_ids && truth->integer_keys[i] < 0)) {
				put_graded(s, KEYS_AS_SIGNED, truth, i, NULL, (uint64_t)truth->integer_keys[i]);
			}
		}
	} else if (reading == KEYS_AS_TEXT) {
		for (idx_t i = t.offset; i < end; i++) {
			put_graded(s, KEYS_AS_TEXT, truth, i, &truth->keys[i], hash_string(&truth->keys[i]));
		}
	} else {
		for (idx_t i = t.offset; i < end; i++) {
			uint64_t key;
			if (key_integer(&truth->keys[i], reading, &key)) {
				put_graded(s, reading, truth, i, NULL, key);
			}
		}
	}
}

/* The grade of rec's item i for its first occurrence (marking the item consumed), else 0. */
ALWAYS_INLINE double take_grade(truth_scratch *s, key_reading reading, id_kind kind, const void *rec_data,
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

/* A chunk of a graded function's (rec, truth, k) arguments, read and checked. */
typedef struct {
	id_kind kind;
	key_reading reading;
	int64_t limit;
	const void *rec_data;
	const uint64_t *rec_item_valid;
	graded_truth truth;
	row_inputs in;
} graded_chunk;

/* 0, with the error set (naming `name`), when rec's ids, the memory limit or truth cannot be
 * read, in that order. */
static int read_graded_chunk(duckdb_function_info info, const char *name, duckdb_data_chunk input, graded_chunk *c) {
	duckdb_vector rec_vector = duckdb_data_chunk_get_vector(input, 0);
	duckdb_vector truth_vector = duckdb_data_chunk_get_vector(input, 1);
	c->kind = graded_rec_kind(info, name, rec_vector);
	if (c->kind == K_NONE) {
		return 0;
	}
	c->reading = key_reading_of(c->kind);
	c->limit = budget_limit(info, name, input, 3);
	if (c->limit < 0) {
		return 0;
	}
	duckdb_vector rec_items = duckdb_list_vector_get_child(rec_vector);
	c->rec_data = duckdb_vector_get_data(rec_items);
	c->rec_item_valid = duckdb_vector_get_validity(rec_items);
	if (!read_graded_truth(info, name, c->kind, truth_vector, &c->truth)) {
		return 0;
	}
	c->in = read_rows(rec_vector, truth_vector, duckdb_data_chunk_get_vector(input, 2));
	return 1;
}

static void grade_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	idx_t rows = duckdb_data_chunk_get_size(input);
	graded_chunk c;
	if (!read_graded_chunk(info, "duckrank_grades", input, &c)) {
		return;
	}
	id_kind kind = c.kind;
	key_reading reading = c.reading;
	const void *rec_data = c.rec_data;
	const uint64_t *rec_item_valid = c.rec_item_valid;
	graded_truth truth = c.truth;
	row_inputs in = c.in;

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

	truth_scratch s = new_truth_scratch(info, c.limit);
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
	release_truth_scratch(&s);
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

/* Bounds on the chunk's lists before any row is read: at most min(K, len(truth)) hits and
 * min(k, len(truth)) ideal grades per row; and the longest truth, whose grades are sorted. */
static void bound_lists(const row_inputs *in, idx_t rows, idx_t *most_hits, idx_t *most_ideal,
                        idx_t *longest_truth) {
	for (idx_t row = 0; row < rows; row++) {
		if (!row_is_null(in, row)) {
			idx_t top = top_of(in, row), t = in->truth[row].length;
			uint64_t k = (uint64_t)in->cutoffs[row];
			*most_hits += top < t ? top : t;
			*most_ideal += k < t ? (idx_t)k : t;
			*longest_truth = t > *longest_truth ? t : *longest_truth;
		}
	}
}

/* A row's positive grades into `positive` (`*n` of them), and the 1-based index in truth of its
 * first bad grade (NULL, NaN, infinite, negative), 0 for none: reading stops there. */
static int64_t positive_grades(const graded_truth *truth, duckdb_list_entry t, double *positive, idx_t *n) {
	for (idx_t i = t.offset; i < t.offset + t.length; i++) {
		double g = truth->grades[i];
		if (!is_valid(truth->grade_valid, i) || !isfinite(g) || g < 0) {
			return (int64_t)(i - t.offset + 1);
		}
		if (g > 0) {
			positive[(*n)++] = g;
		}
	}
	return 0;
}

/* Up to this many ideal grades (k = 10 or 100, the usual cut-offs) a row's grades are put in
 * their place in the ideal list as they are read, the smallest dropped when it is full: no copy,
 * no sort of the grades that do not make it. A longer ideal list sorts all positive grades. */
#define INSERTED_IDEAL 128

/* positive_grades for a row whose ideal list holds at most `cap` (<= INSERTED_IDEAL) grades:
 * counts the positive grades in `*n` and keeps the `cap` largest in `ideal`, largest first,
 * `*kept` of them (min(cap, n)). Returns the first bad grade's index as positive_grades does. */
static int64_t largest_grades(const graded_truth *truth, duckdb_list_entry t, idx_t cap, double *ideal, idx_t *n,
                              idx_t *kept) {
	idx_t size = 0;
	for (idx_t i = t.offset; i < t.offset + t.length; i++) {
		double g = truth->grades[i];
		if (!is_valid(truth->grade_valid, i) || !isfinite(g) || g < 0) {
			return (int64_t)(i - t.offset + 1);
		}
		if (g > 0) {
			(*n)++;
			if (size == cap && (cap == 0 || g <= ideal[cap - 1])) {
				continue; /* not among the cap largest so far */
			}
			idx_t j = size < cap ? size++ : cap - 1;
			for (; j > 0 && ideal[j - 1] < g; j--) {
				ideal[j] = ideal[j - 1];
			}
			ideal[j] = g;
		}
	}
	*kept = size;
	return 0;
}

/* A row's hits in its top K (truth in the table): their ranks and grades; returns their count. */
ALWAYS_INLINE idx_t take_hits_as(truth_scratch *s, key_reading reading, id_kind kind, const graded_chunk *c,
                                 duckdb_list_entry r, idx_t top, int64_t *pos, double *grades) {
	idx_t hits = 0;
	for (idx_t i = r.offset; i < r.offset + top; i++) {
		double g = take_grade(s, reading, kind, c->rec_data, c->rec_item_valid, i);
		if (g > 0) {
			pos[hits] = (int64_t)(i - r.offset + 1);
			grades[hits] = g;
			hits++;
		}
	}
	return hits;
}

/* take_hits_as with the common id kinds as constants, so that no test of the kind is left in the
 * loop (as match.c's match_row does). */
static idx_t take_hits(truth_scratch *s, const graded_chunk *c, duckdb_list_entry r, idx_t top, int64_t *pos,
                       double *grades) {
	if (c->kind == K_I64 && c->reading == KEYS_AS_SIGNED) {
		return take_hits_as(s, KEYS_AS_SIGNED, K_I64, c, r, top, pos, grades);
	}
	if (c->kind == K_STRING) {
		return take_hits_as(s, KEYS_AS_TEXT, K_STRING, c, r, top, pos, grades);
	}
	return take_hits_as(s, c->reading, c->kind, c, r, top, pos, grades);
}

/* duckrank_graded: what the graded metrics' formulas read, over the hits only (zero grades add
 * nothing to a DCG and leave ERR's cascade unchanged). See the top of this file. */
static void graded_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	static const char *name = "duckrank_graded";
	idx_t rows = duckdb_data_chunk_get_size(input);
	graded_chunk c;
	if (!read_graded_chunk(info, name, input, &c)) {
		return;
	}
	graded_truth truth = c.truth;
	row_inputs in = c.in;

	duckdb_vector field[G_FIELDS];
	for (idx_t f = 0; f < G_FIELDS; f++) {
		field[f] = duckdb_struct_vector_get_child(output, f);
	}
	/* The lists' sizes are bounded before any row is read: at most min(K, len(truth)) hits and
	 * min(k, len(truth)) ideal grades per row. */
	idx_t most_hits = 0, most_ideal = 0, longest_truth = 0;
	bound_lists(&in, rows, &most_hits, &most_ideal, &longest_truth);
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

	truth_scratch s = new_truth_scratch(info, c.limit);
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
		release_truth_scratch(&s);
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
		idx_t n = 0, cut = 0;
		idx_t cap = (uint64_t)in.cutoffs[row] < t.length ? (idx_t)in.cutoffs[row] : t.length;
		if (cap <= INSERTED_IDEAL) {
			bads[row] = largest_grades(&truth, t, cap, ideal + ideals, &n, &cut);
		} else {
			bads[row] = positive_grades(&truth, t, positive, &n);
			if (bads[row] == 0) {
				sort_largest_first(positive, n);
				cut = cap < n ? cap : n;
				memcpy(ideal + ideals, positive, cut * sizeof(double));
			}
		}
		if (bads[row] > 0) {
			continue;
		}
		counts[row] = (int64_t)n;
		if (n == 0) {
			continue; /* every metric is NULL: no relevant item */
		}
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
		insert_graded(&s, c.reading, &truth, t);
		idx_t row_hits = take_hits(&s, &c, r, top, pos + hits, hit_grades + hits);
		pos_entries[row].length = grade_entries[row].length = row_hits;
		hits += row_hits;
	}
	duckdb_list_vector_set_size(field[G_POS], hits);
	duckdb_list_vector_set_size(field[G_GRADES], hits);
	duckdb_list_vector_set_size(field[G_IDEAL], ideals);
	free(positive);
	release_truth_scratch(&s);
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

duckdb_state duckrank_register_graded(duckdb_connection connection, budget *account) {
	duckdb_logical_type any = duckdb_create_logical_type(DUCKDB_TYPE_ANY);
	duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
	duckdb_logical_type real = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
	duckdb_logical_type grade_list = duckdb_create_list_type(real);
	duckdb_logical_type graded = graded_type();
	/* truth: MAP(VARCHAR, DOUBLE) or MAP(BIGINT, DOUBLE), checked by read_graded_truth */
	duckdb_logical_type parameters[] = {any, any, bigint}; /* + memory_limit */
	duckdb_state state = budget_register(connection, account, "duckrank_grades", parameters, 3, grade_list,
	                                     grade_rows, 0);
	if (state == DuckDBSuccess) {
		state = budget_register(connection, account, "duckrank_graded", parameters, 3, graded, graded_rows, 0);
	}
	duckdb_logical_type *types[] = {&any, &bigint, &real, &grade_list, &graded};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		duckdb_destroy_logical_type(types[i]);
	}
	return state;
}
