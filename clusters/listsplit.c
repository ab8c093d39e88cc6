/*
 * listsplit.c - a byte scanner over a List document.
 *
 * It tracks only what framing needs: nesting depth, whether it is inside a
 * string (and after a backslash), and the last string seen at depth 1, the
 * key of the member whose value begins next. The array value of "items" at
 * depth 1 is the items; each object in it is one item. The items' bytes
 * are copied in runs (a scan, then one append), not byte by byte. Whether
 * an item is valid JSON is for its parser: the scanner only frames.
 */
#include "clusters/listsplit.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"

#define MAX_ENVELOPE (1u << 20)

enum mode { M_ENVELOPE, M_ITEMS, M_ITEM, M_DONE };

struct sbuf {
    char *p;
    size_t len, cap;
};

struct sw_list_splitter {
    char what[200];
    size_t max_item;
    sw_list_item_cb cb;
    void *ctx;
    enum mode mode;
    int depth;      /* in the envelope */
    int item_depth; /* in an item */
    bool in_str, esc;
    size_t key_at;  /* where the last depth-1 string began in env */
    bool key_items; /* that string was "items" */
    struct sbuf env, item;
    size_t items;
    /* metadata.managedFields of an item, dropped unparsed */
    size_t str_at;     /* where the current string began in item (a key?) */
    bool in_metadata;  /* inside the item's "metadata" object */
    bool key_metadata; /* the last depth-1 string was "metadata" */
    bool key_managed;  /* the last depth-2 string in metadata was "managedFields" */
    size_t managed_at; /* where that key began in item */
    bool after_colon;  /* its ':' came: the value begins next */
    bool skipping;     /* inside its value */
    bool drop_comma;   /* it was the first member: drop the comma after it */
};

static int sadd(struct sbuf *b, const char *p, size_t n, size_t max)
{
    if (b->len + n + 1 > max)
        return SW_ETOOBIG;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *q = sw_realloc(b->p, cap);
        if (q == NULL)
            return SW_ENOMEM;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int sw_list_splitter_new(const char *what, size_t max_item, sw_list_item_cb cb, void *ctx,
                         struct sw_list_splitter **out)
{
    struct sw_list_splitter *s = sw_calloc(1, sizeof(*s));
    if (s == NULL)
        return SW_ENOMEM;
    snprintf(s->what, sizeof(s->what), "%s", what);
    s->max_item = max_item ? max_item : (16u << 20);
    s->cb = cb;
    s->ctx = ctx;
    *out = s;
    return 0;
}

void sw_list_splitter_free(struct sw_list_splitter *s)
{
    if (s == NULL)
        return;
    sw_free(s->env.p);
    sw_free(s->item.p);
    sw_free(s);
}

size_t sw_list_splitter_items(const struct sw_list_splitter *s)
{
    return s->items;
}

static int too_big(struct sw_list_splitter *s, int rc, struct sw_error *err)
{
    if (rc == SW_ENOMEM)
        return sw_error_set(err, rc, "%s: out of memory", s->what);
    return sw_error_set(err, rc, "%s: %s longer than %zu bytes", s->what,
                        s->mode == M_ITEM ? "an item" : "the list's metadata",
                        s->mode == M_ITEM ? s->max_item : (size_t)MAX_ENVELOPE);
}

static bool ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* The item's text from item.p[a] to its end equals `lit` (a quoted key). */
static bool item_is(const struct sw_list_splitter *s, size_t a, const char *lit, size_t n)
{
    return s->item.len - a == n && memcmp(s->item.p + a, lit, n) == 0;
}

/* Bytes that end a run inside a string: its quote, and the backslash of
 * an escape. */
static const bool string_stops[256] = {['"'] = true, ['\\'] = true};

/* Where the string that data[i] is in stops: its next quote or backslash,
 * or len. A tight loop over a table, not the state machine per byte: most
 * of an object's bytes are in its strings. */
static size_t string_stop(const char *data, size_t i, size_t len)
{
    while (i < len && !string_stops[(unsigned char)data[i]])
        i++;
    return i;
}

/* Bytes that matter in a value being skipped, outside its strings. */
static const bool skip_stops[256] = {
    ['"'] = true, ['{'] = true, ['['] = true, ['}'] = true, [']'] = true};

/*
 * An item's bytes from data[i]: copied to s->item in runs, less
 * metadata.managedFields (the largest part of most objects, which no
 * reader wants: client-go's TransformStripManagedFields, before parsing).
 * Returns where it stopped: one past the item's closing brace, or len.
 */
static int feed_item(struct sw_list_splitter *s, const char *data, size_t *at, size_t len,
                     struct sw_error *err)
{
    size_t i = *at, run = i;
    int rc;
#define FLUSH(to)                                                                                  \
    do {                                                                                           \
        if ((to) > run && (rc = sadd(&s->item, data + run, (to)-run, s->max_item)) != 0)           \
            return too_big(s, rc, err);                                                            \
        run = (to);                                                                                \
    } while (0)
    for (; i < len; i++) {
        char c = data[i];
        if (s->in_str) {
            if (s->esc) {
                s->esc = false;
                continue;
            }
            if ((i = string_stop(data, i, len)) == len)
                break;
            c = data[i];
            if (c == '\\')
                s->esc = true;
            else {
                s->in_str = false;
                if (!s->skipping &&
                    (s->item_depth == 1 || (s->item_depth == 2 && s->in_metadata))) {
                    /* A possible key: compare it whole. */
                    FLUSH(i + 1);
                    if (s->item_depth == 1)
                        s->key_metadata = item_is(s, s->str_at, "\"metadata\"", 10);
                    else if ((s->key_managed = item_is(s, s->str_at, "\"managedFields\"", 15)))
                        s->managed_at = s->str_at;
                }
            }
            continue;
        }
        if (s->skipping) {
            while (!skip_stops[(unsigned char)c] && ++i < len)
                c = data[i];
            if (i == len)
                break;
            if (c == '"')
                s->in_str = true;
            else if (c == '{' || c == '[')
                s->item_depth++;
            else if ((c == '}' || c == ']') && --s->item_depth == 2) {
                s->skipping = false;
                run = i + 1;
            }
            continue;
        }
        if (ws(c))
            continue;
        if (s->drop_comma) {
            s->drop_comma = false;
            if (c == ',') {
                FLUSH(i);
                run = i + 1;
                continue;
            }
        }
        if (s->key_managed && c == ':') {
            s->after_colon = true;
            continue;
        }
        if (s->key_managed && s->after_colon && c == '[') {
            /* The value of managedFields begins: drop the member. */
            s->key_managed = s->after_colon = false;
            FLUSH(i);
            s->item.len = s->managed_at;
            while (s->item.len > 0 && ws(s->item.p[s->item.len - 1]))
                s->item.len--;
            if (s->item.len > 0 && s->item.p[s->item.len - 1] == ',')
                s->item.len--; /* a member before it: its comma goes */
            else
                s->drop_comma = true; /* the first: the comma after it goes */
            s->item.p[s->item.len] = '\0';
            s->skipping = true;
            s->item_depth++;
            run = i + 1;
            continue;
        }
        s->key_managed = s->after_colon = false;
        if (c == '"') {
            s->in_str = true;
            s->str_at = s->item.len + (i - run);
        } else if (c == '{' || c == '[') {
            s->item_depth++;
            if (s->item_depth == 2 && c == '{')
                s->in_metadata = s->key_metadata;
        } else if (c == '}' || c == ']') {
            if (s->item_depth == 2)
                s->in_metadata = false;
            if (--s->item_depth == 0) {
                i++;
                break;
            }
        } else if (c == ',' && s->item_depth == 1) {
            s->key_metadata = false;
        }
    }
    if (!s->skipping)
        FLUSH(i);
#undef FLUSH
    *at = i;
    return 0;
}

int sw_list_splitter_feed(struct sw_list_splitter *s, const char *data, size_t len,
                          struct sw_error *err)
{
    size_t i = 0;
    int rc;
    while (i < len) {
        if (s->mode == M_ITEM) {
            if ((rc = feed_item(s, data, &i, len, err)) != 0)
                return rc;
            if (s->item_depth == 0) {
                s->items++;
                s->mode = M_ITEMS;
                rc = s->cb(s->item.p, s->item.len, s->ctx, err);
                s->item.len = 0;
                if (rc != 0)
                    return rc;
            }
            continue;
        }
        char c = data[i++];
        if (s->mode == M_ITEMS) {
            if (c == '{') {
                s->mode = M_ITEM;
                s->item_depth = 1;
                s->in_str = s->esc = false;
                s->in_metadata = s->key_metadata = s->key_managed = false;
                s->after_colon = s->skipping = s->drop_comma = false;
                if ((rc = sadd(&s->item, "{", 1, s->max_item)) != 0)
                    return too_big(s, rc, err);
            } else if (c == ']') {
                s->mode = M_ENVELOPE;
                s->depth = 1;
                if ((rc = sadd(&s->env, "]", 1, MAX_ENVELOPE)) != 0)
                    return too_big(s, rc, err);
            } else if (c != ',' && c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                return sw_error_set(err, SW_EPARSE,
                                    "%s: field \"items\": expected objects, got '%c' after "
                                    "item %zu",
                                    s->what, c, s->items);
            }
            continue;
        }
        if (s->mode == M_DONE) {
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
                return sw_error_set(err, SW_EPARSE, "%s: unexpected data after the list", s->what);
            continue;
        }
        /* The envelope: text, no control characters but white space (JSON has none). */
        if ((unsigned char)c < 0x20 && c != ' ' && c != '\n' && c != '\r' && c != '\t')
            return sw_error_set(err, SW_EPARSE, "%s: control character 0x%02x in the list", s->what,
                                (unsigned)(unsigned char)c);
        if ((rc = sadd(&s->env, &c, 1, MAX_ENVELOPE)) != 0)
            return too_big(s, rc, err);
        if (s->in_str) {
            if (s->esc)
                s->esc = false;
            else if (c == '\\')
                s->esc = true;
            else if (c == '"') {
                s->in_str = false;
                if (s->depth == 1) {
                    const char *str = s->env.p + s->key_at;
                    s->key_items = s->env.len - s->key_at == 7 && memcmp(str, "\"items\"", 7) == 0;
                }
            }
            continue;
        }
        if (s->depth == 0 && c != '{') {
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
                continue;
            return sw_error_set(err, SW_EPARSE, "%s: expected a List object, got '%c'", s->what, c);
        }
        if (c == '"') {
            s->in_str = true;
            s->key_at = s->env.len - 1;
        } else if (c == '[' && s->depth == 1 && s->key_items) {
            s->mode = M_ITEMS;
            s->depth = 2;
            s->key_items = false;
        } else if (c == '{' || c == '[') {
            s->depth++;
        } else if (c == '}' || c == ']') {
            if (--s->depth == 0)
                s->mode = M_DONE;
        }
    }
    return 0;
}

int sw_list_splitter_finish(struct sw_list_splitter *s, const char **envelope, size_t *len,
                            struct sw_error *err)
{
    if (s->mode != M_DONE)
        return sw_error_set(err, SW_EPARSE, "%s: the list ended early (after %zu items)", s->what,
                            s->items);
    *envelope = s->env.p;
    *len = s->env.len;
    return 0;
}
