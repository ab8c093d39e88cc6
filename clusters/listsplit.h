/*
 * listsplit.h - splits a Kubernetes List response into its items as the
 * bytes arrive.
 *
 * A List is {"kind":..., "metadata":{...}, "items":[{...}, ...]}. The
 * splitter hands over each item's text as soon as its closing brace
 * arrives, so that the caller parses and converts item by item while the
 * rest is still on the wire, and never holds the whole list (as text or as
 * a tree). Each item's metadata.managedFields, which no reader of ours
 * wants and which is the largest part of most objects, is dropped before it
 * is parsed (client-go's TransformStripManagedFields drops it after). What
 * is not an item (the envelope: kind, apiVersion, metadata
 * with resourceVersion and continue) is kept, with "items":[] in place of
 * the items, for the caller to parse at the end.
 */
#ifndef SW_CLUSTERS_LISTSPLIT_H
#define SW_CLUSTERS_LISTSPLIT_H

#include <stddef.h>

#include "common/error.h"

struct sw_list_splitter;

/**
 * Called with each item's JSON text (borrowed, valid during the call).
 * Return 0 to go on, or a SW_E* code (with err set) to stop.
 */
typedef int (*sw_list_item_cb)(const char *item, size_t len, void *ctx, struct sw_error *err);

/**
 * Creates a splitter. `what` (copied) names the list in errors; an item
 * longer than max_item bytes is refused (0: 16 MiB).
 */
int sw_list_splitter_new(const char *what, size_t max_item, sw_list_item_cb cb, void *ctx,
                         struct sw_list_splitter **out);

/** Feeds bytes. Returns 0, the callback's code, or SW_EPARSE / SW_ETOOBIG. */
int sw_list_splitter_feed(struct sw_list_splitter *s, const char *data, size_t len,
                          struct sw_error *err);

/**
 * Ends the input: the envelope's text (borrowed from the splitter) and its
 * length, or SW_EPARSE when the document is incomplete.
 */
int sw_list_splitter_finish(struct sw_list_splitter *s, const char **envelope, size_t *len,
                            struct sw_error *err);

/** Items handed over so far. */
size_t sw_list_splitter_items(const struct sw_list_splitter *s);

/** Frees a splitter; NULL is fine. */
void sw_list_splitter_free(struct sw_list_splitter *s);

#endif
