/* The memory account shared by the native functions of one database (budget.h). */
#include "capi.h"

DUCKDB_EXTENSION_EXTERN

#include "budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* memory_limit as current_setting() gives it ("476.8 MiB", "16383.9 PiB", "10 bytes"), in
 * bytes; -1 when it is not of that form. Parsed by hand: strtod follows the C locale's decimal
 * point, which a host program may have changed. */
static int64_t parse_bytes(const char *text, idx_t length) {
	static const struct {
		const char *unit;
		double factor;
	} units[] = {{"bytes", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
	             {"TiB", 1099511627776.0}, {"PiB", 1125899906842624.0}};
	double value = 0.0, scale = 1.0;
	idx_t i = 0;
	int digits = 0, fraction = 0;
	for (; i < length && ((text[i] >= '0' && text[i] <= '9') || (text[i] == '.' && !fraction)); i++) {
		if (text[i] == '.') {
			fraction = 1;
		} else if (fraction) {
			scale /= 10.0;
			value += (text[i] - '0') * scale;
			digits++;
		} else {
			value = value * 10.0 + (text[i] - '0');
			digits++;
		}
	}
	while (i < length && text[i] == ' ') {
		i++;
	}
	for (size_t u = 0; digits > 0 && u < sizeof(units) / sizeof(units[0]); u++) {
		size_t unit_length = strlen(units[u].unit);
		if (length - i == unit_length && memcmp(text + i, units[u].unit, unit_length) == 0) {
			double bytes = value * units[u].factor;
			return bytes >= 9.2e18 ? INT64_MAX : (int64_t)bytes;
		}
	}
	return -1;
}

/* Bytes as DuckDB writes them in its errors: "0 bytes", "256.0 KiB", "476.8 MiB". */
static void format_bytes(int64_t bytes, char out[32]) {
	static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	if (bytes < 1024) {
		snprintf(out, 32, "%lld bytes", (long long)bytes);
		return;
	}
	double value = (double)bytes / 1024.0;
	int unit = 0;
	while (value >= 1024.0 && unit < 4) {
		value /= 1024.0;
		unit++;
	}
	snprintf(out, 32, "%.1f %s", value, units[unit]);
}

budget *budget_new(duckdb_connection connection) {
	budget *account = (budget *)malloc(sizeof(budget));
	if (!account) {
		return NULL;
	}
	atomic_init(&account->held, 0);
	atomic_init(&account->references, 1);
	account->load_limit = INT64_MAX;
	duckdb_result result;
	if (duckdb_query(connection, "SELECT current_setting('memory_limit')", &result) == DuckDBSuccess) {
		char *text = duckdb_value_varchar(&result, 0, 0);
		if (text) {
			int64_t limit = parse_bytes(text, strlen(text));
			account->load_limit = limit < 0 ? INT64_MAX : limit;
			duckdb_free(text);
		}
	}
	duckdb_destroy_result(&result);
	return account;
}

void budget_drop(void *account) {
	budget *b = (budget *)account;
	if (atomic_fetch_sub(&b->references, 1) == 1) {
		free(b);
	}
}

duckdb_state budget_register(duckdb_connection connection, budget *account, const char *name,
                             duckdb_logical_type *parameters, idx_t count, duckdb_logical_type result,
                             duckdb_scalar_function_t body, int special_handling) {
	duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
	duckdb_scalar_function_set set = duckdb_create_scalar_function_set(name);
	duckdb_state state = DuckDBSuccess;
	for (idx_t arity = count; arity <= count + 1 && state == DuckDBSuccess; arity++) {
		duckdb_scalar_function function = duckdb_create_scalar_function();
		duckdb_scalar_function_set_name(function, name);
		for (idx_t i = 0; i < arity; i++) {
			duckdb_scalar_function_add_parameter(function, i < count ? parameters[i] : varchar);
		}
		duckdb_scalar_function_set_return_type(function, result);
		duckdb_scalar_function_set_function(function, body);
		if (special_handling) {
			duckdb_scalar_function_set_special_handling(function);
		}
		atomic_fetch_add(&account->references, 1);
		duckdb_scalar_function_set_extra_info(function, account, budget_drop);
		state = duckdb_add_scalar_function_to_set(set, function);
		duckdb_destroy_scalar_function(&function);
	}
	if (state == DuckDBSuccess) {
		state = duckdb_register_scalar_function_set(connection, set);
	}
	duckdb_destroy_scalar_function_set(&set);
	duckdb_destroy_logical_type(&varchar);
	return state;
}

int64_t budget_limit(duckdb_function_info info, const char *name, duckdb_data_chunk input, idx_t arguments) {
	budget *account = (budget *)duckdb_scalar_function_get_extra_info(info);
	if (duckdb_data_chunk_get_column_count(input) <= arguments || duckdb_data_chunk_get_size(input) == 0) {
		return account->load_limit;
	}
	duckdb_vector setting = duckdb_data_chunk_get_vector(input, arguments);
	const uint64_t *validity = duckdb_vector_get_validity(setting);
	if (validity && !(validity[0] & 1)) {
		return account->load_limit;
	}
	const duckdb_string_t *text = (const duckdb_string_t *)duckdb_vector_get_data(setting);
	uint32_t length = text->value.inlined.length;
	const char *data = length <= 12 ? text->value.inlined.inlined : text->value.pointer.ptr;
	int64_t limit = parse_bytes(data, length);
	if (limit < 0) {
		char message[256];
		snprintf(message, sizeof(message),
		         "%s: memory_limit '%.*s' is not a size as current_setting('memory_limit') gives it", name,
		         length > 64 ? 64 : (int)length, data);
		duckdb_scalar_function_set_error(info, message);
	}
	return limit;
}

claim claim_start(duckdb_function_info info, int64_t limit) {
	claim c;
	memset(&c, 0, sizeof(c));
	c.account = (budget *)duckdb_scalar_function_get_extra_info(info);
	c.limit = limit;
	return c;
}

int claim_take(claim *c, int64_t bytes) {
	/* Refused before it is added: held + bytes must not overflow. */
	if (bytes < 0 || bytes >= TOO_MANY_BYTES || bytes > c->limit) {
		c->refused = bytes;
		c->held_then = atomic_load(&c->account->held);
		return 0;
	}
	long long before = atomic_fetch_add(&c->account->held, bytes);
	if (bytes > c->limit - before) {
		atomic_fetch_sub(&c->account->held, bytes);
		c->refused = bytes;
		c->held_then = before;
		return 0;
	}
	c->held += bytes;
	return 1;
}

void claim_give_back(claim *c, int64_t bytes) {
	atomic_fetch_sub(&c->account->held, bytes);
	c->held -= bytes;
}

void claim_end(claim *c) {
	claim_give_back(c, c->held);
}

void claim_refusal(const claim *c, const char *step, idx_t count, const char *items, char *out, size_t size) {
	char wanted[32], held[32], limit[32];
	format_bytes(c->refused, wanted);
	format_bytes(c->held_then, held);
	format_bytes(c->limit, limit);
	snprintf(out, size,
	         "Out of Memory Error: the native %s step could not allocate %s for a row of %llu %s (%s/%s used "
	         "by it): that would exceed memory_limit. Increase it (SET memory_limit='...GB')",
	         step, wanted, (unsigned long long)count, items, held, limit);
}
