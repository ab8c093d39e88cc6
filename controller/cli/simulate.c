/*
 * simulate.c - `spillctl simulate`: replays a job trace against a clusters
 * file under one or more placement policies and compares them side by side.
 *
 * This file is the effectful shell around placement/sim.c: it reads the
 * files, hands their bytes to the pure parsers, runs the simulations and
 * prints the table, CSV and JSON.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/alloc.h"
#include "common/json.h"
#include "controller/cli/commands.h"
#include "controller/cli/globals.h"
#include "controller/cli/plot.h"
#include "placement/compare.h"
#include "placement/sim.h"

#define MAX_RUNS  64
#define USAGE_MAX 100000 /* hourly samples: eleven years */
#define MAX_FILE  (1024u * 1024u * 1024u)

static const char help[] =

    "Usage: spillctl simulate --trace FILE --clusters FILE [--policy P[,P...]] [--sweep]\n"
    "                         [--seed N] [--format auto|csv|alibaba]\n"
    "                         [--runtime learned|oracle] [--runtime-noise SIGMA]\n"
    "                         [--availability-trace FILE] [--preemption-trace FILE]\n"
    "                         [--migrate] [--make-room] [--no-deadline-guard]\n"
    "                         [--spot-price-factor F] [--ondemand-price-factor F]\n"
    "                         [--csv OUT] [--json OUT] [--jobs-csv OUT]\n"
    "                         [--plot OUT.svg] [--plot-usage OUT.svg [--usage-policy L]]\n"
    "\n"
    "Replays a job trace against the pools of a clusters file and prints, for\n"
    "each policy, the cost (on-prem, spot, on-demand, egress), job completion\n"
    "times (mean, p50, p95, p99), waits (mean, p99, max), deadline misses, spot\n"
    "preemptions and lost GPU-hours; then the cost/JCT frontier. It takes no -o\n"
    "(--csv and --json write files); a file that cannot be read or parsed exits 2.\n"
    "\n"
    "Options:\n"
    "  --trace FILE             jobs: a CSV with submit,gpus,duration,team[,deadline]\n"
    "                           or the Alibaba GPU 2023 pod list (detected by header)\n"
    "  --clusters FILE          pools, prices, egress links, quotas, budgets (JSON;\n"
    "                           see docs/simulator.md); a field it lacks is refused\n"
    "  --policy P[,P...]        policies to compare (default cost-aware,burst-now):\n"
    "                           cost-aware[:DOLLARS_PER_GPU_HOUR_OF_DELAY], local-only,\n"
    "                           burst-now, const-wait[:SECONDS], starburst[:K],\n"
    "                           spot-only, greedy, uniform-progress[:MARGIN]\n"
    "  --sweep                  run every baseline given without a parameter across\n"
    "                           its parameter (default policies: all but local-only)\n"
    "  --seed N                 seed for preemptions, noise and sizes (default 1)\n"
    "  --format F               trace format: auto (default), csv or alibaba\n"
    "  --runtime K              what the engine is told of runtimes: learned\n"
    "                           (default: annotation, else learned, else prior) or\n"
    "                           oracle (the true runtime)\n"
    "  --runtime-noise SIGMA    oracle times exp(SIGMA x N(0,1)) per Job (implies\n"
    "                           --runtime oracle)\n"
    "  --availability-trace F   skypilot spot-traces JSON; spot pools add GPUs only\n"
    "                           while it has instances available\n"
    "  --preemption-trace FILE  skypilot spot-traces JSON; spot preemptions follow it\n"
    "                           instead of the pools' interruptions_per_hour\n"
    "  --migrate                reconsider Jobs on on-demand at each checkpoint: they\n"
    "                           move to spot or home when the policy, deciding them\n"
    "                           with the queue, would start them there now for less\n"
    "                           than the rest of the run costs\n"
    "  --make-room              cost-aware may stop running home Jobs without a\n"
    "                           deadline (production aside) for a Job with one that\n"
    "                           no option meets otherwise, when starting it at home\n"
    "                           now completes it first; they keep their work to\n"
    "                           their last checkpoint and queue again (the hub does\n"
    "                           not stop running Jobs)\n"
    "  --no-deadline-guard      cost-aware without its deadline guard (a Job with a\n"
    "                           deadline waits only while bursting stays in time or\n"
    "                           its home start is certain), to measure its price\n"
    "  --spot-price-factor F    multiply every spot price by F (robustness checks)\n"
    "  --ondemand-price-factor F  the same for on-demand prices\n"
    "  --csv OUT                also write the table as CSV to OUT\n"
    "  --json OUT               also write the figures as JSON to OUT\n"
    "  --jobs-csv OUT           one row per Job and policy: where it ran, wait, JCT,\n"
    "                           cost, preemptions, deadline met or missed\n"
    "  --plot OUT.svg           cloud cost against mean and p95 JCT for every run,\n"
    "                           the frontier marked\n"
    "  --plot-usage OUT.svg     GPUs in use over time (home, spot, on-demand) for\n"
    "                           one run: --usage-policy LABEL (default cost-aware,\n"
    "                           else the first)\n";

/* Reads a whole file; the caller frees *buf with sw_free. */
int sw__cli_read_file(const char *cmd, const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "spillctl %s: %s: %s\n", cmd, path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 20, n = 0;
    char *p = sw_malloc(cap + 1);
    while (p != NULL) {
        size_t r = fread(p + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
        if (n == cap) {
            if (cap >= MAX_FILE) {
                fprintf(stderr, "spillctl %s: %s: larger than %u bytes\n", cmd, path, MAX_FILE);
                sw_free(p);
                fclose(f);
                return -1;
            }
            char *q = sw_realloc(p, cap * 2 + 1);
            if (q == NULL) {
                sw_free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (p == NULL || bad) {
        fprintf(stderr, "spillctl %s: %s: %s\n", cmd, path,
                p == NULL ? "out of memory" : "read error");
        sw_free(p);
        return -1;
    }
    p[n] = '\0';
    *buf = p;
    *len = n;
    return 0;
}

/* One simulation run: a policy (one sweep point) and what it gave. */
struct run {
    struct sw_policy pol;
    char label[40];
    struct sw_sim_result r;
    struct sw_sim_job *jobs;
    struct sw_sim_run_view v; /* the comparison's figures (placement/compare.h) */
};

static void print_table(FILE *out, const struct run *runs, size_t n, size_t feasible)
{
    fprintf(out,
            "%-22s %11s %10s %10s %11s %9s %10s %6s %8s %8s %8s %7s %7s %8s %9s %6s %7s %6s "
            "%8s\n",
            "policy", "total $", "on-prem $", "spot $", "on-demand $", "egress $", "cloud $",
            "cloud%", "JCT mean", "JCT p95", "JCT p99", "wait", "w p99", "w max", "dl-miss", "lost",
            "preempt", "fallbk", "frontier");
    for (size_t i = 0; i < n; i++) {
        const struct sw_sim_result *r = &runs[i].r;
        fprintf(out,
                "%-22s %11.2f %10.2f %10.2f %11.2f %9.2f %10.2f %5.1f%% %7.0fs %7.0fs %7.0fs "
                "%6.0fs %6.0fs %7.0fs %4zu/%-4zu %6zu %7zu %6zu %8s\n",
                runs[i].label, r->cost_total, r->cost_onprem, r->cost_spot, r->cost_ondemand,
                r->cost_egress, r->cost_cloud, 100.0 * r->cloud_gpu_fraction, r->jct_mean,
                r->jct_p95, r->jct_p99, r->wait_mean, r->wait_p99, r->wait_max, runs[i].v.misses,
                feasible, runs[i].v.lost_best, r->preemptions, r->fallbacks,
                runs[i].v.frontier ? "*" : "");
    }
    /* --make-room: what it stopped (lost GPU-hours count its losses too). */
    for (size_t i = 0; i < n; i++)
        if (runs[i].r.home_stops > 0)
            fprintf(out, "%s: %zu running home Jobs stopped to make room for deadlines\n",
                    runs[i].label, runs[i].r.home_stops);
}

static const char csv_header[] =
    "policy,jobs,completed,rejected,bursts,cost_total,cost_onprem,cost_spot,cost_ondemand,"
    "cost_egress,cost_cloud,gpu_h_onprem,gpu_h_spot,gpu_h_ondemand,cloud_gpu_fraction,jct_mean,"
    "jct_p50,jct_p95,jct_p99,wait_mean,wait_p99,wait_max,deadlines,deadline_misses,"
    "lost_vs_best_baseline,preemptions,fallbacks,lost_gpu_h,frontier\n";

static void write_csv_row(FILE *f, const struct run *run)
{
    const struct sw_sim_result *r = &run->r;
    fprintf(f,
            "%s,%zu,%zu,%zu,%zu,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.3f,%.3f,%.3f,%.4f,%.1f,%.1f,%.1f,"
            "%.1f,%.1f,%.1f,%.1f,%zu,%zu,%zu,%zu,%zu,%.3f,%d\n",
            run->label, r->jobs, r->completed, r->rejected, r->bursts, r->cost_total,
            r->cost_onprem, r->cost_spot, r->cost_ondemand, r->cost_egress, r->cost_cloud,
            r->gpu_h_onprem, r->gpu_h_spot, r->gpu_h_ondemand, r->cloud_gpu_fraction, r->jct_mean,
            r->jct_p50, r->jct_p95, r->jct_p99, r->wait_mean, r->wait_p99, r->wait_max,
            r->deadlines, run->v.misses, run->v.lost_best, r->preemptions, r->fallbacks,
            r->lost_gpu_h, run->v.frontier ? 1 : 0);
}

static double cents(double x)
{
    return round(x * 100) / 100;
}

static cJSON *result_json(const struct run *run, size_t feasible, size_t infeasible, bool has_bn)
{
    const struct sw_sim_result *r = &run->r;
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "policy", run->label);
    cJSON_AddStringToObject(o, "kind", sw_policy_name(run->pol.kind));
    cJSON_AddNumberToObject(o, "jobs", (double)r->jobs);
    cJSON_AddNumberToObject(o, "completed", (double)r->completed);
    cJSON_AddNumberToObject(o, "rejected", (double)r->rejected);
    cJSON_AddNumberToObject(o, "bursts", (double)r->bursts);
    cJSON *c = cJSON_AddObjectToObject(o, "cost");
    if (c != NULL) {
        cJSON_AddNumberToObject(c, "total", cents(r->cost_total));
        cJSON_AddNumberToObject(c, "onprem", cents(r->cost_onprem));
        cJSON_AddNumberToObject(c, "spot", cents(r->cost_spot));
        cJSON_AddNumberToObject(c, "ondemand", cents(r->cost_ondemand));
        cJSON_AddNumberToObject(c, "egress", cents(r->cost_egress));
        cJSON_AddNumberToObject(c, "cloud", cents(r->cost_cloud));
    }
    cJSON_AddNumberToObject(o, "cloud_gpu_fraction", r->cloud_gpu_fraction);
    cJSON *j = cJSON_AddObjectToObject(o, "jct_seconds");
    if (j != NULL) {
        cJSON_AddNumberToObject(j, "mean", r->jct_mean);
        cJSON_AddNumberToObject(j, "p50", r->jct_p50);
        cJSON_AddNumberToObject(j, "p95", r->jct_p95);
        cJSON_AddNumberToObject(j, "p99", r->jct_p99);
    }
    cJSON_AddNumberToObject(o, "wait_mean_seconds", r->wait_mean);
    cJSON_AddNumberToObject(o, "wait_p99_seconds", r->wait_p99);
    cJSON_AddNumberToObject(o, "wait_max_seconds", r->wait_max);
    cJSON_AddNumberToObject(o, "deadlines", (double)r->deadlines);
    cJSON_AddNumberToObject(o, "deadlines_feasible", (double)feasible);
    cJSON_AddNumberToObject(o, "deadlines_no_policy_met", (double)infeasible);
    cJSON_AddNumberToObject(o, "deadline_misses", (double)run->v.misses);
    cJSON_AddNumberToObject(o, "deadline_misses_all", (double)r->deadline_misses);
    cJSON_AddNumberToObject(o, "lost_vs_best_baseline", (double)run->v.lost_best);
    if (has_bn)
        cJSON_AddNumberToObject(o, "misses_met_by_burst_now", (double)run->v.lost_burst);
    cJSON_AddNumberToObject(o, "preemptions", (double)r->preemptions);
    cJSON_AddNumberToObject(o, "fallbacks", (double)r->fallbacks);
    cJSON_AddNumberToObject(o, "lost_gpu_hours", r->lost_gpu_h);
    cJSON_AddNumberToObject(o, "home_stops", (double)r->home_stops);
    cJSON_AddBoolToObject(o, "frontier", run->v.frontier);
    cJSON_AddBoolToObject(o, "dominates_cost_aware", run->v.dominates_cost_aware);
    cJSON *e = cJSON_AddObjectToObject(o, "estimates");
    if (e != NULL) {
        for (int k = 0; k < 4; k++)
            cJSON_AddNumberToObject(e, sw_estimate_source_name((enum sw_estimate_source)k),
                                    (double)r->estimates[k]);
        cJSON_AddNumberToObject(e, "mean_abs_log_error", r->estimate_log_error);
    }
    return o;
}

static int write_jobs_csv(const char *path, const struct run *runs, size_t n, size_t njobs)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "spillctl simulate: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fputs("policy,job,team,gpus,pool,capacity,submit,wait_s,jct_s,duration_s,estimate_s,"
          "estimate_source,cost,cost_onprem,cost_spot,cost_ondemand,egress,gpu_h_onprem,"
          "gpu_h_spot,gpu_h_ondemand,preemptions,fell_back,lost_gpu_h,input_gb,output_gb,"
          "deadline,deadline_outcome\n",
          f);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < njobs; j++) {
            const struct sw_sim_job *o = &runs[i].jobs[j];
            double cost = o->cost[0] + o->cost[1] + o->cost[2] + o->egress_cost;
            const char *dl = o->deadline <= 0 ? "none" : sw_sim_job_met(o) ? "met" : "missed";
            fprintf(f,
                    "%s,%s,%s,%d,%s,%s,%.0f,%.1f,%.1f,%.1f,%.1f,%s,%.4f,%.4f,%.4f,%.4f,%.4f,"
                    "%.4f,%.4f,%.4f,%u,%d,%.4f,%.3f,%.3f,%.0f,%s\n",
                    runs[i].label, o->name, o->team, o->gpus, o->pool,
                    o->pool[0] ? sw_capacity_name(o->capacity) : "", o->submit, o->wait_s, o->jct_s,
                    o->duration_s, o->estimate_mean_s, sw_estimate_source_name(o->estimate), cost,
                    o->cost[SW_CAP_OWNED], o->cost[SW_CAP_SPOT], o->cost[SW_CAP_ON_DEMAND],
                    o->egress_cost, o->gpu_h[SW_CAP_OWNED], o->gpu_h[SW_CAP_SPOT],
                    o->gpu_h[SW_CAP_ON_DEMAND], o->preemptions, o->fell_back ? 1 : 0, o->lost_gpu_h,
                    o->input_gb, o->output_gb, o->deadline, dl);
        }
    if (fclose(f) != 0) {
        fprintf(stderr, "spillctl simulate: %s: write failed\n", path);
        return -1;
    }
    return 0;
}

/* The sweep of each parametrised baseline: the values people use, on a
 * roughly geometric grid from "no wait" to "a long one". */
static const double sweep_wait[] = {0, 300, 900, 1800, 3600, 7200, 14400, 28800};
static const double sweep_k[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 4};
static const double sweep_margin[] = {0, 1, 2, 4, 8};

static int add_run(struct run *runs, size_t *n, const struct sw_policy *pol, bool param)
{
    if (*n == MAX_RUNS) {
        fprintf(stderr, "spillctl simulate: at most %d runs\n", MAX_RUNS);
        return -1;
    }
    struct run *r = &runs[(*n)++];
    memset(r, 0, sizeof(*r));
    r->pol = *pol;
    const char *name = sw_policy_name(pol->kind);
    switch (pol->kind) {
    case SW_POLICY_COST_AWARE:
        if (param && pol->delay_value_gpu_h >= 0)
            snprintf(r->label, sizeof(r->label), "%s:%g", name, pol->delay_value_gpu_h);
        else
            snprintf(r->label, sizeof(r->label), "%s", name);
        break;
    case SW_POLICY_CONST_WAIT:
        snprintf(r->label, sizeof(r->label), "%s:%g", name, pol->wait_s);
        break;
    case SW_POLICY_STARBURST:
        snprintf(r->label, sizeof(r->label), "%s:%g", name, pol->starburst_k);
        break;
    case SW_POLICY_UNIFORM_PROGRESS:
        snprintf(r->label, sizeof(r->label), "%s:%g", name, pol->up_margin);
        break;
    default:
        snprintf(r->label, sizeof(r->label), "%s", name);
        break;
    }
    return 0;
}

/* Writes one picture: the frontier of `pts`, or the usage of `u`. */
static int write_svg(const char *path, const char *title, const struct sw_plot_point *pts, size_t n,
                     const struct sw_sim_usage *u, size_t nu)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "spillctl simulate: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int bad = pts != NULL ? sw_plot_frontier(f, pts, n, title) : sw_plot_usage(f, u, nu, title);
    if (fclose(f) != 0)
        bad = -1;
    if (bad != 0)
        fprintf(stderr, "spillctl simulate: %s: cannot write the picture\n", path);
    return bad;
}

static int parse_factor(const char *opt, const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || *end != '\0' || !isfinite(v) || v <= 0 || v > 1000) {
        fprintf(stderr, "spillctl simulate: %s: expected a number from 0 to 1000, got \"%s\"\n",
                opt, arg);
        return -1;
    }
    *out = v;
    return 0;
}

static int run(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    const char *trace_path = NULL, *clusters_path = NULL, *policies = NULL;
    const char *preempt_path = NULL, *avail_path = NULL, *csv_path = NULL, *json_path = NULL;
    const char *jobs_path = NULL, *format = "auto";
    const char *plot_path = NULL, *usage_path = NULL, *usage_policy = NULL;
    unsigned long long seed = 1;
    bool sweep = false, migrate = false, make_room = false, no_guard = false;
    enum sw_runtime_knowledge knowledge = SW_RUNTIME_LEARNED;
    double noise = 0, spot_factor = 1, od_factor = 1;
    size_t it = 0;
    const char *optv;
    int ch;
    while ((ch = sw_cli_next(a, &it, &optv)) != -1) {
        switch (ch) {
        case 't':
            trace_path = optv;
            break;
        case 'c':
            clusters_path = optv;
            break;
        case 'p':
            policies = optv;
            break;
        case 'S':
            sweep = true;
            break;
        case 'M':
            migrate = true;
            break;
        case 'R':
            make_room = true;
            break;
        case 'g':
            no_guard = true;
            break;
        case 's': {
            char *end;
            errno = 0;
            seed = strtoull(optv, &end, 10);
            /* strtoull takes a sign (and "-1" wraps to 2^64-1): digits only. */
            if (errno != 0 || *end != '\0' || end == optv || !isdigit((unsigned char)optv[0])) {
                fprintf(stderr,
                        "spillctl simulate: --seed: expected a non-negative integer, got "
                        "\"%s\"\n",
                        optv);
                return SW_EXIT_USAGE;
            }
            break;
        }
        case 'f':
            format = optv;
            break;
        case 'r':
            if (strcmp(optv, "learned") == 0) {
                knowledge = SW_RUNTIME_LEARNED;
            } else if (strcmp(optv, "oracle") == 0) {
                knowledge = SW_RUNTIME_ORACLE;
            } else {
                fprintf(stderr,
                        "spillctl simulate: --runtime: expected learned or oracle, got \"%s\"\n",
                        optv);
                return SW_EXIT_USAGE;
            }
            break;
        case 'n': {
            char *end;
            noise = strtod(optv, &end);
            if (end == optv || *end != '\0' || !(noise >= 0 && noise <= SW_MAX_SIGMA)) {
                fprintf(stderr,
                        "spillctl simulate: --runtime-noise: expected a number from 0 to %g, "
                        "got \"%s\"\n",
                        SW_MAX_SIGMA, optv);
                return SW_EXIT_USAGE;
            }
            knowledge = SW_RUNTIME_ORACLE;
            break;
        }
        case 'A':
            avail_path = optv;
            break;
        case 'P':
            preempt_path = optv;
            break;
        case '1':
            if (parse_factor("--spot-price-factor", optv, &spot_factor) != 0)
                return SW_EXIT_USAGE;
            break;
        case '2':
            if (parse_factor("--ondemand-price-factor", optv, &od_factor) != 0)
                return SW_EXIT_USAGE;
            break;
        case 'C':
            csv_path = optv;
            break;
        case 'J':
            json_path = optv;
            break;
        case 'j':
            jobs_path = optv;
            break;
        case 'G':
            plot_path = optv;
            break;
        case 'U':
            usage_path = optv;
            break;
        case 'u':
            usage_policy = optv;
            break;
        }
    }
    struct sw_error oerr;
    if (sw_cli_no_output_format(g, "spillctl simulate", &oerr) != 0) {
        fprintf(stderr, "%s; it writes CSV with --csv OUT and JSON with --json OUT\n", oerr.msg);
        return SW_EXIT_USAGE;
    }
    if (trace_path == NULL || clusters_path == NULL) {
        fprintf(stderr, "spillctl simulate: --trace and --clusters are required (see spillctl "
                        "simulate --help)\n");
        return SW_EXIT_USAGE;
    }
    if (policies == NULL)
        policies = sweep ? "cost-aware,burst-now,spot-only,greedy,const-wait,starburst,"
                           "uniform-progress"
                         : "cost-aware,burst-now";
    enum sw_trace_format fmt;
    if (strcmp(format, "auto") == 0)
        fmt = SW_TRACE_AUTO;
    else if (strcmp(format, "csv") == 0)
        fmt = SW_TRACE_CSV;
    else if (strcmp(format, "alibaba") == 0)
        fmt = SW_TRACE_ALIBABA;
    else {
        fprintf(stderr, "spillctl simulate: --format: expected auto, csv or alibaba, got \"%s\"\n",
                format);
        return SW_EXIT_USAGE;
    }
    static struct run runs[MAX_RUNS];
    size_t nrun = 0;
    struct sw_error err = {0};
    {
        char list[512];
        if (strlen(policies) >= sizeof(list)) {
            fprintf(stderr, "spillctl simulate: --policy: list too long\n");
            return SW_EXIT_USAGE;
        }
        strcpy(list, policies);
        for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save)) {
            struct sw_policy pol;
            if (sw_policy_parse(tok, &pol, &err) != 0) {
                fprintf(stderr, "spillctl simulate: --policy: %s\n", err.msg);
                return SW_EXIT_USAGE;
            }
            bool param = strchr(tok, ':') != NULL;
            const double *vals = NULL;
            size_t nv = 0;
            if (sweep && !param) {
                if (pol.kind == SW_POLICY_CONST_WAIT)
                    vals = sweep_wait, nv = sizeof(sweep_wait) / sizeof(double);
                else if (pol.kind == SW_POLICY_STARBURST)
                    vals = sweep_k, nv = sizeof(sweep_k) / sizeof(double);
                else if (pol.kind == SW_POLICY_UNIFORM_PROGRESS)
                    vals = sweep_margin, nv = sizeof(sweep_margin) / sizeof(double);
            }
            if (nv == 0 && add_run(runs, &nrun, &pol, param) != 0)
                return SW_EXIT_USAGE;
            for (size_t v = 0; v < nv; v++) {
                pol.wait_s = pol.starburst_k = pol.up_margin = vals[v];
                if (add_run(runs, &nrun, &pol, true) != 0)
                    return SW_EXIT_USAGE;
            }
        }
        if (nrun == 0) {
            fprintf(stderr, "spillctl simulate: --policy: no policy given\n");
            return SW_EXIT_USAGE;
        }
    }
    int status = SW_EXIT_FAIL;
    char *tbuf = NULL, *cbuf = NULL, *pbuf = NULL, *abuf = NULL;
    size_t tlen, clen, plen, alen;
    struct sw_trace trace = {0};
    struct sw_clusters clusters = {0};
    struct sw_spot_trace spot = {0}, avail = {0};
    struct sw_sim_usage *usage = NULL;
    /* A file named on the command line that cannot be read or does not
     * parse is bad usage (2), as a bad flag is. */
    status = SW_EXIT_USAGE;
    if (sw__cli_read_file("simulate", trace_path, &tbuf, &tlen) != 0 ||
        sw__cli_read_file("simulate", clusters_path, &cbuf, &clen) != 0)
        goto out;
    if (sw_trace_parse(tbuf, tlen, fmt, trace_path, &trace, &err) != 0 ||
        sw_clusters_parse(cbuf, clen, clusters_path, &clusters, &err) != 0) {
        fprintf(stderr, "spillctl simulate: %s\n", err.msg);
        goto out;
    }
    if (preempt_path != NULL) {
        if (sw__cli_read_file("simulate", preempt_path, &pbuf, &plen) != 0)
            goto out;
        if (sw_spot_trace_parse(pbuf, plen, preempt_path, &spot, &err) != 0) {
            fprintf(stderr, "spillctl simulate: %s\n", err.msg);
            goto out;
        }
    }
    if (avail_path != NULL) {
        if (sw__cli_read_file("simulate", avail_path, &abuf, &alen) != 0)
            goto out;
        if (sw_spot_trace_parse(abuf, alen, avail_path, &avail, &err) != 0) {
            fprintf(stderr, "spillctl simulate: %s\n", err.msg);
            goto out;
        }
    }
    status = SW_EXIT_FAIL;
    if (trace.n == 0) {
        fprintf(stderr, "spillctl simulate: %s: no GPU jobs in the trace (%zu rows skipped)\n",
                trace_path, trace.skipped);
        goto out;
    }
    for (size_t i = 0; i < clusters.n_pools; i++) {
        struct sw_pool *p = &clusters.pools[i];
        double f = p->capacity == SW_CAP_SPOT        ? spot_factor
                   : p->capacity == SW_CAP_ON_DEMAND ? od_factor
                                                     : 1;
        p->price_gpu_h *= f;
        if (p->price_gpu_h > SW_MAX_PRICE)
            p->price_gpu_h = SW_MAX_PRICE;
    }
    fprintf(stderr,
            "spillctl simulate: %zu jobs from %s (%zu rows skipped), %zu pools, seed %llu, "
            "runtimes %s",
            trace.n, trace_path, trace.skipped, clusters.n_pools, seed,
            knowledge == SW_RUNTIME_LEARNED ? "learned" : "oracle");
    if (knowledge == SW_RUNTIME_ORACLE && noise > 0)
        fprintf(stderr, " with noise sigma %g", noise);
    fprintf(stderr, "\n");
    /* The run whose GPUs in use are drawn, sampled hourly. */
    int usage_run = -1;
    for (size_t i = 0; usage_path != NULL && i < nrun; i++)
        if (usage_policy != NULL ? strcmp(runs[i].label, usage_policy) == 0
                                 : runs[i].pol.kind == SW_POLICY_COST_AWARE && usage_run < 0)
            usage_run = (int)i;
    if (usage_path != NULL && usage_run < 0) {
        if (usage_policy != NULL) {
            fprintf(stderr, "spillctl simulate: --usage-policy: no run is labelled \"%s\"\n",
                    usage_policy);
            goto out;
        }
        usage_run = 0;
    }
    if (usage_path != NULL && (usage = sw_calloc(USAGE_MAX, sizeof(*usage))) == NULL)
        goto nomem;
    for (size_t i = 0; i < nrun; i++) {
        struct sw_sim_params p = {.clusters = &clusters,
                                  .trace = &trace,
                                  .preemptions = preempt_path ? &spot : NULL,
                                  .availability = avail_path ? &avail : NULL,
                                  .policy = runs[i].pol,
                                  .runtime = knowledge,
                                  .runtime_noise = noise,
                                  .seed = seed,
                                  .migrate = migrate,
                                  .make_room = make_room};
        p.policy.no_deadline_guard = no_guard;
        if ((int)i == usage_run) {
            p.usage = usage;
            p.usage_cap = USAGE_MAX;
            p.usage_step_s = 3600;
        }
        if ((runs[i].jobs = sw_calloc(trace.n, sizeof(struct sw_sim_job))) == NULL)
            goto nomem;
        if (sw_sim_run(&p, &runs[i].r, runs[i].jobs, &err) != 0) {
            fprintf(stderr, "spillctl simulate: policy %s: %s\n", runs[i].label, err.msg);
            goto out;
        }
        snprintf(runs[i].r.policy, sizeof(runs[i].r.policy), "%s", runs[i].label);
    }
    /* A trace no policy could place a Job of is an error, not a table of zeros. */
    bool placed = false;
    for (size_t i = 0; i < nrun; i++)
        placed = placed || runs[i].r.rejected < runs[i].r.jobs;
    if (!placed) {
        fprintf(stderr,
                "spillctl simulate: %s: every policy rejected all %zu jobs (none fits a pool of "
                "%s); nothing to compare\n",
                trace_path, trace.n, clusters_path);
        goto out;
    }
    struct sw_sim_run_view views[MAX_RUNS];
    for (size_t i = 0; i < nrun; i++)
        views[i] = (struct sw_sim_run_view){.kind = runs[i].pol.kind,
                                            .cloud_cost = runs[i].r.cost_cloud,
                                            .jct_mean = runs[i].r.jct_mean,
                                            .jobs = runs[i].jobs};
    struct sw_sim_comparison cmp;
    sw_sim_compare(views, nrun, trace.n, &cmp);
    for (size_t i = 0; i < nrun; i++)
        runs[i].v = views[i];
    size_t feasible = cmp.feasible, infeasible = cmp.infeasible;
    int best = cmp.best, bn = cmp.burst_now, ca = cmp.cost_aware;
    print_table(stdout, runs, nrun, feasible);
    printf("\ndeadlines: %zu feasible (met by at least one run), %zu met by none (reported "
           "apart);\nbest baseline: %s (%zu misses); \"lost\" counts deadlines it met and a run "
           "missed\n",
           feasible, infeasible, best >= 0 ? runs[best].label : "none",
           best >= 0 ? runs[best].v.misses : (size_t)0);
    if (bn >= 0) {
        const struct sw_sim_result *b = &runs[bn].r;
        printf("\nagainst burst-now:\n");
        for (size_t i = 0; i < nrun; i++)
            printf(
                "  %-22s cloud cost %+7.1f%%, total cost %+7.1f%%, mean JCT %+6.2f%%, "
                "deadlines missed that burst-now met: %zu\n",
                runs[i].label,
                b->cost_cloud > 0 ? 100.0 * (runs[i].r.cost_cloud - b->cost_cloud) / b->cost_cloud
                                  : 0.0,
                b->cost_total > 0 ? 100.0 * (runs[i].r.cost_total - b->cost_total) / b->cost_total
                                  : 0.0,
                b->jct_mean > 0 ? 100.0 * (runs[i].r.jct_mean - b->jct_mean) / b->jct_mean : 0.0,
                runs[i].v.lost_burst);
    }
    if (ca >= 0) {
        /* The cheapest spot-only or Uniform-Progress point missing no more
         * deadlines than cost-aware: the engine's own contribution. */
        int sp = -1;
        size_t dominated = 0;
        for (size_t i = 0; i < nrun; i++) {
            dominated += runs[i].v.dominates_cost_aware;
            if ((runs[i].pol.kind == SW_POLICY_SPOT_ONLY ||
                 runs[i].pol.kind == SW_POLICY_UNIFORM_PROGRESS) &&
                runs[i].v.misses <= runs[ca].v.misses &&
                (sp < 0 || runs[i].r.cost_cloud < runs[sp].r.cost_cloud))
                sp = (int)i;
        }
        printf("\ncost-aware: %zu baseline point(s) at once cheaper in cloud cost, no slower in "
               "mean JCT and missing no more deadlines",
               dominated);
        for (size_t i = 0, shown = 0; i < nrun; i++)
            if (runs[i].v.dominates_cost_aware)
                printf("%s%s", shown++ == 0 ? ": " : ", ", runs[i].label);
        printf("\n");
        if (sp >= 0)
            printf("cost-aware against the cheapest spot point with no more misses (%s): "
                   "cloud cost %+.1f%%, mean JCT %+.2f%%\n",
                   runs[sp].label,
                   runs[sp].r.cost_cloud > 0
                       ? 100.0 * (runs[ca].r.cost_cloud - runs[sp].r.cost_cloud) /
                             runs[sp].r.cost_cloud
                       : 0.0,
                   runs[sp].r.jct_mean > 0
                       ? 100.0 * (runs[ca].r.jct_mean - runs[sp].r.jct_mean) / runs[sp].r.jct_mean
                       : 0.0);
        else
            printf("cost-aware: no spot-only or uniform-progress point misses as few deadlines\n");
    }
    if (csv_path != NULL) {
        FILE *f = fopen(csv_path, "w");
        if (f == NULL) {
            fprintf(stderr, "spillctl simulate: %s: %s\n", csv_path, strerror(errno));
            goto out;
        }
        fputs(csv_header, f);
        for (size_t i = 0; i < nrun; i++)
            write_csv_row(f, &runs[i]);
        if (fclose(f) != 0) {
            fprintf(stderr, "spillctl simulate: %s: write failed\n", csv_path);
            goto out;
        }
    }
    if (jobs_path != NULL && write_jobs_csv(jobs_path, runs, nrun, trace.n) != 0)
        goto out;
    if (json_path != NULL) {
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; arr != NULL && i < nrun; i++) {
            cJSON *o = result_json(&runs[i], feasible, infeasible, bn >= 0);
            if (o == NULL || !cJSON_AddItemToArray(arr, o)) {
                cJSON_Delete(o);
                cJSON_Delete(arr);
                arr = NULL;
            }
        }
        char *text = arr ? cJSON_Print(arr) : NULL;
        cJSON_Delete(arr);
        if (text == NULL)
            goto nomem;
        FILE *f = fopen(json_path, "w");
        int bad = f == NULL || fputs(text, f) < 0 || fputc('\n', f) == EOF;
        if (f != NULL && fclose(f) != 0)
            bad = 1;
        cJSON_free(text);
        if (bad) {
            fprintf(stderr, "spillctl simulate: %s: cannot write\n", json_path);
            goto out;
        }
    }
    if (plot_path != NULL) {
        struct sw_plot_point pts[MAX_RUNS];
        for (size_t i = 0; i < nrun; i++)
            pts[i] = (struct sw_plot_point){.label = runs[i].label,
                                            .kind = sw_policy_name(runs[i].pol.kind),
                                            .cloud_cost = runs[i].r.cost_cloud,
                                            .jct_mean_s = runs[i].r.jct_mean,
                                            .jct_p95_s = runs[i].r.jct_p95,
                                            .frontier = runs[i].v.frontier};
        char title[256];
        snprintf(title, sizeof(title), "Cloud cost against JCT, %zu runs, %zu jobs, seed %llu",
                 nrun, trace.n, seed);
        if (write_svg(plot_path, title, pts, nrun, NULL, 0) != 0)
            goto out;
    }
    if (usage_path != NULL) {
        char title[256];
        snprintf(title, sizeof(title), "GPUs in use, %s, hourly", runs[usage_run].label);
        if (write_svg(usage_path, title, NULL, 0, usage, runs[usage_run].r.usage_n) != 0)
            goto out;
    }
    status = SW_EXIT_OK;
    goto out;
nomem:
    fprintf(stderr, "spillctl simulate: out of memory\n");
out:
    for (size_t i = 0; i < nrun; i++)
        sw_free(runs[i].jobs);
    sw_free(usage);
    sw_trace_free(&trace);
    sw_clusters_free(&clusters);
    sw_spot_trace_free(&spot);
    sw_spot_trace_free(&avail);
    sw_free(tbuf);
    sw_free(cbuf);
    sw_free(pbuf);
    sw_free(abuf);
    return status;
}

static const struct sw_cli_opt opts[] = {
    {"trace", 0, SW_CLI_VALUE, 't', "FILE"},
    {"clusters", 0, SW_CLI_VALUE, 'c', "FILE"},
    {"policy", 0, SW_CLI_VALUE, 'p', "VALUE"},
    {"sweep", 0, SW_CLI_FLAG, 'S', NULL},
    {"migrate", 0, SW_CLI_FLAG, 'M', NULL},
    {"make-room", 0, SW_CLI_FLAG, 'R', NULL},
    {"no-deadline-guard", 0, SW_CLI_FLAG, 'g', NULL},
    {"seed", 0, SW_CLI_VALUE, 's', "VALUE"},
    {"format", 0, SW_CLI_VALUE, 'f', "VALUE"},
    {"runtime", 0, SW_CLI_VALUE, 'r', "VALUE"},
    {"runtime-noise", 0, SW_CLI_VALUE, 'n', "VALUE"},
    {"availability-trace", 0, SW_CLI_VALUE, 'A', "FILE"},
    {"preemption-trace", 0, SW_CLI_VALUE, 'P', "FILE"},
    {"spot-price-factor", 0, SW_CLI_VALUE, '1', "VALUE"},
    {"ondemand-price-factor", 0, SW_CLI_VALUE, '2', "VALUE"},
    {"csv", 0, SW_CLI_VALUE, 'C', "FILE"},
    {"json", 0, SW_CLI_VALUE, 'J', "FILE"},
    {"jobs-csv", 0, SW_CLI_VALUE, 'j', "FILE"},
    {"plot", 0, SW_CLI_VALUE, 'G', "FILE"},
    {"plot-usage", 0, SW_CLI_VALUE, 'U', "FILE"},
    {"usage-policy", 0, SW_CLI_VALUE, 'u', "VALUE"},
};

const struct sw_cli_spec sw_cli_simulate_specs[] = {
    {.path = "simulate",
     .summary = "replay a job trace under placement policies",
     .help = help,
     .examples = "  spillctl simulate --trace jobs.csv --clusters clusters.json\n"
                 "  spillctl simulate --trace openb_pod_list_default.csv \\\n"
                 "      --clusters docs/examples/alibaba-clusters.json --sweep\n"
                 "  spillctl simulate --trace jobs.csv --clusters clusters.json --sweep \\\n"
                 "      --csv runs.csv --plot frontier.svg\n",
     .opts = opts,
     .nopts = sizeof(opts) / sizeof(opts[0]),
     .run = run},
};
const size_t sw_cli_simulate_nspecs = 1;
