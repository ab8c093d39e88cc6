/*
 * budget.h - team budgets: what a team may spend on cloud capacity in a
 * period (the hub's `budgets`, docs/hub.md), and the arithmetic the hub
 * enforces them with at decision (docs/cost-model.md, "Budgets").
 *
 * A team's spend in its current period is
 *
 *   committed  what its Jobs' runs on cloud capacity (spot, on-demand) cost
 *              inside the period: billed GPUs x price x the hours of the
 *              run that fall in it, for every record (live, and ended ones
 *              of Jobs that finished in the period), each counted once;
 *   in flight  for every burst decided and not yet finished (decided,
 *              data-ready, dispatching, dispatched, running), what its
 *              decision expected it to cost less what it has cost so far,
 *              never below 0;
 *
 * and a Job bursts only if that plus its own expected cost is at most the
 * amount (the engine's SW_EX_BUDGET). Everything is derived from the
 * records, never from a counter a hub adds to, so a new leader that reads
 * the records again gets the same figures. Pure: no I/O, no clock.
 */
#ifndef SW_CONTROLLER_HUB_BUDGET_H
#define SW_CONTROLLER_HUB_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/hub/jobrec.h"
#include "controller/hub/tenancy.h"
#include "placement/estimate.h"
#include "placement/model.h"

/** The most budgets a config holds. */
#define SW_HUB_MAX_BUDGETS 256
/** The largest amount a budget may have (USD). */
#define SW_BUDGET_MAX_AMOUNT 1e9
/**
 * The most a run may bill per hour (USD: billed GPUs x price per
 * GPU-hour) and a burst may be expected to cost (USD) for a budget to
 * count it: a record beyond either is not believed (a hostile or broken
 * record): it charges its team the whole amount (fail closed) and is
 * reported (sw_budget_tally).
 */
#define SW_BUDGET_MAX_RATE_H 1e6
#define SW_BUDGET_MAX_COST   SW_BUDGET_MAX_AMOUNT
/** z of the 90th percentile of a normal: what a budgeted burst reserves. */
#define SW_BUDGET_RESERVE_Z 1.2815515655446004

/** How long a budget lasts before it starts again (UTC). */
enum sw_budget_period {
    SW_PERIOD_MONTH = 0, /* a calendar month: the 1st, 00:00 UTC */
    SW_PERIOD_WEEK,      /* Monday 00:00 UTC to the next */
    SW_PERIOD_DAY,       /* 00:00 UTC to the next */
};

/** "month", "week", "day". */
const char *sw_budget_period_name(enum sw_budget_period p);
/** Parses a period's name; SW_EINVAL when it is none. */
int sw_budget_period_parse(const char *s, enum sw_budget_period *out);

/** One team's budget, as configured. */
struct sw_team_budget {
    char team[64];
    double amount; /* USD per period, >= 0 */
    enum sw_budget_period period;
};

/** Start of the period that holds `now_ms` (wall ms, UTC). */
int64_t sw_budget_period_start(enum sw_budget_period p, int64_t now_ms);
/** Start of the period after the one that holds `now_ms`. */
int64_t sw_budget_period_end(enum sw_budget_period p, int64_t now_ms);

/**
 * The budget a record's spend counts against, into `out`: its team when
 * the grant of its cluster and namespace (in `t`) names that team, else
 * "CLUSTER/NS", as the runtimes key a learner (sw_runtime_learner). No
 * budget's team (a DNS-1123 label) has a '/', so a namespace without a
 * grant, or with a grant that names no team, has no budget, and its Jobs
 * are never charged to a granted team that happens to share its name.
 * "" when the key does not fit. (Chargeback keeps the record's team.)
 */
void sw_budget_key_of(const struct sw_tenancy *t, const struct sw_job_rec *r,
                      char out[SW_NAME_MAX]);

/** One run as a budget counts it (an ended record kept compact). */
struct sw_budget_run {
    char team[SW_NAME_MAX]; /* its budget key (sw_budget_key_of) */
    char uid[64];           /* its origin Job's UID: a live record of it wins */
    bool cloud;             /* ran on spot or on-demand (owned is not charged) */
    int64_t started_ms;     /* 0: never ran */
    int64_t finished_ms;    /* 0: still running */
    double dollars_per_ms;  /* billed GPUs x price per GPU-hour / 3.6e6 */
    bool bad;               /* figures no budget believes: charged its team's whole amount */
};

/**
 * When a record's current attempt began to cost: its start, else, for a
 * record dispatched, running or ended (a mirror dispatched that never
 * reported running, failed or whose origin was deleted), its dispatch;
 * 0 when it has nothing to bill.
 */
int64_t sw_budget_start_of(const struct sw_job_rec *r);

/** Whether a capacity ("spot", "on-demand") is charged to a budget. */
bool sw_budget_cloud(const char *capacity);

/* How long a spend entry is kept (the longest period, a month of 31 days,
 * and a margin) and how many one read of them takes at a time. */
#define SW_SPEND_KEEP_MS (40LL * 86400000LL)
#define SW_SPEND_PAGE    1000

/**
 * The compact spend entry (SW_KEY_SPEND) of a record that ended, `end_ms`
 * when its run ended: a new JSON string (cJSON_free), or NULL when it has
 * nothing a budget counts (not on spot or on-demand, or never started:
 * sw_budget_start_of) or on no memory.
 */
char *sw_budget_spend_entry(const struct sw_job_rec *r, int64_t end_ms);

/**
 * Reads a spend entry (Redis input: every field checked) into the fields
 * of `r` that sw_budget_run_of reads (the rest zeroed; state succeeded).
 * Returns 0 or SW_EPARSE naming the field, with nothing kept.
 */
int sw_budget_spend_parse(const char *text, size_t len, struct sw_job_rec *r, struct sw_error *err);

/**
 * The run of a record (its current attempt), keyed with `t`: started at
 * sw_budget_start_of. Returns 0, or SW_ERANGE when its GPUs, billed GPUs
 * or price is negative, its rate (billed GPUs x price) not a number from 0
 * to SW_BUDGET_MAX_RATE_H, or its expected or reserved cost not one from 0
 * to SW_BUDGET_MAX_COST: `out` then has its key and UID and `bad` set
 * (not cloud, no rate), and the tally charges its team the whole amount.
 */
int sw_budget_run_of(const struct sw_tenancy *t, const struct sw_job_rec *r,
                     struct sw_budget_run *out);

/**
 * The runtime (seconds) a budgeted team's burst reserves its cost for:
 * the belief's 90th percentile, median x exp(SW_BUDGET_RESERVE_Z x sigma),
 * never below its mean; and while the belief is an annotation not yet
 * learned from (fewer than `min_runs` annotated runs), never below
 * `prior_mean_s`, the mean of what the team's Jobs are believed to take
 * without one. At most SW_MAX_SECONDS.
 */
double sw_budget_reserve_s(const struct sw_estimate *b, size_t min_runs, double prior_mean_s);

/**
 * What `run` cost inside [start_ms, now_ms]: its hours in that window x its
 * price (a running one to now). 0 for owned capacity, a run that never
 * started, or one outside the window.
 */
double sw_budget_run_committed(const struct sw_budget_run *run, int64_t start_ms, int64_t now_ms);

/**
 * What a record's burst still holds of its budget: for a record decided,
 * data-ready, dispatching, dispatched or running on cloud capacity, what
 * its decision reserved (reserved_cost; without one, its expected cost)
 * less what it has cost so far (never below 0); 0 for any other record.
 */
double sw_budget_in_flight(const struct sw_job_rec *r, int64_t now_ms);

/** One team's budget and its spend now. */
struct sw_budget_status {
    char team[64];
    double amount;
    enum sw_budget_period period;
    int64_t start_ms, end_ms; /* the current period */
    double committed;
    double in_flight;
};

/** What is left of a status' amount (never below 0). */
double sw_budget_left(const struct sw_budget_status *s);

/**
 * Whether a burst expected to cost `cost` fits: committed + in flight +
 * cost <= amount (exactly at the amount fits), as the engine decides it.
 */
bool sw_budget_fits(const struct sw_budget_status *s, double cost);

/**
 * The engine's budget of a status (placement/model.h): its cap the amount,
 * spent what is committed and in flight (the cap when that is not a finite
 * number below it: an exhausted budget, never a snapshot the engine
 * refuses); the engine then excludes an option
 * whose charge is more than cap - spent (SW_EX_BUDGET), and charges each
 * burst it decides before the next Job of the round is looked at.
 */
void sw_budget_engine(const struct sw_budget_status *s, struct sw_budget *out);

/**
 * Every budget's status at `now_ms` (`out`: `nb` entries, in the budgets'
 * order): the live records (`live`, `nlive`; each counted once, by its
 * key) and the runs of ended records (`ended`, `nended`), an ended run
 * skipped when a live record has its UID or an earlier ended run had it,
 * so that a record being archived, or read twice, is counted once. Records
 * of teams without a budget count for nothing: such a team is unlimited.
 * Live records are keyed with `t` (sw_budget_key_of). A live record whose
 * figures are out of bounds (sw_budget_run_of), or an ended run marked
 * `bad`, charges its team's budget the whole amount (fail closed: nothing
 * is left this period); such live records are counted in `*nbad` (may be
 * NULL) for the caller to report.
 * Returns 0, or SW_ENOMEM (`out` then holds the budgets with no spend).
 */
int sw_budget_tally(const struct sw_team_budget *b, size_t nb, const struct sw_tenancy *t,
                    const struct sw_job_rec *const *live, size_t nlive,
                    const struct sw_budget_run *ended, size_t nended, int64_t now_ms,
                    struct sw_budget_status *out, size_t *nbad);

/**
 * Parses the budgets the leading hub published (SW_KEY_BUDGETS, borrowed
 * `o`: {"budgets": [{"team", "amount", "period"}], ...}) into `out` (room
 * for SW_HUB_MAX_BUDGETS), `*n` of them. A Redis record is input: each
 * team must be a DNS-1123 label, each amount a number from 0 to
 * SW_BUDGET_MAX_AMOUNT, each period a period's name, no team twice;
 * SW_EPARSE names the entry and the field otherwise.
 */
int sw_budgets_from_json(const cJSON *o, struct sw_team_budget *out, size_t *n,
                         struct sw_error *err);

/**
 * Adds to `o` (the published budgets) "grants": [{"cluster", "namespace",
 * "teams"}] for every grant of `t` that names teams: what a reader needs
 * to key records as the hub does (sw_budget_key_of). Returns 0 or
 * SW_ENOMEM.
 */
int sw_budget_grants_to_json(const struct sw_tenancy *t, cJSON *o);

/**
 * Reads the "grants" sw_budget_grants_to_json wrote (borrowed `o`) into
 * `out` (sw_tenancy_free it; none when absent). A Redis record is input:
 * each cluster and namespace a string shorter than 64 bytes, each team a
 * DNS-1123 label, at most SW_GRANT_MAX_TEAMS of them, at most
 * SW_TENANCY_MAX_GRANTS grants; SW_EPARSE names the entry and the field
 * otherwise, SW_ENOMEM.
 */
int sw_budget_grants_from_json(const cJSON *o, struct sw_tenancy *out, struct sw_error *err);

#endif
