/*
 * assert.c - the failure path of sw_assert.
 */
#include "assert.h"

#include <stdio.h>
#include <stdlib.h>

void sw__assert_fail(const char *expr, const char *file, int line, const char *func)
{
    fprintf(stderr, "spillway: invariant violated: %s (%s:%d, %s)\n", expr, file, line, func);
    fflush(stderr);
    abort();
}
