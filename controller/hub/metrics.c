/*
 * metrics.c - /metrics (Prometheus text format), /healthz and /readyz.
 *
 * The answers of the hub's small HTTP server (httpd.c), on the hub's loop.
 * /healthz is 200 while the process runs its loop (standbys included);
 * /readyz is 200 when the hub is connected to Redis and either leads
 * (acting, every member cache synced) or stands by (Redis answered its
 * latest campaign that another hub holds the lease), else 503 with the
 * reason (ready.h).
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/log.h"
#include "common/prom.h"
#include "controller/hub/httpd.h"
#include "controller/hub/hub.h"
#include "controller/hub/ready.h"
#include "controller/version.h"
#include "replication/gate.h"
#include "replication/rpo.h"

/* Every label value printed goes through this (common/prom.h): a team, a
 * pool, a ClusterQueue or a NodePool name comes from outside the hub, and
 * unescaped would end its value early and forge labels or series. `buf`
 * is a char array of SW_PROM_LABEL_MAX. */
#define ESC(buf, v) sw_prom_label((v), (buf), sizeof(buf))

static const double LAT_BOUNDS[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
#define NLAT (sizeof(LAT_BOUNDS) / sizeof(LAT_BOUNDS[0]))

void sw_metrics_decision(struct sw_hub *h, enum sw_verdict v, const char *pool)
{
    size_t i;
    for (i = 0; i < h->m.nby_pool; i++)
        if (strcmp(h->m.by_pool[i].pool, pool) == 0)
            break;
    if (i == h->m.nby_pool) {
        if (i == SW_HUB_MAX_DECISION_POOLS)
            return;
        snprintf(h->m.by_pool[i].pool, sizeof(h->m.by_pool[i].pool), "%s", pool);
        h->m.nby_pool++;
    }
    h->m.by_pool[i].n[v]++;
}

/* |actual - predicted| / predicted: within 5% .. ten times off. */
static const double RT_BOUNDS[] = {0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10};
#define NRT (sizeof(RT_BOUNDS) / sizeof(RT_BOUNDS[0]))

void sw_metrics_runtime(struct sw_hub *h, const struct sw_runtime_obs *o)
{
    unsigned s = (unsigned)o->source < 3 ? (unsigned)o->source : SW_EST_PRIOR;
    double e = sw_runtime_obs_error(o);
    if (e < 0)
        return;
    for (size_t i = 0; i < NRT; i++)
        if (e <= RT_BOUNDS[i])
            h->m.rt_err_buckets[s][i]++;
    h->m.rt_err_sum[s] += e;
    h->m.rt_count[s]++;
}

void sw_metrics_dispatch_latency(struct sw_hub *h, double s)
{
    if (s < 0)
        s = 0;
    for (size_t i = 0; i < NLAT; i++)
        if (s <= LAT_BOUNDS[i])
            h->m.lat_buckets[i]++;
    h->m.lat_sum += s;
    h->m.lat_count++;
}

void sw_metrics_spend(struct sw_hub *h, struct sw_job *j)
{
    const struct sw_job_rec *r = &j->rec;
    if (r->started_ms == 0 || r->capacity[0] == '\0' || strcmp(r->capacity, "owned") == 0 ||
        j->spend_counted == r->attempt)
        return;
    j->spend_counted = r->attempt;
    double d = sw_job_rec_cost(r, sw_hub_wall_ms());
    struct sw_hub_metrics *m = &h->m;
    size_t i;
    for (i = 0; i < m->nspend; i++)
        if (strcmp(m->spend[i].team, r->team) == 0 &&
            strcmp(m->spend[i].cluster, r->target_cluster) == 0 &&
            strcmp(m->spend[i].pool, r->target_pool) == 0 &&
            strcmp(m->spend[i].capacity, r->capacity) == 0)
            break;
    if (i == m->nspend) {
        if (i == SW_HUB_MAX_SPEND_SERIES) {
            SW_LOG(SW_LOG_WARN, "spend not counted: too many series", "job=%s max=%d",
                   sw_log_q(r->key), SW_HUB_MAX_SPEND_SERIES);
            return;
        }
        struct sw_spend_series *s = &m->spend[m->nspend++];
        snprintf(s->team, sizeof(s->team), "%s", r->team);
        snprintf(s->cluster, sizeof(s->cluster), "%s", r->target_cluster);
        snprintf(s->pool, sizeof(s->pool), "%s", r->target_pool);
        snprintf(s->capacity, sizeof(s->capacity), "%s", r->capacity);
    }
    m->spend[i].dollars += d;
}

void sw_metrics_kueue_burst(struct sw_hub *h, const char *cluster, const char *cq)
{
    struct sw_hub_metrics *m = &h->m;
    size_t i;
    for (i = 0; i < m->nkueue_bursts; i++)
        if (strcmp(m->kueue_bursts[i].cluster, cluster) == 0 &&
            strcmp(m->kueue_bursts[i].cq, cq) == 0)
            break;
    if (i == m->nkueue_bursts) {
        if (i == SW_HUB_MAX_KUEUE_SERIES) {
            SW_LOG(SW_LOG_WARN, "Kueue burst not counted: too many series", "cluster=%s max=%d",
                   sw_log_q(cluster), SW_HUB_MAX_KUEUE_SERIES);
            return;
        }
        struct sw_kueue_burst_series *s = &m->kueue_bursts[m->nkueue_bursts++];
        snprintf(s->cluster, sizeof(s->cluster), "%s", cluster);
        snprintf(s->cq, sizeof(s->cq), "%s", cq);
    }
    m->kueue_bursts[i].n++;
}

struct render {
    struct sw_hub *h;
    uint64_t states[SW_JS__COUNT];
};

static void count_job(struct sw_hub *h, struct sw_job *j, void *ctx)
{
    (void)h;
    struct render *rd = ctx;
    if (!j->persisted)
        return;
    rd->states[j->rec.state]++;
}

/* Open file descriptors: the entries of /proc/self/fd (Linux), less the
 * one opendir holds; -1 when it cannot be read. */
static long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    long n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1;
}

/* The process metrics client libraries export under these names, so that
 * the usual dashboards and alerts work on the hub. */
static void render_process(struct sw_hub *h, struct sw_buf *b)
{
    sw_buf_adds(b, "# HELP spillway_build_info The hub's version; always 1.\n"
                   "# TYPE spillway_build_info gauge\n");
    char ver[SW_PROM_LABEL_MAX];
    sw_buf_addf(b, "spillway_build_info{version=\"%s\"} 1\n", ESC(ver, SW_VERSION));
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        sw_buf_adds(b, "# HELP process_cpu_seconds_total User and system CPU time spent.\n"
                       "# TYPE process_cpu_seconds_total counter\n");
        sw_buf_addf(b, "process_cpu_seconds_total %.3f\n", cpu);
    }
    size_t rss = 0;
    if (uv_resident_set_memory(&rss) == 0) {
        sw_buf_adds(b, "# HELP process_resident_memory_bytes Resident memory size.\n"
                       "# TYPE process_resident_memory_bytes gauge\n");
        sw_buf_addf(b, "process_resident_memory_bytes %zu\n", rss);
    }
    sw_buf_adds(b, "# HELP process_start_time_seconds Start time of the process, unix seconds.\n"
                   "# TYPE process_start_time_seconds gauge\n");
    sw_buf_addf(b, "process_start_time_seconds %.3f\n", (double)h->started_ms / 1000.0);
    long fds = open_fds();
    if (fds >= 0) {
        sw_buf_adds(b, "# HELP process_open_fds Open file descriptors.\n"
                       "# TYPE process_open_fds gauge\n");
        sw_buf_addf(b, "process_open_fds %ld\n", fds);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        sw_buf_adds(b, "# HELP process_max_fds The limit on open file descriptors.\n"
                       "# TYPE process_max_fds gauge\n");
        sw_buf_addf(b, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
    }
}

/* Connections this server closed for its limits (httpd.h). */
static void render_http(struct sw_hub *h, struct sw_buf *b)
{
    struct sw_httpd_stats st;
    sw_httpd_stats(h->httpd, &st);
    sw_buf_adds(b, "# HELP spillway_http_connections_closed_total Connections to this endpoint "
                   "closed by its limits: past the connection cap (over_cap), request or answer "
                   "not done in time (timeout), request headers too large (too_large).\n"
                   "# TYPE spillway_http_connections_closed_total counter\n");
    sw_buf_addf(b, "spillway_http_connections_closed_total{reason=\"over_cap\"} %llu\n",
                (unsigned long long)st.over_cap);
    sw_buf_addf(b, "spillway_http_connections_closed_total{reason=\"timeout\"} %llu\n",
                (unsigned long long)st.timed_out);
    sw_buf_addf(b, "spillway_http_connections_closed_total{reason=\"too_large\"} %llu\n",
                (unsigned long long)st.too_large);
}

/* Per member: API responses by status, and the rate limit's wait. */
static void render_api(struct sw_hub *h, struct sw_buf *b)
{
    sw_buf_adds(b, "# HELP spillway_api_responses_total Kubernetes API responses by cluster and "
                   "HTTP status (code=\"error\": no response; \"other\": past the table's "
                   "size), retries included.\n"
                   "# TYPE spillway_api_responses_total counter\n");
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        if (m->client == NULL)
            continue;
        struct sw_kube_code_count codes[SW_KUBE_MAX_CODES];
        size_t n = sw_kube_client_responses(m->client, codes, SW_KUBE_MAX_CODES);
        for (size_t k = 0; k < n; k++) {
            char code[16];
            if (codes[k].code == 0)
                snprintf(code, sizeof(code), "error");
            else if (codes[k].code < 0)
                snprintf(code, sizeof(code), "other");
            else
                snprintf(code, sizeof(code), "%d", codes[k].code);
            char cl[SW_PROM_LABEL_MAX], co[SW_PROM_LABEL_MAX];
            sw_buf_addf(b, "spillway_api_responses_total{cluster=\"%s\",code=\"%s\"} %llu\n",
                        ESC(cl, m->rec.name), ESC(co, code), (unsigned long long)codes[k].n);
        }
    }
    sw_buf_adds(b, "# HELP spillway_api_ratelimit_wait_seconds_total Time requests to a member "
                   "waited for the client-side rate limit (members.qps), summed.\n"
                   "# TYPE spillway_api_ratelimit_wait_seconds_total counter\n");
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        uint64_t ms = 0, delayed = 0;
        if (m->client)
            sw_kube_client_ratelimit_wait(m->client, &ms, &delayed);
        char cl[SW_PROM_LABEL_MAX];
        sw_buf_addf(b, "spillway_api_ratelimit_wait_seconds_total{cluster=\"%s\"} %.3f\n",
                    ESC(cl, m->rec.name), (double)ms / 1000.0);
    }
    sw_buf_adds(b, "# HELP spillway_api_ratelimit_delayed_total Requests to a member that "
                   "waited for the client-side rate limit.\n"
                   "# TYPE spillway_api_ratelimit_delayed_total counter\n");
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        uint64_t ms = 0, delayed = 0;
        if (m->client)
            sw_kube_client_ratelimit_wait(m->client, &ms, &delayed);
        char cl[SW_PROM_LABEL_MAX];
        sw_buf_addf(b, "spillway_api_ratelimit_delayed_total{cluster=\"%s\"} %llu\n",
                    ESC(cl, m->rec.name), (unsigned long long)delayed);
    }
}

/* Pools bound to a Karpenter NodePool (capacity.c): the delay the engine
 * is given, what it was learned from, the ceiling and the room. */
static void render_nodepools(struct sw_hub *h, struct sw_buf *b)
{
    static const char *const help[] = {
        "# HELP spillway_nodepool_provision_seconds Provisioning delay the engine is given for a "
        "NodePool: the mean NodeClaim created to Initialized seen, or the prior.\n"
        "# TYPE spillway_nodepool_provision_seconds gauge\n",
        "# HELP spillway_nodepool_provisions_observed_total NodeClaims seen from created to "
        "Initialized.\n"
        "# TYPE spillway_nodepool_provisions_observed_total counter\n",
        "# HELP spillway_nodepool_limit_gpus The NodePool's GPU limit (-1: no figures).\n"
        "# TYPE spillway_nodepool_limit_gpus gauge\n",
        "# HELP spillway_nodepool_room_gpus GPUs the NodePool may still provision.\n"
        "# TYPE spillway_nodepool_room_gpus gauge\n",
        "# HELP spillway_nodepool_interruptions_total Mirrors lost on the NodePool (its NodeClaim "
        "or node gone under them) and requeued.\n"
        "# TYPE spillway_nodepool_interruptions_total counter\n",
        "# HELP spillway_nodepool_interrupt_rate_per_hour Interruption rate the engine is given "
        "for a spot NodePool: learned, weighed with the prior.\n"
        "# TYPE spillway_nodepool_interrupt_rate_per_hour gauge\n",
        "# HELP spillway_nodepool_short_seconds How long the NodePool has been short of capacity "
        "(0: it is not).\n"
        "# TYPE spillway_nodepool_short_seconds gauge\n",
        "# HELP spillway_nodepool_capacity_wait_seconds The wait for capacity the engine is given "
        "while the NodePool is short (0: not short): learned from the shortages seen end, or the "
        "prior.\n"
        "# TYPE spillway_nodepool_capacity_wait_seconds gauge\n",
        "# HELP spillway_nodepool_shortages_observed_total Shortages of capacity seen end (a "
        "NodeClaim launched again), the waits are learned from.\n"
        "# TYPE spillway_nodepool_shortages_observed_total counter\n",
        "# HELP spillway_nodepool_shortage_withdrawals_total Mirrors withdrawn because their pods "
        "waited on the NodePool past karpenter.shortageWithdrawSeconds while it could not grow "
        "(short of capacity, or at its limit).\n"
        "# TYPE spillway_nodepool_shortage_withdrawals_total counter\n",
    };
    int64_t now = sw_hub_wall_ms();
    for (size_t f = 0; f < sizeof(help) / sizeof(help[0]); f++) {
        sw_buf_adds(b, help[f]);
        for (size_t i = 0; i < h->nmembers; i++) {
            const struct sw_member *m = h->members[i];
            for (size_t k = 0; k < m->nnodepools; k++) {
                const struct sw_nodepool_state *s = &m->nodepools[k];
                static const char *const names[] = {"spillway_nodepool_provision_seconds",
                                                    "spillway_nodepool_provisions_observed_total",
                                                    "spillway_nodepool_limit_gpus",
                                                    "spillway_nodepool_room_gpus",
                                                    "spillway_nodepool_interruptions_total",
                                                    "spillway_nodepool_interrupt_rate_per_hour",
                                                    "spillway_nodepool_short_seconds",
                                                    "spillway_nodepool_capacity_wait_seconds",
                                                    "spillway_nodepool_shortages_observed_total",
                                                    "spillway_nodepool_shortage_withdrawals_total"};
                int npts = 0;
                double v = f == 0   ? sw_capacity_provision_s(s)
                           : f == 1 ? (double)s->seen.provisions
                           : f == 2 ? (s->have_cap ? (double)s->cap.limit : -1)
                           : f == 3 ? (double)s->cap.room
                           : f == 4 ? (double)s->seen.interruptions
                           : f == 5 ? sw_capacity_interrupt_rate(s)
                           : f == 6 ? (s->seen.short_since_ms > 0 && now > s->seen.short_since_ms
                                           ? (double)(now - s->seen.short_since_ms) / 1000.0
                                           : 0)
                           : f == 7 ? sw_learn_capacity_wait(&s->seen, now, NULL, &npts)
                           : f == 8 ? (double)s->seen.shortages
                                    : (double)s->withdrawals;
                char cl[SW_PROM_LABEL_MAX], np[SW_PROM_LABEL_MAX];
                sw_buf_addf(b, "%s{cluster=\"%s\",nodepool=\"%s\"} %g\n", names[f],
                            ESC(cl, m->rec.name), ESC(np, s->name), v);
            }
        }
    }
    /* Its Karpenter taken as down: a Lease never renewed again (leader
     * election switched off, Karpenter moved or uninstalled) stays so. */
    sw_buf_adds(b, "# HELP spillway_karpenter_down_seconds How long the member's Karpenter has "
                   "gone without a Lease renewal seen while taken as not answering (0: it "
                   "answers, or its Lease is not known).\n"
                   "# TYPE spillway_karpenter_down_seconds gauge\n");
    int64_t mono = sw_hub_mono_ms();
    for (size_t i = 0; i < h->nmembers; i++) {
        const struct sw_member *m = h->members[i];
        if (m->cache == NULL || !sw_cluster_cache_karpenter(m->cache))
            continue;
        char cl[SW_PROM_LABEL_MAX];
        sw_buf_addf(b, "spillway_karpenter_down_seconds{cluster=\"%s\"} %g\n", ESC(cl, m->rec.name),
                    m->karp.down_since_ms > 0 ? sw_learn_ctl_silent_s(&m->karp, mono) : 0.0);
    }
}

static void render_metrics(struct sw_hub *h, struct sw_buf *b)
{
    struct render *rd = sw_calloc(1, sizeof(*rd));
    if (rd == NULL)
        return;
    rd->h = h;
    sw_hub_jobs_foreach(h, count_job, rd);
    sw_buf_adds(b, "# HELP spillway_leader 1 when this hub holds the lease.\n"
                   "# TYPE spillway_leader gauge\n");
    sw_buf_addf(b, "spillway_leader %d\n", h->leader ? 1 : 0);
    sw_buf_adds(b, "# HELP spillway_epoch The fencing epoch this hub acts under.\n"
                   "# TYPE spillway_epoch gauge\n");
    sw_buf_addf(b, "spillway_epoch %lld\n", (long long)h->epoch);
    struct sw_gate_pool_stats gp;
    sw_gate_pool_stats(&gp);
    sw_buf_adds(b, "# HELP spillway_gate_workers The data gate's worker threads "
                   "(replication.workers).\n"
                   "# TYPE spillway_gate_workers gauge\n");
    sw_buf_addf(b, "spillway_gate_workers %d\n", gp.workers);
    sw_buf_adds(b, "# HELP spillway_gate_running Gate work (estimates, copies, outputs rounds) "
                   "on a worker.\n"
                   "# TYPE spillway_gate_running gauge\n");
    sw_buf_addf(b, "spillway_gate_running %zu\n", gp.running);
    sw_buf_adds(b, "# HELP spillway_gate_queued Gate work waiting for a free worker.\n"
                   "# TYPE spillway_gate_queued gauge\n");
    sw_buf_addf(b, "spillway_gate_queued %zu\n", gp.queued);
    sw_buf_adds(b, "# HELP spillway_jobs Managed Jobs by lifecycle state.\n"
                   "# TYPE spillway_jobs gauge\n");
    char l1[SW_PROM_LABEL_MAX], l2[SW_PROM_LABEL_MAX], l3[SW_PROM_LABEL_MAX], l4[SW_PROM_LABEL_MAX];
    for (int s = 0; s < SW_JS__COUNT; s++)
        sw_buf_addf(b, "spillway_jobs{state=\"%s\"} %llu\n",
                    ESC(l1, sw_job_state_name((enum sw_job_state)s)),
                    (unsigned long long)rd->states[s]);
    sw_buf_adds(b,
                "# HELP spillway_decisions_total Placement decisions by outcome and chosen pool.\n"
                "# TYPE spillway_decisions_total counter\n");
    for (size_t i = 0; i < h->m.nby_pool; i++)
        for (int v = 0; v <= SW_VERDICT_REJECT; v++)
            if (h->m.by_pool[i].n[v])
                sw_buf_addf(b, "spillway_decisions_total{outcome=\"%s\",pool=\"%s\"} %llu\n",
                            ESC(l1, sw_verdict_name((enum sw_verdict)v)),
                            ESC(l2, h->m.by_pool[i].pool),
                            (unsigned long long)h->m.by_pool[i].n[v]);
    sw_buf_adds(b, "# HELP spillway_dispatches_total Mirrors created.\n"
                   "# TYPE spillway_dispatches_total counter\n");
    sw_buf_addf(b, "spillway_dispatches_total %llu\n", (unsigned long long)h->m.dispatches);
    sw_buf_adds(b, "# HELP spillway_preemptions_total Mirrors lost and decided again.\n"
                   "# TYPE spillway_preemptions_total counter\n");
    sw_buf_addf(b, "spillway_preemptions_total %llu\n", (unsigned long long)h->m.preemptions);
    sw_buf_adds(b, "# HELP spillway_cluster_loss_requeues_total Jobs placed again because the "
                   "cluster of their mirror was lost.\n"
                   "# TYPE spillway_cluster_loss_requeues_total counter\n");
    sw_buf_addf(b, "spillway_cluster_loss_requeues_total %llu\n",
                (unsigned long long)h->m.cluster_requeues);
    sw_buf_adds(b, "# HELP spillway_stale_mirrors_deleted_total Mirrors deleted from a lost "
                   "cluster once it returned.\n"
                   "# TYPE spillway_stale_mirrors_deleted_total counter\n");
    sw_buf_addf(b, "spillway_stale_mirrors_deleted_total %llu\n",
                (unsigned long long)h->m.stale_deleted);
    sw_buf_adds(b, "# HELP spillway_secret_copies_deleted_total spillway's copies of Secrets "
                   "deleted from targets once no mirror of their origin namespace used them.\n"
                   "# TYPE spillway_secret_copies_deleted_total counter\n");
    sw_buf_addf(b, "spillway_secret_copies_deleted_total %llu\n",
                (unsigned long long)h->m.copies_deleted);
    sw_buf_adds(b, "# HELP spillway_secret_copies_left_total spillway's copies of Secrets the hub "
                   "gave up deleting (each logged, with a SecretCopyLeft Event): delete them by "
                   "hand.\n"
                   "# TYPE spillway_secret_copies_left_total counter\n");
    sw_buf_addf(b, "spillway_secret_copies_left_total %llu\n",
                (unsigned long long)h->m.copies_left);
    sw_buf_adds(b, "# HELP spillway_origins_let_go_total Deleted origins whose finalizer was "
                   "removed before their mirror and copies were cleaned up (target not answering, "
                   "or records.deletedOriginSeconds passed; a CleanupLeft Event each).\n"
                   "# TYPE spillway_origins_let_go_total counter\n");
    sw_buf_addf(b, "spillway_origins_let_go_total %llu\n", (unsigned long long)h->m.origins_let_go);
    sw_buf_adds(b, "# HELP spillway_fenced_writes_total Writes refused for a stale epoch.\n"
                   "# TYPE spillway_fenced_writes_total counter\n");
    sw_buf_addf(b, "spillway_fenced_writes_total %llu\n", (unsigned long long)h->m.fenced);
    sw_buf_adds(b, "# HELP spillway_records_rederived_total Job records re-derived from their "
                   "mirrors' labels (lost in Redis).\n"
                   "# TYPE spillway_records_rederived_total counter\n");
    sw_buf_addf(b, "spillway_records_rederived_total %llu\n", (unsigned long long)h->m.rederived);
    sw_buf_adds(b, "# HELP spillway_redis_failovers_total Redis failovers followed to another "
                   "node (Sentinel).\n"
                   "# TYPE spillway_redis_failovers_total counter\n");
    sw_buf_addf(b, "spillway_redis_failovers_total %llu\n", (unsigned long long)h->failovers);
    sw_buf_adds(b, "# HELP spillway_dispatch_latency_seconds Origin created to mirror created.\n"
                   "# TYPE spillway_dispatch_latency_seconds histogram\n");
    for (size_t i = 0; i < NLAT; i++)
        sw_buf_addf(b, "spillway_dispatch_latency_seconds_bucket{le=\"%g\"} %llu\n", LAT_BOUNDS[i],
                    (unsigned long long)h->m.lat_buckets[i]);
    sw_buf_addf(b, "spillway_dispatch_latency_seconds_bucket{le=\"+Inf\"} %llu\n",
                (unsigned long long)h->m.lat_count);
    sw_buf_addf(b, "spillway_dispatch_latency_seconds_sum %.6f\n", h->m.lat_sum);
    sw_buf_addf(b, "spillway_dispatch_latency_seconds_count %llu\n",
                (unsigned long long)h->m.lat_count);
    sw_buf_adds(b, "# HELP spillway_runtime_history Finished Jobs' runtimes kept to learn "
                   "from (at most 4096).\n"
                   "# TYPE spillway_runtime_history gauge\n");
    sw_buf_addf(b, "spillway_runtime_history %zu\n", h->runtimes.n);
    sw_buf_adds(b, "# HELP spillway_runtime_observations_total Finished Jobs' runtimes counted "
                   "while this hub led, by the source of the belief each was decided with.\n"
                   "# TYPE spillway_runtime_observations_total counter\n");
    for (unsigned s = 0; s < 3; s++)
        sw_buf_addf(b, "spillway_runtime_observations_total{source=\"%s\"} %llu\n",
                    sw_estimate_source_name((enum sw_estimate_source)s),
                    (unsigned long long)h->m.rt_count[s]);
    sw_buf_adds(b, "# HELP spillway_runtime_error_ratio The runtime belief's error once a Job "
                   "finished: |actual - predicted median| / predicted median, by the belief's "
                   "source.\n"
                   "# TYPE spillway_runtime_error_ratio histogram\n");
    for (unsigned s = 0; s < 3; s++) {
        const char *src = sw_estimate_source_name((enum sw_estimate_source)s);
        for (size_t i = 0; i < NRT; i++)
            sw_buf_addf(b, "spillway_runtime_error_ratio_bucket{source=\"%s\",le=\"%g\"} %llu\n",
                        src, RT_BOUNDS[i], (unsigned long long)h->m.rt_err_buckets[s][i]);
        sw_buf_addf(b, "spillway_runtime_error_ratio_bucket{source=\"%s\",le=\"+Inf\"} %llu\n", src,
                    (unsigned long long)h->m.rt_count[s]);
        sw_buf_addf(b, "spillway_runtime_error_ratio_sum{source=\"%s\"} %.6f\n", src,
                    h->m.rt_err_sum[s]);
        sw_buf_addf(b, "spillway_runtime_error_ratio_count{source=\"%s\"} %llu\n", src,
                    (unsigned long long)h->m.rt_count[s]);
    }
    sw_buf_adds(b, "# HELP spillway_cloud_spend_dollars_total Cloud spend (GPUs x price x hours) "
                   "of the burst attempts that ended while this hub led, by team, cluster, pool "
                   "and capacity type.\n"
                   "# TYPE spillway_cloud_spend_dollars_total counter\n");
    for (size_t i = 0; i < h->m.nspend; i++) {
        const struct sw_spend_series *sp = &h->m.spend[i];
        sw_buf_addf(b,
                    "spillway_cloud_spend_dollars_total{team=\"%s\",cluster=\"%s\",pool=\"%s\","
                    "capacity=\"%s\"} %.4f\n",
                    ESC(l1, sp->team), ESC(l2, sp->cluster), ESC(l3, sp->pool),
                    ESC(l4, sp->capacity), sp->dollars);
    }
    /* Team budgets (spend.c): the leader's tally now, from every record. */
    if (h->cfg.nbudgets > 0 && sw_hub_acting(h) && h->budget_loaded && sw_spend_tally(h) == 0) {
        sw_buf_adds(b, "# HELP spillway_team_budget_usd A team's cloud budget for its current "
                       "period (the hub's budgets), by team and period.\n"
                       "# TYPE spillway_team_budget_usd gauge\n");
        for (size_t i = 0; i < h->nbudget_status; i++) {
            const struct sw_budget_status *bs = &h->budget_status[i];
            sw_buf_addf(b, "spillway_team_budget_usd{team=\"%s\",period=\"%s\"} %.2f\n",
                        ESC(l1, bs->team), sw_budget_period_name(bs->period), bs->amount);
        }
        sw_buf_adds(b, "# HELP spillway_team_spend_usd A team's cloud spend in its budget's "
                       "current period: committed (run so far) and in_flight (bursts decided or "
                       "running, expected cost not yet run), by team and kind.\n"
                       "# TYPE spillway_team_spend_usd gauge\n");
        for (size_t i = 0; i < h->nbudget_status; i++) {
            const struct sw_budget_status *bs = &h->budget_status[i];
            sw_buf_addf(b, "spillway_team_spend_usd{team=\"%s\",kind=\"committed\"} %.4f\n",
                        ESC(l1, bs->team), bs->committed);
            sw_buf_addf(b, "spillway_team_spend_usd{team=\"%s\",kind=\"in_flight\"} %.4f\n",
                        ESC(l1, bs->team), bs->in_flight);
        }
    }
    sw_buf_adds(b, "# HELP spillway_kueue_bursts_total Bursts of Jobs taken from a Kueue queue "
                   "(mirrors created in another cluster), by origin cluster and ClusterQueue.\n"
                   "# TYPE spillway_kueue_bursts_total counter\n");
    for (size_t i = 0; i < h->m.nkueue_bursts; i++) {
        const struct sw_kueue_burst_series *kb = &h->m.kueue_bursts[i];
        sw_buf_addf(b, "spillway_kueue_bursts_total{cluster=\"%s\",cluster_queue=\"%s\"} %llu\n",
                    ESC(l1, kb->cluster), ESC(l2, kb->cq), (unsigned long long)kb->n);
    }
    /* Replication rules the leader runs (rules.c): RPO per target, the age
     * of the last run, the objective, and runs by outcome. */
    struct sw_rpo_entry ents[SW_HUB_MAX_RULES * 8];
    size_t ne = 0;
    for (size_t i = 0; i < h->nrules; i++)
        for (size_t t = 0; t < h->rules[i].ntargets && ne < sizeof(ents) / sizeof(ents[0]); t++)
            ents[ne++] =
                (struct sw_rpo_entry){h->rules[i].name, h->rules[i].targets[t],
                                      h->rules[i].oldest_pending_ms[t], h->rules[i].last_run_ms};
    if (ne > 0)
        sw_rpo_metrics(ents, ne, sw_hub_wall_ms(), b);
    sw_buf_adds(b, "# HELP spillway_replication_rpo_objective_seconds The RPO objective of a "
                   "replication rule the hub runs.\n"
                   "# TYPE spillway_replication_rpo_objective_seconds gauge\n");
    for (size_t i = 0; i < h->nrules; i++)
        sw_buf_addf(b, "spillway_replication_rpo_objective_seconds{rule=\"%s\"} %g\n",
                    ESC(l1, h->rules[i].name), h->rules[i].objective_s);
    sw_buf_adds(b, "# HELP spillway_replication_runs_total Runs of replication rules by the hub.\n"
                   "# TYPE spillway_replication_runs_total counter\n");
    for (size_t i = 0; i < h->nrules; i++) {
        sw_buf_addf(b, "spillway_replication_runs_total{rule=\"%s\",outcome=\"ok\"} %llu\n",
                    ESC(l1, h->rules[i].name), (unsigned long long)h->rules[i].runs_ok);
        sw_buf_addf(b, "spillway_replication_runs_total{rule=\"%s\",outcome=\"failed\"} %llu\n", l1,
                    (unsigned long long)h->rules[i].runs_failed);
    }
    sw_buf_adds(b, "# HELP spillway_replication_bytes_total Bytes copied for inputs and outputs.\n"
                   "# TYPE spillway_replication_bytes_total counter\n");
    sw_buf_addf(b, "spillway_replication_bytes_total %llu\n",
                (unsigned long long)h->m.replication_bytes);
    sw_buf_adds(b, "# HELP spillway_api_requests_total Kubernetes API requests by cluster.\n"
                   "# TYPE spillway_api_requests_total counter\n");
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        sw_buf_addf(b, "spillway_api_requests_total{cluster=\"%s\"} %llu\n", ESC(l1, m->rec.name),
                    (unsigned long long)(m->client ? sw_kube_client_sent(m->client) : 0));
    }
    sw_buf_adds(b, "# HELP spillway_member_ready 1 when the member's API server is Ready.\n"
                   "# TYPE spillway_member_ready gauge\n");
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        const struct sw_health *hs = m->health ? sw_health_prober_health(m->health) : NULL;
        sw_buf_addf(b, "spillway_member_ready{cluster=\"%s\"} %d\n", ESC(l1, m->rec.name),
                    hs && hs->state == SW_HEALTH_READY ? 1 : 0);
    }
    sw_buf_adds(b, "# HELP spillway_member_lost 1 when the member has been lost (not answering, or "
                   "not Ready, for members.lostAfterSeconds) or is fenced.\n"
                   "# TYPE spillway_member_lost gauge\n");
    for (size_t i = 0; i < h->nmembers; i++) {
        struct sw_member *m = h->members[i];
        sw_buf_addf(b, "spillway_member_lost{cluster=\"%s\",fenced=\"%s\"} %d\n",
                    ESC(l1, m->rec.name), m->fenced ? "true" : "false", sw_member_lost(m) ? 1 : 0);
    }
    render_api(h, b);
    render_http(h, b);
    render_process(h, b);
    render_nodepools(h, b);
    sw_free(rd);
}

/* ---- the server --------------------------------------------------------- */

static void answer(const char *method, const char *path, struct sw_httpd_answer *a, void *ctx)
{
    (void)method;
    struct sw_hub *h = ctx;
    if (strcmp(path, "/healthz") == 0) {
        sw_buf_adds(&a->body, "ok\n");
    } else if (strcmp(path, "/readyz") == 0) {
        struct sw_readiness r = {
            .redis_up = h->redis != NULL && sw_redis_is_up(h->redis),
            .leader = h->leader,
            .acting = sw_hub_acting(h),
            .members_synced = sw_members_synced(h),
            .standby_ms = h->standby_mono,
            .now_ms = sw_hub_mono_ms(),
            .lease_ttl_ms = (int64_t)(h->cfg.lease_ttl_s * 1000),
        };
        const char *why = sw_readiness_check(&r);
        a->code = why == NULL ? 200 : 503;
        sw_buf_adds(&a->body, why == NULL ? "ok\n" : why);
    } else if (strcmp(path, "/metrics") == 0) {
        a->ctype = "text/plain; version=0.0.4";
        render_metrics(h, &a->body);
    } else {
        a->code = 404;
        sw_buf_adds(&a->body, "not found\n");
    }
}

int sw_metrics_start(struct sw_hub *h, struct sw_error *err)
{
    return sw_httpd_start(h->loop, h->cfg.listen, NULL, answer, h, &h->httpd, err);
}
