/*
 * buf.h - bounded dynamic buffers (curl's DYNBUF habit).
 *
 * Every network body spillway reads goes into a struct sw_buf with a hard
 * cap, so a misbehaving server cannot make the hub grow without bound.
 * The data is always NUL-terminated so it can be handed to text parsers.
 */
#ifndef SW_COMMON_BUF_H
#define SW_COMMON_BUF_H

#include <stddef.h>

struct sw_buf {
    char *data; /* owned; NUL-terminated when non-NULL */
    size_t len;
    size_t cap;
    size_t max; /* hard cap on len; adding past it fails with SW_ETOOBIG */
    int wipe;   /* the bytes are a secret's: wiped when moved, reset or freed */
};

/** Initialises an empty buffer that may grow to `max` bytes. */
void sw_buf_init(struct sw_buf *b, size_t max);
/** Appends `n` bytes; SW_ETOOBIG past the cap, SW_ENOMEM on allocation failure. */
int sw_buf_add(struct sw_buf *b, const void *p, size_t n);
/** Appends a NUL-terminated string. */
int sw_buf_adds(struct sw_buf *b, const char *s);
/** Appends printf-style formatted text. */
int sw_buf_addf(struct sw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/**
 * Marks the buffer as holding a secret: from now on every copy it leaves
 * behind (when it grows, is reset or freed) is wiped (sw_wipe) first. What
 * sw_buf_take hands over is then the caller's to wipe.
 */
void sw_buf_set_wipe(struct sw_buf *b);
/** Empties the buffer but keeps its memory. */
void sw_buf_reset(struct sw_buf *b);
/** Releases the memory; the buffer can be reused after sw_buf_init. */
void sw_buf_free(struct sw_buf *b);
/**
 * Hands the data to the caller (who frees it with sw_free) and leaves the
 * buffer empty. Returns an empty string rather than NULL for an empty buffer.
 */
char *sw_buf_take(struct sw_buf *b, size_t *len);

#endif
