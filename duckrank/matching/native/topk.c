/*
 * duckrank's top-K ranking aggregate, registered by the entry point (extension.c, duckrank_register_top_k):
 *
 *     duckrank_top_k(item T, key BIGINT | DOUBLE, k BIGINT) -> LIST(T)
 *
 * per group, the k largest (key, item) pairs in descending order of key, then of item, every row
 * kept (tied and repeated rows included), as items: the first k items of
 * to_ordered_list(item, key, '-reverse') and of DuckDB's max({'k': key, 'v': item}, k), which
 * duckrank.evaluate uses where this aggregate is not loaded. Orders are DuckDB's: -0.0 equals 0.0,
 * every NaN is one value above +inf, integers by value, VARCHAR by its bytes (a prefix first).
 * Rows with a NULL item or key are skipped; a group with none left gives NULL. k is a positive
 * integer below 2^32, the same on every row of a group (evaluate passes a constant); anything else is an error
 * naming the function, the argument and the value.
 *
 * T is an integer type of at most 64 bits, FLOAT, DOUBLE or VARCHAR (evaluate takes the SQL form for other item
 * types, and for keys that BIGINT or DOUBLE cannot hold exactly: it casts the keys it sends).
 *
 *     duckrank_top_k(item T, key BIGINT | DOUBLE, k BIGINT, 'text') -> LIST(T), T an integer type
 *
 * the same, but tied keys order by the item's decimal text (its VARCHAR cast) in byte order, descending (the
 * fourth argument must be 'text' on every row): the first k items of
 * list_transform(max({'k': key, 't': CAST(item AS VARCHAR), 'v': item}, k), e -> e.v), evaluate's order for
 * integer ids (trec_eval's strcmp: as bytes '10' < '9' and '-1' < '-2', every negative below every other, so a
 * tie lists 9 before 10 and -2 before -1). The text is never written out: two items' digits are compared
 * arithmetically (compare_decimal), and only when their keys tie.
 *
 * Why native: the SQL forms sort every row of a group (to_ordered_list) or keep a heap of STRUCT
 * values in DuckDB's generic sort-key encoding (max(x, k)); evaluate's long runs (issue 19, item 4)
 * spent most of their time there. Here a group's state is a binary min-heap of at most k (key,
 * item) pairs, each key and item mapped once to an unsigned 64-bit word of the same order, so most
 * rows of a long group cost one comparison with the heap's root. It keeps no hash table, and its
 * words are not common.h's read64: those make equal ids equal (a float by its bits), these order
 * them as DuckDB does (double_word, read_item), so the two readers stay apart.
 *
 * Memory: a group holds at most min(k, its rows) pairs of 16 bytes (24 for VARCHAR, plus a copy of
 * an item longer than 12 bytes), allocated with malloc as the group grows (doubling), so short
 * groups do not reserve k places; evaluate bounds the groups of one query by its ranges of query
 * ids (evaluation/planning.py, TOP_K_ROW_WEIGHT). DuckDB does not count this memory against
 * memory_limit (the C API has no allocation it counts) and cannot spill it.
 *
 * evaluate calls this aggregate only under GROUP BY. It also runs as a window (running windows
 * combine DuckDB's segment-tree states into each row's: combine copies, never moves, and finalize
 * leaves its state a valid heap). Public reports (duckdb/duckdb#26109) say that DuckDB 1.4 and 1.5
 * pass C API aggregates one state for many rows as whole-partition windows (top_k(...) OVER ())
 * and with an ORDER BY inside the call; DuckDB 2.0 ran both shapes right here.
 */
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "common.h"
#include "families.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "duckrank_top_k"
#define SIGN_BIT 0x8000000000000000ULL

/* How an item is read and written: as a signed or unsigned integer or a float of `width` bytes, or a
 * string. */
typedef enum { ITEM_SIGNED, ITEM_UNSIGNED, ITEM_FLOAT, ITEM_STRING } item_kind;

/* How two pairs with the same key order: by the item's order word, by a string's bytes, or by the decimal
 * text of a signed or unsigned integer item (the overloads with 'text'). */
typedef enum { ORDER_VALUE, ORDER_STRING, ORDER_SIGNED_TEXT, ORDER_UNSIGNED_TEXT } item_order;

typedef struct {
	item_kind kind;
	int width;        /* bytes of an integer item */
	int double_keys;  /* the key argument is DOUBLE (else BIGINT) */
	item_order order;
} signature;

/* One kept row: its key and, for numbers, its item as order-preserving words, with the item's own
 * bits (a float's order word forgets -0.0's sign and a NaN's payload); a string item is owned by the
 * entry (a copy when longer than 12 bytes). */
typedef struct {
	uint64_t key;
	uint64_t item;
	union {
		uint64_t bits;
		duckdb_string_t text;
	} value;
} entry;

typedef struct {
	entry *heap; /* a min-heap: heap[0] is the smallest pair kept */
	uint32_t count;
	uint32_t capacity;
	int64_t k;   /* 0 until the group's first row */
	int strings; /* the entries own texts (destroy frees them) */
} top_state;

static inline uint64_t double_word(double x) {
	if (x != x) {
		return UINT64_MAX; /* every NaN: one value, above +inf (0xFFF0...) */
	}
	if (x == 0.0) {
		x = 0.0; /* -0.0 equals 0.0 */
	}
	uint64_t bits;
	memcpy(&bits, &x, 8);
	return (bits & SIGN_BIT) ? ~bits : bits | SIGN_BIT;
}

/* The item's order word; its bits in `*bits`. */
static inline __attribute__((always_inline)) uint64_t read_item(item_kind kind, int width, const void *data,
                                                                idx_t row, uint64_t *bits) {
	if (kind == ITEM_FLOAT) {
		if (width == 4) {
			float f = ((const float *)data)[row];
			uint32_t b;
			memcpy(&b, &f, 4);
			*bits = b;
			return double_word((double)f);
		}
		double d = ((const double *)data)[row];
		memcpy(bits, &d, 8);
		return double_word(d);
	}
	*bits = 0;
	if (kind == ITEM_SIGNED) {
		switch (width) {
		case 1: return (uint64_t)(int64_t)((const int8_t *)data)[row] ^ SIGN_BIT;
		case 2: return (uint64_t)(int64_t)((const int16_t *)data)[row] ^ SIGN_BIT;
		case 4: return (uint64_t)(int64_t)((const int32_t *)data)[row] ^ SIGN_BIT;
		default: return (uint64_t)((const int64_t *)data)[row] ^ SIGN_BIT;
		}
	}
	switch (width) {
	case 1: return ((const uint8_t *)data)[row];
	case 2: return ((const uint16_t *)data)[row];
	case 4: return ((const uint32_t *)data)[row];
	default: return ((const uint64_t *)data)[row];
	}
}

static inline void write_item(const signature *sig, void *data, idx_t row, const entry *e) {
	uint64_t word = sig->kind == ITEM_FLOAT ? e->value.bits : e->item;
	if (sig->kind == ITEM_SIGNED) {
		word ^= SIGN_BIT;
	}
	switch (sig->width) {
	case 1: ((uint8_t *)data)[row] = (uint8_t)word; break;
	case 2: ((uint16_t *)data)[row] = (uint16_t)word; break;
	case 4: ((uint32_t *)data)[row] = (uint32_t)word; break;
	default: ((uint64_t *)data)[row] = word; break;
	}
}

/* Byte order, a prefix first: DuckDB's order of VARCHAR values. */
static inline int compare_text(const duckdb_string_t *a, const duckdb_string_t *b) {
	uint32_t la = a->value.inlined.length, lb = b->value.inlined.length;
	int c = memcmp(string_data(a), string_data(b), la < lb ? la : lb);
	return c ? c : (la > lb) - (la < lb);
}

static const uint64_t POWERS_OF_TEN[20] = {
    1ULL,          10ULL,          100ULL,          1000ULL,          10000ULL,
    100000ULL,     1000000ULL,     10000000ULL,     100000000ULL,     1000000000ULL,
    10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
    1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL,
    10000000000000000000ULL};

/* Decimal digits of x (1 to 20; 0 has one): from its bit length, log10(2) ~ 1233 / 4096 gives the digits of
 * 2^(bits - 1), one short when x reaches the next power of ten. */
static inline int decimal_digits(uint64_t x) {
	x |= 1;
	int n = ((64 - __builtin_clzll(x)) * 1233) >> 12;
	return n + (x >= POWERS_OF_TEN[n]);
}

/* The byte order of the decimal texts of two different numbers: of the same length, their values'; else the
 * longer one's leading digits (as many as the shorter has) against the shorter, and a prefix first. */
static int compare_digits(uint64_t a, uint64_t b) {
	int da = decimal_digits(a), db = decimal_digits(b);
	if (da == db) {
		return a < b ? -1 : 1;
	}
	if (da < db) {
		uint64_t head = b / POWERS_OF_TEN[db - da];
		return a == head ? -1 : (a < head ? -1 : 1);
	}
	uint64_t head = a / POWERS_OF_TEN[da - db];
	return head == b ? 1 : (head < b ? -1 : 1);
}

/* <0, 0, >0 as the VARCHAR cast of integer item a orders before, with or after b's, from their order words (a
 * signed value's is value ^ SIGN_BIT): '-' (0x2D) sorts before every digit, so negatives come first, and
 * two negatives compare as the digits of their magnitudes (INT64_MIN's is 2^63). */
static int compare_decimal(int signed_items, uint64_t a, uint64_t b) {
	if (a == b) {
		return 0;
	}
	if (signed_items) {
		int negative_a = a < SIGN_BIT, negative_b = b < SIGN_BIT;
		if (negative_a != negative_b) {
			return negative_a ? -1 : 1;
		}
		a ^= SIGN_BIT;
		b ^= SIGN_BIT;
		if (negative_a) {
			a = 0 - a;
			b = 0 - b;
		}
	}
	return compare_digits(a, b);
}

/* <0, 0, >0 as pair a orders before, with or after pair b (ascending). */
static inline __attribute__((always_inline)) int compare(item_order order, const entry *a, const entry *b) {
	if (a->key != b->key) {
		return a->key < b->key ? -1 : 1;
	}
	switch (order) {
	case ORDER_VALUE: return (a->item > b->item) - (a->item < b->item);
	case ORDER_STRING: return compare_text(&a->value.text, &b->value.text);
	default: return compare_decimal(order == ORDER_SIGNED_TEXT, a->item, b->item);
	}
}

static void free_text(entry *e) {
	if (e->value.text.value.inlined.length > 12) {
		free(e->value.text.value.pointer.ptr);
	}
}

/* A copy of `s` that the entry owns; 0 when out of memory. */
static int own_text(entry *e, const duckdb_string_t *s) {
	e->value.text = *s;
	uint32_t length = s->value.inlined.length;
	if (length > 12) {
		char *copy = (char *)malloc(length);
		if (!copy) {
			return 0;
		}
		memcpy(copy, s->value.pointer.ptr, length);
		e->value.text.value.pointer.ptr = copy;
	}
	return 1;
}

static void sift_down(item_order order, entry *heap, uint32_t count, uint32_t at) {
	entry moving = heap[at];
	for (;;) {
		uint32_t child = 2 * at + 1;
		if (child >= count) {
			break;
		}
		if (child + 1 < count && compare(order, &heap[child + 1], &heap[child]) < 0) {
			child++;
		}
		if (compare(order, &heap[child], &moving) >= 0) {
			break;
		}
		heap[at] = heap[child];
		at = child;
	}
	heap[at] = moving;
}

static void sift_up(item_order order, entry *heap, uint32_t at) {
	entry moving = heap[at];
	while (at > 0) {
		uint32_t parent = (at - 1) / 2;
		if (compare(order, &heap[parent], &moving) <= 0) {
			break;
		}
		heap[at] = heap[parent];
		at = parent;
	}
	heap[at] = moving;
}

typedef enum { OFFER_KEPT, OFFER_REJECTED, OFFER_NO_MEMORY } offer_result;

/* Offers pair `e` to the group: kept when the group has fewer than k pairs or `e` orders after its
 * smallest (which then leaves). With `owned`, `e`'s string already belongs to the caller, who hands
 * it over (it is freed when rejected); otherwise a kept string is copied. */
static offer_result offer(item_order order, top_state *s, entry *e, int owned) {
	int strings = order == ORDER_STRING;
	if (s->count < (uint64_t)s->k) {
		if (s->count == s->capacity) {
			/* One allocation for the common cut-offs (k <= 16), doubling beyond. */
			uint64_t grown = s->capacity ? 2 * (uint64_t)s->capacity : 16;
			uint32_t capacity = (uint32_t)(grown < (uint64_t)s->k ? grown : (uint64_t)s->k);
			entry *heap = (entry *)realloc(s->heap, capacity * sizeof(entry));
			if (!heap) {
				return OFFER_NO_MEMORY;
			}
			s->heap = heap;
			s->capacity = capacity;
		}
		if (strings && !owned && !own_text(e, &e->value.text)) {
			return OFFER_NO_MEMORY;
		}
		s->heap[s->count++] = *e;
		sift_up(order, s->heap, s->count - 1);
		return OFFER_KEPT;
	}
	if (compare(order, e, &s->heap[0]) <= 0) {
		if (strings && owned) {
			free_text(e);
		}
		return OFFER_REJECTED;
	}
	if (strings) {
		if (!owned && !own_text(e, &e->value.text)) {
			return OFFER_NO_MEMORY;
		}
		free_text(&s->heap[0]);
	}
	s->heap[0] = *e;
	sift_down(order, s->heap, s->count, 0);
	return OFFER_KEPT;
}

/* An aggregate's error, worded as the scalar functions' (common.h). */
static void set_aggregate_error(duckdb_function_info info, const char *problem) {
	char message[ERROR_BYTES];
	error_message(message, NAME, problem);
	duckdb_aggregate_function_set_error(info, message);
}

static void no_memory(duckdb_function_info info) {
	set_aggregate_error(info, "out of memory for a group's top k (k is too large for the memory left)");
}

static idx_t state_size(duckdb_function_info info) {
	(void)info;
	return sizeof(top_state);
}

static void state_init(duckdb_function_info info, duckdb_aggregate_state state) {
	(void)info;
	memset(state, 0, sizeof(top_state));
}

/* One chunk's columns, read in place. */
typedef struct {
	idx_t rows;
	const void *items, *keys;
	const int64_t *ks;
	const uint64_t *item_valid, *key_valid, *k_valid;
} chunk_columns;

/* The group's k from a row's: set on its first row, then the same on every row. 0 on an error. */
static int check_k(duckdb_function_info info, top_state *s, const chunk_columns *in, idx_t row, int strings) {
	char problem[160];
	if (!is_valid(in->k_valid, row)) {
		set_aggregate_error(info, "k must be a positive integer, got NULL");
		return 0;
	}
	int64_t k = in->ks[row];
	if (k < 1 || k > UINT32_MAX) {
		snprintf(problem, sizeof(problem), "k must be an integer from 1 to %" PRIu32 ", got %" PRId64,
		         (uint32_t)UINT32_MAX, k);
		set_aggregate_error(info, problem);
		return 0;
	}
	if (s->k != 0 && s->k != k) {
		snprintf(problem, sizeof(problem), "k must be the same on every row of a group, got %" PRId64 " and %" PRId64,
		         s->k, k);
		set_aggregate_error(info, problem);
		return 0;
	}
	s->k = k;
	s->strings = strings;
	return 1;
}

/* The rows of a chunk, for one signature: inlined with constant arguments (see update), so the
 * compiler drops the per-row choice of item reader and key reader. */
static inline __attribute__((always_inline)) void update_rows(duckdb_function_info info, const chunk_columns *in,
                                                              duckdb_aggregate_state *states, item_kind kind,
                                                              int width, int double_keys, item_order order) {
	int strings = kind == ITEM_STRING;
	int all_valid = !in->item_valid && !in->key_valid && !in->k_valid;
	for (idx_t row = 0; row < in->rows; row++) {
		top_state *s = (top_state *)states[row];
		if ((!all_valid || in->ks[row] != s->k) && !check_k(info, s, in, row, strings)) {
			return;
		}
		if (!all_valid && (!is_valid(in->item_valid, row) || !is_valid(in->key_valid, row))) {
			continue;
		}
		entry e;
		e.key = double_keys ? double_word(((const double *)in->keys)[row])
		                    : (uint64_t)((const int64_t *)in->keys)[row] ^ SIGN_BIT;
		if (strings) {
			e.item = 0;
			e.value.text = ((const duckdb_string_t *)in->items)[row];
		} else {
			e.item = read_item(kind, width, in->items, row, &e.value.bits);
		}
		/* Most rows of a long group: not above the smallest pair kept. */
		if (s->count == (uint64_t)s->k && compare(order, &e, &s->heap[0]) <= 0) {
			continue;
		}
		if (offer(order, s, &e, 0) == OFFER_NO_MEMORY) {
			no_memory(info);
			return;
		}
	}
}

#define UPDATE_ORDERED(item_kind_, width_, order_)                                                              \
	if (sig->kind == (item_kind_) && sig->width == (width_) && sig->order == (order_)) {                       \
		if (sig->double_keys) {                                                                                \
			update_rows(info, &in, states, item_kind_, width_, 1, order_);                                     \
		} else {                                                                                               \
			update_rows(info, &in, states, item_kind_, width_, 0, order_);                                     \
		}                                                                                                      \
		return;                                                                                                \
	}
#define UPDATE_AS(item_kind_, width_) UPDATE_ORDERED(item_kind_, width_, (item_kind_) == ITEM_STRING ? ORDER_STRING : ORDER_VALUE)
/* An integer item, by value or by its decimal text (the overloads with 'text'). */
#define UPDATE_INTEGER(item_kind_, width_, text_order_)                                                         \
	UPDATE_AS(item_kind_, width_)                                                                              \
	UPDATE_ORDERED(item_kind_, width_, text_order_)

/* Whether every row's fourth argument is 'text' (the overloads that order ties by the decimal text). */
static int all_text(duckdb_function_info info, duckdb_data_chunk input) {
	duckdb_vector order = duckdb_data_chunk_get_vector(input, 3);
	const duckdb_string_t *words = (const duckdb_string_t *)duckdb_vector_get_data(order);
	const uint64_t *valid = duckdb_vector_get_validity(order);
	for (idx_t row = 0, rows = duckdb_data_chunk_get_size(input); row < rows; row++) {
		if (!is_valid(valid, row) || words[row].value.inlined.length != 4 ||
		    memcmp(words[row].value.inlined.inlined, "text", 4) != 0) {
			set_aggregate_error(info, "the fourth argument (how tied keys order) must be 'text'");
			return 0;
		}
	}
	return 1;
}

static void update(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states) {
	const signature *sig = (const signature *)duckdb_aggregate_function_get_extra_info(info);
	if (sig->order == ORDER_SIGNED_TEXT || sig->order == ORDER_UNSIGNED_TEXT) {
		if (!all_text(info, input)) {
			return;
		}
	}
	duckdb_vector items = duckdb_data_chunk_get_vector(input, 0);
	duckdb_vector keys = duckdb_data_chunk_get_vector(input, 1);
	duckdb_vector ks = duckdb_data_chunk_get_vector(input, 2);
	chunk_columns in = {duckdb_data_chunk_get_size(input),
	                    duckdb_vector_get_data(items),
	                    duckdb_vector_get_data(keys),
	                    (const int64_t *)duckdb_vector_get_data(ks),
	                    duckdb_vector_get_validity(items),
	                    duckdb_vector_get_validity(keys),
	                    duckdb_vector_get_validity(ks)};
	UPDATE_INTEGER(ITEM_SIGNED, 1, ORDER_SIGNED_TEXT)
	UPDATE_INTEGER(ITEM_SIGNED, 2, ORDER_SIGNED_TEXT)
	UPDATE_INTEGER(ITEM_SIGNED, 4, ORDER_SIGNED_TEXT)
	UPDATE_INTEGER(ITEM_SIGNED, 8, ORDER_SIGNED_TEXT)
	UPDATE_INTEGER(ITEM_UNSIGNED, 1, ORDER_UNSIGNED_TEXT)
	UPDATE_INTEGER(ITEM_UNSIGNED, 2, ORDER_UNSIGNED_TEXT)
	UPDATE_INTEGER(ITEM_UNSIGNED, 4, ORDER_UNSIGNED_TEXT)
	UPDATE_INTEGER(ITEM_UNSIGNED, 8, ORDER_UNSIGNED_TEXT)
	UPDATE_AS(ITEM_FLOAT, 4)
	UPDATE_AS(ITEM_FLOAT, 8)
	UPDATE_AS(ITEM_STRING, 0)
}

static void release_state(top_state *s) {
	if (s->strings) {
		for (uint32_t i = 0; i < s->count; i++) {
			free_text(&s->heap[i]);
		}
	}
	free(s->heap);
	memset(s, 0, sizeof(*s));
}

/* Offers each source group's pairs to its target, copying them: the source is left as it was. A
 * GROUP BY destroys the source after combining it, but a window (top_k(...) OVER (ORDER BY ...))
 * combines the states of DuckDB's segment tree into each row's state, the same tree node into many
 * rows: moving the pairs out emptied the node for every later row (NULL or too few items). */
static void combine(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_aggregate_state *target,
                    idx_t count) {
	const signature *sig = (const signature *)duckdb_aggregate_function_get_extra_info(info);
	for (idx_t g = 0; g < count; g++) {
		top_state *from = (top_state *)source[g];
		top_state *to = (top_state *)target[g];
		if (from->k == 0) {
			continue;
		}
		if (to->k == 0) {
			to->k = from->k;
			to->strings = from->strings;
		}
		if (to->k != from->k) {
			char problem[160];
			snprintf(problem, sizeof(problem),
			         "k must be the same on every row of a group, got %" PRId64 " and %" PRId64, to->k, from->k);
			set_aggregate_error(info, problem);
			return;
		}
		for (uint32_t i = 0; i < from->count; i++) {
			/* A copy: offer points a kept string at its own copy of the text, through the entry. */
			entry e = from->heap[i];
			if (offer(sig->order, to, &e, 0) == OFFER_NO_MEMORY) {
				no_memory(info);
				return;
			}
		}
	}
}

/* Heapsort in place: each step moves the smallest pair left to the end, so the min-heap becomes
 * the pairs in descending order. */
static void sort_descending(item_order order, entry *heap, uint32_t count) {
	for (uint32_t last = count; last-- > 1;) {
		entry smallest = heap[0];
		heap[0] = heap[last];
		heap[last] = smallest;
		sift_down(order, heap, last, 0);
	}
}

static void finalize(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_vector result, idx_t count,
                     idx_t offset) {
	const signature *sig = (const signature *)duckdb_aggregate_function_get_extra_info(info);
	int strings = sig->kind == ITEM_STRING;
	idx_t base = duckdb_list_vector_get_size(result), total = 0;
	for (idx_t g = 0; g < count; g++) {
		total += ((top_state *)source[g])->count;
	}
	if (duckdb_list_vector_reserve(result, base + total) != DuckDBSuccess) {
		no_memory(info);
		return;
	}
	duckdb_vector child = duckdb_list_vector_get_child(result);
	void *child_data = duckdb_vector_get_data(child);
	duckdb_list_entry *lists = (duckdb_list_entry *)duckdb_vector_get_data(result);
	idx_t at = base;
	for (idx_t g = 0; g < count; g++) {
		top_state *s = (top_state *)source[g];
		idx_t row = offset + g;
		if (s->count == 0) {
			duckdb_vector_ensure_validity_writable(result);
			duckdb_validity_set_row_invalid(duckdb_vector_get_validity(result), row);
			lists[row].offset = at;
			lists[row].length = 0;
			continue;
		}
		sort_descending(sig->order, s->heap, s->count);
		lists[row].offset = at;
		lists[row].length = s->count;
		for (uint32_t i = 0; i < s->count; i++, at++) {
			if (strings) {
				duckdb_vector_assign_string_element_len(child, at, string_data(&s->heap[i].value.text),
				                                        s->heap[i].value.text.value.inlined.length);
			} else {
				write_item(sig, child_data, at, &s->heap[i]);
			}
		}
		/* Back to a min-heap (ascending order is one), so the state stays one to update, combine or
		 * finalize again: a window may finalize a state it keeps using. */
		for (uint32_t i = 0, j = s->count - 1; i < j; i++, j--) {
			entry swap = s->heap[i];
			s->heap[i] = s->heap[j];
			s->heap[j] = swap;
		}
	}
	duckdb_list_vector_set_size(result, at);
}

static void destroy(duckdb_aggregate_state *states, idx_t count) {
	for (idx_t g = 0; g < count; g++) {
		release_state((top_state *)states[g]);
	}
}

static const struct {
	duckdb_type type;
	item_kind kind;
	int width;
} ITEM_TYPES[] = {
    {DUCKDB_TYPE_TINYINT, ITEM_SIGNED, 1},    {DUCKDB_TYPE_SMALLINT, ITEM_SIGNED, 2},
    {DUCKDB_TYPE_INTEGER, ITEM_SIGNED, 4},    {DUCKDB_TYPE_BIGINT, ITEM_SIGNED, 8},
    {DUCKDB_TYPE_UTINYINT, ITEM_UNSIGNED, 1}, {DUCKDB_TYPE_USMALLINT, ITEM_UNSIGNED, 2},
    {DUCKDB_TYPE_UINTEGER, ITEM_UNSIGNED, 4}, {DUCKDB_TYPE_UBIGINT, ITEM_UNSIGNED, 8},
    {DUCKDB_TYPE_FLOAT, ITEM_FLOAT, 4},       {DUCKDB_TYPE_DOUBLE, ITEM_FLOAT, 8},
    {DUCKDB_TYPE_VARCHAR, ITEM_STRING, 0},
};

/* Adds to `set` the overloads of every item type of ITEM_TYPES (strings by their bytes, numbers by value), or
 * with `text_order` those of the integer types with a fourth argument, VARCHAR ('text'): tied keys by the item's
 * decimal text. */
static duckdb_state add_overloads(duckdb_aggregate_function_set set, int text_order) {
	duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
	duckdb_logical_type real = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
	duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
	duckdb_state state = DuckDBSuccess;
	for (size_t t = 0; t < sizeof(ITEM_TYPES) / sizeof(ITEM_TYPES[0]) && state == DuckDBSuccess; t++) {
		item_kind kind = ITEM_TYPES[t].kind;
		if (text_order && kind != ITEM_SIGNED && kind != ITEM_UNSIGNED) {
			continue;
		}
		for (int double_keys = 0; double_keys <= 1 && state == DuckDBSuccess; double_keys++) {
			signature *sig = (signature *)malloc(sizeof(signature));
			if (!sig) {
				state = DuckDBError;
				break;
			}
			sig->kind = kind;
			sig->width = ITEM_TYPES[t].width;
			sig->double_keys = double_keys;
			sig->order = !text_order ? (kind == ITEM_STRING ? ORDER_STRING : ORDER_VALUE)
			                         : (kind == ITEM_SIGNED ? ORDER_SIGNED_TEXT : ORDER_UNSIGNED_TEXT);
			duckdb_logical_type item = duckdb_create_logical_type(ITEM_TYPES[t].type);
			duckdb_logical_type list = duckdb_create_list_type(item);
			duckdb_aggregate_function function = duckdb_create_aggregate_function();
			duckdb_aggregate_function_set_name(function, NAME);
			duckdb_aggregate_function_add_parameter(function, item);
			duckdb_aggregate_function_add_parameter(function, double_keys ? real : bigint);
			duckdb_aggregate_function_add_parameter(function, bigint);
			if (text_order) {
				duckdb_aggregate_function_add_parameter(function, varchar);
			}
			duckdb_aggregate_function_set_return_type(function, list);
			duckdb_aggregate_function_set_functions(function, state_size, state_init, update, combine, finalize);
			/* Also keeps DuckDB off its streaming-window path, which gives C API aggregates wrong rows. */
			duckdb_aggregate_function_set_destructor(function, destroy);
			/* Rows with NULLs reach update either way; this says the result is not NULL for them. */
			duckdb_aggregate_function_set_special_handling(function);
			duckdb_aggregate_function_set_extra_info(function, sig, free);
			state = duckdb_add_aggregate_function_to_set(set, function);
			duckdb_destroy_aggregate_function(&function);
			duckdb_destroy_logical_type(&list);
			duckdb_destroy_logical_type(&item);
		}
	}
	duckdb_destroy_logical_type(&bigint);
	duckdb_destroy_logical_type(&real);
	duckdb_destroy_logical_type(&varchar);
	return state;
}

duckdb_state duckrank_register_top_k(duckdb_connection connection) {
	duckdb_aggregate_function_set set = duckdb_create_aggregate_function_set(NAME);
	duckdb_state state = add_overloads(set, 0);
	if (state == DuckDBSuccess) {
		state = add_overloads(set, 1);
	}
	if (state == DuckDBSuccess) {
		state = duckdb_register_aggregate_function_set(connection, set);
	}
	duckdb_destroy_aggregate_function_set(&set);
	return state;
}
