/*
 * rpo.h - recovery point objective of replication rules, as numbers and
 * as Prometheus metrics. Pure: the journal's facts and the time go in.
 *
 * The RPO of a rule's target is the age of the oldest source object that
 * was not replicated (and verified) by the last run: 0 when the run left
 * nothing behind. Because objects written after a run are not known until
 * the next, the age of the last run is exported beside it.
 */
#ifndef SW_REPLICATION_RPO_H
#define SW_REPLICATION_RPO_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/error.h"

/** What the journal knows of one rule x target. */
struct sw_rpo_entry {
    const char *rule;
    const char *target;
    int64_t oldest_pending_ms; /* LastModified of the oldest unreplicated object; 0 if none */
    int64_t last_run_ms;       /* when the last run ended; 0 if never */
};

/** The RPO in seconds at `now_ms` (0 when nothing was pending; -1 if never run). */
double sw_rpo_seconds(const struct sw_rpo_entry *e, int64_t now_ms);

/**
 * Appends Prometheus text for the entries: spillway_replication_rpo_seconds
 * and spillway_replication_last_run_age_seconds, labelled rule and target
 * (label values escaped). Returns 0 or SW_ENOMEM / SW_ETOOBIG.
 */
int sw_rpo_metrics(const struct sw_rpo_entry *e, size_t n, int64_t now_ms, struct sw_buf *out);

#endif
