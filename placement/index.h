/*
 * index.h - the names of a snapshot as dense ids, built while the snapshot
 * is validated.
 *
 * Internal to placement/ (hence sw__). Validation needs the same tables the
 * engine decides with (pools by name, clusters, flavours, teams), so it
 * builds them once: cross-references cost a hash lookup each instead of a
 * scan, and the engine reuses them. A warm index is reset without
 * allocating.
 */
#ifndef SW_PLACEMENT_INDEX_H
#define SW_PLACEMENT_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "placement/intern.h"
#include "placement/model.h"

/** Ids of a snapshot's names; zero-initialise, free with sw__index_free. */
struct sw__index {
    struct sw__intern pools;    /* pool name -> pool index */
    struct sw__intern clusters; /* pool cluster -> id, first seen first */
    struct sw__intern flavours; /* pool flavour (or name) -> id */
    struct sw__intern teams;    /* quota teams, then budget teams -> id */
    int *pool_cluster;          /* per pool: its cluster id */
    int *pool_flavour;          /* per pool: its flavour id */
    size_t pool_cluster_cap, pool_flavour_cap;
    size_t *queue_pool; /* per local queue: its pool's index */
    size_t queue_cap;
    uint64_t *pairs; /* (team, flavour) of each quota, to find duplicates */
    size_t pair_cap;
    int *work_origin; /* per pending workload: its origin's cluster id (-1: no pool there) */
    int *work_team;   /* per pending workload: its team's id, -1 none */
    /* per pending workload: its queue_pools' indexes, SW_MAX_QUEUE_POOLS each */
    int *work_queues;
    size_t work_origin_cap, work_team_cap, work_queues_cap;
};

/** The quota flavour of a pool: its flavour, or its name when it has none. */
static inline const char *sw__pool_flavour(const struct sw_pool *p)
{
    return p->flavour[0] ? p->flavour : p->name;
}

/**
 * Asks the cache for the lines of `w` that validation and the engine read
 * (its numbers, name, team, origin, output region, MIG profile and first
 * input; model.h keeps them first). A macro in effect: GCC drops calls to
 * a function that only prefetches.
 */
#define sw__prefetch_workload(w)                                                                   \
    do {                                                                                           \
        const char *sw__pw = (const char *)(w);                                                    \
        for (size_t sw__off = 0; sw__off < offsetof(struct sw_workload, inputs[0].regions[1]);     \
             sw__off += 64)                                                                        \
            __builtin_prefetch(sw__pw + sw__off);                                                  \
        /* the last line too, when w is not 64-byte aligned */                                     \
        __builtin_prefetch(sw__pw + offsetof(struct sw_workload, inputs[0].regions[1]) - 1);       \
    } while (0)

/**
 * sw_snapshot_validate with the tables in `idx` (caller-owned, reused
 * between calls). On success `idx` describes `s` (whose names it borrows)
 * until the next call. Returns what sw_snapshot_validate returns, or
 * SW_ENOMEM when the tables cannot grow.
 */
int sw__snapshot_validate_index(const struct sw_snapshot *s, struct sw__index *idx,
                                struct sw_error *err);

/** Frees the tables of `idx` and zeroes it. */
void sw__index_free(struct sw__index *idx);

#endif
