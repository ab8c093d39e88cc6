/*
 * sim.c - the event loop of the trace-driven simulator.
 */
#include "placement/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

enum job_state { J_FUTURE = 0, J_PENDING, J_RUNNING, J_DONE, J_REJECTED };
enum ev_type { EV_FINISH = 0, EV_PREEMPT, EV_RECHECK, EV_CHECKPOINT };

struct job {
    enum job_state state;
    double remaining; /* seconds of work left (the truth, hidden from the engine) */
    double deadline;
    struct sw_estimate est; /* what the hub believes of the whole runtime */
    bool estimated;
    double input_gb, output_gb;
    double out_s;      /* moving the outputs back after the run */
    double out_egress; /* and their egress, paid once, when the run ends */
    unsigned preemptions;
    bool no_spot; /* reached the preemption cap: spot is no longer offered */
    double pending_since;
    double spot_h; /* hours computed on spot, for the cap */
    double gpu_h[3], cost[3], egress, lost_gpu_h;
    bool restarted;
    /* On on-demand, and at its last checkpoint the policy would rather
     * have queued it at home than keep it there: it keeps that place in
     * the home queue (see reconsider). */
    bool home_wanted;
    int pool;
    double price;
    enum sw_capacity cap;
    double bill_start, compute_start, end, first_start, recheck;
    unsigned epoch;
    unsigned dispatches;
    size_t slot;     /* in the pending arrays when pending */
    size_t run_slot; /* in the pool's running list when running locally */
    int budget;      /* index into budgets, -1 none */
};

struct ev {
    double t;
    uint64_t seq;
    size_t job;
    unsigned epoch;
    enum ev_type type;
};

struct sim {
    const struct sw_sim_params *p;
    const struct sw_clusters *c;
    const struct sw_trace *tr;
    struct job *jobs;
    struct ev *heap;
    size_t nheap, capheap;
    uint64_t seq;
    struct sw_workload *pend;
    size_t *pend_job;
    size_t npend;
    struct sw_decision *dec;
    struct sw_decision *acts;
    size_t *act_job;
    struct sw_pool *pools;
    int *used;
    int *mig_used; /* per pool x SW_MAX_MIG: slices of each MIG offer in use */
    /* Per pool: hours computed on spot and preemptions seen, for the rate
     * the hub learns. */
    double *spot_hours;
    size_t *spot_preempts;
    size_t **local; /* per pool: running local job indices */
    size_t *nlocal;
    struct sw_running *running;
    size_t *running_job; /* the Job behind each entry of `running` */
    struct sw_local_queue *queues;
    struct sw_quota *quotas;
    struct sw_budget *budgets;
    struct sw_engine *engine;
    struct sw_estimator *est;
    struct sw_sim_result *r;
    /* Spot availability: the trace's tick 0 is time 0; it loops. */
    double avail_next;
    /* What the hub has seen of it: the outages that ended so far. */
    size_t avail_tick; /* next tick to look at */
    bool in_outage;
    double outage_start;
    double *outages;
    size_t n_outages, cap_outages;
    double wait_tick; /* the tick the cached expected wait is for (-1: none) */
    double wait_cached;
    /* The distribution behind it: SW_WAIT_POINTS quantiles of the residual
     * outages seen (fewer when fewer were seen), and scratch to sort them. */
    double wait_points[SW_WAIT_POINTS];
    int n_wait_points;
    double *residuals;
    size_t cap_residuals;
    size_t n_home_wanted; /* running Jobs with home_wanted */
};

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A uniform draw in (0, 1) for job `j`'s `k`th dispatch: the same job sees
 * the same luck under every policy (common random numbers). */
static double uniform(uint64_t seed, size_t j, unsigned k)
{
    uint64_t x = seed ^ ((uint64_t)j * 0x100000001B3ull) ^ ((uint64_t)k << 48);
    splitmix(&x);
    return ((double)(splitmix(&x) >> 11) + 0.5) / 9007199254740992.0;
}

/* A standard normal draw for job `j`, stream `k` (Box-Muller). */
static double normal(uint64_t seed, size_t j, unsigned k)
{
    double u1 = uniform(seed, j, k), u2 = uniform(seed, j, k + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Streams of draws that are not dispatches (those count from 1). */
enum { DRAW_NOISE = 60000, DRAW_INPUT = 60002, DRAW_OUTPUT = 60004 };

static double lognormal_size(uint64_t seed, size_t j, unsigned k, double median, double sigma)
{
    if (median <= 0)
        return 0;
    double v = median * exp(sigma * normal(seed, j, k));
    return v < SW_MAX_GB ? v : SW_MAX_GB;
}

static void features(const struct sw_trace_job *tj, struct sw_job_features *f)
{
    f->team = tj->team;
    f->label = tj->label;
    f->prio = tj->prio;
    f->gpus = tj->gpus;
}

/* What the hub believes of job j's runtime when it first sees it. */
static void estimate(struct sim *s, size_t j)
{
    struct job *jb = &s->jobs[j];
    const struct sw_trace_job *tj = &s->tr->jobs[j];
    if (s->p->runtime == SW_RUNTIME_ORACLE) {
        double noise = s->p->runtime_noise;
        jb->est.median_s = tj->duration;
        if (noise > 0)
            jb->est.median_s *= exp(noise * normal(s->p->seed, j, DRAW_NOISE));
        if (jb->est.median_s < 1)
            jb->est.median_s = 1;
        jb->est.sigma = noise;
        jb->est.source = SW_EST_ORACLE;
    } else {
        struct sw_job_features f;
        features(tj, &f);
        sw_estimator_estimate(s->est, &f, tj->expected_runtime, &jb->est);
    }
    jb->estimated = true;
    s->r->estimates[jb->est.source]++;
    double mean = sw_estimate_mean(&jb->est);
    if (tj->duration > 0 && mean > 0)
        s->r->estimate_log_error += fabs(log(mean / tj->duration));
}

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static bool ev_less(const struct ev *a, const struct ev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int ev_push(struct sim *s, double t, size_t job, unsigned epoch, enum ev_type type)
{
    if (s->nheap == s->capheap) {
        size_t cap = s->capheap ? s->capheap * 2 : 1024;
        struct ev *h = sw_realloc(s->heap, cap * sizeof(*h));
        if (h == NULL)
            return SW_ENOMEM;
        s->heap = h;
        s->capheap = cap;
    }
    struct ev e = {t, s->seq++, job, epoch, type};
    size_t i = s->nheap++;
    while (i > 0 && ev_less(&e, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = e;
    return 0;
}

static struct ev ev_pop(struct sim *s)
{
    struct ev top = s->heap[0], last = s->heap[--s->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->nheap)
            break;
        if (c + 1 < s->nheap && ev_less(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!ev_less(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->nheap > 0)
        s->heap[i] = last;
    return top;
}

static void fill_workload(const struct sim *s, size_t j, struct sw_workload *w)
{
    const struct sw_trace_job *tj = &s->tr->jobs[j];
    const struct sw_job_defaults *d = &s->c->defaults;
    memset(w, 0, sizeof(*w));
    memcpy(w->name, tj->name, sizeof(w->name));
    memcpy(w->team, tj->team, sizeof(w->team));
    memcpy(w->origin, s->c->origin, sizeof(w->origin));
    w->prio = tj->prio;
    w->pods = 1;
    w->gpus_per_pod = tj->gpus;
    if (tj->gpus == 1 && tj->gpu_share > 0 && tj->gpu_share < 1 && tj->mig_profile[0] == '\0')
        w->gpu_milli = (int)lround(tj->gpu_share * 1000.0);
    memcpy(w->mig_profile, tj->mig_profile, sizeof(w->mig_profile));
    const struct job *jb = &s->jobs[j];
    /* The hub knows the work checkpointed so far, not the work left: the
     * engine gets the belief's expected remainder given that progress, as
     * a log-normal of the belief's spread with that mean. */
    double saved = tj->duration - jb->remaining;
    double sg = jb->est.sigma;
    double rem = sw_estimate_remaining(&jb->est, saved);
    w->runtime_s = rem * exp(-sg * sg / 2.0) + (jb->restarted ? d->restart_s : 0);
    if (w->runtime_s < 1)
        w->runtime_s = 1;
    w->runtime_sigma = sg;
    memcpy(w->label, tj->label, sizeof(w->label));
    w->no_spot = jb->no_spot;
    w->checkpoint_s = d->checkpoint_s;
    w->restart_s = d->restart_s;
    w->deadline = jb->deadline;
    w->submit_time = tj->submit;
    w->pending_since = jb->pending_since;
    w->burst = d->burst;
    if (jb->input_gb > 0 && d->input_region[0] != '\0') {
        w->n_inputs = 1;
        w->inputs[0].size_gb = jb->input_gb;
        w->inputs[0].n_regions = 1;
        memcpy(w->inputs[0].regions[0], d->input_region, SW_NAME_MAX);
    }
    if (jb->output_gb > 0 && d->output_region[0] != '\0') {
        w->output_gb = jb->output_gb;
        memcpy(w->output_region, d->output_region, SW_NAME_MAX);
    }
}

static void pend_add(struct sim *s, size_t j, double t)
{
    if (!s->jobs[j].estimated)
        estimate(s, j);
    s->jobs[j].state = J_PENDING;
    s->jobs[j].pending_since = t;
    s->jobs[j].slot = s->npend;
    s->pend_job[s->npend] = j;
    fill_workload(s, j, &s->pend[s->npend]);
    s->npend++;
}

static void pend_remove(struct sim *s, size_t j)
{
    size_t slot = s->jobs[j].slot, last = --s->npend;
    if (slot != last) {
        s->pend[slot] = s->pend[last];
        s->pend_job[slot] = s->pend_job[last];
        s->jobs[s->pend_job[slot]].slot = slot;
    }
}

static bool is_local(const struct sim *s, int pool)
{
    return strcmp(s->c->pools[pool].cluster, s->c->origin) == 0 &&
           s->c->pools[pool].capacity == SW_CAP_OWNED;
}

/* The MIG offer of pool `pool` job j's slices use; -1 when it asks for
 * whole GPUs or a share. The engine places a MIG Job only on a pool
 * offering its profile. */
static int mig_of(const struct sim *s, size_t j, int pool)
{
    const struct sw_trace_job *tj = &s->tr->jobs[j];
    if (tj->mig_profile[0] == '\0')
        return -1;
    const struct sw_pool *p = &s->c->pools[pool];
    for (int k = 0; k < p->n_mig; k++)
        if (strcmp(p->mig[k].profile, tj->mig_profile) == 0)
            return k;
    return -1;
}

/* The capacity job j takes of pool `pool`, in the pool's units: on a
 * time-sliced pool its share (or whole GPUs) in milli-GPUs, elsewhere whole
 * GPUs (a share takes one). */
static int units(const struct sim *s, size_t j, int pool)
{
    const struct sw_trace_job *tj = &s->tr->jobs[j];
    if (!s->c->pools[pool].time_sliced)
        return tj->gpus;
    return tj->gpu_share > 0 && tj->gpu_share < 1 ? (int)lround(tj->gpu_share * 1000.0)
                                                  : tj->gpus * 1000;
}

/* The GPUs job j is billed for on pool `pool`: its share on a time-sliced
 * pool, else whole GPUs. */
static double billed(const struct sim *s, size_t j, int pool)
{
    int k = mig_of(s, j, pool);
    if (k >= 0) /* each slice 1 / per_gpu of a GPU */
        return (double)s->tr->jobs[j].gpus / s->c->pools[pool].mig[k].per_gpu;
    return s->c->pools[pool].time_sliced ? units(s, j, pool) / 1000.0 : s->tr->jobs[j].gpus;
}

/* Takes (sign 1) or gives back (-1) job j's capacity of pool `pool`: its
 * slices of a MIG offer, else its units of the pool's GPUs. */
static void take(struct sim *s, size_t j, int pool, int sign)
{
    int k = mig_of(s, j, pool);
    if (k >= 0)
        s->mig_used[(size_t)pool * SW_MAX_MIG + (size_t)k] += sign * s->tr->jobs[j].gpus;
    else
        s->used[pool] += sign * units(s, j, pool);
}

/* Whether job j fits on local pool `pool`'s idle capacity now. */
static bool fits_now(const struct sim *s, size_t j, int pool)
{
    int k = mig_of(s, j, pool);
    if (k >= 0)
        return s->mig_used[(size_t)pool * SW_MAX_MIG + (size_t)k] + s->tr->jobs[j].gpus <=
               s->c->pools[pool].mig[k].total;
    return s->used[pool] + units(s, j, pool) <= s->c->pools[pool].total_gpus;
}

/* Pays for job j's GPUs from its billing start until t. */
static void bill(struct sim *s, size_t j, double t)
{
    struct job *jb = &s->jobs[j];
    double h = t > jb->bill_start ? (t - jb->bill_start) / 3600.0 : 0;
    double gh = h * billed(s, j, jb->pool);
    double cost = gh * jb->price;
    jb->gpu_h[jb->cap] += gh;
    jb->cost[jb->cap] += cost;
    switch (jb->cap) {
    case SW_CAP_OWNED:
        s->r->cost_onprem += cost;
        s->r->gpu_h_onprem += gh;
        break;
    case SW_CAP_SPOT:
        s->r->cost_spot += cost;
        s->r->gpu_h_spot += gh;
        break;
    case SW_CAP_ON_DEMAND:
        s->r->cost_ondemand += cost;
        s->r->gpu_h_ondemand += gh;
        break;
    }
    if (jb->budget >= 0 && jb->cap != SW_CAP_OWNED)
        s->budgets[jb->budget].spent += cost;
}

static void release(struct sim *s, size_t j)
{
    struct job *jb = &s->jobs[j];
    take(s, j, jb->pool, -1);
    if (is_local(s, jb->pool)) {
        size_t pool = (size_t)jb->pool, slot = jb->run_slot, last = --s->nlocal[pool];
        if (slot != last) {
            s->local[pool][slot] = s->local[pool][last];
            s->jobs[s->local[pool][slot]].run_slot = slot;
        }
    }
}

/* Seconds to copy `gb` of outputs from pool `pool`'s region to the
 * output region, over the cheapest link (as the engine prices it), and
 * that link's egress in *cost. */
static double output_seconds(const struct sim *s, int pool, double gb, double *cost)
{
    const char *from = s->c->pools[pool].region, *to = s->c->defaults.output_region;
    *cost = 0;
    if (gb <= 0 || to[0] == '\0' || strcmp(from, to) == 0)
        return 0;
    double best = INFINITY, secs = 0;
    for (size_t i = 0; i < s->c->n_links; i++) {
        const struct sw_link *l = &s->c->links[i];
        if (strcmp(l->from, from) == 0 && strcmp(l->to, to) == 0 && l->price_per_gb < best) {
            best = l->price_per_gb;
            secs = gb * 8.0 / l->bandwidth_gbps;
        }
    }
    if (isfinite(best))
        *cost = best * gb;
    return secs;
}

/* Spot GPUs obtainable at `t` by the availability trace (INT_MAX without one). */
static int avail_gpus(const struct sim *s, const struct sw_pool *p, double t)
{
    const struct sw_spot_trace *a = s->p->availability;
    if (a == NULL || a->n == 0 || p->capacity != SW_CAP_SPOT)
        return p->max_gpus;
    double x = fmod(t, a->gap_s * (double)a->n) / a->gap_s;
    size_t k = (size_t)x;
    if (k >= a->n)
        k = a->n - 1;
    long g = (long)a->alive[k] * (p->gpus_per_instance > 0 ? p->gpus_per_instance : p->max_gpus);
    return g < p->max_gpus ? (int)g : p->max_gpus;
}

/* The first tick boundary after `t` where the availability trace changes
 * (INFINITY without a trace or if it never changes). */
static double avail_next_change(const struct sim *s, double t)
{
    const struct sw_spot_trace *a = s->p->availability;
    if (a == NULL || a->n < 2)
        return INFINITY;
    double pos = t / a->gap_s;
    double tick = floor(pos);
    size_t k = (size_t)fmod(tick, (double)a->n);
    int now = a->alive[k];
    for (size_t step = 1; step <= a->n; step++) {
        if (a->alive[(k + step) % a->n] != now)
            return (tick + (double)step) * a->gap_s;
    }
    return INFINITY;
}

/* Follows the availability trace up to `t` as a hub would see it, tick by
 * tick, and records each outage (a run of ticks with nothing available)
 * as it ends. */
static int avail_observe(struct sim *s, double t)
{
    const struct sw_spot_trace *a = s->p->availability;
    if (a == NULL || a->n == 0)
        return 0;
    double last = floor(t / a->gap_s);
    for (; (double)s->avail_tick <= last; s->avail_tick++) {
        double at = (double)s->avail_tick * a->gap_s;
        bool none = a->alive[s->avail_tick % a->n] <= 0;
        if (none && !s->in_outage) {
            s->in_outage = true;
            s->outage_start = at;
        } else if (!none && s->in_outage) {
            s->in_outage = false;
            if (s->n_outages == s->cap_outages) {
                size_t cap = s->cap_outages ? 2 * s->cap_outages : 256;
                double *o = sw_realloc(s->outages, cap * sizeof(double));
                if (o == NULL)
                    return SW_ENOMEM;
                s->outages = o;
                s->cap_outages = cap;
            }
            s->outages[s->n_outages++] = at - s->outage_start;
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b);

/* The hub's expectation of how long spot capacity stays out, at `t` in an
 * outage that began at outage_start: the mean residual life of the
 * outages seen so far that lasted longer than this one has; with none, as
 * long again as it has lasted (at least one tick). Also leaves the
 * distribution of those residuals in wait_points: SW_WAIT_POINTS equally
 * spaced quantiles ((k + 1/2) / SW_WAIT_POINTS), or every residual when
 * fewer were seen, none when none was. *rc: 0 or SW_ENOMEM. */
static double avail_expected_wait(struct sim *s, double t, int *rc)
{
    const struct sw_spot_trace *a = s->p->availability;
    double tick = floor(t / a->gap_s);
    *rc = 0;
    if (tick == s->wait_tick)
        return s->wait_cached;
    if (s->cap_residuals < s->n_outages) {
        double *r = sw_realloc(s->residuals, s->cap_outages * sizeof(double));
        if (r == NULL) {
            *rc = SW_ENOMEM;
            return 0;
        }
        s->residuals = r;
        s->cap_residuals = s->cap_outages;
    }
    double e = t - s->outage_start, sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < s->n_outages; i++)
        if (s->outages[i] > e) {
            s->residuals[k] = s->outages[i] - e;
            sum += s->residuals[k];
            k++;
        }
    double w = k > 0 ? sum / (double)k : e;
    if (w < a->gap_s)
        w = a->gap_s;
    s->n_wait_points = 0;
    if (k > 0) {
        qsort(s->residuals, k, sizeof(double), cmp_double);
        size_t n = k < SW_WAIT_POINTS ? k : SW_WAIT_POINTS;
        for (size_t q = 0; q < n; q++) {
            size_t at =
                k < SW_WAIT_POINTS ? q : (size_t)(((double)q + 0.5) * (double)k / SW_WAIT_POINTS);
            s->wait_points[q] = s->residuals[at];
        }
        s->n_wait_points = (int)n;
    }
    s->wait_tick = tick;
    s->wait_cached = w;
    return w;
}

static int dispatch(struct sim *s, size_t j, const struct sw_decision *d, double t)
{
    struct job *jb = &s->jobs[j];
    const struct sw_pool *p = &s->c->pools[d->pool];
    const struct sw_option *o = &d->chosen;
    double gpus = billed(s, j, d->pool);
    double restart = jb->restarted ? s->c->defaults.restart_s : 0;
    pend_remove(s, j);
    jb->state = J_RUNNING;
    jb->pool = d->pool;
    jb->price = p->price_gpu_h;
    jb->cap = p->capacity;
    jb->epoch++;
    jb->dispatches++;
    take(s, j, d->pool, 1);
    if (is_local(s, d->pool)) {
        jb->run_slot = s->nlocal[d->pool];
        s->local[d->pool][s->nlocal[d->pool]++] = j;
    } else {
        s->r->bursts++;
    }
    /* The option's egress is its inputs' and its outputs'. The inputs move
     * now; the outputs leave once, when the run ends (a preempted or moved
     * run writes none), from the pool it ends on. */
    jb->out_s = output_seconds(s, d->pool, jb->output_gb, &jb->out_egress);
    double in_egress = o->cost.egress_cost - jb->out_egress;
    if (in_egress < 0)
        in_egress = 0;
    s->r->cost_egress += in_egress;
    jb->egress += in_egress;
    if (jb->budget >= 0)
        s->budgets[jb->budget].spent += in_egress;
    jb->bill_start = t + o->transfer_s;
    jb->compute_start = jb->bill_start + o->provision_s + restart;
    s->r->lost_gpu_h += gpus * restart / 3600.0;
    jb->lost_gpu_h += gpus * restart / 3600.0;
    if (jb->first_start < 0)
        jb->first_start = jb->bill_start + o->provision_s;
    jb->end = jb->compute_start + jb->remaining;
    double preempt = INFINITY;
    if (p->capacity == SW_CAP_SPOT) {
        double u = uniform(s->p->seed, j, jb->dispatches);
        if (s->p->preemptions != NULL) {
            const struct sw_spot_trace *tr = s->p->preemptions;
            preempt = jb->compute_start +
                      sw_spot_trace_next_preemption(tr, u * tr->gap_s * (double)tr->n, 0);
        } else if (p->interrupt_per_h > 0) {
            preempt = jb->compute_start - log(u) * 3600.0 / p->interrupt_per_h;
        }
    }
    /* On-demand Jobs may move back to spot at a checkpoint. */
    double ck = s->c->defaults.checkpoint_s;
    if (s->p->migrate && p->capacity == SW_CAP_ON_DEMAND && ck > 0 &&
        jb->compute_start + ck < jb->end) {
        int rc = ev_push(s, jb->compute_start + ck, j, jb->epoch, EV_CHECKPOINT);
        if (rc != 0)
            return rc;
    }
    if (preempt < jb->end)
        return ev_push(s, preempt, j, jb->epoch, EV_PREEMPT);
    return ev_push(s, jb->end, j, jb->epoch, EV_FINISH);
}

/* The preemption rate of spot pool `i` as the hub has seen it: the pool's
 * listed rate as a prior worth ten preemptions' observation (a hundred
 * hours when it lists none), updated by the preemptions and hours its Jobs
 * have had so far. */
static double learned_rate(const struct sim *s, size_t i)
{
    double r0 = s->c->pools[i].interrupt_per_h;
    double h0 = r0 > 0 ? 10.0 / r0 : 100.0;
    double r = (r0 * h0 + (double)s->spot_preempts[i]) / (h0 + s->spot_hours[i]);
    return r < SW_MAX_INTERRUPTIONS ? r : SW_MAX_INTERRUPTIONS;
}

/* What the hub expects a running local Job to need still: the belief's
 * remainder given the work checkpointed before this run and the time it
 * has computed since (the truth only under the exact oracle). */
static double running_remaining(const struct sim *s, size_t j, double t)
{
    const struct job *jb = &s->jobs[j];
    double saved = s->tr->jobs[j].duration - jb->remaining;
    double ran = t > jb->compute_start ? t - jb->compute_start : 0;
    double before = jb->compute_start > t ? jb->compute_start - t : 0;
    return before + sw_estimate_remaining(&jb->est, saved + ran);
}

/* What running Job j has computed by t (*done) and, of that, what its
 * checkpoints keep (returned; nothing without checkpoints). */
static double checkpointed(const struct sim *s, size_t j, double t, double *done)
{
    const struct job *jb = &s->jobs[j];
    *done = t > jb->compute_start ? t - jb->compute_start : 0;
    double ck = s->c->defaults.checkpoint_s;
    return ck > 0 ? floor(*done / ck) * ck : 0;
}

/* The work running Job j loses if it stops at t: since its last checkpoint. */
static double work_since_checkpoint(const struct sim *s, size_t j, double t)
{
    double done, saved = checkpointed(s, j, t, &done);
    return done - saved;
}

/* Job j, stopped at t (billed and released), keeps its work up to its last
 * checkpoint and loses the rest. Returns the seconds it had computed. */
static double keep_checkpointed(struct sim *s, size_t j, double t)
{
    struct job *jb = &s->jobs[j];
    double done, saved = checkpointed(s, j, t, &done);
    if (saved > jb->remaining)
        saved = jb->remaining;
    jb->remaining -= saved;
    double lost = billed(s, j, jb->pool) * (done - saved) / 3600.0;
    s->r->lost_gpu_h += lost;
    jb->lost_gpu_h += lost;
    return done;
}

/* Stops running home Job j at t to make room for a deadline (the engine's
 * decision, params->make_room): it keeps its work to its last checkpoint
 * and is queued again, decided at once. */
static int stop_for_room(struct sim *s, size_t j, double t)
{
    struct job *jb = &s->jobs[j];
    bill(s, j, t);
    release(s, j);
    keep_checkpointed(s, j, t);
    s->r->home_stops++;
    jb->restarted = true;
    jb->epoch++;
    pend_add(s, j, t);
    return ev_push(s, t, j, jb->epoch, EV_RECHECK);
}

/* The snapshot of the hub's view at t. With `preempt` (the schedule's, not
 * a reconsidered Job's), running home Jobs without a deadline, production
 * aside, are marked as Jobs the engine may stop (params->make_room). */
static int build_snapshot(struct sim *s, double t, struct sw_snapshot *snap, bool preempt)
{
    const struct sw_clusters *c = s->c;
    size_t nrun = 0, nq = 0;
    for (size_t i = 0; i < c->n_pools; i++) {
        struct sw_pool *p = &s->pools[i];
        *p = c->pools[i];
        if (is_local(s, (int)i)) {
            p->free_gpus = p->total_gpus - s->used[i];
            struct sw_local_queue *q = &s->queues[nq++];
            memset(q, 0, sizeof(*q));
            memcpy(q->pool, p->name, sizeof(q->pool));
            q->running = &s->running[nrun];
            for (size_t k = 0; k < s->nlocal[i]; k++) {
                size_t j = s->local[i][k];
                if (mig_of(s, j, (int)i) >= 0)
                    continue; /* on a MIG offer's slices, below */
                s->running[nrun].gpus = units(s, j, (int)i);
                s->running[nrun].remaining_s = running_remaining(s, j, t);
                s->running[nrun].preemptible = preempt && s->p->make_room &&
                                               s->jobs[j].deadline <= 0 &&
                                               s->tr->jobs[j].prio != SW_PRIO_PRODUCTION;
                s->running[nrun].lost_s = work_since_checkpoint(s, j, t);
                s->running_job[nrun] = j;
                nrun++;
            }
            q->n_running = (size_t)(&s->running[nrun] - q->running);
            for (int m = 0; m < p->n_mig; m++) {
                struct sw_mig_offer *o = &p->mig[m];
                o->free = o->total - s->mig_used[i * SW_MAX_MIG + (size_t)m];
                o->running = &s->running[nrun];
                for (size_t k = 0; k < s->nlocal[i]; k++) {
                    size_t j = s->local[i][k];
                    if (mig_of(s, j, (int)i) != m)
                        continue;
                    s->running[nrun].gpus = s->tr->jobs[j].gpus;
                    s->running[nrun].remaining_s = running_remaining(s, j, t);
                    s->running[nrun].preemptible = false;
                    s->running[nrun].lost_s = 0;
                    s->running_job[nrun] = j;
                    nrun++;
                }
                o->n_running = (size_t)(&s->running[nrun] - o->running);
            }
        } else {
            /* Cloud pools scale from zero: what runs is provisioned, any
             * more must be added, after the provisioning delay. */
            p->total_gpus = s->used[i];
            p->free_gpus = 0;
            /* MIG Jobs pack on the GPUs rented for their profile; what is
             * left of the last GPU is idle slices. */
            for (int m = 0; m < p->n_mig; m++) {
                struct sw_mig_offer *o = &p->mig[m];
                int used = s->mig_used[i * SW_MAX_MIG + (size_t)m];
                int gpus = (used + o->per_gpu - 1) / o->per_gpu;
                p->total_gpus += gpus;
                o->total = gpus * o->per_gpu;
                o->free = o->total - used;
            }
            if (p->capacity == SW_CAP_SPOT)
                p->interrupt_per_h = learned_rate(s, i);
            int now_gpus = avail_gpus(s, p, t);
            if (now_gpus <= 0 && s->in_outage) {
                /* None obtainable now: the pool keeps its ceiling for when
                 * capacity returns, after the wait the hub expects. */
                int rc;
                p->capacity_wait_s = avail_expected_wait(s, t, &rc);
                if (rc != 0)
                    return rc;
                p->n_capacity_wait_points = s->n_wait_points;
                memcpy(p->capacity_wait_points, s->wait_points, sizeof(s->wait_points));
            } else {
                p->max_gpus = now_gpus;
            }
            if (p->max_gpus < p->total_gpus)
                p->max_gpus = p->total_gpus;
        }
    }
    for (size_t q = 0; q < c->n_quotas; q++) {
        s->quotas[q] = c->quotas[q];
        s->quotas[q].used = 0;
    }
    if (c->n_quotas > 0) {
        for (size_t j = 0; j < s->tr->n; j++) {
            const struct job *jb = &s->jobs[j];
            if (jb->state != J_RUNNING)
                continue;
            const struct sw_pool *p = &c->pools[jb->pool];
            const char *fl = p->flavour[0] ? p->flavour : p->name;
            for (size_t q = 0; q < c->n_quotas; q++)
                if (strcmp(s->quotas[q].team, s->tr->jobs[j].team) == 0 &&
                    strcmp(s->quotas[q].flavour, fl) == 0)
                    s->quotas[q].used += s->tr->jobs[j].gpus;
        }
    }
    memset(snap, 0, sizeof(*snap));
    snap->now = t;
    snap->pools = s->pools;
    snap->n_pools = c->n_pools;
    snap->links = c->links;
    snap->n_links = c->n_links;
    snap->quotas = s->quotas;
    snap->n_quotas = c->n_quotas;
    snap->budgets = s->budgets;
    snap->n_budgets = c->n_budgets;
    snap->queues = s->queues;
    snap->n_queues = nq;
    snap->pending = s->pend;
    snap->n_pending = s->npend;
    return 0;
}

/* At a checkpoint of Job j, running on on-demand: asks the engine where the
 * Job would go if it were queued again now, from this checkpoint, with a
 * restart, in its place in the pending queue (by priority and submit time,
 * as every Job is decided); if that is spot or home, starting now (home:
 * GPUs idle now that no Job queued before it is given), and the policy's
 * figure for it (cost-aware: its score; others: its expected cost) is
 * below what the rest of the run costs where it is, the Job stops at the
 * checkpoint (losing no work) and is decided again with the queue. When
 * the policy would rather queue it at home than keep it where it is, but
 * home is busy, it keeps that place in the home queue: the main loop calls
 * this again (at_checkpoint false) as soon as home GPUs free, and then a
 * move loses the work since the last checkpoint. Sets *moved. */
static void set_home_wanted(struct sim *s, struct job *jb, bool wanted)
{
    if (jb->home_wanted != wanted)
        s->n_home_wanted += wanted ? 1 : (size_t)-1;
    jb->home_wanted = wanted;
}

static int reconsider(struct sim *s, size_t j, double t, bool at_checkpoint, bool *moved,
                      struct sw_error *err)
{
    struct job *jb = &s->jobs[j];
    *moved = false;
    double ck = s->c->defaults.checkpoint_s;
    double done = t - jb->compute_start;
    /* Between checkpoints (a home GPU freed for a Job that keeps its place
     * in the home queue), the work since the last one is lost. */
    double kept = at_checkpoint ? done : (ck > 0 && done > 0 ? floor(done / ck) * ck : 0);
    if (at_checkpoint && t + ck < jb->end) {
        int rc = ev_push(s, t + ck, j, jb->epoch, EV_CHECKPOINT);
        if (rc != 0)
            return rc;
    }
    int rc = avail_observe(s, t);
    if (rc != 0)
        return rc;
    /* The Job as the hub would queue it again: from this checkpoint. */
    double remaining = jb->remaining;
    bool restarted = jb->restarted;
    jb->remaining -= kept;
    jb->restarted = true;
    struct sw_workload w;
    fill_workload(s, j, &w);
    w.pending_since = t;
    jb->remaining = remaining;
    jb->restarted = restarted;
    /* It is decided with the pending queue, in its place in the order, so
     * that it takes no home GPU a Job queued before it would get. The Job
     * runs, so the pending arrays have room for it. */
    struct sw_snapshot snap;
    if ((rc = build_snapshot(s, t, &snap, false)) != 0)
        return rc;
    s->pend[s->npend] = w;
    snap.n_pending = s->npend + 1;
    if ((rc = sw_engine_decide(s->engine, &snap, &s->p->policy, 0, s->dec, err)) != 0)
        return rc;
    const struct sw_decision d = s->dec[s->npend];
    bool to_spot = d.verdict == SW_VERDICT_BURST && s->c->pools[d.pool].capacity == SW_CAP_SPOT &&
                   d.chosen.wait_s <= 0;
    bool to_home = d.verdict == SW_VERDICT_STAY && d.chosen.wait_s <= 0 && fits_now(s, j, d.pool);
    /* What the rest costs where it is, by the same belief, with the
     * outputs' egress from there: the move's figure counts its own. */
    const struct sw_trace_job *tj = &s->tr->jobs[j];
    double saved = tj->duration - jb->remaining + done;
    double stay =
        billed(s, j, jb->pool) * jb->price * sw_estimate_remaining(&jb->est, saved) / 3600.0 +
        jb->out_egress;
    double move = s->p->policy.kind == SW_POLICY_COST_AWARE ? d.chosen.score : d.chosen.cost.total;
    /* The policy would rather queue it at home than keep it here, but home
     * is busy: it keeps its place in the home queue, and is decided again
     * as soon as a home GPU frees, before the Jobs queued after it take
     * it (the main loop). At a checkpoint the place is decided anew. */
    if (at_checkpoint)
        set_home_wanted(s, jb, d.verdict == SW_VERDICT_STAY && d.chosen.wait_s > 0 && move < stay);
    if ((!to_spot && !to_home) || !(move < stay))
        return 0;
    set_home_wanted(s, jb, false);
    bill(s, j, t);
    double lost_gpus = billed(s, j, jb->pool);
    release(s, j);
    if (done > kept) {
        s->r->lost_gpu_h += lost_gpus * (done - kept) / 3600.0;
        jb->lost_gpu_h += lost_gpus * (done - kept) / 3600.0;
    }
    jb->remaining -= kept;
    jb->restarted = true;
    jb->epoch++;
    s->r->migrations++;
    pend_add(s, j, t);
    *moved = true;
    return 0;
}

static int schedule(struct sim *s, double t, struct sw_error *err)
{
    if (s->npend == 0)
        return 0;
    int rc = avail_observe(s, t);
    if (rc != 0)
        return rc;
    struct sw_snapshot snap;
    if ((rc = build_snapshot(s, t, &snap, true)) != 0)
        return rc;
    rc = sw_engine_decide(s->engine, &snap, &s->p->policy, 0, s->dec, err);
    if (rc != 0)
        return rc;
    s->r->rounds++;
    /* Act in decision order. Acting moves pending slots, so the decisions
     * are copied out, in rank order, before anything moves. */
    size_t n = s->npend, nact = 0;
    for (size_t i = 0; i < n; i++) {
        s->acts[s->dec[i].rank] = s->dec[i];
        s->act_job[s->dec[i].rank] = s->pend_job[i];
    }
    for (size_t r = 0; r < n; r++) {
        const struct sw_decision *d = &s->acts[r];
        size_t j = s->act_job[r];
        struct job *jb = &s->jobs[j];
        if (d->verdict == SW_VERDICT_REJECT) {
            pend_remove(s, j);
            jb->state = J_REJECTED;
            s->r->rejected++;
            continue;
        }
        /* Making room at home: the Jobs the engine stops go first. */
        if (d->n_preempt > 0) {
            const struct sw_local_queue *q = &snap.queues[d->preempt_queue];
            size_t base = (size_t)(q->running - s->running);
            for (size_t i = 0; i < d->n_preempt; i++)
                if ((rc = stop_for_room(s, s->running_job[base + (size_t)d->preempt[i]], t)) != 0)
                    return rc;
        }
        /* A burst waiting for spot capacity to return is decided again
         * when it does (or when the wait the hub expected is over). */
        bool start_now = d->verdict == SW_VERDICT_BURST
                             ? d->chosen.wait_s <= 0
                             : d->chosen.wait_s <= 0 && fits_now(s, j, d->pool);
        double recheck = d->recheck_at;
        if (d->verdict == SW_VERDICT_BURST && !start_now &&
            !(recheck > t && recheck < t + d->chosen.wait_s))
            recheck = t + d->chosen.wait_s;
        if (start_now) {
            if ((rc = dispatch(s, j, d, t)) != 0)
                return rc;
            nact++;
            continue;
        }
        if (recheck > t && recheck != jb->recheck) {
            jb->recheck = recheck;
            if ((rc = ev_push(s, recheck, j, jb->epoch, EV_RECHECK)) != 0)
                return rc;
        }
    }
    (void)nact;
    return 0;
}

static double pct(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t k = (size_t)ceil(q * (double)n);
    if (k == 0)
        k = 1;
    return sorted[k - 1];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The preemption cap: a fixed count when the clusters file sets one, else
 * more preemptions than the pool's learned rate makes plausible over the
 * hours the Job has computed on spot (the Poisson count's mean plus three
 * standard deviations, plus one). */
static bool over_cap(const struct sim *s, const struct job *jb)
{
    if (s->c->defaults.max_preemptions >= 0)
        return jb->preemptions >= (unsigned)s->c->defaults.max_preemptions;
    double n = learned_rate(s, (size_t)jb->pool) * jb->spot_h;
    return (double)jb->preemptions > n + 3.0 * sqrt(n) + 1.0;
}

double sw_sim_deadline(const struct sw_clusters *c, const struct sw_trace_job *tj)
{
    const struct sw_job_defaults *d = &c->defaults;
    double deadline = tj->deadline;
    if (deadline == 0 && d->deadline_slack > 0 &&
        (double)(name_hash(tj->name) % 10000) < d->deadline_fraction * 10000.0)
        deadline = tj->submit + d->deadline_allowance_s + d->deadline_slack * tj->duration;
    /* Past the engine's last time, a deadline is none in effect. */
    return deadline > SW_MAX_SECONDS ? SW_MAX_SECONDS : deadline;
}

static void job_record(const struct sim *s, size_t j, struct sw_sim_job *o)
{
    const struct job *jb = &s->jobs[j];
    const struct sw_trace_job *tj = &s->tr->jobs[j];
    memset(o, 0, sizeof(*o));
    memcpy(o->name, tj->name, sizeof(o->name));
    memcpy(o->team, tj->team, sizeof(o->team));
    if (jb->pool >= 0) {
        memcpy(o->pool, s->c->pools[jb->pool].name, sizeof(o->pool));
        o->capacity = s->c->pools[jb->pool].capacity;
    }
    o->done = jb->state == J_DONE;
    o->submit = tj->submit;
    o->start = jb->first_start;
    o->end = o->done ? jb->end : INFINITY;
    o->wait_s = jb->first_start >= 0 ? jb->first_start - tj->submit : INFINITY;
    o->jct_s = o->done ? jb->end - tj->submit : INFINITY;
    o->deadline = jb->deadline;
    o->gpus = tj->gpus;
    o->preemptions = jb->preemptions;
    o->fell_back = jb->no_spot;
    memcpy(o->gpu_h, jb->gpu_h, sizeof(o->gpu_h));
    memcpy(o->cost, jb->cost, sizeof(o->cost));
    o->egress_cost = jb->egress;
    o->lost_gpu_h = jb->lost_gpu_h;
    o->input_gb = jb->input_gb;
    o->output_gb = jb->output_gb;
    o->estimate = jb->est.source;
    o->estimate_mean_s = sw_estimate_mean(&jb->est);
    o->duration_s = tj->duration;
}

int sw_sim_run(const struct sw_sim_params *p, struct sw_sim_result *out, struct sw_sim_job *jobs,
               struct sw_error *err)
{
    if (!(p->runtime_noise >= 0 && p->runtime_noise <= SW_MAX_SIGMA))
        return sw_error_set(err, SW_EINVAL, "simulator: runtime noise %g: expected 0 to %g",
                            p->runtime_noise, SW_MAX_SIGMA);
    const struct sw_clusters *c = p->clusters;
    const struct sw_trace *tr = p->trace;
    size_t n = tr->n, np = c->n_pools;
    struct sim s = {.p = p, .c = c, .tr = tr, .r = out};
    memset(out, 0, sizeof(*out));
    snprintf(out->policy, sizeof(out->policy), "%s", sw_policy_name(p->policy.kind));
    out->jobs = n;
    int rc = SW_ENOMEM;
    s.jobs = sw_calloc(n + 1, sizeof(*s.jobs));
    s.pend = sw_calloc(n + 1, sizeof(*s.pend));
    s.pend_job = sw_calloc(n + 1, sizeof(*s.pend_job));
    s.dec = sw_calloc(n + 1, sizeof(*s.dec));
    s.acts = sw_calloc(n + 1, sizeof(*s.acts));
    s.act_job = sw_calloc(n + 1, sizeof(*s.act_job));
    s.pools = sw_calloc(np, sizeof(*s.pools));
    s.used = sw_calloc(np, sizeof(*s.used));
    s.mig_used = sw_calloc(np * SW_MAX_MIG + 1, sizeof(*s.mig_used));
    s.spot_hours = sw_calloc(np + 1, sizeof(*s.spot_hours));
    s.spot_preempts = sw_calloc(np + 1, sizeof(*s.spot_preempts));
    s.local = sw_calloc(np, sizeof(*s.local));
    s.nlocal = sw_calloc(np, sizeof(*s.nlocal));
    s.running = sw_calloc(n + 1, sizeof(*s.running));
    s.running_job = sw_calloc(n + 1, sizeof(*s.running_job));
    s.queues = sw_calloc(np, sizeof(*s.queues));
    s.quotas = sw_calloc(c->n_quotas + 1, sizeof(*s.quotas));
    s.budgets = sw_calloc(c->n_budgets + 1, sizeof(*s.budgets));
    double *jct = sw_calloc(n + 1, sizeof(double));
    double *wait = sw_calloc(n + 1, sizeof(double));
    if (!s.jobs || !s.pend || !s.pend_job || !s.dec || !s.acts || !s.act_job || !s.pools ||
        !s.used || !s.mig_used || !s.spot_hours || !s.spot_preempts || !s.local || !s.nlocal ||
        !s.running || !s.running_job || !s.queues || !s.quotas || !s.budgets || !jct || !wait ||
        sw_engine_new(&s.engine) != 0)
        goto nomem;
    if ((rc = sw_estimator_new(&c->defaults.estimator, &s.est)) != 0) {
        if (rc == SW_EINVAL)
            return sw_error_set(err, rc, "simulator: runtime prior out of range");
        goto nomem;
    }
    s.avail_next = avail_next_change(&s, 0);
    s.wait_tick = -1;
    for (size_t i = 0; i < np; i++)
        if (is_local(&s, (int)i) && (s.local[i] = sw_calloc(n + 1, sizeof(size_t))) == NULL)
            goto nomem;
    memcpy(s.budgets, c->budgets, c->n_budgets * sizeof(*s.budgets));
    for (size_t j = 0; j < n; j++) {
        const struct sw_trace_job *tj = &tr->jobs[j];
        struct job *jb = &s.jobs[j];
        jb->remaining = tj->duration;
        jb->first_start = -1;
        jb->pool = -1;
        jb->budget = -1;
        for (size_t b = 0; b < c->n_budgets; b++)
            if (strcmp(c->budgets[b].team, tj->team) == 0)
                jb->budget = (int)b;
        jb->deadline = sw_sim_deadline(c, tj);
        const struct sw_job_defaults *d = &c->defaults;
        jb->input_gb = tj->input_gb >= 0
                           ? tj->input_gb
                           : lognormal_size(p->seed, j, DRAW_INPUT, d->input_gb, d->input_gb_sigma);
        jb->output_gb = lognormal_size(p->seed, j, DRAW_OUTPUT, d->output_gb, d->output_gb_sigma);
    }
    size_t next = 0;
    double next_sample = 0;
    while (next < n || s.nheap > 0) {
        double t = INFINITY;
        if (next < n)
            t = tr->jobs[next].submit;
        if (s.nheap > 0 && s.heap[0].t < t)
            t = s.heap[0].t;
        /* Spot capacity changing matters only to Jobs waiting for it. */
        if (s.avail_next <= t && s.npend > 0)
            t = s.avail_next;
        if (s.avail_next <= t)
            s.avail_next = avail_next_change(&s, t);
        /* The engine takes no time past SW_MAX_SECONDS (31 million years):
         * what has not finished by then never does. */
        if (t > SW_MAX_SECONDS)
            break;
        /* Usage is constant between events: sample it up to t first. */
        while (p->usage != NULL && p->usage_step_s > 0 && out->usage_n < p->usage_cap &&
               next_sample <= t) {
            struct sw_sim_usage *u = &p->usage[out->usage_n++];
            u->t = next_sample;
            memset(u->gpus, 0, sizeof(u->gpus));
            for (size_t i = 0; i < np; i++)
                u->gpus[c->pools[i].capacity] +=
                    c->pools[i].time_sliced ? (s.used[i] + 999) / 1000 : s.used[i];
            for (size_t i = 0; i < np; i++)
                for (int m = 0; m < c->pools[i].n_mig; m++) {
                    int per = c->pools[i].mig[m].per_gpu, used = s.mig_used[i * SW_MAX_MIG + m];
                    u->gpus[c->pools[i].capacity] += (used + per - 1) / per;
                }
            next_sample += p->usage_step_s;
        }
        for (; next < n && tr->jobs[next].submit <= t; next++)
            pend_add(&s, next, tr->jobs[next].submit);
        while (s.nheap > 0 && s.heap[0].t <= t) {
            struct ev e = ev_pop(&s);
            struct job *jb = &s.jobs[e.job];
            if (e.type == EV_RECHECK || e.epoch != jb->epoch || jb->state != J_RUNNING)
                continue;
            if (e.type == EV_CHECKPOINT) {
                bool moved;
                if ((rc = reconsider(&s, e.job, e.t, true, &moved, err)) != 0)
                    goto out;
                continue;
            }
            bill(&s, e.job, e.t);
            release(&s, e.job);
            if (jb->cap == SW_CAP_SPOT && e.t > jb->compute_start) {
                s.spot_hours[jb->pool] += (e.t - jb->compute_start) / 3600.0;
                s.spot_preempts[jb->pool] += e.type == EV_PREEMPT;
            }
            if (e.type == EV_FINISH) {
                set_home_wanted(&s, jb, false);
                jb->state = J_DONE;
                jb->end = e.t + jb->out_s;
                out->cost_egress += jb->out_egress;
                jb->egress += jb->out_egress;
                if (jb->budget >= 0)
                    s.budgets[jb->budget].spent += jb->out_egress;
                struct sw_job_features f;
                features(&tr->jobs[e.job], &f);
                if ((rc = sw_estimator_observe(s.est, &f, tr->jobs[e.job].expected_runtime,
                                               tr->jobs[e.job].duration)) != 0)
                    goto nomem;
                /* Home GPUs freed: Jobs on on-demand keeping a place in
                 * the home queue are decided again now. */
                if (is_local(&s, jb->pool) && s.n_home_wanted > 0)
                    for (size_t k = 0; k < n; k++)
                        if (s.jobs[k].home_wanted && s.jobs[k].state == J_RUNNING) {
                            bool moved;
                            if ((rc = reconsider(&s, k, e.t, false, &moved, err)) != 0)
                                goto out;
                        }
                continue;
            }
            /* Preempted: keep the work up to the last checkpoint. */
            double done = keep_checkpointed(&s, e.job, e.t);
            out->preemptions++;
            jb->preemptions++;
            jb->spot_h += done / 3600.0;
            if (!jb->no_spot && over_cap(&s, jb)) {
                jb->no_spot = true;
                out->fallbacks++;
            }
            jb->restarted = true;
            jb->epoch++;
            pend_add(&s, e.job, e.t);
        }
        if ((rc = schedule(&s, t, err)) != 0)
            goto out;
    }
    /* Figures. */
    size_t nj = 0;
    double wsum = 0, jsum = 0;
    for (size_t j = 0; j < n; j++) {
        const struct job *jb = &s.jobs[j];
        bool done = jb->state == J_DONE;
        if (jobs != NULL)
            job_record(&s, j, &jobs[j]);
        if (jb->deadline > 0) {
            out->deadlines++;
            if (!done || jb->end > jb->deadline + 1e-6)
                out->deadline_misses++;
        }
        if (!done)
            continue;
        jct[nj] = jb->end - tr->jobs[j].submit;
        wait[nj] = jb->first_start - tr->jobs[j].submit;
        jsum += jct[nj];
        wsum += wait[nj];
        if (wait[nj] > out->wait_max)
            out->wait_max = wait[nj];
        nj++;
    }
    out->completed = nj;
    qsort(jct, nj, sizeof(double), cmp_double);
    qsort(wait, nj, sizeof(double), cmp_double);
    out->jct_mean = nj ? jsum / (double)nj : 0;
    out->jct_p50 = pct(jct, nj, 0.50);
    out->jct_p95 = pct(jct, nj, 0.95);
    out->jct_p99 = pct(jct, nj, 0.99);
    out->wait_mean = nj ? wsum / (double)nj : 0;
    out->wait_p99 = pct(wait, nj, 0.99);
    if (n > 0)
        out->estimate_log_error /= (double)n;
    out->cost_cloud = out->cost_spot + out->cost_ondemand + out->cost_egress;
    out->cost_total = out->cost_onprem + out->cost_cloud;
    double gh = out->gpu_h_onprem + out->gpu_h_spot + out->gpu_h_ondemand;
    out->cloud_gpu_fraction = gh > 0 ? (out->gpu_h_spot + out->gpu_h_ondemand) / gh : 0;
    rc = 0;
    goto out;
nomem:
    rc = sw_error_set(err, SW_ENOMEM, "simulator: out of memory for %zu jobs", n);
out:
    if (s.local != NULL)
        for (size_t i = 0; i < np; i++)
            sw_free(s.local[i]);
    sw_engine_free(s.engine);
    sw_estimator_free(s.est);
    sw_free(s.jobs);
    sw_free(s.pend);
    sw_free(s.pend_job);
    sw_free(s.dec);
    sw_free(s.acts);
    sw_free(s.act_job);
    sw_free(s.pools);
    sw_free(s.used);
    sw_free(s.mig_used);
    sw_free(s.spot_hours);
    sw_free(s.spot_preempts);
    sw_free(s.local);
    sw_free(s.nlocal);
    sw_free(s.running);
    sw_free(s.running_job);
    sw_free(s.queues);
    sw_free(s.quotas);
    sw_free(s.budgets);
    sw_free(s.heap);
    sw_free(s.outages);
    sw_free(s.residuals);
    sw_free(jct);
    sw_free(wait);
    return rc;
}
