/*
 * The structural work of rank fusion (issue 29; docs/fusion.md), part of the same DuckDB C API
 * extension as match.c, whose entry point (extension.c) calls duckrank_register_fusion once per
 * database. Grouping, ordering and each list's statistics only: a method's formulas stay the SQL
 * of its record (duckrank/fusion/), which the fusion macros apply to what these return
 * (duckrank/render/fusion.py, the native branch). One row is one query's rows, as parallel lists.
 *
 *   duckrank_native_fusion_layout(systems INTEGER[], items VARCHAR[], scores DOUBLE[], weights DOUBLE[],
 *                                 fields INTEGER)
 *     -> STRUCT(rows STRUCT(system, score, weight, position, s_count, s_min, s_max, s_sum, s_mean, s_sd)[],
 *               sizes INTEGER[], firsts INTEGER[], duplicate INTEGER)
 *
 * `rows` holds the query's rows grouped by item (groups in the order their items first appear
 * when the lists are read system by system, each in list order; a group's rows by system number
 * ascending), each with the statistics of its system's list (docs/fusion.md's
 * columns): `position` is the place in that list by score descending, then item text descending;
 * the list's sum adds its scores in that order, the same number on every run. `sizes` is each
 * group's number of rows, `firsts` the 1-based index into the input of the group's first row (its
 * item). `duplicate` is the 1-based index of a row whose system lists its item twice (the later
 * of the two in that system's list; the rest is then empty), else NULL. `weights[s + 1]` is
 * system s's weight (NULL past its end). `fields` has bit i set for each field of the row struct
 * (0-based, in the order above) the caller reads: the others among weight and the statistics are
 * NULL, and without position, s_sum, s_mean and s_sd no list is sorted (a NULL in a row: every
 * field; a NULL constant makes DuckDB return NULL without calling the function). The fields any
 * row of a batch asks for are filled for every row of it (the macros ask the same of all).
 *
 *   duckrank_native_fusion_split(values DOUBLE[], sizes INTEGER[]) -> DOUBLE[][]
 *
 * `values` cut into consecutive lists of the given sizes (a group's terms, in system order).
 *
 *   duckrank_native_fusion_order(scores DOUBLE[], texts VARCHAR[], at INTEGER[]) -> INTEGER[]
 *
 * The 1-based indices of `scores` by score descending (NaN first, as SQL orders it, NULL last),
 * equal scores by their texts descending (score i's text is texts[at[i]]), then in list order. Each takes current_setting('memory_limit') as an optional last
 * argument (budget.h).
 */
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "budget.h"
#include "common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One input row of a query. */
typedef struct {
	uint64_t prefix; /* the text's first 8 bytes, big-endian and zero-padded: compared first */
	const duckdb_string_t *item;
	const char *text;
	uint32_t length;
	int32_t system;
	double score;
} fused_row;

/* What the sorts move: 16 bytes per row (moving the rows themselves cost more than comparing
 * them), the row's index in the query's lists, and the leading key of the order. */
typedef struct {
	uint64_t key;
	uint32_t index, spare;
} sort_key;

static uint64_t text_prefix(const char *text, uint32_t length) {
	uint64_t prefix = 0;
	memcpy(&prefix, text, length < 8 ? length : 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	prefix = __builtin_bswap64(prefix); /* the first byte most significant */
#endif
	return prefix;
}

/* Byte order, a prefix before the longer text (DuckDB's order of VARCHAR). */
ALWAYS_INLINE int text_order(const fused_row *a, const fused_row *b) {
	if (a->prefix != b->prefix) {
		return a->prefix < b->prefix ? -1 : 1;
	}
	if (a->length > 8 && b->length > 8) {
		uint32_t n = a->length < b->length ? a->length : b->length;
		int c = memcmp(a->text + 8, b->text + 8, n - 8);
		if (c != 0) {
			return c;
		}
	}
	return (a->length > b->length) - (a->length < b->length);
}

/* A score as an unsigned key in the same order (0.0 and -0.0 alike, as SQL orders them). */
static uint64_t score_key(double score) {
	if (score == 0.0) {
		score = 0.0;
	}
	uint64_t bits;
	memcpy(&bits, &score, 8);
	return bits >> 63 ? ~bits : bits | (1ULL << 63);
}

/* A system's list: score descending (the key is the score's key inverted), then item text
 * descending. */
ALWAYS_INLINE int list_before(const fused_row *rows, const sort_key *a, const sort_key *b) {
	if (a->key != b->key) {
		return a->key < b->key;
	}
	return text_order(&rows[a->index], &rows[b->index]) > 0;
}

/* A stable merge sort of n elements with `before(context, x, y)` inlined (qsort's call per
 * comparison cost more than the comparison: a query's few hundred rows are sorted twice);
 * `scratch` holds n more. Runs of RUN elements are insertion-sorted first. */
#define RUN 16
#define DEFINE_STABLE_SORT(name, type, context_type, before)                                            \
	static void name(context_type context, type *a, type *scratch, idx_t n) {                             \
		for (idx_t start = 0; start < n; start += RUN) {                                                  \
			idx_t end = start + RUN < n ? start + RUN : n;                                                \
			for (idx_t i = start + 1; i < end; i++) {                                                     \
				type x = a[i];                                                                            \
				idx_t j = i;                                                                              \
				for (; j > start && before(context, &x, &a[j - 1]); j--) {                                \
					a[j] = a[j - 1];                                                                      \
				}                                                                                         \
				a[j] = x;                                                                                 \
			}                                                                                             \
		}                                                                                                 \
		type *from = a, *to = scratch;                                                                    \
		for (idx_t width = RUN; width < n; width *= 2) {                                                  \
			for (idx_t lo = 0; lo < n; lo += 2 * width) {                                                 \
				idx_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n; \
				idx_t i = lo, j = mid, k = lo;                                                            \
				if (mid < hi && !before(context, &from[mid], &from[mid - 1])) {                           \
					i = j = hi; /* already in order (a run file's lists usually are): copied below */     \
					memcpy(to + lo, from + lo, (hi - lo) * sizeof(type));                                 \
				}                                                                                         \
				while (i < mid && j < hi) {                                                               \
					to[k++] = before(context, &from[j], &from[i]) ? from[j++] : from[i++];                \
				}                                                                                         \
				while (i < mid) {                                                                         \
					to[k++] = from[i++];                                                                  \
				}                                                                                         \
				while (j < hi) {                                                                          \
					to[k++] = from[j++];                                                                  \
				}                                                                                         \
			}                                                                                             \
			type *swap = from;                                                                            \
			from = to;                                                                                    \
			to = swap;                                                                                    \
		}                                                                                                 \
		if (from != a) {                                                                                  \
			memcpy(a, from, n * sizeof(type));                                                            \
		}                                                                                                 \
	}

DEFINE_STABLE_SORT(sort_list, sort_key, const fused_row *, list_before)

/* What a row gets from its system's list. */
typedef struct {
	int64_t position, count;
	double min, max, sum, mean, sd;
} list_stats;

enum { R_SYSTEM, R_SCORE, R_WEIGHT, R_POSITION, R_COUNT, R_MIN, R_MAX, R_SUM, R_MEAN, R_SD, R_FIELDS };
enum { L_ROWS, L_SIZES, L_FIRSTS, L_DUPLICATE, L_FIELDS };

static const char *LAYOUT = "duckrank_native_fusion_layout";

static int row_valid(duckdb_vector vector, idx_t row) {
	return is_valid(duckdb_vector_get_validity(vector), row);
}

static void set_row_null(duckdb_vector output, idx_t row) {
	duckdb_vector_ensure_validity_writable(output);
	duckdb_validity_set_row_invalid(duckdb_vector_get_validity(output), row);
}

/* A NULL struct row: its fields are NULL too, as DuckDB keeps them. */
static void set_struct_null(duckdb_vector output, idx_t row, idx_t fields) {
	set_row_null(output, row);
	for (idx_t f = 0; f < fields; f++) {
		set_row_null(duckdb_struct_vector_get_child(output, f), row);
	}
}

/* A list field's child data, grown to hold `size` elements; NULL when DuckDB cannot. */
static void *grown_child(duckdb_vector list, idx_t size) {
	if (duckdb_list_vector_reserve(list, size) != DuckDBSuccess) {
		return NULL;
	}
	return duckdb_vector_get_data(duckdb_list_vector_get_child(list));
}

/* The statistics of one system's list (`list`: its n keys in list order) into each row's stats,
 * indexed by the row's input index. Sums run in list order. */
static void describe_list(const fused_row *rows, const sort_key *list, idx_t n, list_stats *stats) {
	double sum = 0.0;
	for (idx_t i = 0; i < n; i++) {
		sum += rows[list[i].index].score;
	}
	double mean = sum / (double)n, squares = 0.0;
	for (idx_t i = 0; i < n; i++) {
		double d = rows[list[i].index].score - mean;
		squares += d * d;
	}
	list_stats s = {0, (int64_t)n, rows[list[n - 1].index].score, rows[list[0].index].score, sum, mean,
	                sqrt(squares / (double)n)};
	for (idx_t i = 0; i < n; i++) {
		s.position = (int64_t)(i + 1);
		stats[list[i].index] = s;
	}
}

/* The fields that need each system's list in list order: the rest (count, min, max) do not. */
#define ORDERED_FIELDS (1 << R_POSITION | 1 << R_SUM | 1 << R_MEAN | 1 << R_SD)
#define ALL_FIELDS ((1 << R_FIELDS) - 1)

/* describe_list's count, min and max only, over one system's keys in any order. */
static void describe_unordered(const fused_row *rows, const sort_key *list, idx_t n, list_stats *stats) {
	double min = rows[list[0].index].score, max = min;
	for (idx_t i = 1; i < n; i++) {
		double x = rows[list[i].index].score;
		min = x < min ? x : min;
		max = x > max ? x : max;
	}
	list_stats s = {0, (int64_t)n, min, max, 0.0, 0.0, 0.0};
	for (idx_t i = 0; i < n; i++) {
		stats[list[i].index] = s;
	}
}

typedef struct {
	duckdb_vector field[L_FIELDS], row_field[R_FIELDS];
	duckdb_list_entry *rows_entries, *size_entries, *first_entries;
	int32_t *duplicates;
} layout_output;

static int layout_output_of(duckdb_vector output, idx_t total, layout_output *o) {
	for (idx_t f = 0; f < L_FIELDS; f++) {
		o->field[f] = duckdb_struct_vector_get_child(output, f);
	}
	/* rows' child is a struct, which has no data of its own: its fields are read below. */
	if (duckdb_list_vector_reserve(o->field[L_ROWS], total) != DuckDBSuccess ||
	    !grown_child(o->field[L_SIZES], total) || !grown_child(o->field[L_FIRSTS], total)) {
		return 0;
	}
	duckdb_vector rows = duckdb_list_vector_get_child(o->field[L_ROWS]);
	for (idx_t f = 0; f < R_FIELDS; f++) {
		o->row_field[f] = duckdb_struct_vector_get_child(rows, f);
	}
	o->rows_entries = (duckdb_list_entry *)duckdb_vector_get_data(o->field[L_ROWS]);
	o->size_entries = (duckdb_list_entry *)duckdb_vector_get_data(o->field[L_SIZES]);
	o->first_entries = (duckdb_list_entry *)duckdb_vector_get_data(o->field[L_FIRSTS]);
	o->duplicates = (int32_t *)duckdb_vector_get_data(o->field[L_DUPLICATE]);
	return 1;
}

/* The four input lists of the chunk. */
typedef struct {
	duckdb_vector vector[4];
	const duckdb_list_entry *entries[4];
	const int32_t *fields; /* per row: the bits (1 << R_...) of the fields to fill */
	const uint64_t *fields_valid;
	const int32_t *systems;
	const uint64_t *system_valid, *item_valid, *score_valid, *weight_valid;
	const duckdb_string_t *items;
	const double *scores, *weights;
} layout_input;

static layout_input layout_input_of(duckdb_data_chunk input) {
	layout_input in;
	for (idx_t a = 0; a < 4; a++) {
		in.vector[a] = duckdb_data_chunk_get_vector(input, a);
		in.entries[a] = (const duckdb_list_entry *)duckdb_vector_get_data(in.vector[a]);
	}
	duckdb_vector child[4];
	for (idx_t a = 0; a < 4; a++) {
		child[a] = duckdb_list_vector_get_child(in.vector[a]);
	}
	in.systems = (const int32_t *)duckdb_vector_get_data(child[0]);
	in.system_valid = duckdb_vector_get_validity(child[0]);
	in.items = (const duckdb_string_t *)duckdb_vector_get_data(child[1]);
	in.item_valid = duckdb_vector_get_validity(child[1]);
	in.scores = (const double *)duckdb_vector_get_data(child[2]);
	in.score_valid = duckdb_vector_get_validity(child[2]);
	in.weights = (const double *)duckdb_vector_get_data(child[3]);
	in.weight_valid = duckdb_vector_get_validity(child[3]);
	duckdb_vector fields = duckdb_data_chunk_get_vector(input, 4);
	in.fields = (const int32_t *)duckdb_vector_get_data(fields);
	in.fields_valid = duckdb_vector_get_validity(fields);
	return in;
}

static int layout_row_valid(const layout_input *in, idx_t row) {
	for (idx_t a = 0; a < 4; a++) {
		if (!row_valid(in->vector[a], row)) {
			return 0;
		}
	}
	return 1;
}

/* 0, with the error set, when a row's lists differ in length or hold a NULL or a system number
 * outside [0, 2^31). */
static int read_query(duckdb_function_info info, const layout_input *in, idx_t row, fused_row *rows) {
	duckdb_list_entry s = in->entries[0][row], t = in->entries[1][row], v = in->entries[2][row];
	if (s.length != t.length || s.length != v.length) {
		set_error(info, LAYOUT, "systems, items and scores must be lists of one length");
		return 0;
	}
	for (idx_t i = 0; i < s.length; i++) {
		if (!is_valid(in->system_valid, s.offset + i) || !is_valid(in->item_valid, t.offset + i) ||
		    !is_valid(in->score_valid, v.offset + i) || in->systems[s.offset + i] < 0) {
			set_error(info, LAYOUT, "a system, item or score is NULL, or a system number is negative");
			return 0;
		}
		const duckdb_string_t *item = &in->items[t.offset + i];
		rows[i].item = item;
		rows[i].text = string_data(item);
		rows[i].length = item->value.inlined.length;
		rows[i].prefix = text_prefix(rows[i].text, rows[i].length);
		rows[i].system = in->systems[s.offset + i];
		rows[i].score = in->scores[v.offset + i];
	}
	return 1;
}

/* Scratch for the chunk's longest query, counted against memory_limit. */
typedef struct {
	claim memory;
	fused_row *rows;
	sort_key *keys, *grouped;
	uint32_t *system_counts; /* per system number, for the counting sort into system order */
	idx_t systems;
	list_stats *stats;
	int32_t *table;             /* the items' hash table: a group number per slot, -1 empty */
	uint32_t *group_of, *first; /* per row (in system order): its group; per group: its first row */
	uint32_t *group_start;      /* per group: its size, then where its rows start */
} layout_scratch;

/* Writes one query's groups (group_rows's) from `written` on; returns the number of groups, or
 * -1 (duplicate set) when a system lists an item twice. */
static int64_t write_groups(const layout_input *in, idx_t row, const layout_scratch *s, idx_t n, idx_t groups,
                            const layout_output *o, idx_t written, idx_t groups_written, int32_t fields) {
	int32_t *systems = (int32_t *)duckdb_vector_get_data(o->row_field[R_SYSTEM]);
	double *scores = (double *)duckdb_vector_get_data(o->row_field[R_SCORE]);
	double *weights = (double *)duckdb_vector_get_data(o->row_field[R_WEIGHT]);
	int64_t *positions = (int64_t *)duckdb_vector_get_data(o->row_field[R_POSITION]);
	int64_t *counts = (int64_t *)duckdb_vector_get_data(o->row_field[R_COUNT]);
	double *mins = (double *)duckdb_vector_get_data(o->row_field[R_MIN]);
	double *maxs = (double *)duckdb_vector_get_data(o->row_field[R_MAX]);
	double *sums = (double *)duckdb_vector_get_data(o->row_field[R_SUM]);
	double *means = (double *)duckdb_vector_get_data(o->row_field[R_MEAN]);
	double *sds = (double *)duckdb_vector_get_data(o->row_field[R_SD]);
	int32_t *sizes = (int32_t *)duckdb_vector_get_data(duckdb_list_vector_get_child(o->field[L_SIZES]));
	int32_t *firsts = (int32_t *)duckdb_vector_get_data(duckdb_list_vector_get_child(o->field[L_FIRSTS]));
	duckdb_list_entry w = in->entries[3][row];
	for (idx_t g = 0; g < groups; g++) {
		idx_t start = s->group_start[g], end = g + 1 < groups ? s->group_start[g + 1] : n;
		sizes[groups_written + g] = (int32_t)(end - start);
		firsts[groups_written + g] = (int32_t)s->first[g] + 1;
		for (idx_t i = start + 1; i < end; i++) {
			if (s->rows[s->grouped[i].index].system == s->rows[s->grouped[i - 1].index].system) {
				o->duplicates[row] = (int32_t)s->grouped[i].index + 1;
				return -1;
			}
		}
	}
	int weighted = fields & 1 << R_WEIGHT;
	for (idx_t i = 0; i < n; i++) {
		uint32_t index = s->grouped[i].index;
		const fused_row *r = &s->rows[index];
		idx_t at = written + i;
		systems[at] = r->system;
		scores[at] = r->score;
		if (!weighted) {
		} else if ((idx_t)r->system < w.length && is_valid(in->weight_valid, w.offset + r->system)) {
			weights[at] = in->weights[w.offset + r->system];
		} else {
			duckdb_vector_ensure_validity_writable(o->row_field[R_WEIGHT]);
			duckdb_validity_set_row_invalid(duckdb_vector_get_validity(o->row_field[R_WEIGHT]), at);
		}
	}
	/* Each requested statistic in a loop of its own: the others' arrays stay out of the cache. */
#define WRITE_STAT(bit, array, member)                                                                 \
	if (fields & 1 << (bit)) {                                                                         \
		for (idx_t i = 0; i < n; i++) {                                                                \
			(array)[written + i] = s->stats[s->grouped[i].index].member;                               \
		}                                                                                              \
	}
	WRITE_STAT(R_POSITION, positions, position)
	WRITE_STAT(R_COUNT, counts, count)
	WRITE_STAT(R_MIN, mins, min)
	WRITE_STAT(R_MAX, maxs, max)
	WRITE_STAT(R_SUM, sums, sum)
	WRITE_STAT(R_MEAN, means, mean)
	WRITE_STAT(R_SD, sds, sd)
#undef WRITE_STAT
	return (int64_t)groups;
}


/* The hash table's slots for a query of n rows: a power of two, at least 2n. */
static idx_t table_slots(idx_t n) {
	idx_t slots = 16;
	while (slots < 2 * n) {
		slots *= 2;
	}
	return slots;
}

static int new_layout_scratch(duckdb_function_info info, int64_t limit, idx_t longest, layout_scratch *s) {
	memset(s, 0, sizeof(*s));
	s->memory = claim_start(info, limit);
	idx_t slots = table_slots(longest);
	int64_t bytes = bytes_for(longest, sizeof(fused_row) + 2 * sizeof(sort_key) + sizeof(list_stats) +
	                                       3 * sizeof(uint32_t), (slots + 1) * sizeof(int32_t));
	if (!claim_take(&s->memory, bytes)) {
		char message[512];
		claim_refusal(&s->memory, "fusion", longest, "rows", message, sizeof(message));
		set_error(info, LAYOUT, message);
		return 0;
	}
	idx_t m = longest ? longest : 1;
	s->rows = (fused_row *)malloc(m * sizeof(fused_row));
	s->keys = (sort_key *)malloc(m * sizeof(sort_key));
	s->grouped = (sort_key *)malloc(m * sizeof(sort_key));
	s->stats = (list_stats *)malloc(m * sizeof(list_stats));
	s->table = (int32_t *)malloc(table_slots(longest) * sizeof(int32_t));
	s->group_of = (uint32_t *)malloc(m * sizeof(uint32_t));
	s->first = (uint32_t *)malloc(m * sizeof(uint32_t));
	s->group_start = (uint32_t *)malloc((m + 1) * sizeof(uint32_t));
	if (!s->rows || !s->keys || !s->grouped || !s->stats || !s->table || !s->group_of || !s->first ||
	    !s->group_start) {
		set_error(info, LAYOUT, "out of memory");
		return 0;
	}
	return 1;
}

/* The system numbers the step takes: the macros number at most 128 systems. */
#define MOST_SYSTEMS 65536

/* s->keys: the query's row indices in system order (a counting sort, stable). 0, with the error
 * set, for a system number past MOST_SYSTEMS or no memory. */
static int in_system_order(duckdb_function_info info, layout_scratch *s, idx_t n) {
	int32_t most = -1;
	for (idx_t i = 0; i < n; i++) {
		most = s->rows[i].system > most ? s->rows[i].system : most;
	}
	if (most >= MOST_SYSTEMS) {
		set_error(info, LAYOUT, "system numbers must be below 65536");
		return 0;
	}
	idx_t systems = (idx_t)most + 1;
	if (systems + 1 > s->systems) {
		uint32_t *grown = (uint32_t *)realloc(s->system_counts, (systems + 1) * sizeof(uint32_t));
		if (!grown) {
			set_error(info, LAYOUT, "out of memory");
			return 0;
		}
		s->system_counts = grown;
		s->systems = systems + 1;
	}
	uint32_t *start = s->system_counts;
	memset(start, 0, (systems + 1) * sizeof(uint32_t));
	for (idx_t i = 0; i < n; i++) {
		start[s->rows[i].system + 1]++;
	}
	for (idx_t k = 1; k <= systems; k++) {
		start[k] += start[k - 1];
	}
	for (idx_t i = 0; i < n; i++) {
		s->keys[start[s->rows[i].system]++] = (sort_key){0, (uint32_t)i, 0};
	}
	return 1;
}

/* s->grouped: the query's rows (s->keys, in system order) by item, groups in the order their
 * items first appear, a group's rows in system order; s->first and s->group_start[g + 1] - 
 * s->group_start[g]: each group's first row and size. Returns the number of groups. */
static idx_t group_rows(layout_scratch *s, idx_t n) {
	idx_t slots = table_slots(n);
	int shift = 64 - __builtin_ctzll(slots);
	memset(s->table, 0xff, slots * sizeof(int32_t));
	idx_t groups = 0;
	for (idx_t i = 0; i < n; i++) {
		uint32_t index = s->keys[i].index;
		const duckdb_string_t *item = s->rows[index].item;
		uint64_t hash = hash_string(item);
		for (idx_t probe = 0;; probe++) {
			int32_t *slot = &s->table[probe_slot(hash, shift, probe)];
			if (*slot < 0) {
				*slot = (int32_t)groups;
				s->first[groups] = index;
				s->group_start[groups + 1] = 0;
				groups++;
			} else if (!strings_equal(s->rows[s->first[*slot]].item, item)) {
				continue;
			}
			s->group_of[i] = (uint32_t)*slot;
			s->group_start[*slot + 1]++;
			break;
		}
	}
	s->group_start[0] = 0;
	for (idx_t g = 1; g <= groups; g++) {
		s->group_start[g] += s->group_start[g - 1];
	}
	for (idx_t i = 0; i < n; i++) {
		s->grouped[s->group_start[s->group_of[i]]++] = s->keys[i];
	}
	/* group_start[g] now holds where group g ends: shift back to the starts */
	for (idx_t g = groups; g > 0; g--) {
		s->group_start[g] = s->group_start[g - 1];
	}
	s->group_start[0] = 0;
	return groups;
}

static void release_layout_scratch(layout_scratch *s) {
	free(s->rows);
	free(s->keys);
	free(s->grouped);
	free(s->system_counts);
	free(s->stats);
	free(s->table);
	free(s->group_of);
	free(s->first);
	free(s->group_start);
	claim_end(&s->memory);
}

static void lay_out_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	idx_t chunk_rows = duckdb_data_chunk_get_size(input);
	int64_t limit = budget_limit(info, LAYOUT, input, 5);
	if (limit < 0) {
		return;
	}
	layout_input in = layout_input_of(input);
	idx_t total = 0, longest = 0;
	int32_t fields = 0; /* what any row asks for (the macros ask the same of every row) */
	for (idx_t row = 0; row < chunk_rows; row++) {
		if (!layout_row_valid(&in, row)) {
			continue; /* a NULL row's entry is not a length: DuckDB leaves it unset */
		}
		idx_t n = in.entries[0][row].length;
		total += n;
		longest = n > longest ? n : longest;
		fields |= is_valid(in.fields_valid, row) ? in.fields[row] : ALL_FIELDS;
	}
	if (longest > INT32_MAX) {
		set_error(info, LAYOUT, "a query has more than 2^31 rows");
		return;
	}
	layout_output o;
	layout_scratch s;
	if (!layout_output_of(output, total, &o)) {
		set_error(info, LAYOUT, "out of memory");
		return;
	}
	if (!new_layout_scratch(info, limit, longest, &s)) {
		release_layout_scratch(&s);
		return;
	}
	idx_t written = 0, groups_written = 0;
	for (idx_t row = 0; row < chunk_rows; row++) {
		o.rows_entries[row] = (duckdb_list_entry){written, 0};
		o.size_entries[row] = o.first_entries[row] = (duckdb_list_entry){groups_written, 0};
		o.duplicates[row] = 0;
		if (!layout_row_valid(&in, row)) {
			set_struct_null(output, row, L_FIELDS);
			continue;
		}
		idx_t n = in.entries[0][row].length;
		if (!read_query(info, &in, row, s.rows)) {
			break;
		}
		if (!in_system_order(info, &s, n)) {
			break;
		}
		/* Each system's list in list order (keys: the scores, inverted for descending), the
		 * lists in system order; then the groups, found by hashing the items. */
		for (idx_t start = 0, end; start < n; start = end) {
			int32_t system = s.rows[s.keys[start].index].system;
			for (end = start + 1; end < n && s.rows[s.keys[end].index].system == system; end++) {
			}
			if (!(fields & ORDERED_FIELDS)) {
				describe_unordered(s.rows, s.keys + start, end - start, s.stats);
				continue;
			}
			for (idx_t i = start; i < end; i++) {
				s.keys[i].key = ~score_key(s.rows[s.keys[i].index].score);
			}
			sort_list(s.rows, s.keys + start, s.grouped, end - start);
			describe_list(s.rows, s.keys + start, end - start, s.stats);
		}
		idx_t group_count = group_rows(&s, n);
		int64_t groups = write_groups(&in, row, &s, n, group_count, &o, written, groups_written, fields);
		duckdb_vector duplicate = o.field[L_DUPLICATE];
		if (groups < 0) {
			continue; /* the macro raises the error, naming the query and the item */
		}
		duckdb_vector_ensure_validity_writable(duplicate);
		duckdb_validity_set_row_invalid(duckdb_vector_get_validity(duplicate), row);
		o.rows_entries[row].length = n;
		o.size_entries[row].length = o.first_entries[row].length = (idx_t)groups;
		written += n;
		groups_written += (idx_t)groups;
	}
	for (idx_t f = R_WEIGHT; f < R_FIELDS; f++) {
		if (!(fields & 1 << f) && written) { /* not asked for: NULL */
			duckdb_vector_ensure_validity_writable(o.row_field[f]);
			memset(duckdb_vector_get_validity(o.row_field[f]), 0, (written + 63) / 64 * sizeof(uint64_t));
		}
	}
	duckdb_list_vector_set_size(o.field[L_ROWS], written);
	duckdb_list_vector_set_size(o.field[L_SIZES], groups_written);
	duckdb_list_vector_set_size(o.field[L_FIRSTS], groups_written);
	release_layout_scratch(&s);
}

/* --- split ---------------------------------------------------------------------------------------- */

static const char *SPLIT = "duckrank_native_fusion_split";

static void split_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	idx_t chunk_rows = duckdb_data_chunk_get_size(input);
	if (budget_limit(info, SPLIT, input, 2) < 0) {
		return;
	}
	duckdb_vector values = duckdb_data_chunk_get_vector(input, 0), sizes = duckdb_data_chunk_get_vector(input, 1);
	const duckdb_list_entry *value_entries = (const duckdb_list_entry *)duckdb_vector_get_data(values);
	const duckdb_list_entry *size_entries = (const duckdb_list_entry *)duckdb_vector_get_data(sizes);
	duckdb_vector value_child = duckdb_list_vector_get_child(values);
	const double *value_data = (const double *)duckdb_vector_get_data(value_child);
	const uint64_t *value_valid = duckdb_vector_get_validity(value_child);
	duckdb_vector size_child = duckdb_list_vector_get_child(sizes);
	const int32_t *size_data = (const int32_t *)duckdb_vector_get_data(size_child);
	const uint64_t *size_valid = duckdb_vector_get_validity(size_child);
	idx_t groups = 0, total = 0;
	for (idx_t row = 0; row < chunk_rows; row++) {
		if (row_valid(values, row) && row_valid(sizes, row)) { /* a NULL row's entry is unset */
			groups += size_entries[row].length;
			total += value_entries[row].length;
		}
	}
	duckdb_list_entry *outer = (duckdb_list_entry *)duckdb_vector_get_data(output);
	if (duckdb_list_vector_reserve(output, groups) != DuckDBSuccess ||
	    !grown_child(duckdb_list_vector_get_child(output), total)) {
		set_error(info, SPLIT, "out of memory");
		return;
	}
	duckdb_vector inner = duckdb_list_vector_get_child(output);
	duckdb_list_entry *inner_entries = (duckdb_list_entry *)duckdb_vector_get_data(inner);
	duckdb_vector leaves = duckdb_list_vector_get_child(inner);
	double *leaf_data = (double *)duckdb_vector_get_data(leaves);
	idx_t group_at = 0, leaf_at = 0;
	for (idx_t row = 0; row < chunk_rows; row++) {
		outer[row] = (duckdb_list_entry){group_at, 0};
		if (!row_valid(values, row) || !row_valid(sizes, row)) {
			set_row_null(output, row);
			continue;
		}
		duckdb_list_entry v = value_entries[row], z = size_entries[row];
		idx_t used = 0;
		for (idx_t g = 0; g < z.length; g++) {
			int32_t size = size_data[z.offset + g];
			if (!is_valid(size_valid, z.offset + g) || size < 0 || (idx_t)size > v.length - used) {
				set_error(info, SPLIT, "sizes must be non-negative and add up to the length of values");
				return;
			}
			inner_entries[group_at + g] = (duckdb_list_entry){leaf_at + used, (idx_t)size};
			used += (idx_t)size;
		}
		if (used != v.length) {
			set_error(info, SPLIT, "sizes must be non-negative and add up to the length of values");
			return;
		}
		memcpy(leaf_data + leaf_at, value_data + v.offset, v.length * sizeof(double));
		if (value_valid) {
			for (idx_t i = 0; i < v.length; i++) {
				if (!is_valid(value_valid, v.offset + i)) {
					duckdb_vector_ensure_validity_writable(leaves);
					duckdb_validity_set_row_invalid(duckdb_vector_get_validity(leaves), leaf_at + i);
				}
			}
		}
		outer[row].length = z.length;
		group_at += z.length;
		leaf_at += v.length;
	}
	duckdb_list_vector_set_size(inner, leaf_at);
	duckdb_list_vector_set_size(output, group_at);
}

/* --- order ---------------------------------------------------------------------------------------- */

static const char *ORDER = "duckrank_native_fusion_order";

typedef struct {
	double score;
	int32_t index;
	int32_t rank_class; /* 0: NaN, 1: a number, 2: NULL (SQL's DESC order: NaN first, NULL last) */
	const duckdb_string_t *text;
} ordered_score;

/* Byte order of two VARCHARs, a prefix before the longer one (DuckDB's order). */
static int string_order(const duckdb_string_t *a, const duckdb_string_t *b) {
	uint32_t x = a->value.inlined.length, y = b->value.inlined.length;
	int c = memcmp(string_data(a), string_data(b), x < y ? x : y);
	return c != 0 ? c : (x > y) - (x < y);
}

/* Score descending, then text descending (then list order: the sort is stable). */
ALWAYS_INLINE int score_before(const void *unused, const ordered_score *a, const ordered_score *b) {
	(void)unused;
	if (a->rank_class != b->rank_class) {
		return a->rank_class < b->rank_class;
	}
	if (a->rank_class == 1 && a->score != b->score) {
		return a->score > b->score;
	}
	return string_order(a->text, b->text) > 0;
}

DEFINE_STABLE_SORT(sort_scores, ordered_score, const void *, score_before)

static void order_rows(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
	idx_t chunk_rows = duckdb_data_chunk_get_size(input);
	int64_t limit = budget_limit(info, ORDER, input, 3);
	if (limit < 0) {
		return;
	}
	duckdb_vector scores = duckdb_data_chunk_get_vector(input, 0);
	duckdb_vector texts = duckdb_data_chunk_get_vector(input, 1), at = duckdb_data_chunk_get_vector(input, 2);
	const duckdb_list_entry *entries = (const duckdb_list_entry *)duckdb_vector_get_data(scores);
	const duckdb_list_entry *text_entries = (const duckdb_list_entry *)duckdb_vector_get_data(texts);
	const duckdb_list_entry *at_entries = (const duckdb_list_entry *)duckdb_vector_get_data(at);
	duckdb_vector child = duckdb_list_vector_get_child(scores);
	const double *data = (const double *)duckdb_vector_get_data(child);
	const uint64_t *valid = duckdb_vector_get_validity(child);
	duckdb_vector text_child = duckdb_list_vector_get_child(texts), at_child = duckdb_list_vector_get_child(at);
	const duckdb_string_t *text_data = (const duckdb_string_t *)duckdb_vector_get_data(text_child);
	const uint64_t *text_valid = duckdb_vector_get_validity(text_child);
	const int32_t *at_data = (const int32_t *)duckdb_vector_get_data(at_child);
	const uint64_t *at_valid = duckdb_vector_get_validity(at_child);
	idx_t total = 0, longest = 0;
	for (idx_t row = 0; row < chunk_rows; row++) {
		if (row_valid(scores, row) && row_valid(texts, row) && row_valid(at, row)) { /* else unset */
			total += entries[row].length;
			longest = entries[row].length > longest ? entries[row].length : longest;
		}
	}
	if (longest > INT32_MAX) {
		set_error(info, ORDER, "a list has more than 2^31 scores");
		return;
	}
	int32_t *out = (int32_t *)grown_child(output, total);
	claim memory = claim_start(info, limit);
	int64_t bytes = bytes_for(longest, 2 * sizeof(ordered_score), 0);
	ordered_score *sorted = NULL;
	if (!out) {
		set_error(info, ORDER, "out of memory");
		return;
	}
	if (!claim_take(&memory, bytes)) {
		char message[512];
		claim_refusal(&memory, "fusion", longest, "scores", message, sizeof(message));
		set_error(info, ORDER, message);
		return;
	}
	sorted = (ordered_score *)malloc(longest ? 2 * longest * sizeof(ordered_score) : 1);
	if (!sorted) {
		set_error(info, ORDER, "out of memory");
		claim_end(&memory);
		return;
	}
	duckdb_list_entry *out_entries = (duckdb_list_entry *)duckdb_vector_get_data(output);
	idx_t written = 0;
	for (idx_t row = 0; row < chunk_rows; row++) {
		duckdb_list_entry e = entries[row];
		out_entries[row] = (duckdb_list_entry){written, 0};
		if (!row_valid(scores, row) || !row_valid(texts, row) || !row_valid(at, row)) {
			set_row_null(output, row);
			continue;
		}
		duckdb_list_entry t = text_entries[row], a = at_entries[row];
		if (a.length != e.length) {
			set_error(info, ORDER, "scores and at must be lists of one length");
			break;
		}
		for (idx_t i = 0; i < e.length; i++) {
			double score = data[e.offset + i];
			int present = is_valid(valid, e.offset + i);
			int32_t where = at_data[a.offset + i];
			if (!is_valid(at_valid, a.offset + i) || where < 1 || (idx_t)where > t.length ||
			    !is_valid(text_valid, t.offset + (idx_t)where - 1)) {
				set_error(info, ORDER, "at must hold 1-based indices of texts that are not NULL");
				free(sorted);
				claim_end(&memory);
				return;
			}
			sorted[i] = (ordered_score){score, (int32_t)i, !present ? 2 : isnan(score) ? 0 : 1,
			                            &text_data[t.offset + (idx_t)where - 1]};
		}
		sort_scores(NULL, sorted, sorted + e.length, e.length);
		for (idx_t i = 0; i < e.length; i++) {
			out[written + i] = sorted[i].index + 1;
		}
		out_entries[row].length = e.length;
		written += e.length;
	}
	duckdb_list_vector_set_size(output, written);
	free(sorted);
	claim_end(&memory);
}

/* --- registration --------------------------------------------------------------------------------- */

static duckdb_logical_type layout_type(duckdb_logical_type integer, duckdb_logical_type bigint,
                                       duckdb_logical_type real) {
	duckdb_logical_type row_members[R_FIELDS] = {integer, real, real, bigint, bigint, real, real, real, real, real};
	const char *row_names[R_FIELDS] = {"system", "score", "weight", "position", "s_count",
	                                   "s_min", "s_max", "s_sum", "s_mean", "s_sd"};
	duckdb_logical_type row = duckdb_create_struct_type(row_members, row_names, R_FIELDS);
	duckdb_logical_type rows = duckdb_create_list_type(row);
	duckdb_logical_type integers = duckdb_create_list_type(integer);
	duckdb_logical_type members[L_FIELDS] = {rows, integers, integers, integer};
	const char *names[L_FIELDS] = {"rows", "sizes", "firsts", "duplicate"};
	duckdb_logical_type result = duckdb_create_struct_type(members, names, L_FIELDS);
	duckdb_destroy_logical_type(&row);
	duckdb_destroy_logical_type(&rows);
	duckdb_destroy_logical_type(&integers);
	return result;
}

duckdb_state duckrank_register_fusion(duckdb_connection connection, budget *account) {
	duckdb_logical_type integer = duckdb_create_logical_type(DUCKDB_TYPE_INTEGER);
	duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
	duckdb_logical_type real = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
	duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
	duckdb_logical_type integers = duckdb_create_list_type(integer);
	duckdb_logical_type reals = duckdb_create_list_type(real);
	duckdb_logical_type texts = duckdb_create_list_type(varchar);
	duckdb_logical_type nested = duckdb_create_list_type(reals);
	duckdb_logical_type layout = layout_type(integer, bigint, real);
	duckdb_logical_type layout_parameters[] = {integers, texts, reals, reals, integer};
	duckdb_logical_type split_parameters[] = {reals, integers};
	duckdb_state state = budget_register(connection, account, LAYOUT, layout_parameters, 5, layout, lay_out_rows, 0);
	if (state == DuckDBSuccess) {
		state = budget_register(connection, account, SPLIT, split_parameters, 2, nested, split_rows, 0);
	}
	duckdb_logical_type order_parameters[] = {reals, texts, integers};
	if (state == DuckDBSuccess) {
		state = budget_register(connection, account, ORDER, order_parameters, 3, integers, order_rows, 0);
	}
	duckdb_logical_type *types[] = {&integer, &bigint, &real, &varchar, &integers, &reals, &texts, &nested, &layout};
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		duckdb_destroy_logical_type(types[i]);
	}
	return state;
}
