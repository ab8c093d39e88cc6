/*
 * libFuzzer target for clusters/watch.c: the input is fed in chunks whose
 * sizes come from the input itself, so framing across chunk boundaries is
 * exercised; decoding must match a single-chunk decode.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "clusters/watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct tally {
    uint64_t sum;
};

static int on_event(struct sw_watch_event *ev, void *ctx)
{
    struct tally *t = ctx;
    t->sum =
        t->sum * 31 + (uint64_t)ev->type * 7 + strlen(ev->resource_version) + (uint64_t)ev->code;
    return 0;
}

static int run(const char *p, size_t n, size_t chunk, struct tally *t)
{
    struct sw_watch_decoder *d;
    struct sw_error err;
    if (sw_watch_decoder_new("fuzz watch", 4096, on_event, t, &d) != 0)
        return -1000;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i += chunk) {
        size_t k = n - i < chunk ? n - i : chunk;
        rc = sw_watch_decoder_feed(d, p + i, k, &err);
    }
    if (rc == 0)
        rc = sw_watch_decoder_finish(d, &err);
    sw_watch_decoder_free(d);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t chunk = (size_t)data[0] % 17 + 1;
    struct tally a = {0}, b = {0};
    int ra = run((const char *)data + 1, size - 1, chunk, &a);
    int rb = run((const char *)data + 1, size - 1, size, &b);
    if (ra != rb || a.sum != b.sum)
        __builtin_trap(); /* chunking must not change the result */
    return 0;
}
