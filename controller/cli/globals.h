/*
 * globals.h - the options every spillctl command shares: where Redis is
 * and its password, the sealing key, the output format and the log level.
 *
 * spillctl.c takes them out of argv wherever they appear, before or after
 * the command's name, so that `spillctl --redis URL cluster list` and
 * `spillctl cluster list --redis URL` mean the same, and hands the result
 * to the command. A flag wins over its environment variable. Secrets are
 * never taken from argv when it can be helped: the Redis password comes
 * from a file or the environment, and a password written into a --redis
 * URL on the command line still works but draws a warning.
 */
#ifndef SW_CONTROLLER_CLI_GLOBALS_H
#define SW_CONTROLLER_CLI_GLOBALS_H

#include <stddef.h>
#include <stdio.h>

#include "common/error.h"
#include "common/log.h"
#include "controller/cli/output.h"
#include "store/redis.h"
#include "store/seal.h"

#define SW_CLI_REDIS_URL_ENV              "SPILLWAY_REDIS_URL"
#define SW_CLI_REDIS_PASSWORD_FILE_ENV    "SPILLWAY_REDIS_PASSWORD_FILE"
#define SW_CLI_REDIS_PASSWORD_ENV         "SPILLWAY_REDIS_PASSWORD"
#define SW_CLI_SENTINEL_PASSWORD_FILE_ENV "SPILLWAY_SENTINEL_PASSWORD_FILE"
#define SW_CLI_SENTINEL_PASSWORD_ENV      "SPILLWAY_SENTINEL_PASSWORD"
#define SW_CLI_SECRET_KEY_FILE_ENV        "SPILLWAY_SECRET_KEY_FILE"
#define SW_CLI_LOG_ENV                    "SPILLWAY_LOG"
/** The longest Redis URL, password included, sw_cli_redis_url writes. */
#define SW_CLI_REDIS_URL_MAX 2048

/** The global options, as given. The strings are borrowed from argv or the environment. */
struct sw_cli_globals {
    const char *redis_url;           /* --redis or $SPILLWAY_REDIS_URL, or NULL */
    int redis_url_given;             /* whether it came from --redis */
    const char *redis_password_file; /* --redis-password-file or $SPILLWAY_REDIS_PASSWORD_FILE */
    /* --sentinel-password-file or $SPILLWAY_SENTINEL_PASSWORD_FILE (Sentinel URLs only) */
    const char *sentinel_password_file;
    const char *secret_key_file; /* --secret-key-file or $SPILLWAY_SECRET_KEY_FILE */
    enum sw_cli_format output;   /* -o/--output; SW_CLI_TABLE by default */
    int output_given;            /* whether -o was on the command line */
    const char *jsonpath;        /* -o jsonpath=TEMPLATE: the template, else NULL */
    int no_headers;              /* --no-headers */
    enum sw_log_level log_level; /* --log-level or $SPILLWAY_LOG; SW_LOG_WARN by default */
};

/**
 * Fills *g from the environment, then takes the global options out of
 * argv[1..*argc-1] wherever they are ("--opt VALUE", "--opt=VALUE",
 * "-o VALUE", "-oVALUE", the flag "--no-headers"), shifting the rest down and lowering *argc;
 * argv[0] and everything after a "--" are left alone. argv's strings are
 * borrowed by *g and must outlive it. Warnings (a password inside a --redis
 * URL on the command line; the deprecated --key-file) go to `warn` (may be
 * NULL), one line each. Returns 0, or SW_EINVAL for a missing or bad value
 * (bad -o or log level, unparsable --redis URL), with a message naming the
 * option or variable and what was expected.
 */
int sw_cli_globals_parse(int *argc, char **argv, struct sw_cli_globals *g, FILE *warn,
                         struct sw_error *err);

/**
 * Writes into out (outlen bytes) the Redis URL a command connects to: the
 * given URL with the password from --redis-password-file, else
 * $SPILLWAY_REDIS_PASSWORD_FILE, else $SPILLWAY_REDIS_PASSWORD inserted;
 * for a Sentinel URL (redis+sentinel://) also the Sentinels' own password
 * from --sentinel-password-file, else $SPILLWAY_SENTINEL_PASSWORD_FILE,
 * else $SPILLWAY_SENTINEL_PASSWORD. A Sentinel password file given with a
 * URL that is not a Sentinel one is SW_EINVAL.
 * Returns 0; SW_ENOENT when no URL was given (the message says how to give
 * one); SW_EIO / SW_ENOENT when the password file cannot be read, naming
 * it; SW_EINVAL when the URL already holds a password and another source
 * gives one too. The caller should wipe out after use; no message ever
 * holds the password.
 */
int sw_cli_redis_url(const struct sw_cli_globals *g, char *out, size_t outlen,
                     struct sw_error *err);

/**
 * Connects to the Redis the global options name (5 s timeout). On failure
 * prints "spillctl CMD: reason" and returns SW_EXIT_USAGE (no URL given)
 * or SW_EXIT_FAIL; 0 with *c set (the caller frees it with redisFree).
 */
int sw_cli_redis_open(const struct sw_cli_globals *g, const char *cmd, redisContext **c);

/**
 * Loads the sealing key: from the --secret-key-file / $SPILLWAY_SECRET_KEY_FILE
 * file, else from $SPILLWAY_SECRET_KEY (see sw_seal_key_load). Returns 0
 * and *out (owned by the caller; sw_seal_key_free), or an error whose
 * message names the file or says how to give a key.
 */
int sw_cli_secret_key(const struct sw_cli_globals *g, struct sw_seal_key **out,
                      struct sw_error *err);

/**
 * For commands that print no list: returns 0 when -o was not given or is
 * "table", else SW_EINVAL with a message saying that `what` (say
 * "cluster add") has no -o.
 */
int sw_cli_no_output_format(const struct sw_cli_globals *g, const char *what, struct sw_error *err);

/**
 * The i-th global option's name ("--redis", "-o", "--no-headers", ...),
 * or NULL past the last; *takes_value (may be NULL) says whether a value
 * follows it. For shell completion and the docs check, from the same
 * table the parser reads.
 */
const char *sw_cli_global_option(size_t i, int *takes_value);

/** Prints the global options and environment variables (for spillctl --help). */
void sw_cli_globals_usage(FILE *out);

#endif
