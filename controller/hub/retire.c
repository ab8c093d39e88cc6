/*
 * retire.c - when a finished Job's record may end (retire.h).
 */
#include <stdio.h>
#include <string.h>

#include "controller/hub/mirror.h"
#include "controller/hub/retire.h"

static bool condition_true(const struct sw_job_record *o, const char *type)
{
    for (uint16_t i = 0; i < o->nconditions; i++) {
        const struct sw_condition *c = &o->conditions[i];
        if (c->type && c->status && strcmp(c->type, type) == 0 && strcmp(c->status, "True") == 0)
            return true;
    }
    return false;
}

bool sw_retire_origin_done(const struct sw_job_record *o)
{
    if (o == NULL)
        return false;
    if (condition_true(o, "Complete") || condition_true(o, "Failed"))
        return true;
    const char *state = sw_job_record_annotation(o, SW_ANN_STATE);
    if (state == NULL)
        return false;
    if (strcmp(state, sw_job_state_name(SW_JS_SUCCEEDED)) != 0 &&
        strcmp(state, sw_job_state_name(SW_JS_FAILED)) != 0)
        return false;
    return sw_retire_origin_claimed(o);
}

bool sw_retire_origin_claimed(const struct sw_job_record *o)
{
    if (o == NULL)
        return false;
    const char *mirror = sw_job_record_annotation(o, SW_ANN_MIRROR);
    if (mirror == NULL || o->uid == NULL || o->uid[0] == '\0')
        return false;
    /* The mirror's name is "sw-" UID "-" attempt (sw_mirror_name). */
    char prefix[64];
    int n = snprintf(prefix, sizeof(prefix), "sw-%.36s-", o->uid);
    if (n < 0 || (size_t)n >= sizeof(prefix) || strncmp(mirror, prefix, (size_t)n) != 0)
        return false;
    const char *attempt = mirror + n;
    if (*attempt < '1' || *attempt > '9')
        return false;
    for (attempt++; *attempt; attempt++)
        if (*attempt < '0' || *attempt > '9')
            return false;
    return true;
}

enum sw_retire_verdict sw_retire_check(const struct sw_job_rec *r, const struct sw_job_record *o,
                                       int64_t now_ms, int64_t after_ms)
{
    if (!sw_job_state_terminal(r->state) || r->finished_ms <= 0 ||
        now_ms - r->finished_ms < after_ms || o == NULL)
        return SW_RETIRE_NOT_YET;
    if (o->uid == NULL || strcmp(o->uid, r->uid) != 0)
        return SW_RETIRE_NOT_YET; /* another Job of that name: the record follows its own */
    return sw_retire_origin_done(o) ? SW_RETIRE_NOW : SW_RETIRE_SHOW;
}
