/* The memory account of duckrank's native functions in one database (truth_table.h says why they
 * keep one: the C API has no allocation DuckDB counts against memory_limit). The entry point
 * (extension.c) creates it and every scalar function it registers shares it, so that the matching
 * and preference steps together never hold more than memory_limit. Each call takes its bytes
 * from it through a `claim`. */
#ifndef DUCKRANK_BUDGET_H
#define DUCKRANK_BUDGET_H

#include <stdatomic.h>
#include <stdint.h>

typedef struct {
	atomic_llong held;  /* bytes the calls running right now hold */
	int64_t load_limit; /* memory_limit when the extension was loaded; INT64_MAX if unreadable */
	atomic_int references;
} budget;

/* A new account (one reference, the caller's; NULL when malloc fails) and its release: the last
 * reference frees it. */
budget *budget_new(duckdb_connection connection);
void budget_drop(void *account);

/* Registers `name` with `count` parameters, and with one more, memory_limit (VARCHAR), both
 * counting against `account`; with `special_handling`, NULL arguments reach `body`. */
duckdb_state budget_register(duckdb_connection connection, budget *account, const char *name,
                             duckdb_logical_type *parameters, idx_t count, duckdb_logical_type result,
                             duckdb_scalar_function_t body, int special_handling);

/* memory_limit for a call of a function with `arguments` arguments before it: the optional last
 * argument (the macros pass current_setting('memory_limit'), a constant), else its value at load;
 * -1, with the error set (naming `name`), when that argument is not a size. */
int64_t budget_limit(duckdb_function_info info, const char *name, duckdb_data_chunk input, idx_t arguments);

/* `count` elements of `each` bytes plus `extra` bytes, or TOO_MANY_BYTES when that does not fit an
 * int64. Every size the native functions compute from a list's length goes through it (or is
 * bounded by one that did): the length comes from the data, and a size that wrapped would make
 * a small allocation indexed as a large one. */
#define TOO_MANY_BYTES INT64_MAX
static inline int64_t bytes_for(uint64_t count, uint64_t each, uint64_t extra) {
	uint64_t bytes;
	if (__builtin_mul_overflow(count, each, &bytes) || __builtin_add_overflow(bytes, extra, &bytes) ||
	    bytes >= (uint64_t)TOO_MANY_BYTES) {
		return TOO_MANY_BYTES;
	}
	return (int64_t)bytes;
}

/* One call's part of the account. */
typedef struct {
	budget *account;
	int64_t limit;     /* memory_limit for this call, in bytes */
	int64_t held;      /* this call's bytes in account->held */
	int64_t refused;   /* the allocation memory_limit refused, and what all calls held then */
	int64_t held_then;
} claim;

claim claim_start(duckdb_function_info info, int64_t limit);
/* Counts `bytes` more for this call; 0 (and nothing counted) when that would take the calls of
 * the database past memory_limit, and always for TOO_MANY_BYTES (what bytes_for gives for a size
 * that does not fit an int64), whatever the limit. */
int claim_take(claim *c, int64_t bytes);
void claim_give_back(claim *c, int64_t bytes);
/* The call's end: gives back everything it still holds. */
void claim_end(claim *c);

/* The refusal as DuckDB words its own: "Out of Memory Error: the native <step> step could not
 * allocate <bytes> for a row of <count> <items> (<held>/<limit> used by it): ...". */
void claim_refusal(const claim *c, const char *step, idx_t count, const char *items, char *out, size_t size);

#endif
