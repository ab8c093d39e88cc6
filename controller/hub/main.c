/*
 * main.c - spillwayd, the hub: reads its config, connects to Redis, and
 * runs the loop (hub.c). Start-up is recovery: whatever the last process
 * left half done, the records and the clusters say, and the reconcilers
 * finish it.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/failpoint.h"
#include "common/json.h"
#include "common/log.h"
#include "controller/hub/hub.h"
#include "controller/version.h"

int sw_hub_run(struct sw_hub *h);

static void usage(FILE *out)
{
    fprintf(out, "usage: spillwayd --config FILE [--validate]\n\n"
                 "spillwayd is spillway's hub: it watches the member clusters registered with\n"
                 "'spillctl cluster add', decides where burstable Jobs run, copies their data,\n"
                 "creates their mirrors exactly once and follows them to completion. Run two or\n"
                 "more; one holds the lease in Redis and acts, the others stand by.\n\n"
                 "Options:\n"
                 "  -c, --config FILE   the hub's configuration (YAML; docs/hub.md)\n"
                 "      --validate      read the configuration as at start-up (every field,\n"
                 "                      its range, the policy), say whether it is valid, and\n"
                 "                      exit; the files it names are not read, Redis not met\n"
                 "  -h, --help          this help\n"
                 "      --version       print the version\n\n"
                 "Environment:\n"
                 "  SPILLWAY_REDIS_PASSWORD   Redis password (or the variable the config's\n"
                 "                            redis.passwordEnv names, or redis.passwordFile)\n"
                 "  SPILLWAY_SENTINEL_PASSWORD  with a redis+sentinel:// URL, the Sentinels' own\n"
                 "                            password (or redis.sentinelPasswordEnv/File)\n"
                 "  SPILLWAY_LOG              log level, overriding the config's logLevel\n\n"
                 "Redis over TLS: redis.url rediss://HOST[:PORT][/db] or rediss+sentinel://...,\n"
                 "with ?tls_ca_file=/ca.pem[&tls_cert_file=/c.pem&tls_key_file=/k.pem]; an ACL\n"
                 "user as rediss://USER:@HOST (password apart, as above). docs/hub.md.\n\n"
                 "Exit status: 0 stopped, 1 failed at start-up, 2 bad usage or configuration,\n"
                 "3 leadership lost (restart it: it comes back as a standby).\n");
}

int main(int argc, char **argv)
{
    const char *config = NULL;
    int validate = 0;
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {"validate", no_argument, NULL, 'v'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("spillwayd %s\n", SW_VERSION);
            return 0;
        case 'v':
            validate = 1;
            break;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "spillwayd: unexpected argument \"%s\"\n\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (config == NULL) {
        fprintf(stderr, "spillwayd: --config FILE is required\n\n");
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    sw_json_init_hooks();
    struct sw_hub *h = sw_calloc(1, sizeof(*h));
    if (h == NULL)
        return 1;
    struct sw_error err = {0};
    if (sw_hub_config_load(config, &h->cfg, &err) != 0) {
        fprintf(stderr, "spillwayd: %s\n", err.msg);
        return 2;
    }
    const char *lvl = getenv("SPILLWAY_LOG") ? getenv("SPILLWAY_LOG") : h->cfg.log_level;
    if (lvl && sw_log_level_parse(lvl) >= 0)
        sw_log_set_level((enum sw_log_level)sw_log_level_parse(lvl));
    /* A test build's failpoints, armed from the environment; nothing in a
     * release build (common/failpoint.h). */
    SW_FAILPOINT_INIT();
    if (sw_policy_parse(h->cfg.policy, &h->policy, &err) != 0) {
        fprintf(stderr, "spillwayd: %s: field \"placement.policy\": %s\n", config, err.msg);
        return 2;
    }
    if (validate) {
        printf("spillwayd: %s: valid\n", config);
        sw_hub_config_free(&h->cfg);
        sw_free(h);
        return 0;
    }
    h->policy.no_deadline_guard = !h->cfg.deadline_guard;
    char password[512];
    if (sw_hub_config_redis_password(&h->cfg, password, sizeof(password), &err) != 0) {
        fprintf(stderr, "spillwayd: %s\n", err.msg);
        return 2;
    }
    char with_data[sizeof(h->redis_url)];
    if (sw_redis_url_with_password(h->cfg.redis_url, password[0] ? password : NULL, with_data,
                                   sizeof(with_data), &err) != 0) {
        fprintf(stderr, "spillwayd: %s: field \"redis.url\": %s\n", config, err.msg);
        return 2;
    }
    /* A Sentinel URL: the Sentinels' own password goes with it (store/redis.h). */
    if (sw_hub_config_sentinel_password(&h->cfg, password, sizeof(password), &err) != 0) {
        fprintf(stderr, "spillwayd: %s\n", err.msg);
        return 2;
    }
    if (sw_redis_url_with_sentinel_password(with_data, password[0] ? password : NULL, h->redis_url,
                                            sizeof(h->redis_url), &err) != 0) {
        fprintf(stderr, "spillwayd: %s: field \"redis.url\": %s\n", config, err.msg);
        return 2;
    }
    explicit_bzero(with_data, sizeof(with_data));
    memset(password, 0, sizeof(password));
    if (sw_seal_key_load(h->cfg.secret_key_file, &h->key, &err) != 0) {
        fprintf(stderr, "spillwayd: %s\n", err.msg);
        return 2;
    }
    if (sw_seal_key_derive(h->key, SW_MIRROR_PROOF_LABEL, h->proof_key) != 0) {
        fprintf(stderr, "spillwayd: cannot derive the mirrors' proof key from the sealing key\n");
        return 1;
    }
    char host[64] = "hub";
    gethostname(host, sizeof(host) - 1);
    unsigned rnd = 0;
    FILE *ur = fopen("/dev/urandom", "rb");
    if (ur) {
        if (fread(&rnd, sizeof(rnd), 1, ur) != 1)
            rnd = (unsigned)getpid();
        fclose(ur);
    }
    /* Unique per process: a restarted hub never inherits its old lease. */
    snprintf(h->id, sizeof(h->id), "%s/%d-%08x", h->cfg.hub_id[0] ? h->cfg.hub_id : host,
             (int)getpid(), rnd);
    h->loop = uv_default_loop();
    if (sw_http_new(h->loop, &h->http) != 0 || sw_engine_new(&h->engine) != 0) {
        fprintf(stderr, "spillwayd: out of memory at start-up\n");
        return 1;
    }
    if (sw_redis_connect(h->loop, h->redis_url, sw_leader_redis_state, h, &h->redis, &err) != 0) {
        fprintf(stderr, "spillwayd: redis: %s\n", err.msg);
        return 1;
    }
    SW_LOG(SW_LOG_INFO, "spillwayd starting", "hub=%s version=%s config=%s listen=%s policy=%s",
           sw_log_q(h->id), sw_log_q(SW_VERSION), sw_log_q(config), sw_log_q(h->cfg.listen),
           sw_log_q(h->cfg.policy));
    return sw_hub_run(h) == 0 ? 0 : 1;
}
