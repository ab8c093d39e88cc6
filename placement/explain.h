/*
 * explain.h - renders a decision and the options behind it, as text for
 * people (`spillctl explain`) and as JSON for storage and tools.
 *
 * Rendering is pure: it writes into a caller's struct sw_buf or builds a
 * cJSON tree; printing is the caller's business. The output depends only on
 * the snapshot, the policy and the decision, so the same input always gives
 * byte-identical explanations.
 */
#ifndef SW_PLACEMENT_EXPLAIN_H
#define SW_PLACEMENT_EXPLAIN_H

#include <cjson/cJSON.h>

#include "common/buf.h"
#include "placement/engine.h"

/**
 * Appends the explanation of `d` (for workload s->pending[d->workload]) to
 * `out` (borrowed). Lists every option when the decision was made with
 * SW_DECIDE_EXPLAIN, else only the chosen one. Returns 0, SW_ENOMEM or
 * SW_ETOOBIG (the buffer's cap).
 */
int sw_explain_text(const struct sw_snapshot *s, const struct sw_policy *policy,
                    const struct sw_decision *d, struct sw_buf *out);

/**
 * Builds the explanation of `d` as a new cJSON object in *out (owned by the
 * caller, freed with cJSON_Delete). Money is rounded to cents and times are
 * seconds relative to the snapshot's `now`. Returns 0 or SW_ENOMEM.
 */
int sw_explain_json(const struct sw_snapshot *s, const struct sw_policy *policy,
                    const struct sw_decision *d, cJSON **out);

/**
 * The same as compact JSON text in *out (owned by the caller, freed with
 * sw_free). Returns 0 or SW_ENOMEM.
 */
int sw_explain_json_string(const struct sw_snapshot *s, const struct sw_policy *policy,
                           const struct sw_decision *d, char **out);

#endif
