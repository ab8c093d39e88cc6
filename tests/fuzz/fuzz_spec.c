/*
 * libFuzzer target for clusters/spec.c: any bytes, read as a cluster spec
 * file and as a --pool flag value, must give either a spec that passes the
 * documented bounds (names, capacity types, price, caps) or an error with a
 * message naming the file (or the flag), never a crash or a leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every string field is NUL-terminated inside its array. */
static void check_spec(const struct sw_cluster_spec *s)
{
    if (s->npools > SW_MAX_POOLS || memchr(s->region, '\0', sizeof(s->region)) == NULL)
        __builtin_trap();
    for (size_t i = 0; i < s->npools; i++) {
        const struct sw_pool_spec *p = &s->pools[i];
        if (memchr(p->name, '\0', sizeof(p->name)) == NULL ||
            memchr(p->capacity_type, '\0', sizeof(p->capacity_type)) == NULL ||
            memchr(p->gpu_product, '\0', sizeof(p->gpu_product)) == NULL ||
            memchr(p->zone, '\0', sizeof(p->zone)) == NULL)
            __builtin_trap();
        /* What was accepted is in the documented ranges. */
        if ((p->name[0] != '\0' && !sw_name_valid(p->name)) ||
            (p->capacity_type[0] != '\0' && strcmp(p->capacity_type, "owned") != 0 &&
             strcmp(p->capacity_type, "on-demand") != 0 && strcmp(p->capacity_type, "spot") != 0) ||
            !(p->price_per_gpu_hour >= 0 && p->price_per_gpu_hour <= 10000) || p->max_gpus < 0 ||
            p->max_gpus > 1000000 || p->gpu_memory_mib < 0 || p->gpu_memory_mib > (1LL << 30))
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_cluster_spec spec;
    struct sw_error err;
    memset(&spec, 0, sizeof(spec));
    sw_error_clear(&err);
    int rc = sw_cluster_spec_parse((const char *)data, size, "dir/fuzz-spec.yaml", &spec, &err);
    if (rc != 0 && (err.msg[0] == '\0' || strstr(err.msg, "fuzz-spec.yaml") == NULL))
        __builtin_trap(); /* every error names the file */
    check_spec(&spec);
    if (rc == 0) {
        sw_error_clear(&err);
        if (sw_cluster_spec_validate(&spec, "fuzz", &err) != 0 && err.msg[0] == '\0')
            __builtin_trap();
    }

    /* The same bytes as one --pool flag value (a C string). */
    char *flag = malloc(size + 1);
    if (flag == NULL)
        return 0;
    memcpy(flag, data, size);
    flag[size] = '\0';
    memset(&spec, 0, sizeof(spec));
    sw_error_clear(&err);
    if (sw_pool_flag_parse(flag, &spec, &err) != 0 && err.msg[0] == '\0')
        __builtin_trap();
    check_spec(&spec);
    free(flag);
    return 0;
}
