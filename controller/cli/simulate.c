/*
 * simulate.c - `spillctl simulate`: replays a job trace against a clusters
 * file under one or more placement policies and compares them side by side.
 *
 * This file is the effectful shell around placement/sim.c: it reads the
 * files, hands their bytes to the pure parsers, runs the simulations and
 * prints the table, CSV and JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/alloc.h"
#include "common/json.h"
#include "controller/cli/commands.h"
#include "placement/sim.h"

#define MAX_POLICIES 16
#define MAX_FILE     (1024u * 1024u * 1024u)

static void usage(FILE *out)
{
    fprintf(out,
            "usage: spillctl simulate --trace FILE --clusters FILE [--policy P[,P...]]\n"
            "                         [--seed N] [--format auto|csv|alibaba]\n"
            "                         [--preemption-trace FILE] [--csv OUT] [--json OUT]\n"
            "\n"
            "Replays a job trace against the pools of a clusters file and prints, for\n"
            "each policy, the cost (on-prem, spot, on-demand, egress), job completion\n"
            "times (mean, p50, p95, p99), waits, deadline misses, spot preemptions and\n"
            "lost GPU-hours.\n"
            "\n"
            "Options:\n"
            "  --trace FILE             jobs: a CSV with submit,gpus,duration,team[,deadline]\n"
            "                           or the Alibaba GPU 2023 pod list (detected by header)\n"
            "  --clusters FILE          pools, prices, egress links, quotas, budgets (JSON;\n"
            "                           see docs/simulator.md)\n"
            "  --policy P[,P...]        policies to compare (default cost-aware,burst-now):\n"
            "                           cost-aware[:DOLLARS_PER_GPU_HOUR_OF_DELAY], local-only,\n"
            "                           burst-now, const-wait[:SECONDS], starburst[:K],\n"
            "                           spot-only, greedy\n"
            "  --seed N                 seed for spot preemptions (default 1)\n"
            "  --format F               trace format: auto (default), csv or alibaba\n"
            "  --preemption-trace FILE  skypilot spot-traces JSON; spot preemptions follow it\n"
            "                           instead of the pools' interruptions_per_hour\n"
            "  --csv OUT                also write the table as CSV to OUT\n"
            "  --json OUT               also write the figures as JSON to OUT\n"
            "  -h, --help               show this help\n"
            "\n"
            "Example:\n"
            "  spillctl simulate --trace "
            "../shared/traces/alibaba-gpu-v2023/openb_pod_list_default.csv \\\n"
            "      --clusters docs/examples/alibaba-clusters.json --policy "
            "cost-aware,burst-now,starburst\n"
            "\n" SW_CLI_GLOBAL_HELP);
}

/* Reads a whole file; the caller frees *buf with sw_free. */
static int read_file(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "spillctl simulate: %s: %s\n", path, strerror(errno));
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
                fprintf(stderr, "spillctl simulate: %s: larger than %u bytes\n", path, MAX_FILE);
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
        fprintf(stderr, "spillctl simulate: %s: %s\n", path,
                p == NULL ? "out of memory" : "read error");
        sw_free(p);
        return -1;
    }
    p[n] = '\0';
    *buf = p;
    *len = n;
    return 0;
}

static void print_table(FILE *out, const struct sw_sim_result *r, size_t n)
{
    fprintf(out, "%-12s %12s %11s %11s %11s %9s %6s %9s %8s %9s %9s %8s %9s %7s %8s\n", "policy",
            "total $", "on-prem $", "spot $", "on-demand $", "egress $", "cloud%", "JCT mean",
            "JCT p50", "JCT p95", "JCT p99", "wait", "dl-miss", "preempt", "lost GPUh");
    for (size_t i = 0; i < n; i++)
        fprintf(out,
                "%-12s %12.2f %11.2f %11.2f %11.2f %9.2f %5.1f%% %8.0fs %7.0fs %8.0fs %8.0fs "
                "%7.0fs %4zu/%-4zu %7zu %8.1f\n",
                r[i].policy, r[i].cost_total, r[i].cost_onprem, r[i].cost_spot, r[i].cost_ondemand,
                r[i].cost_egress, 100.0 * r[i].cloud_gpu_fraction, r[i].jct_mean, r[i].jct_p50,
                r[i].jct_p95, r[i].jct_p99, r[i].wait_mean, r[i].deadline_misses, r[i].deadlines,
                r[i].preemptions, r[i].lost_gpu_h);
}

static const char csv_header[] =
    "policy,jobs,completed,rejected,bursts,cost_total,cost_onprem,cost_spot,cost_ondemand,"
    "cost_egress,cost_cloud,gpu_h_onprem,gpu_h_spot,gpu_h_ondemand,cloud_gpu_fraction,jct_mean,"
    "jct_p50,jct_p95,jct_p99,wait_mean,wait_p99,deadlines,deadline_misses,preemptions,"
    "lost_gpu_h\n";

static void write_csv_row(FILE *f, const struct sw_sim_result *r)
{
    fprintf(f,
            "%s,%zu,%zu,%zu,%zu,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.3f,%.3f,%.3f,%.4f,%.1f,%.1f,%.1f,"
            "%.1f,%.1f,%.1f,%zu,%zu,%zu,%.3f\n",
            r->policy, r->jobs, r->completed, r->rejected, r->bursts, r->cost_total, r->cost_onprem,
            r->cost_spot, r->cost_ondemand, r->cost_egress, r->cost_cloud, r->gpu_h_onprem,
            r->gpu_h_spot, r->gpu_h_ondemand, r->cloud_gpu_fraction, r->jct_mean, r->jct_p50,
            r->jct_p95, r->jct_p99, r->wait_mean, r->wait_p99, r->deadlines, r->deadline_misses,
            r->preemptions, r->lost_gpu_h);
}

static cJSON *result_json(const struct sw_sim_result *r, size_t extra_misses, bool has_ref)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "policy", r->policy);
    cJSON_AddNumberToObject(o, "jobs", (double)r->jobs);
    cJSON_AddNumberToObject(o, "completed", (double)r->completed);
    cJSON_AddNumberToObject(o, "rejected", (double)r->rejected);
    cJSON_AddNumberToObject(o, "bursts", (double)r->bursts);
    cJSON *c = cJSON_AddObjectToObject(o, "cost");
    if (c != NULL) {
        cJSON_AddNumberToObject(c, "total", round(r->cost_total * 100) / 100);
        cJSON_AddNumberToObject(c, "onprem", round(r->cost_onprem * 100) / 100);
        cJSON_AddNumberToObject(c, "spot", round(r->cost_spot * 100) / 100);
        cJSON_AddNumberToObject(c, "ondemand", round(r->cost_ondemand * 100) / 100);
        cJSON_AddNumberToObject(c, "egress", round(r->cost_egress * 100) / 100);
        cJSON_AddNumberToObject(c, "cloud", round(r->cost_cloud * 100) / 100);
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
    cJSON_AddNumberToObject(o, "deadlines", (double)r->deadlines);
    cJSON_AddNumberToObject(o, "deadline_misses", (double)r->deadline_misses);
    if (has_ref)
        cJSON_AddNumberToObject(o, "misses_met_by_burst_now", (double)extra_misses);
    cJSON_AddNumberToObject(o, "preemptions", (double)r->preemptions);
    cJSON_AddNumberToObject(o, "lost_gpu_hours", r->lost_gpu_h);
    return o;
}

int sw_cli_simulate(const struct sw_cli_globals *g, int argc, char **argv)
{
    const char *trace_path = NULL, *clusters_path = NULL, *policies = "cost-aware,burst-now";
    const char *preempt_path = NULL, *csv_path = NULL, *json_path = NULL, *format = "auto";
    unsigned long long seed = 1;
    static const struct option opts[] = {
        {"trace", required_argument, NULL, 't'},
        {"clusters", required_argument, NULL, 'c'},
        {"policy", required_argument, NULL, 'p'},
        {"seed", required_argument, NULL, 's'},
        {"format", required_argument, NULL, 'f'},
        {"preemption-trace", required_argument, NULL, 'P'},
        {"csv", required_argument, NULL, 'C'},
        {"json", required_argument, NULL, 'J'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 't':
            trace_path = optarg;
            break;
        case 'c':
            clusters_path = optarg;
            break;
        case 'p':
            policies = optarg;
            break;
        case 's': {
            char *end;
            errno = 0;
            seed = strtoull(optarg, &end, 10);
            if (errno != 0 || *end != '\0' || end == optarg) {
                fprintf(stderr,
                        "spillctl simulate: --seed: expected a non-negative integer, got "
                        "\"%s\"\n",
                        optarg);
                return SW_EXIT_USAGE;
            }
            break;
        }
        case 'f':
            format = optarg;
            break;
        case 'P':
            preempt_path = optarg;
            break;
        case 'C':
            csv_path = optarg;
            break;
        case 'J':
            json_path = optarg;
            break;
        case 'h':
            usage(stdout);
            return SW_EXIT_OK;
        default:
            usage(stderr);
            return SW_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "spillctl simulate: unexpected argument \"%s\"\n", argv[optind]);
        return SW_EXIT_USAGE;
    }
    struct sw_error oerr;
    if (sw_cli_no_output_format(g, "spillctl simulate", &oerr) != 0) {
        fprintf(stderr, "%s; it writes CSV with --csv OUT and JSON with --json OUT\n", oerr.msg);
        return SW_EXIT_USAGE;
    }
    if (trace_path == NULL || clusters_path == NULL) {
        fprintf(stderr, "spillctl simulate: --trace and --clusters are required\n\n");
        usage(stderr);
        return SW_EXIT_USAGE;
    }
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
    struct sw_policy pol[MAX_POLICIES];
    size_t npol = 0;
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
            if (npol == MAX_POLICIES) {
                fprintf(stderr, "spillctl simulate: --policy: at most %d policies\n", MAX_POLICIES);
                return SW_EXIT_USAGE;
            }
            if (sw_policy_parse(tok, &pol[npol], &err) != 0) {
                fprintf(stderr, "spillctl simulate: --policy: %s\n", err.msg);
                return SW_EXIT_USAGE;
            }
            npol++;
        }
        if (npol == 0) {
            fprintf(stderr, "spillctl simulate: --policy: no policy given\n");
            return SW_EXIT_USAGE;
        }
    }
    int status = SW_EXIT_FAIL;
    char *tbuf = NULL, *cbuf = NULL, *pbuf = NULL;
    size_t tlen, clen, plen;
    struct sw_trace trace = {0};
    struct sw_clusters clusters = {0};
    struct sw_spot_trace spot = {0};
    struct sw_sim_result res[MAX_POLICIES];
    double *ends[MAX_POLICIES] = {0};
    double *deadlines = NULL;
    if (read_file(trace_path, &tbuf, &tlen) != 0 || read_file(clusters_path, &cbuf, &clen) != 0)
        goto out;
    if (sw_trace_parse(tbuf, tlen, fmt, trace_path, &trace, &err) != 0 ||
        sw_clusters_parse(cbuf, clen, clusters_path, &clusters, &err) != 0) {
        fprintf(stderr, "spillctl simulate: %s\n", err.msg);
        goto out;
    }
    if (preempt_path != NULL) {
        if (read_file(preempt_path, &pbuf, &plen) != 0)
            goto out;
        if (sw_spot_trace_parse(pbuf, plen, preempt_path, &spot, &err) != 0) {
            fprintf(stderr, "spillctl simulate: %s\n", err.msg);
            goto out;
        }
    }
    if (trace.n == 0) {
        fprintf(stderr, "spillctl simulate: %s: no GPU jobs in the trace (%zu rows skipped)\n",
                trace_path, trace.skipped);
        goto out;
    }
    fprintf(stderr,
            "spillctl simulate: %zu jobs from %s (%zu rows skipped), %zu pools, seed %llu\n",
            trace.n, trace_path, trace.skipped, clusters.n_pools, seed);
    deadlines = sw_calloc(trace.n, sizeof(double));
    if (deadlines == NULL)
        goto nomem;
    for (size_t i = 0; i < npol; i++) {
        struct sw_sim_params p = {.clusters = &clusters,
                                  .trace = &trace,
                                  .preemptions = preempt_path ? &spot : NULL,
                                  .policy = pol[i],
                                  .seed = seed};
        if ((ends[i] = sw_calloc(trace.n, sizeof(double))) == NULL)
            goto nomem;
        if (sw_sim_run(&p, &res[i], ends[i], deadlines, &err) != 0) {
            fprintf(stderr, "spillctl simulate: policy %s: %s\n", sw_policy_name(pol[i].kind),
                    err.msg);
            goto out;
        }
    }
    print_table(stdout, res, npol);
    /* Against burst-now, when it ran: the yardstick. */
    int ref = -1;
    for (size_t i = 0; i < npol; i++)
        if (pol[i].kind == SW_POLICY_BURST_NOW && ref < 0)
            ref = (int)i;
    size_t extra[MAX_POLICIES] = {0};
    if (ref >= 0) {
        const struct sw_sim_result *b = &res[ref];
        printf("\nagainst burst-now:\n");
        for (size_t i = 0; i < npol; i++) {
            for (size_t j = 0; j < trace.n; j++)
                if (deadlines[j] > 0 && ends[ref][j] <= deadlines[j] + 1e-6 &&
                    !(ends[i][j] <= deadlines[j] + 1e-6))
                    extra[i]++;
            printf("  %-12s cloud cost %+7.1f%%, total cost %+7.1f%%, mean JCT %+6.2f%%, "
                   "deadlines missed that burst-now met: %zu\n",
                   res[i].policy,
                   b->cost_cloud > 0 ? 100.0 * (res[i].cost_cloud - b->cost_cloud) / b->cost_cloud
                                     : 0.0,
                   b->cost_total > 0 ? 100.0 * (res[i].cost_total - b->cost_total) / b->cost_total
                                     : 0.0,
                   b->jct_mean > 0 ? 100.0 * (res[i].jct_mean - b->jct_mean) / b->jct_mean : 0.0,
                   extra[i]);
        }
    }
    if (csv_path != NULL) {
        FILE *f = fopen(csv_path, "w");
        if (f == NULL) {
            fprintf(stderr, "spillctl simulate: %s: %s\n", csv_path, strerror(errno));
            goto out;
        }
        fputs(csv_header, f);
        for (size_t i = 0; i < npol; i++)
            write_csv_row(f, &res[i]);
        if (fclose(f) != 0) {
            fprintf(stderr, "spillctl simulate: %s: write failed\n", csv_path);
            goto out;
        }
    }
    if (json_path != NULL) {
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; arr != NULL && i < npol; i++) {
            cJSON *o = result_json(&res[i], extra[i], ref >= 0);
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
    status = SW_EXIT_OK;
    goto out;
nomem:
    fprintf(stderr, "spillctl simulate: out of memory\n");
out:
    for (size_t i = 0; i < npol; i++)
        sw_free(ends[i]);
    sw_free(deadlines);
    sw_trace_free(&trace);
    sw_clusters_free(&clusters);
    sw_spot_trace_free(&spot);
    sw_free(tbuf);
    sw_free(cbuf);
    sw_free(pbuf);
    return status;
}
