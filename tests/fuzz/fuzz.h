/*
 * fuzz.h - what every libFuzzer target of spillway shares: the entry
 * point's prototype and a check that stays on in every build.
 *
 * A target feeds the fuzzer's bytes to one parser of outside input, then
 * checks what the parser promises of a success (and that a failure says
 * why). FUZZ_CHECK aborts with the broken promise, so that libFuzzer saves
 * the input as a crash.
 */
#ifndef SW_TESTS_FUZZ_H
#define SW_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/** libFuzzer's entry point: one input, owned by libFuzzer. Returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(expr)                                                                           \
    do {                                                                                           \
        if (!(expr)) {                                                                             \
            fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, #expr);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
