/*
 * buf.c - bounded dynamic buffers.
 */
#include "buf.h"

#include "alloc.h"
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void sw_buf_init(struct sw_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
    b->wipe = 0;
}

void sw_buf_set_wipe(struct sw_buf *b)
{
    b->wipe = 1;
}

static int grow(struct sw_buf *b, size_t need)
{
    if (need > b->max)
        return SW_ETOOBIG;
    if (need + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need + 1)
        cap = cap > SIZE_MAX / 2 ? need + 1 : cap * 2;
    if (cap > b->max + 1)
        cap = b->max + 1;
    char *p;
    if (b->wipe) {
        /* realloc would leave the old copy behind unwiped. */
        p = sw_malloc(cap);
        if (p == NULL)
            return SW_ENOMEM;
        if (b->data != NULL) {
            memcpy(p, b->data, b->len + 1);
            sw_wipe(b->data, b->cap);
            sw_free(b->data);
        }
    } else {
        p = sw_realloc(b->data, cap);
        if (p == NULL)
            return SW_ENOMEM;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int sw_buf_add(struct sw_buf *b, const void *p, size_t n)
{
    if (n > SIZE_MAX - b->len - 1)
        return SW_ETOOBIG;
    int rc = grow(b, b->len + n);
    if (rc != 0)
        return rc;
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int sw_buf_adds(struct sw_buf *b, const char *s)
{
    return sw_buf_add(b, s, strlen(s));
}

int sw_buf_addf(struct sw_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return SW_EINVAL;
    int rc = grow(b, b->len + (size_t)n);
    if (rc != 0)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void sw_buf_reset(struct sw_buf *b)
{
    if (b->wipe && b->data != NULL)
        sw_wipe(b->data, b->len);
    b->len = 0;
    if (b->data != NULL)
        b->data[0] = '\0';
}

void sw_buf_free(struct sw_buf *b)
{
    if (b->wipe && b->data != NULL)
        sw_wipe(b->data, b->cap);
    sw_free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

char *sw_buf_take(struct sw_buf *b, size_t *len)
{
    char *d = b->data;
    if (len != NULL)
        *len = b->len;
    if (d == NULL)
        d = sw_strdup("");
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return d;
}
