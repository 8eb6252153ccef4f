/*
 * duckrank's rank correlations (spearman, kendall_tau, ap_correlation, fcp) as native code, part of
 * the same DuckDB C API extension as match.c, whose entry point (extension.c) calls
 * duckrank_register_correlation once per database. One scalar function:
 *
 *     duckrank_native_correlation(function VARCHAR, rec LIST, keys LIST, grades DOUBLE[]) -> DOUBLE
 *
 * with current_setting('memory_limit') as an optional last argument. It computes, row by row,
 * what the numpy kernels compute over Arrow batches (duckrank/metrics/correlation.py holds the
 * definitions; docs/preference.md the conventions), and the macros (duckrank/engines/python_udfs.py)
 * call it when the extension is loaded and the ids are of a kind handled here: integers that fit a
 * BIGINT (any mix of widths, compared by value), or VARCHAR on every side. It shares the preference
 * step's scratch (memory counted as edrc's: see preference_step.h), its reading of DuckDB's vectors
 * and its finder with edrc.c.
 */
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "preference_step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	int64_t limit = call_limit(info, name, lists, 2, input, 4);
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

	preference_scratch s = new_preference_scratch(info, limit);
	for (idx_t row = 0; row < rows; row++) {
		out[row] = 0.0;
		if (!is_valid(rec_valid, row) || !is_valid(key_valid, row) || !is_valid(grade_list_valid, row)) {
			set_row_null(output, row);
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
		null_if_nan(output, out, row);
	}
	release_preference_scratch(&s);
}

/* --- registration ----------------------------------------------------------------------------- */

duckdb_state duckrank_register_correlation(duckdb_connection connection, budget *account) {
	/* rec and keys: any list; grades: DOUBLE[] */
	static const duckdb_type correlation[] = {DUCKDB_TYPE_VARCHAR, DUCKDB_TYPE_ANY, DUCKDB_TYPE_ANY, DUCKDB_TYPE_LIST};
	return register_preference_function(connection, account, "duckrank_native_correlation", correlation, 4,
	                                    correlation_rows);
}
