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
#include "placement/model.h"

/** The most budgets a config holds. */
#define SW_HUB_MAX_BUDGETS 256
/** The largest amount a budget may have (USD). */
#define SW_BUDGET_MAX_AMOUNT 1e9

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

/** The team a record is charged to: its team, else its namespace (as chargeback). */
const char *sw_budget_team_of(const struct sw_job_rec *r);

/** One run as a budget counts it (an ended record kept compact). */
struct sw_budget_run {
    char team[64];
    char uid[64];          /* its origin Job's UID: a live record of it wins */
    bool cloud;            /* ran on spot or on-demand (owned is not charged) */
    int64_t started_ms;    /* 0: never ran */
    int64_t finished_ms;   /* 0: still running */
    double dollars_per_ms; /* billed GPUs x price per GPU-hour / 3.6e6 */
};

/** The run of a record (its current attempt). */
void sw_budget_run_of(const struct sw_job_rec *r, struct sw_budget_run *out);

/**
 * What `run` cost inside [start_ms, now_ms]: its hours in that window x its
 * price (a running one to now). 0 for owned capacity, a run that never
 * started, or one outside the window.
 */
double sw_budget_run_committed(const struct sw_budget_run *run, int64_t start_ms, int64_t now_ms);

/**
 * What a record's burst still is expected to cost: for a record decided,
 * data-ready, dispatching, dispatched or running on cloud capacity, its
 * decision's expected cost less what it has cost so far (never below 0);
 * 0 for any other record.
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
 * spent what is committed and in flight; the engine then excludes an option
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
 * Returns 0, or SW_ENOMEM (`out` then holds the budgets with no spend).
 */
int sw_budget_tally(const struct sw_team_budget *b, size_t nb, const struct sw_job_rec *const *live,
                    size_t nlive, const struct sw_budget_run *ended, size_t nended, int64_t now_ms,
                    struct sw_budget_status *out);

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

#endif
