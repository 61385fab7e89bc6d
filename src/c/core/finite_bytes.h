/* Internal: Inf/NaN in float32 values stored at any byte alignment (a section of a
 * received frame). Not part of the public API. */
#ifndef DR_FINITE_BYTES_H
#define DR_FINITE_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* 1 if every one of the n little-endian float32 values at p is finite, else 0: the
 * loop of dr_all_finite (vec/arith.c, vectorised where the machine allows), reading
 * through byte pointers, so p needs no float alignment. */
int dr_finite_bytes(const uint8_t *p, size_t n);

#endif
