/* The truth table's scratch and the errors and NULLs of the matching functions' rows
 * (truth_table.h). */
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "truth_table.h"

#include <stdlib.h>
#include <string.h>

/* A call's scratch, counted against `limit` in the database's account. */
truth_scratch new_truth_scratch(duckdb_function_info info, int64_t limit) {
	truth_scratch s;
	memset(&s, 0, sizeof(s));
	s.memory = claim_start(info, limit);
	return s;
}

void release_truth_scratch(truth_scratch *s) {
	free(s->slots);
	free(s->positions);
	claim_end(&s->memory);
}

/* Sizes the table for a row with `truth_len` items and starts the row. */
row_start start_row(truth_scratch *s, idx_t truth_len, idx_t top) {
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

void set_row_error(duckdb_function_info info, const char *name, const truth_scratch *s, row_start failure,
                   idx_t truth_len) {
	if (failure == ROW_NO_MEMORY) {
		set_error(info, name, "out of memory in the native matching step");
		return;
	}
	char problem[512];
	claim_refusal(&s->memory, "matching", truth_len, "truth items", problem, sizeof(problem));
	set_error(info, name, problem);
}

duckdb_type list_child_type(duckdb_vector list) {
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

void set_null(duckdb_vector output, idx_t row, idx_t fields) {
	duckdb_vector_ensure_validity_writable(output);
	duckdb_validity_set_row_invalid(duckdb_vector_get_validity(output), row);
	for (idx_t field = 0; field < fields; field++) {
		duckdb_vector child = duckdb_struct_vector_get_child(output, field);
		duckdb_vector_ensure_validity_writable(child);
		duckdb_validity_set_row_invalid(duckdb_vector_get_validity(child), row);
	}
}
