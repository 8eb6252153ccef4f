/* The helpers every family of duckrank's native functions shares (match.c, graded.c, edrc.c,
 * correlation.c, topk.c): ids (how a list element is stored, read by value), hashing (one hash
 * per key family, linear probing, string equality) and errors (an error message naming the
 * function). Included after capi.h; all are static inline, so each is defined here once and
 * inlined where the hot loops call it. */
#ifndef DUCKRANK_COMMON_H
#define DUCKRANK_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* --- ids ----------------------------------------------------------------------------------------- */

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

static inline id_kind kind_of(duckdb_type type) {
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

static inline int is_integer(id_kind kind) {
	return kind <= K_UHUGE;
}

/* Integers that fit an int64 whatever their type: any two of these compare by value as int64. */
static inline int fits_int64(id_kind kind) {
	return kind <= K_I64 || (kind >= K_U8 && kind <= K_U32);
}


/* An element of a list of one of the 64-bit kinds (every kind but K_HUGE, K_UHUGE, K_UUID and
 * K_STRING) as 64 bits: integers sign- or zero-extended, so equal values give equal words. */
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

/* A validity mask's bit (no mask: every row valid), read in place: a call through the C API's
 * function table per element would cost more than the element's work. */
ALWAYS_INLINE int is_valid(const uint64_t *validity, idx_t i) {
	return !validity || (validity[i / 64] >> (i % 64)) & 1;
}

/* A VARCHAR's bytes: inline up to 12, else behind the pointer. */
static inline const char *string_data(const duckdb_string_t *s) {
	return s->value.inlined.length <= 12 ? s->value.inlined.inlined : s->value.pointer.ptr;
}

/* --- hashing ------------------------------------------------------------------------------------- */

/* MurmurHash3's 64-bit finalizer. */
static inline uint64_t mix(uint64_t x) {
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* One hash per key family, shared by both hash tables of ids (truth_table.h's and the preference
 * step's finder, preference_step.h): 64-bit keys, 128-bit keys (HUGEINT, UUID, integers widened to
 * them) and strings. Each is finished for Fibonacci hashing: a table reads a hash's top bits
 * (probe_slot), which a multiply by 2^64 / golden ratio mixes from every input bit, so no second
 * finalizer is spent on the low bits. Equal keys of a family hash alike whatever table holds them. */
#define GOLDEN_RATIO_64 0x9e3779b97f4a7c15ULL

/* Folding the high half in first keeps ids that differ only in their high bits (shifted or packed
 * ids) apart: the product's top bits see little of the key's top bits otherwise. */
ALWAYS_INLINE uint64_t hash64(uint64_t key) {
	return (key ^ (key >> 29)) * GOLDEN_RATIO_64;
}

ALWAYS_INLINE uint64_t hash128(uint64_t lo, uint64_t hi) {
	return (lo ^ mix(hi)) * GOLDEN_RATIO_64;
}

/* A string of up to 12 bytes is stored inline and zero-padded, so its 16 bytes (length, then
 * content) identify it and hash as a 128-bit key; a longer one is hashed over its bytes. */
ALWAYS_INLINE uint64_t hash_string(const duckdb_string_t *s) {
	uint64_t words[2];
	memcpy(words, s, 16);
	uint32_t len = s->value.inlined.length;
	if (len <= 12) {
		return hash128(words[0], words[1]);
	}
	const unsigned char *p = (const unsigned char *)s->value.pointer.ptr;
	uint64_t h = GOLDEN_RATIO_64 ^ len;
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t chunk;
		memcpy(&chunk, p, 8);
		h = (h ^ chunk) * 0xff51afd7ed558ccdULL;
	}
	uint64_t tail = 0;
	memcpy(&tail, p, len);
	return mix(h ^ tail) * GOLDEN_RATIO_64;
}

/* Open addressing with linear probing, as both tables probe: the slot of the probe-th step for a
 * hash, in a table of 2^(64 - shift) slots, starting at the hash's top bits. */
ALWAYS_INLINE idx_t probe_slot(uint64_t hash, int shift, idx_t probe) {
	return ((hash >> shift) + probe) & ((((idx_t)1) << (64 - shift)) - 1);
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

/* --- errors -------------------------------------------------------------------------------------- */

/* Every error names the function it comes from: "<name>: <problem>". */
#define ERROR_BYTES 1024

static inline void error_message(char out[ERROR_BYTES], const char *name, const char *problem) {
	snprintf(out, ERROR_BYTES, "%s: %s", name, problem);
}

static inline void set_error(duckdb_function_info info, const char *name, const char *problem) {
	char message[ERROR_BYTES];
	error_message(message, name, problem);
	duckdb_scalar_function_set_error(info, message);
}

#endif
