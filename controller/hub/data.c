/*
 * data.c - a Job's data: inputs made present and verified in the target
 * region before its mirror exists there, and outputs flowing back.
 *
 * Inputs are `spillway.io/inputs` URIs in the object store of the origin's
 * region; they are mirrored, under the same prefix, to the store of the
 * target's region (replication/gate.h, verified copies with a Redis
 * journal, so a hub restarted mid-copy resumes). A bucket is called in each
 * region's store what the config's `buckets` says (sw_hub_config_bucket),
 * by default the name the annotation gives. An input that does not
 * exist, or has no object, blocks the burst and the reason is shown on the
 * record and as a Warning Event.
 *
 * Outputs: attempt N of a Job writes to s3://BUCKET/PREFIX/attempt-N/ in its
 * region's store (BUCKET as that region calls it); while the mirror runs,
 * and once more when it has ended, that prefix is copied back to
 * s3://BUCKET/PREFIX/ in the origin's store (as the origin's region calls it).
 * Only the attempt the record names is copied, so a lost attempt's late
 * writes never overwrite the committed one's:
 *   - an attempt given up (lost, requeued, failed, its origin gone) has its
 *     rounds stopped with no last round: nothing it writes after the
 *     give-up is copied (a round already under way ends first);
 *   - no round of another attempt starts before that stopped round has
 *     ended (j->output_stops), since the next attempt's first round aborts
 *     the uploads the earlier attempts' journals name (never an upload
 *     found open under the prefix: that may be anyone's);
 *   - a final round that fails is tried again (OUTPUT_TRIES in all); when
 *     none succeeds the Job ends failed, its reason saying the outputs did
 *     not come back (follow.c), never plainly succeeded.
 *
 * An input copy and a final outputs round can take hours: they are long
 * transfers (j->transfer), not steps (j->busy), so a re-take of the lease
 * after a Redis failover never waits for them (leader.c). When one lands,
 * its result is used only if the hub acts, no step is in flight for the
 * Job, and the record (as read again, perhaps) still asks for it: the same
 * attempt, and for inputs still decided for that region. Otherwise it is
 * dropped and the step runs again, which the journal makes cheap (verified
 * copies are skipped). Every write of its outcome is under the epoch of
 * the moment it lands.
 */
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "common/json.h"
#include "controller/hub/hub.h"

/* Final output rounds tried before the Job is failed for its outputs. */
#define OUTPUT_TRIES 3

/* The Job's spec as its namespace may ask it (sw_observe_spec); err says
 * why not. */
static int spec_of(struct sw_hub *h, struct sw_job *j, struct sw_burst_spec *spec,
                   struct sw_error *err)
{
    const cJSON *origin = sw_observe_origin(h, &j->rec);
    if (origin == NULL)
        return sw_error_set(err, SW_ENOENT, "the origin Job is not in its cluster's cache");
    return sw_observe_spec(h, &j->rec, origin, spec, err);
}

/*
 * Why the buckets of j's inputs and outputs have no name in the store of
 * `region` (a config `buckets` entry; the origin's region needs none), or
 * NULL: a bucket never passes unmapped into another region's store.
 */
static const char *unmapped_bucket(struct sw_hub *h, struct sw_job *j,
                                   const struct sw_burst_spec *spec, const char *home,
                                   const char *region, char *why, size_t len)
{
    const char *b = NULL;
    for (int i = 0; i < spec->n_inputs && b == NULL; i++)
        if (sw_hub_config_bucket(&h->cfg, spec->inputs[i].bucket, region, home) == NULL)
            b = spec->inputs[i].bucket;
    if (b == NULL && spec->has_outputs &&
        sw_hub_config_bucket(&h->cfg, spec->outputs.bucket, region, home) == NULL)
        b = spec->outputs.bucket;
    if (b == NULL)
        return NULL;
    (void)j;
    snprintf(why, len,
             "bucket %s has no name in region %s's store: the hub config's buckets.%s.%s is "
             "not set (a bucket is never assumed to have the same name in another region)",
             b, region, b, region);
    return why;
}

struct gate_call {
    struct sw_hub *h;
    struct sw_job *j;
    int attempt;     /* the record's when the copy started */
    char region[64]; /* where the inputs go */
};

/*
 * A long transfer for j landed (j->transfer is cleared): whether its result
 * may be used now, for `attempt` (and, for inputs, `region`). When not, the
 * Job is stepped again later from what the record says then.
 */
static bool landed(struct sw_hub *h, struct sw_job *j, int attempt, const char *region,
                   const char *what)
{
    j->transfer = false;
    bool ok = sw_hub_acting(h) && !j->busy && j->persisted && j->rec.attempt == attempt &&
              (region == NULL ||
               (j->rec.state == SW_JS_DECIDED && strcmp(j->rec.target_region, region) == 0));
    if (!ok) {
        SW_LOG(SW_LOG_INFO, "a long transfer landed for a record that moved on; not used",
               "job=%s what=%s attempt=%d epoch=%lld", sw_log_q(j->rec.key), what, attempt,
               (long long)h->epoch);
        sw_hub_kick(h);
    }
    return ok;
}

static void block(struct sw_hub *h, struct sw_job *j, const char *why)
{
    sw_follow_block(h, j, "BurstBlocked", why);
}

/* ---- estimate ---------------------------------------------------------------- */

static void on_estimate(const struct sw_gate_result *res, void *ctx)
{
    struct gate_call *g = ctx;
    struct sw_hub *h = g->h;
    struct sw_job *j = g->j;
    sw_free(g);
    if (res->rc != 0) {
        block(h, j, res->err.msg);
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    /* Bytes to move to a cloud region (+1: known, even when already there).
     * An estimate cannot tell an empty input from one already copied; the
     * copy itself (sw_data_step) lists the source and blocks an empty one. */
    j->rec.input_bytes = res->bytes_to_copy + 1;
    sw_rec_step(h, j, SW_FP_NONE);
    sw_hub_want_decide(h);
}

static void on_ensured(const struct sw_gate_result *res, void *ctx);

/*
 * Starts the gate for j's inputs (the origin region's store) toward
 * `region`: an estimate, or the verified copy (with the Redis journal).
 * j->busy is set; anything that keeps the gate from starting blocks the
 * Job with the reason.
 */
static void gate_start(struct sw_hub *h, struct sw_job *j, const struct sw_burst_spec *spec,
                       const char *region, bool copy)
{
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    const struct sw_hub_store *st = om ? sw_store_for_region(h, om->rec.spec.region) : NULL;
    j->busy = true;
    if (st == NULL) {
        char why[256];
        snprintf(why, sizeof(why),
                 "no object store in the origin's region %s (spillctl replicate store add)",
                 om ? om->rec.spec.region : "?");
        block(h, j, why);
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    char why[400];
    if (unmapped_bucket(h, j, spec, om->rec.spec.region, region, why, sizeof(why)) != NULL) {
        block(h, j, why);
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    struct sw_gate_input in[SW_ANN_MAX_INPUTS];
    for (int i = 0; i < spec->n_inputs; i++)
        in[i] = (struct sw_gate_input){
            st->name,
            sw_hub_config_bucket(&h->cfg, spec->inputs[i].bucket, om->rec.spec.region,
                                 om->rec.spec.region),
            spec->inputs[i].prefix,
            sw_hub_config_bucket(&h->cfg, spec->inputs[i].bucket, region, om->rec.spec.region)};
    struct sw_gate_store stores[SW_HUB_MAX_STORES];
    struct sw_gate_request req = {.job = j->rec.key,
                                  .region = region,
                                  .stores = stores,
                                  .nstores = sw_gate_stores(h, stores, SW_HUB_MAX_STORES),
                                  .inputs = in,
                                  .ninputs = (size_t)spec->n_inputs,
                                  .redis_url = copy ? h->redis_url : NULL};
    struct gate_call *g = sw_calloc(1, sizeof(*g));
    if (g == NULL) {
        sw_hub_step_done(h, j, SW_ENOMEM);
        return;
    }
    *g = (struct gate_call){h, j, j->rec.attempt, ""};
    snprintf(g->region, sizeof(g->region), "%s", region);
    struct sw_error err = {0};
    int rc = copy ? sw_gate_ensure(h->loop, &req, on_ensured, g, &err)
                  : sw_gate_estimate(h->loop, &req, on_estimate, g, &err);
    if (rc != 0) {
        sw_free(g);
        block(h, j, err.msg);
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    if (copy) {
        /* A long transfer, not a step (landed() when it ends). */
        j->busy = false;
        j->transfer = true;
    }
}

void sw_data_estimate(struct sw_hub *h, struct sw_job *j, const struct sw_burst_spec *spec)
{
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    if (om == NULL || h->nstores == 0)
        return;
    /* Any other region's store that knows the buckets: what it would take
     * to move the inputs. */
    const char *region = om->rec.spec.region;
    char why[400];
    for (size_t i = 0; i < h->nstores; i++)
        if (strcmp(h->stores[i].region, om->rec.spec.region) != 0 &&
            unmapped_bucket(h, j, spec, om->rec.spec.region, h->stores[i].region, why,
                            sizeof(why)) == NULL) {
            region = h->stores[i].region;
            break;
        }
    gate_start(h, j, spec, region, false);
}

/* ---- ensure ------------------------------------------------------------------ */

static void on_ensured(const struct sw_gate_result *res, void *ctx)
{
    struct gate_call *g = ctx;
    struct sw_hub *h = g->h;
    struct sw_job *j = g->j;
    bool ok = landed(h, j, g->attempt, g->region, "inputs");
    sw_free(g);
    if (!ok)
        return;
    j->busy = true;
    if (res->rc != 0) {
        block(h, j, res->err.msg);
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    for (size_t i = 0; i < res->nlocations; i++)
        if (res->locations[i].objects == 0) {
            char why[512];
            snprintf(why, sizeof(why), "input %.400s has no objects", res->locations[i].url);
            block(h, j, why);
            sw_rec_step(h, j, SW_FP_NONE);
            return;
        }
    h->m.replication_bytes += (uint64_t)(res->bytes_to_copy > 0 ? res->bytes_to_copy : 0);
    SW_LOG(SW_LOG_INFO, "inputs ready in the target region", "job=%s region=%s bytes=%lld",
           sw_log_q(j->rec.key), sw_log_q(j->rec.target_region), (long long)res->bytes_to_copy);
    j->rec.state = SW_JS_DATA_READY;
    j->rec.data_ready_ms = sw_hub_wall_ms();
    sw_rec_step(h, j, SW_FP_AFTER_DATA);
}

void sw_data_step(struct sw_hub *h, struct sw_job *j)
{
    struct sw_burst_spec spec;
    struct sw_error err = {0};
    int rc = spec_of(h, j, &spec, &err);
    if (rc == SW_EFORBIDDEN) {
        j->busy = true;
        sw_follow_block(h, j, "BurstBlocked", err.msg);
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    if (rc != 0)
        return;
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    char why[400];
    if (om != NULL && unmapped_bucket(h, j, &spec, om->rec.spec.region, j->rec.target_region, why,
                                      sizeof(why)) != NULL) {
        j->busy = true;
        block(h, j, why);
        sw_rec_step(h, j, SW_FP_NONE);
        return;
    }
    if (spec.n_inputs == 0 || om == NULL ||
        strcmp(om->rec.spec.region, j->rec.target_region) == 0) {
        j->busy = true;
        j->rec.state = SW_JS_DATA_READY;
        j->rec.data_ready_ms = sw_hub_wall_ms();
        sw_rec_step(h, j, SW_FP_AFTER_DATA);
        return;
    }
    gate_start(h, j, &spec, j->rec.target_region, true);
}

/* ---- outputs ----------------------------------------------------------------- */

struct out_call {
    struct sw_hub *h;
    struct sw_job *j;
    int attempt;             /* the attempt whose outputs these rounds copy */
    bool final;              /* the last round of a Job that ended */
    bool stop;               /* the end of a given-up attempt's rounds */
    struct out_call *rounds; /* final or stop: the periodic rounds' context, freed with it */
};

static void start_rounds(struct sw_hub *h, struct sw_job *j);

static void on_outputs(const struct sw_gate_result *res, void *ctx)
{
    struct out_call *oc = ctx;
    struct sw_hub *h = oc->h;
    struct sw_job *j = oc->j;
    if (oc->stop) {
        /* A given-up attempt's rounds have ended: another attempt's may go. */
        if (res->rc != 0)
            SW_LOG(SW_LOG_INFO, "a given-up attempt's last outputs round failed",
                   "job=%s attempt=%d err=%s", sw_log_q(j->rec.key), oc->attempt,
                   sw_log_q(res->err.msg));
        j->output_stops--;
        sw_free(oc->rounds);
        sw_free(oc);
        if (j->output_stops == 0 && j->outputs_wanted)
            start_rounds(h, j);
        sw_hub_kick(h);
        return;
    }
    if (res->rc == 0) {
        h->m.replication_bytes += (uint64_t)(res->bytes_to_copy > 0 ? res->bytes_to_copy : 0);
        /* For RPO: when this attempt's outputs were last all home. */
        char ms[32];
        snprintf(ms, sizeof(ms), "%lld", (long long)sw_hub_wall_ms());
        const char *argv[] = {"HSET", SW_KEY_OUTPUTS_SYNCED, j->rec.key, ms};
        sw_redis_command_argv(h->redis, NULL, NULL, 4, argv, NULL);
    } else
        SW_LOG(SW_LOG_WARN, "outputs copy failed", "job=%s attempt=%d err=%s", sw_log_q(j->rec.key),
               oc->attempt, sw_log_q(res->err.msg));
    if (!oc->final)
        return;
    int attempt = oc->attempt;
    sw_free(oc->rounds);
    sw_free(oc);
    if (!landed(h, j, attempt, NULL, "outputs"))
        return;
    if (res->rc != 0 && ++j->output_failures < OUTPUT_TRIES) {
        /* Tried again after the step's backoff (follow.c asks again). */
        sw_hub_step_done(h, j, SW_EIO);
        return;
    }
    /* The last round ran: follow.c moves the record on. */
    j->rec.reason[0] = '\0';
    if (res->rc != 0)
        snprintf(j->rec.reason, sizeof(j->rec.reason), "outputs not copied back (%d tries): %.400s",
                 j->output_failures, res->err.msg);
    j->output_failures = 0;
    j->outputs_done = res->rc == 0 ? 1 : -1;
    sw_hub_step_done(h, j, 0);
}

/* Where the outputs go, or why not: 0 with both stores, else the reason. */
static int output_stores(struct sw_hub *h, struct sw_job *j, struct sw_burst_spec *spec,
                         const struct sw_hub_store **os, const struct sw_hub_store **ts, char *why,
                         size_t len)
{
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    struct sw_error err = {0};
    int rc = spec_of(h, j, spec, &err);
    if (rc == SW_EFORBIDDEN) {
        snprintf(why, len, "outputs not copied back: %.400s", err.msg);
        return SW_EFORBIDDEN;
    }
    if (rc != 0 || !spec->has_outputs || om == NULL)
        return SW_ENOENT;
    *os = sw_store_for_region(h, om->rec.spec.region);
    *ts = sw_store_for_region(h, j->rec.target_region);
    if (*os == NULL || *ts == NULL) {
        snprintf(why, len, "outputs not copied back: no object store in region %s",
                 *os == NULL ? om->rec.spec.region : j->rec.target_region);
        return SW_EINFEASIBLE;
    }
    return 0;
}

/* Starts the periodic rounds of the record's attempt (j->outputs). */
static int rounds_open(struct sw_hub *h, struct sw_job *j, struct sw_error *err)
{
    struct sw_burst_spec spec;
    const struct sw_hub_store *os = NULL, *ts = NULL;
    char why[512] = "";
    int rc = output_stores(h, j, &spec, &os, &ts, why, sizeof(why));
    if (rc != 0)
        return sw_error_set(err, rc, "%s", why[0] ? why : "no outputs");
    /* As the mirror was told (mirror.c): PREFIX/attempt-N/. */
    char from_prefix[600];
    size_t pl = strlen(spec.outputs.prefix);
    snprintf(from_prefix, sizeof(from_prefix), "%s%sattempt-%d/", spec.outputs.prefix,
             pl && spec.outputs.prefix[pl - 1] != '/' ? "/" : "", j->rec.attempt);
    /* Each region's name for the bucket (the config's buckets). */
    struct sw_gate_input from = {
        ts->name,
        sw_hub_config_bucket(&h->cfg, spec.outputs.bucket, j->rec.target_region, os->region),
        from_prefix, NULL};
    /* Home, under PREFIX/ as the mirror wrote under PREFIX/attempt-N/ (a
     * prefix given without its '/' gets one: "run-7" and "run-7/attempt-1/f"
     * make "run-7/f", never "run-7f"). */
    char to_prefix[600];
    snprintf(to_prefix, sizeof(to_prefix), "%s%s", spec.outputs.prefix,
             pl && spec.outputs.prefix[pl - 1] != '/' ? "/" : "");
    struct sw_gate_input to = {
        os->name, sw_hub_config_bucket(&h->cfg, spec.outputs.bucket, os->region, os->region),
        to_prefix, NULL};
    if (from.bucket == NULL)
        return sw_error_set(err, SW_EINFEASIBLE,
                            "outputs not copied back: bucket %s has no name in region %s's store "
                            "(the hub config's buckets)",
                            spec.outputs.bucket, j->rec.target_region);
    struct sw_gate_store stores[SW_HUB_MAX_STORES];
    size_t ns = sw_gate_stores(h, stores, SW_HUB_MAX_STORES);
    struct out_call *oc = sw_calloc(1, sizeof(*oc));
    if (oc == NULL)
        return sw_error_set(err, SW_ENOMEM, "out of memory");
    *oc = (struct out_call){h, j, j->rec.attempt, false, false, NULL};
    if (sw_gate_outputs_start(h->loop, stores, ns, j->rec.key, j->rec.attempt, &from, &to,
                              h->redis_url, h->cfg.output_sync_s, on_outputs, oc, &j->outputs,
                              err) != 0) {
        sw_free(oc);
        return err->code ? err->code : SW_EIO;
    }
    j->outputs_ctx = oc;
    return 0;
}

static void start_rounds(struct sw_hub *h, struct sw_job *j)
{
    j->outputs_wanted = false;
    if (j->outputs != NULL)
        return;
    struct sw_error err = {0};
    if (rounds_open(h, j, &err) != 0 && err.code != SW_ENOENT)
        SW_LOG(SW_LOG_WARN, "cannot copy outputs back", "job=%s err=%s", sw_log_q(j->rec.key),
               sw_log_q(err.msg));
}

void sw_data_outputs(struct sw_hub *h, struct sw_job *j, bool final)
{
    if (!final) {
        /* After a given-up attempt's rounds have ended (on_outputs). */
        if (j->output_stops > 0)
            j->outputs_wanted = true;
        else
            start_rounds(h, j);
        return;
    }
    struct sw_burst_spec spec;
    const struct sw_hub_store *os = NULL, *ts = NULL;
    char why[512] = "";
    int rc = output_stores(h, j, &spec, &os, &ts, why, sizeof(why));
    if (rc == SW_ENOENT) {
        j->outputs_done = 1;
        sw_hub_step_done(h, j, 0);
        return;
    }
    if (rc != 0) {
        snprintf(j->rec.reason, sizeof(j->rec.reason), "%s", why);
        j->outputs_done = -1;
        sw_hub_step_done(h, j, 0);
        return;
    }
    if (j->output_stops > 0) {
        /* A given-up attempt's round is still under way: it must end
         * before this attempt's last round starts (on_outputs kicks). */
        j->busy = false;
        j->next_ms = sw_hub_mono_ms() + 500;
        return;
    }
    if (j->outputs != NULL && ((struct out_call *)j->outputs_ctx)->attempt != j->rec.attempt)
        sw_data_outputs_stop(h, j); /* never an attempt's rounds for another's end */
    if (j->outputs == NULL) {
        struct sw_error err = {0};
        if (rounds_open(h, j, &err) != 0) {
            SW_LOG(SW_LOG_WARN, "cannot copy outputs back", "job=%s err=%s", sw_log_q(j->rec.key),
                   sw_log_q(err.msg));
            snprintf(j->rec.reason, sizeof(j->rec.reason), "outputs not copied back: %.400s",
                     err.msg);
            j->outputs_done = -1;
            sw_hub_step_done(h, j, 0);
            return;
        }
    }
    struct out_call *fc = sw_calloc(1, sizeof(*fc));
    if (fc == NULL) {
        sw_hub_step_done(h, j, SW_ENOMEM);
        return;
    }
    *fc = (struct out_call){h, j, j->rec.attempt, true, false, j->outputs_ctx};
    j->outputs_ctx = NULL;
    sw_gate_outputs_finish(j->outputs, on_outputs, fc);
    j->outputs = NULL; /* the gate frees the handle */
    /* A long transfer, not a step (landed() when it ends). */
    j->busy = false;
    j->transfer = true;
}

void sw_data_outputs_stop(struct sw_hub *h, struct sw_job *j)
{
    j->outputs_wanted = false;
    if (j->outputs == NULL)
        return;
    struct out_call *rounds = j->outputs_ctx;
    struct sw_gate_outputs *o = j->outputs;
    struct out_call *fc = sw_calloc(1, sizeof(*fc));
    j->outputs = NULL;
    j->outputs_ctx = NULL;
    /* No last round: nothing the attempt writes after its give-up is
     * copied. A round under way ends first, and until it has, no other
     * attempt's round starts (j->output_stops). */
    if (fc == NULL) {
        SW_LOG(SW_LOG_WARN, "out of memory: a given-up attempt's outputs round is not awaited",
               "job=%s", sw_log_q(j->rec.key));
        sw_gate_outputs_stop(o, NULL, NULL);
        sw_free(rounds);
        return;
    }
    *fc = (struct out_call){h, j, rounds ? rounds->attempt : j->rec.attempt, true, true, rounds};
    j->output_stops++;
    sw_gate_outputs_stop(o, on_outputs, fc);
}
