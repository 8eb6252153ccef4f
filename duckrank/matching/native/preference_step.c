/*
 * The cold parts the native preference step's families (edrc.c, correlation.c) share, declared in
 * preference_step.h: a row's scratch and its memory errors, the length check, reading DuckDB's
 * vectors and sizing a finder.
 */
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "preference_step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char NOT_HANDLED[] = "these id types are not handled by the native preference step";


void *reserve(preference_scratch *s, buffer_id id, int64_t bytes) {
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

void release_preference_scratch(preference_scratch *s) {
	for (int i = 0; i < B_COUNT; i++) {
		free(s->buffers[i].data);
	}
	claim_end(&s->memory);
}

void memory_error(duckdb_function_info info, const char *name, const preference_scratch *s, idx_t items) {
	if (s->no_memory) {
		set_error(info, name, "out of memory in the native preference step");
		return;
	}
	char problem[512];
	claim_refusal(&s->memory, "preference", items, "items", problem, sizeof(problem));
	set_error(info, name, problem);
}
int check_lengths(duckdb_function_info info, const char *name, idx_t first, idx_t second) {
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

int is_list(duckdb_vector vector) {
	duckdb_logical_type type = duckdb_vector_get_column_type(vector);
	int list = duckdb_get_type_id(type) == DUCKDB_TYPE_LIST;
	duckdb_destroy_logical_type(&type);
	return list;
}

ids ids_of(duckdb_vector items) {
	duckdb_logical_type type = duckdb_vector_get_column_type(items);
	ids v = {duckdb_get_type_id(type), duckdb_vector_get_data(items), duckdb_vector_get_validity(items)};
	duckdb_destroy_logical_type(&type);
	return v;
}

int preference_family_of(const ids *lists, int count) {
	int integers = 1, strings = 1;
	for (int i = 0; i < count; i++) {
		integers &= fits_int64(kind_of(lists[i].type));
		strings &= lists[i].type == DUCKDB_TYPE_VARCHAR;
	}
	return integers ? 1 : strings ? 2 : 0;
}

int64_t call_limit(duckdb_function_info info, const char *name, const ids *lists, int count,
                   duckdb_data_chunk input, idx_t arguments) {
	if (!preference_family_of(lists, count)) {
		set_error(info, name, NOT_HANDLED);
		return -1;
	}
	return budget_limit(info, name, input, arguments);
}

void id_name(const ids *v, idx_t i, char *out, size_t size) {
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

int start_hash(preference_scratch *s, finder *f, int strings, idx_t count) {
	uint64_t size = 64;
	int bits = 6;
	while (size < 4 * (uint64_t)count) {
		size *= 2;
		bits++;
	}
	f->strings = strings;
	f->direct = 0;
	f->slots = (slot *)reserve(s, B_SLOTS, bytes_for(size, sizeof(slot), 0));
	if (!f->slots) {
		return 0;
	}
	memset(f->slots, 0, size * sizeof(slot));
	f->shift = 64 - bits;
	return 1;
}

int start_finder(preference_scratch *s, finder *f, const ids *v, idx_t offset, idx_t count) {
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

preference_scratch new_preference_scratch(duckdb_function_info info, int64_t limit) {
	preference_scratch s;
	memset(&s, 0, sizeof(s));
	s.memory = claim_start(info, limit);
	return s;
}

void set_row_null(duckdb_vector output, idx_t row) {
	duckdb_vector_ensure_validity_writable(output);
	duckdb_validity_set_row_invalid(duckdb_vector_get_validity(output), row);
}

void null_if_nan(duckdb_vector output, const double *out, idx_t row) {
	if (isnan(out[row])) {
		set_row_null(output, row);
	}
}

duckdb_state register_preference_function(duckdb_connection connection, budget *account, const char *name,
                                          const duckdb_type *types, idx_t count, duckdb_scalar_function_t rows) {
	duckdb_logical_type real = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
	duckdb_logical_type parameters[8];
	for (idx_t i = 0; i < count; i++) {
		parameters[i] = types[i] == DUCKDB_TYPE_LIST ? duckdb_create_list_type(real)
		                                             : duckdb_create_logical_type(types[i]);
	}
	duckdb_state state = budget_register(connection, account, name, parameters, count, real, rows, 1);
	for (idx_t i = 0; i < count; i++) {
		duckdb_destroy_logical_type(&parameters[i]);
	}
	duckdb_destroy_logical_type(&real);
	return state;
}
