/*
 * watch.c - newline-delimited JSON event framing.
 *
 * Bytes accumulate in a bounded buffer until a newline; each complete line
 * is parsed as one event. JSON strings cannot contain a raw newline, so a
 * newline always ends an event.
 */
#include "clusters/watch.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/json.h"

struct sw_watch_decoder {
    char *what;
    struct sw_buf line;
    sw_watch_event_cb cb;
    void *ctx;
    uint64_t offset; /* bytes consumed, for messages */
    uint64_t start;  /* offset of the event being read */
    uint64_t events;
    int failed;
};

const char *sw_watch_type_name(enum sw_watch_type t)
{
    switch (t) {
    case SW_WATCH_ADDED:
        return "ADDED";
    case SW_WATCH_MODIFIED:
        return "MODIFIED";
    case SW_WATCH_DELETED:
        return "DELETED";
    case SW_WATCH_BOOKMARK:
        return "BOOKMARK";
    case SW_WATCH_ERROR:
        return "ERROR";
    }
    return "?";
}

int sw_watch_decoder_new(const char *what, size_t max_event, sw_watch_event_cb cb, void *ctx,
                         struct sw_watch_decoder **out)
{
    struct sw_watch_decoder *d = sw_calloc(1, sizeof(*d));
    if (d == NULL)
        return SW_ENOMEM;
    d->what = sw_strdup(what ? what : "watch");
    if (d->what == NULL) {
        sw_free(d);
        return SW_ENOMEM;
    }
    sw_buf_init(&d->line, max_event ? max_event : SW_WATCH_DEFAULT_MAX_EVENT);
    d->cb = cb;
    d->ctx = ctx;
    *out = d;
    return 0;
}

void sw_watch_decoder_free(struct sw_watch_decoder *d)
{
    if (d == NULL)
        return;
    sw_buf_free(&d->line);
    sw_free(d->what);
    sw_free(d);
}

uint64_t sw_watch_decoder_events(const struct sw_watch_decoder *d)
{
    return d->events;
}

static int is_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return 0;
    return 1;
}

static int parse_type(const char *s, enum sw_watch_type *t)
{
    static const struct {
        const char *name;
        enum sw_watch_type type;
    } map[] = {{"ADDED", SW_WATCH_ADDED},
               {"MODIFIED", SW_WATCH_MODIFIED},
               {"DELETED", SW_WATCH_DELETED},
               {"BOOKMARK", SW_WATCH_BOOKMARK},
               {"ERROR", SW_WATCH_ERROR}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(s, map[i].name) == 0) {
            *t = map[i].type;
            return 0;
        }
    return -1;
}

/* Decodes one complete line and calls back. */
static int emit(struct sw_watch_decoder *d, const char *p, size_t n, struct sw_error *err)
{
    if (is_blank(p, n))
        return 0;
    char what[300];
    snprintf(what, sizeof(what), "%s: event %llu at byte %llu", d->what,
             (unsigned long long)d->events + 1, (unsigned long long)d->start);
    cJSON *root = NULL;
    int rc = sw_json_parse(p, n, what, &root, err);
    if (rc != 0)
        return rc;
    struct sw_watch_event ev = {0};
    const char *type = NULL;
    if ((rc = sw_json_string(root, "type", true, what, &type, err)) != 0)
        goto out;
    if (parse_type(type, &ev.type) != 0) {
        rc = sw_error_set(err, SW_EPARSE,
                          "%s: field \"type\": expected ADDED, MODIFIED, DELETED, BOOKMARK or "
                          "ERROR, got \"%.40s\"",
                          what, type);
        goto out;
    }
    cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "object");
    if (!cJSON_IsObject(obj)) {
        rc = sw_error_set(err, SW_EPARSE, "%s: field \"object\": expected an object, got %s", what,
                          obj ? sw_json_type_name(obj) : "nothing");
        goto out;
    }
    ev.resource_version = "";
    ev.message = "";
    if (ev.type == SW_WATCH_ERROR) {
        int64_t code = 0;
        if ((rc = sw_json_int64(obj, "code", false, what, &code, err)) != 0 ||
            (rc = sw_json_string(obj, "message", false, what, &ev.message, err)) != 0)
            goto out;
        ev.code = (int)(code > 0 && code < 1000 ? code : 0);
    } else {
        if ((rc = sw_json_string(obj, "metadata.resourceVersion", ev.type == SW_WATCH_BOOKMARK,
                                 what, &ev.resource_version, err)) != 0)
            goto out;
    }
    cJSON_DetachItemViaPointer(root, obj);
    ev.object = obj;
    d->events++;
    rc = d->cb ? d->cb(&ev, d->ctx) : 0;
    if (ev.object != NULL)
        cJSON_Delete(ev.object);
out:
    cJSON_Delete(root);
    return rc;
}

int sw_watch_decoder_feed(struct sw_watch_decoder *d, const char *data, size_t len,
                          struct sw_error *err)
{
    if (d->failed)
        return sw_error_set(err, SW_ESTATE, "%s: the stream already failed", d->what);
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        int rc;
        if (d->line.len == 0)
            d->start = d->offset;
        if (d->line.len + take > d->line.max) {
            d->failed = 1;
            return sw_error_set(err, SW_ETOOBIG,
                                "%s: event at byte %llu exceeds the limit of %zu bytes", d->what,
                                (unsigned long long)d->start, d->line.max);
        }
        if (nl != NULL && d->line.len == 0) {
            /* The common case: a whole event in this chunk, no copy. */
            rc = emit(d, data, take, err);
        } else {
            rc = sw_buf_add(&d->line, data, take);
            if (rc == SW_ETOOBIG) {
                d->failed = 1;
                return sw_error_set(err, rc,
                                    "%s: event at byte %llu exceeds the limit of %zu "
                                    "bytes",
                                    d->what, (unsigned long long)d->start, d->line.max);
            }
            if (rc != 0) {
                d->failed = 1;
                return sw_error_set(err, rc, "%s: out of memory", d->what);
            }
            rc = 0;
            if (nl != NULL) {
                rc = emit(d, d->line.data, d->line.len, err);
                sw_buf_reset(&d->line);
            }
        }
        if (rc != 0) {
            d->failed = 1;
            return rc;
        }
        size_t used = nl ? take + 1 : take;
        d->offset += used;
        data += used;
        len -= used;
    }
    return 0;
}

int sw_watch_decoder_finish(struct sw_watch_decoder *d, struct sw_error *err)
{
    if (d->failed)
        return sw_error_set(err, SW_ESTATE, "%s: the stream already failed", d->what);
    if (d->line.len > 0 && !is_blank(d->line.data, d->line.len)) {
        /* A last event without its newline is still complete if it parses. */
        int rc = emit(d, d->line.data, d->line.len, err);
        sw_buf_reset(&d->line);
        if (rc != 0)
            return sw_error_wrap(err, "stream ended mid-event");
    }
    return 0;
}
