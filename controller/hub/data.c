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
 * writes never overwrite the committed one's.
 */
#include <string.h>

#include "common/alloc.h"
#include "common/log.h"
#include "common/json.h"
#include "controller/hub/hub.h"

static int spec_of(struct sw_hub *h, struct sw_job *j, struct sw_burst_spec *spec)
{
    const cJSON *origin = sw_observe_origin(h, &j->rec);
    struct sw_error err = {0};
    if (origin == NULL)
        return SW_ENOENT;
    return sw_burst_spec_parse(sw_json_child(sw_json_child(origin, "metadata"), "annotations"),
                               j->rec.created, spec, &err);
}

struct gate_call {
    struct sw_hub *h;
    struct sw_job *j;
};

static void block(struct sw_hub *h, struct sw_job *j, const char *why)
{
    bool same = j->rec.state == SW_JS_BLOCKED &&
                strncmp(j->rec.reason, why, sizeof(j->rec.reason) - 1) == 0;
    snprintf(j->rec.reason, sizeof(j->rec.reason), "%s", why);
    j->rec.state = SW_JS_BLOCKED;
    j->rec.decided_ms = sw_hub_wall_ms();
    if (same)
        return; /* said already */
    SW_LOG(SW_LOG_WARN, "burst blocked", "job=%s reason=%s", sw_log_q(j->rec.key), sw_log_q(why));
    sw_follow_event(h, &j->rec, "Warning", "BurstBlocked", why);
    sw_follow_show_blocked(h, &j->rec, true);
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
        sw_rec_step(h, j, NULL);
        return;
    }
    /* Bytes to move to a cloud region (+1: known, even when already there).
     * An estimate cannot tell an empty input from one already copied; the
     * copy itself (sw_data_step) lists the source and blocks an empty one. */
    j->rec.input_bytes = res->bytes_to_copy + 1;
    sw_rec_step(h, j, NULL);
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
        sw_rec_step(h, j, NULL);
        return;
    }
    struct sw_gate_input in[SW_ANN_MAX_INPUTS];
    for (int i = 0; i < spec->n_inputs; i++)
        in[i] = (struct sw_gate_input){
            st->name, sw_hub_config_bucket(&h->cfg, spec->inputs[i].bucket, om->rec.spec.region),
            spec->inputs[i].prefix, sw_hub_config_bucket(&h->cfg, spec->inputs[i].bucket, region)};
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
    *g = (struct gate_call){h, j};
    struct sw_error err = {0};
    int rc = copy ? sw_gate_ensure(h->loop, &req, on_ensured, g, &err)
                  : sw_gate_estimate(h->loop, &req, on_estimate, g, &err);
    if (rc != 0) {
        sw_free(g);
        block(h, j, err.msg);
        sw_rec_step(h, j, NULL);
    }
}

void sw_data_estimate(struct sw_hub *h, struct sw_job *j, const struct sw_burst_spec *spec)
{
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    if (om == NULL || h->nstores == 0)
        return;
    /* Any other region's store: what it would take to move the inputs. */
    const char *region = om->rec.spec.region;
    for (size_t i = 0; i < h->nstores; i++)
        if (strcmp(h->stores[i].region, om->rec.spec.region) != 0) {
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
    sw_free(g);
    if (res->rc != 0) {
        block(h, j, res->err.msg);
        sw_rec_step(h, j, NULL);
        return;
    }
    for (size_t i = 0; i < res->nlocations; i++)
        if (res->locations[i].objects == 0) {
            char why[512];
            snprintf(why, sizeof(why), "input %.400s has no objects", res->locations[i].url);
            block(h, j, why);
            sw_rec_step(h, j, NULL);
            return;
        }
    h->m.replication_bytes += (uint64_t)(res->bytes_to_copy > 0 ? res->bytes_to_copy : 0);
    SW_LOG(SW_LOG_INFO, "inputs ready in the target region", "job=%s region=%s bytes=%lld",
           sw_log_q(j->rec.key), sw_log_q(j->rec.target_region), (long long)res->bytes_to_copy);
    j->rec.state = SW_JS_DATA_READY;
    j->rec.data_ready_ms = sw_hub_wall_ms();
    sw_rec_step(h, j, "after-data");
}

void sw_data_step(struct sw_hub *h, struct sw_job *j)
{
    struct sw_burst_spec spec;
    if (spec_of(h, j, &spec) != 0)
        return;
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    if (spec.n_inputs == 0 || om == NULL ||
        strcmp(om->rec.spec.region, j->rec.target_region) == 0) {
        j->busy = true;
        j->rec.state = SW_JS_DATA_READY;
        j->rec.data_ready_ms = sw_hub_wall_ms();
        sw_rec_step(h, j, "after-data");
        return;
    }
    gate_start(h, j, &spec, j->rec.target_region, true);
}

/* ---- outputs ----------------------------------------------------------------- */

struct out_call {
    struct sw_hub *h;
    struct sw_job *j;
    bool final;
    bool stop;               /* final round of a lost or failed attempt: nothing follows */
    struct out_call *rounds; /* final: the periodic rounds' context, freed with it */
};

static void on_outputs(const struct sw_gate_result *res, void *ctx)
{
    struct out_call *oc = ctx;
    struct sw_hub *h = oc->h;
    struct sw_job *j = oc->j;
    if (res->rc == 0) {
        h->m.replication_bytes += (uint64_t)(res->bytes_to_copy > 0 ? res->bytes_to_copy : 0);
        if (!oc->stop) {
            /* For RPO: when this attempt's outputs were last all home. */
            char ms[32];
            snprintf(ms, sizeof(ms), "%lld", (long long)sw_hub_wall_ms());
            const char *argv[] = {"HSET", SW_KEY_OUTPUTS_SYNCED, j->rec.key, ms};
            sw_redis_command_argv(h->redis, NULL, NULL, 4, argv, NULL);
        }
    } else
        SW_LOG(SW_LOG_WARN, "outputs copy failed", "job=%s err=%s", sw_log_q(j->rec.key),
               sw_log_q(res->err.msg));
    if (!oc->final)
        return;
    bool stop = oc->stop;
    if (stop)
        j->output_stops--;
    else
        j->outputs = NULL; /* a stopped handle was let go at once */
    sw_free(oc->rounds);
    sw_free(oc);
    if (stop)
        return;
    /* The last round ran: follow.c moves the record on. */
    j->rec.reason[0] = '\0';
    if (res->rc != 0)
        snprintf(j->rec.reason, sizeof(j->rec.reason), "outputs not copied back: %.400s",
                 res->err.msg);
    j->outputs_done = res->rc == 0 ? 1 : -1;
    sw_hub_step_done(h, j, 0);
}

void sw_data_outputs(struct sw_hub *h, struct sw_job *j, bool final)
{
    struct sw_burst_spec spec;
    struct sw_member *om = sw_member_find(h, j->rec.cluster);
    if (spec_of(h, j, &spec) != 0 || !spec.has_outputs || om == NULL) {
        if (final) {
            j->outputs_done = 1;
            sw_hub_step_done(h, j, 0);
        }
        return;
    }
    const struct sw_hub_store *os = sw_store_for_region(h, om->rec.spec.region);
    const struct sw_hub_store *ts = sw_store_for_region(h, j->rec.target_region);
    if (os == NULL || ts == NULL) {
        if (final) {
            snprintf(j->rec.reason, sizeof(j->rec.reason),
                     "outputs not copied back: no object store in region %s",
                     os == NULL ? om->rec.spec.region : j->rec.target_region);
            j->outputs_done = -1;
            sw_hub_step_done(h, j, 0);
        }
        return;
    }
    if (j->outputs == NULL) {
        /* As the mirror was told (mirror.c): PREFIX/attempt-N/. */
        char from_prefix[600];
        size_t pl = strlen(spec.outputs.prefix);
        snprintf(from_prefix, sizeof(from_prefix), "%s%sattempt-%d/", spec.outputs.prefix,
                 pl && spec.outputs.prefix[pl - 1] != '/' ? "/" : "", j->rec.attempt);
        struct sw_gate_input from = {
            ts->name, sw_hub_config_bucket(&h->cfg, spec.outputs.bucket, j->rec.target_region),
            from_prefix, NULL};
        struct sw_gate_input to = {
            os->name, sw_hub_config_bucket(&h->cfg, spec.outputs.bucket, om->rec.spec.region),
            spec.outputs.prefix, NULL};
        struct sw_gate_store stores[SW_HUB_MAX_STORES];
        size_t ns = sw_gate_stores(h, stores, SW_HUB_MAX_STORES);
        struct out_call *oc = sw_calloc(1, sizeof(*oc));
        if (oc == NULL)
            return;
        *oc = (struct out_call){h, j, false, false, NULL};
        struct sw_error err = {0};
        if (sw_gate_outputs_start(h->loop, stores, ns, j->rec.key, &from, &to, h->redis_url,
                                  h->cfg.output_sync_s, on_outputs, oc, &j->outputs, &err) != 0) {
            sw_free(oc);
            SW_LOG(SW_LOG_WARN, "cannot copy outputs back", "job=%s err=%s", sw_log_q(j->rec.key),
                   sw_log_q(err.msg));
            if (final) {
                snprintf(j->rec.reason, sizeof(j->rec.reason), "outputs not copied back: %.400s",
                         err.msg);
                j->outputs_done = -1;
                sw_hub_step_done(h, j, 0);
            }
            return;
        }
        j->outputs_ctx = oc;
    }
    if (final) {
        struct out_call *fc = sw_calloc(1, sizeof(*fc));
        if (fc == NULL)
            return;
        *fc = (struct out_call){h, j, true, false, j->outputs_ctx};
        j->outputs_ctx = NULL;
        sw_gate_outputs_finish(j->outputs, on_outputs, fc);
    }
}

void sw_data_outputs_stop(struct sw_hub *h, struct sw_job *j)
{
    if (j->outputs == NULL)
        return;
    struct out_call *fc = sw_calloc(1, sizeof(*fc));
    struct sw_gate_outputs *o = j->outputs;
    if (fc == NULL) {
        j->outputs = NULL;
        sw_gate_outputs_finish(o, NULL, NULL);
        return;
    }
    /* The gate runs one last round: what the attempt wrote before it was
     * given up reaches the origin (a retry resumes from it); nothing after. */
    *fc = (struct out_call){h, j, true, true, j->outputs_ctx};
    j->outputs_ctx = NULL;
    j->outputs = NULL;
    j->output_stops++;
    sw_gate_outputs_finish(o, on_outputs, fc);
}
