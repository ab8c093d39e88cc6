/*
 * runtime.c - median runtime per label or team.
 */
#include "placement/runtime.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static size_t collect(const struct sw_finished_run *h, size_t n, bool by_label, const char *key,
                      double *scratch)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(by_label ? h[i].label : h[i].team, key) == 0)
            scratch[k++] = h[i].runtime_s;
    return k;
}

int sw_runtime_learn(const struct sw_finished_run *history, size_t n, const char *team,
                     const char *label, double *scratch, double *out)
{
    size_t k = 0;
    if (label != NULL && label[0] != '\0')
        k = collect(history, n, true, label, scratch);
    if (k == 0 && team != NULL && team[0] != '\0')
        k = collect(history, n, false, team, scratch);
    if (k == 0)
        return SW_ENOENT;
    qsort(scratch, k, sizeof(double), cmp_double);
    *out = (k % 2 == 1) ? scratch[k / 2] : (scratch[k / 2 - 1] + scratch[k / 2]) / 2.0;
    return 0;
}
