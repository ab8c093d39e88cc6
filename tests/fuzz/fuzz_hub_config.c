/*
 * libFuzzer target for controller/hub/config.c: the input is a hub config
 * file. sw_hub_config_parse must never crash; on success every field is in
 * its documented range (required fields set, no password in the URL, a
 * policy the engine parses, numbers inside their bounds, strings
 * terminated); a refusal names the file.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "controller/hub/config.h"
#include "fuzz.h"
#include "placement/engine.h"

static int terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sw_hub_config c;
    struct sw_error err = {0};
    int rc = sw_hub_config_parse((const char *)data, size, "hub.yaml", &c, &err);
    if (rc != 0) {
        FUZZ_CHECK(rc == SW_EINVAL || rc == SW_EPARSE || rc == SW_ETOOBIG || rc == SW_ERANGE);
        FUZZ_CHECK(strncmp(err.msg, "hub.yaml", 8) == 0);
        return 0;
    }
    FUZZ_CHECK(terminated(c.redis_url, sizeof(c.redis_url)) && c.redis_url[0] != '\0');
    FUZZ_CHECK(terminated(c.secret_key_file, sizeof(c.secret_key_file)) &&
               c.secret_key_file[0] != '\0');
    FUZZ_CHECK(terminated(c.redis_password_file, sizeof(c.redis_password_file)));
    FUZZ_CHECK(terminated(c.redis_password_env, sizeof(c.redis_password_env)));
    FUZZ_CHECK(terminated(c.listen, sizeof(c.listen)) && c.listen[0] != '\0');
    FUZZ_CHECK(terminated(c.hub_id, sizeof(c.hub_id)));
    FUZZ_CHECK(terminated(c.log_level, sizeof(c.log_level)));
    struct sw_policy p;
    FUZZ_CHECK(sw_policy_parse(c.policy, &p, NULL) == 0);
    FUZZ_CHECK(isfinite(c.recheck_s) && c.recheck_s >= 0.1 && c.recheck_s <= 3600);
    FUZZ_CHECK(isfinite(c.lease_ttl_s) && c.lease_ttl_s >= 1 && c.lease_ttl_s <= 3600);
    FUZZ_CHECK(isfinite(c.output_sync_s) && c.output_sync_s >= 1 && c.output_sync_s <= 86400);
    FUZZ_CHECK(c.max_attempts >= 1 && c.max_attempts <= 100);
    /* No password ever sits in the URL. */
    const char *at = strchr(c.redis_url, '@');
    if (at != NULL) {
        const char *scheme = strstr(c.redis_url, "://");
        const char *colon = scheme ? strchr(scheme + 3, ':') : NULL;
        FUZZ_CHECK(colon == NULL || colon > at);
    }
    /* Every grant names its origin; its prefixes are a bucket's whole or
     * end in '/'. */
    for (size_t i = 0; i < c.tenancy.n; i++) {
        const struct sw_grant *g = &c.tenancy.grants[i];
        FUZZ_CHECK(g->cluster[0] != '\0' && g->ns[0] != '\0');
        FUZZ_CHECK(g->nread <= SW_GRANT_MAX_PREFIXES && g->nwrite <= SW_GRANT_MAX_PREFIXES);
        for (size_t k = 0; k < g->nread; k++) {
            size_t n = strlen(g->read[k].prefix);
            FUZZ_CHECK(n == 0 || g->read[k].prefix[n - 1] == '/');
        }
        FUZZ_CHECK(sw_tenancy_find(&c.tenancy, g->cluster, g->ns) == g);
    }
    sw_hub_config_free(&c);
    return 0;
}
