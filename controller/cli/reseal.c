/*
 * reseal.c - `spillctl reseal`: every sealed credential in Redis (member
 * cluster connections, spillway:cluster:*, and object store keys,
 * sw:store:*) opened with the current key and sealed again with a new one,
 * and every signed record (stores, replication rules sw:repl:rule:*)
 * verified with the current key and signed again with the new one, for
 * rotating the sealing key (docs/dr.md). A store or rule without a MAC, or
 * whose MAC verifies with neither key, stops the command before anything is
 * written: `spillctl replicate sign` signs the former, the latter is
 * written again by hand.
 *
 * Two passes: the first opens every record, with the new key when it is
 * already sealed with it (a re-run after an interruption) or else the old
 * one; a record neither opens stops the command before anything is written.
 * The second writes each record sealed with the new key. Each record is
 * written whole by one SET, so a crash between records leaves some under
 * each key, and running the command again finishes the work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusters/registry.h"
#include "common/alloc.h"
#include "controller/cli/commands.h"
#include "replication/rule.h"
#include "store/redis.h"
#include "store/seal.h"

enum kind { CLUSTER, STORE, RULE };

struct item {
    enum kind kind;
    char *name;
    int already; /* sealed with the new key */
    /* CLUSTER */
    struct sw_cluster_record rec;
    struct sw_kube_target *target;
    /* STORE */
    struct sw_store_spec store;
    char *ak, *sk;
    /* RULE */
    struct sw_rule_spec rule;
};

static void item_clear(struct item *it)
{
    sw_free(it->name);
    sw_cluster_record_clear(&it->rec);
    sw_kube_target_free(it->target);
    if (it->ak != NULL)
        sw_seal_wipe_free(it->ak, strlen(it->ak));
    if (it->sk != NULL)
        sw_seal_wipe_free(it->sk, strlen(it->sk));
}

/* Opens a cluster record with the new key, else the old one. */
static int open_cluster(redisContext *r, const struct sw_seal_key *old_key,
                        const struct sw_seal_key *new_key, struct item *it, struct sw_error *err)
{
    redisReply *rep = NULL;
    int rc = sw_redis_sync_command(r, &rep, err, "GET %s%s", SW_REGISTRY_PREFIX, it->name);
    if (rc != 0)
        return rc;
    if (rep->type != REDIS_REPLY_STRING) {
        freeReplyObject(rep);
        return sw_error_set(err, SW_ENOENT, "cluster %s: listed in %s but has no record", it->name,
                            SW_REGISTRY_SET);
    }
    char what[128];
    snprintf(what, sizeof(what), "cluster %s", it->name);
    rc = sw_cluster_record_from_json(rep->str, rep->len, what, &it->rec, err);
    freeReplyObject(rep);
    if (rc != 0)
        return rc;
    struct sw_error ignored;
    if (sw_cluster_record_open(&it->rec, new_key, &it->target, &ignored) == 0) {
        it->already = 1;
        return 0;
    }
    if (sw_cluster_record_open(&it->rec, old_key, &it->target, err) != 0)
        return sw_error_wrap(err, "cluster %s: opens with neither key", it->name);
    return 0;
}

static int open_store(redisContext *r, const struct sw_seal_key *old_key,
                      const struct sw_seal_key *new_key, struct item *it, struct sw_error *err)
{
    struct sw_error ignored;
    if (sw_store_load(r, new_key, it->name, &it->store, &it->ak, &it->sk, &ignored) == 0) {
        it->already = 1;
        return 0;
    }
    if (sw_store_load(r, old_key, it->name, &it->store, &it->ak, &it->sk, err) != 0)
        return sw_error_wrap(err, "opens with neither key");
    return 0;
}

/* Verifies a rule with the new key, else the old one. */
static int open_rule(redisContext *r, const struct sw_seal_key *old_key,
                     const struct sw_seal_key *new_key, struct item *it, struct sw_error *err)
{
    struct sw_error ignored;
    if (sw_rule_load(r, new_key, it->name, &it->rule, &ignored) == 0) {
        it->already = 1;
        return 0;
    }
    if (sw_rule_load(r, old_key, it->name, &it->rule, err) != 0)
        return sw_error_wrap(err, "verifies with neither key");
    return 0;
}

static int write_item(redisContext *r, const struct sw_seal_key *new_key, struct item *it,
                      struct sw_error *err)
{
    if (it->kind == STORE)
        return sw_store_save(r, new_key, &it->store, it->ak, it->sk, err);
    if (it->kind == RULE)
        return sw_rule_save(r, new_key, &it->rule, err);
    int rc = sw_cluster_record_seal(&it->rec, it->target, new_key, err);
    if (rc != 0)
        return rc;
    char *json = NULL;
    if (sw_cluster_record_to_json(&it->rec, &json) != 0)
        return sw_error_set(err, SW_ENOMEM, "cluster %s: out of memory", it->name);
    char key[SW_CLUSTER_NAME_MAX + 32];
    snprintf(key, sizeof(key), "%s%s", SW_REGISTRY_PREFIX, it->name);
    const char *argv[] = {"SET", key, json};
    redisReply *rep = NULL;
    rc = sw_redis_sync_command_argv(r, &rep, err, 3, argv, NULL);
    if (rep != NULL)
        freeReplyObject(rep);
    sw_free(json);
    return rc;
}

static int run(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    const char *new_file = sw_cli_arg(a, 'n');
    int dry = sw_cli_arg(a, 'd') != NULL;
    if (new_file == NULL) {
        fprintf(stderr, "spillctl reseal: --new-secret-key-file FILE is required\n");
        return SW_EXIT_USAGE;
    }
    struct sw_error err;
    struct sw_seal_key *old_key = NULL, *new_key = NULL;
    if (sw_cli_secret_key(g, &old_key, &err) != 0 ||
        sw_seal_key_from_file(new_file, &new_key, &err) != 0) {
        fprintf(stderr, "spillctl reseal: %s\n", err.msg);
        sw_seal_key_free(old_key);
        return SW_EXIT_FAIL;
    }
    int exit_code = SW_EXIT_FAIL;
    redisContext *r = NULL;
    char **cnames = NULL, **snames = NULL, **rnames = NULL;
    size_t nc = 0, ns = 0, nr = 0, n = 0;
    struct item *items = NULL;
    if (sw_seal_key_id(old_key) == sw_seal_key_id(new_key)) {
        fprintf(stderr, "spillctl reseal: the new key is the current key (id %08x)\n",
                (unsigned)sw_seal_key_id(old_key));
        goto out;
    }
    char url[SW_CLI_REDIS_URL_MAX];
    int rc = sw_cli_redis_url(g, url, sizeof(url), &err);
    if (rc == 0)
        rc = sw_redis_sync_connect(url, 5000, &r, &err);
    memset(url, 0, sizeof(url)); /* it may hold the password */
    if (rc != 0 || sw_names_list(r, SW_REGISTRY_SET, &cnames, &nc, &err) != 0 ||
        sw_names_list(r, "sw:stores", &snames, &ns, &err) != 0 ||
        sw_names_list(r, "sw:repl:rules", &rnames, &nr, &err) != 0) {
        fprintf(stderr, "spillctl reseal: %s\n", err.msg);
        goto out;
    }
    items = sw_calloc(nc + ns + nr + 1, sizeof(*items));
    if (items == NULL) {
        fprintf(stderr, "spillctl reseal: out of memory\n");
        goto out;
    }
    /* Pass 1: open everything; stop before writing if anything does not. */
    int bad = 0;
    for (size_t i = 0; i < nc + ns + nr; i++, n++) {
        struct item *it = &items[i];
        it->kind = i < nc ? CLUSTER : i < nc + ns ? STORE : RULE;
        it->name = sw_strdup(i < nc        ? cnames[i]
                             : i < nc + ns ? snames[i - nc]
                                           : rnames[i - nc - ns]);
        if (it->name == NULL) {
            fprintf(stderr, "spillctl reseal: out of memory\n");
            goto out;
        }
        rc = it->kind == CLUSTER ? open_cluster(r, old_key, new_key, it, &err)
             : it->kind == STORE ? open_store(r, old_key, new_key, it, &err)
                                 : open_rule(r, old_key, new_key, it, &err);
        if (rc != 0) {
            fprintf(stderr, "spillctl reseal: %s\n", err.msg);
            bad++;
        }
    }
    if (bad > 0) {
        fprintf(stderr,
                "spillctl reseal: %d record%s cannot be opened or verified with the current "
                "key (%08x) or the new one (%08x); nothing was written (a store or rule "
                "without a MAC: `spillctl replicate sign` with the current key first)\n",
                bad, bad == 1 ? "" : "s", (unsigned)sw_seal_key_id(old_key),
                (unsigned)sw_seal_key_id(new_key));
        goto out;
    }
    /* Pass 2: write. */
    size_t done = 0, already = 0;
    for (size_t i = 0; i < n; i++) {
        struct item *it = &items[i];
        const char *kind = it->kind == CLUSTER ? "cluster" : it->kind == STORE ? "store" : "rule";
        if (it->already) {
            printf("%s %s: already %s with key %08x\n", kind, it->name,
                   it->kind == RULE ? "signed" : "sealed", (unsigned)sw_seal_key_id(new_key));
            already++;
            continue;
        }
        if (!dry && write_item(r, new_key, it, &err) != 0) {
            fprintf(stderr,
                    "spillctl reseal: %s %s: %s (records before it are re-sealed; run the "
                    "command again to finish)\n",
                    kind, it->name, err.msg);
            goto out;
        }
        printf("%s %s: %s from key %08x to key %08x\n", kind, it->name,
               it->kind == RULE ? (dry ? "would be re-signed" : "re-signed")
                                : (dry ? "would be re-sealed" : "re-sealed"),
               (unsigned)sw_seal_key_id(old_key), (unsigned)sw_seal_key_id(new_key));
        done++;
    }
    printf("%zu cluster%s, %zu store%s and %zu rule%s: %zu %s, %zu already under the new key\n", nc,
           nc == 1 ? "" : "s", ns, ns == 1 ? "" : "s", nr, nr == 1 ? "" : "s", done,
           dry ? "would be re-sealed (dry run)" : "re-sealed", already);
    exit_code = SW_EXIT_OK;
out:
    for (size_t i = 0; i < n; i++)
        item_clear(&items[i]);
    sw_free(items);
    sw_names_free(cnames, nc);
    sw_names_free(snames, ns);
    sw_names_free(rnames, nr);
    if (r != NULL)
        redisFree(r);
    sw_seal_key_free(old_key);
    sw_seal_key_free(new_key);
    return exit_code;
}

static const struct sw_cli_opt opts[] = {
    {"new-secret-key-file", 0, SW_CLI_VALUE, 'n', "FILE"},
    {"dry-run", 0, SW_CLI_FLAG, 'd', NULL},
};

const struct sw_cli_spec sw_cli_reseal_specs[] = {
    {.path = "reseal",
     .summary = "seal every registered credential again with a new key",
     .help = "Usage: spillctl reseal --new-secret-key-file FILE [--dry-run]\n"
             "\n"
             "Seal every registered credential (member clusters' connections, object\n"
             "stores' keys) again with a new key, and sign every store and replication\n"
             "rule record again with it: each is opened and verified with the current key\n"
             "(--secret-key-file, $SPILLWAY_SECRET_KEY_FILE or $SPILLWAY_SECRET_KEY)\n"
             "or, when already re-sealed, with the new one. Nothing is written unless\n"
             "every record opens and verifies (a store or rule without a MAC, from before\n"
             "spillway signed records: `spillctl replicate sign` first). Hubs still\n"
             "holding the old key cannot open the records afterwards: give them the new\n"
             "key and restart them.\n"
             "\n"
             "Options:\n"
             "  --new-secret-key-file FILE  the new key (mode 0600 or 0400)\n"
             "  --dry-run                   open everything, write nothing\n",
     .examples =
         "  spillctl reseal --secret-key-file old.key --new-secret-key-file new.key --dry-run\n"
         "  spillctl reseal --secret-key-file old.key --new-secret-key-file new.key\n",
     .opts = opts,
     .nopts = sizeof(opts) / sizeof(opts[0]),
     .run = run},
};
const size_t sw_cli_reseal_nspecs = 1;
