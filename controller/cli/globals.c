/*
 * globals.c - spillctl's global options: parsing, the Redis URL with its
 * password, the sealing key, and their help text.
 */
#include "controller/cli/globals.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/redis.h"

#define PASSWORD_FILE_MAX 4096

enum opt_id {
    OPT_REDIS,
    OPT_REDIS_PW_FILE,
    OPT_SENTINEL_PW_FILE,
    OPT_KEY_FILE,
    OPT_OLD_KEY_FILE,
    OPT_OUTPUT,
    OPT_LOG
};

static const struct {
    const char *name;
    enum opt_id id;
} long_opts[] = {
    {"--redis", OPT_REDIS},
    {"--redis-password-file", OPT_REDIS_PW_FILE},
    {"--sentinel-password-file", OPT_SENTINEL_PW_FILE},
    {"--secret-key-file", OPT_KEY_FILE},
    {"--key-file", OPT_OLD_KEY_FILE},
    {"--output", OPT_OUTPUT},
    {"--log-level", OPT_LOG},
};
#define NLONG (sizeof(long_opts) / sizeof(long_opts[0]))

static const char *nonempty(const char *s)
{
    return s != NULL && s[0] != '\0' ? s : NULL;
}

static int parse_level(const char *s, const char *what, enum sw_log_level *out,
                       struct sw_error *err)
{
    int l = sw_log_level_parse(s);
    if (l < 0)
        return sw_error_set(err, SW_EINVAL,
                            "%s: expected debug, info, warn, error or off, got \"%s\"", what, s);
    *out = (enum sw_log_level)l;
    return 0;
}

static int apply(struct sw_cli_globals *g, enum opt_id id, const char *name, const char *v,
                 FILE *warn, struct sw_error *err)
{
    if (v[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "%s: expected a value, got an empty string", name);
    switch (id) {
    case OPT_REDIS: {
        struct sw_redis_url u;
        if (sw_redis_url_parse(v, &u, err) != 0) {
            sw_error_wrap(err, "--redis");
            if (err != NULL)
                err->code = SW_EINVAL;
            return SW_EINVAL;
        }
        int has_password = u.password != NULL && u.password[0] != '\0';
        int has_sentinel_password = u.sentinel_password != NULL;
        sw_redis_url_free(&u);
        if (has_password && warn != NULL)
            fprintf(warn, "spillctl: warning: the Redis password is on the command line, where ps "
                          "shows it; use --redis-password-file or " SW_CLI_REDIS_PASSWORD_ENV "\n");
        if (has_sentinel_password && warn != NULL)
            fprintf(warn,
                    "spillctl: warning: the Sentinel password is on the command line, where ps "
                    "shows it; use --sentinel-password-file or " SW_CLI_SENTINEL_PASSWORD_ENV "\n");
        g->redis_url = v;
        g->redis_url_given = 1;
        return 0;
    }
    case OPT_REDIS_PW_FILE:
        g->redis_password_file = v;
        return 0;
    case OPT_SENTINEL_PW_FILE:
        g->sentinel_password_file = v;
        return 0;
    case OPT_OLD_KEY_FILE:
        if (warn != NULL)
            fprintf(warn, "spillctl: warning: --key-file is deprecated; use --secret-key-file FILE "
                          "or " SW_CLI_SECRET_KEY_FILE_ENV "\n");
        g->secret_key_file = v;
        return 0;
    case OPT_KEY_FILE:
        g->secret_key_file = v;
        return 0;
    case OPT_OUTPUT:
        g->output_given = 1;
        return sw_cli_format_parse2(v, &g->output, &g->jsonpath, err);
    case OPT_LOG:
        return parse_level(v, name, &g->log_level, err);
    }
    return SW_EINVAL;
}

int sw_cli_globals_parse(int *argc, char **argv, struct sw_cli_globals *g, FILE *warn,
                         struct sw_error *err)
{
    memset(g, 0, sizeof(*g));
    g->output = SW_CLI_TABLE;
    g->log_level = SW_LOG_WARN;
    g->redis_url = nonempty(getenv(SW_CLI_REDIS_URL_ENV));
    g->redis_password_file = nonempty(getenv(SW_CLI_REDIS_PASSWORD_FILE_ENV));
    g->sentinel_password_file = nonempty(getenv(SW_CLI_SENTINEL_PASSWORD_FILE_ENV));
    g->secret_key_file = nonempty(getenv(SW_CLI_SECRET_KEY_FILE_ENV));
    const char *lvl = nonempty(getenv(SW_CLI_LOG_ENV));
    if (lvl != NULL && parse_level(lvl, SW_CLI_LOG_ENV, &g->log_level, err) != 0)
        return SW_EINVAL;

    int out = 1, i = 1, n = *argc;
    for (; i < n; i++) {
        char *a = argv[i];
        if (strcmp(a, "--") == 0)
            break;
        if (strcmp(a, "--no-headers") == 0) {
            g->no_headers = 1;
            continue;
        }
        const char *name = NULL, *value = NULL;
        enum opt_id id = OPT_REDIS;
        int takes_next = 0;
        if (strcmp(a, "-o") == 0) {
            name = "-o", id = OPT_OUTPUT, takes_next = 1;
        } else if (strncmp(a, "-o", 2) == 0 && a[1] == 'o') {
            name = "-o", id = OPT_OUTPUT, value = a[2] == '=' ? a + 3 : a + 2;
        } else {
            for (size_t k = 0; k < NLONG; k++) {
                size_t len = strlen(long_opts[k].name);
                if (strncmp(a, long_opts[k].name, len) != 0)
                    continue;
                if (a[len] == '\0')
                    takes_next = 1;
                else if (a[len] == '=')
                    value = a + len + 1;
                else
                    continue;
                name = long_opts[k].name;
                id = long_opts[k].id;
                break;
            }
        }
        if (name == NULL) {
            argv[out++] = a;
            continue;
        }
        if (takes_next) {
            if (i + 1 >= n)
                return sw_error_set(err, SW_EINVAL, "%s: expected a value after it", name);
            value = argv[++i];
        }
        int rc = apply(g, id, name, value, warn, err);
        if (rc != 0)
            return rc;
    }
    for (; i < n; i++)
        argv[out++] = argv[i];
    if (out < n)
        argv[out] = NULL;
    *argc = out;
    return 0;
}

const char *sw_cli_global_option(size_t i, int *takes_value)
{
    int dummy;
    if (takes_value == NULL)
        takes_value = &dummy;
    *takes_value = 1;
    if (i < NLONG)
        return long_opts[i].name;
    if (i == NLONG)
        return "-o";
    *takes_value = 0;
    return i == NLONG + 1 ? "--no-headers" : NULL;
}

/* Reads the password: the file's first line, without its line ending. */
static int read_password_file_of(const char *what, const char *path, char *out, size_t outlen,
                                 struct sw_error *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return sw_error_set(err, errno == ENOENT ? SW_ENOENT : SW_EIO,
                            "%s password file \"%s\": cannot open: %s", what, path,
                            strerror(errno));
    size_t n = fread(out, 1, outlen - 1, f);
    int bad = ferror(f), more = fgetc(f) != EOF;
    fclose(f);
    out[n] = '\0';
    if (bad)
        return sw_error_set(err, SW_EIO, "%s password file \"%s\": cannot read it", what, path);
    if (more)
        return sw_error_set(err, SW_ETOOBIG, "%s password file \"%s\": expected at most %zu bytes",
                            what, path, outlen - 1);
    size_t len = strcspn(out, "\r\n");
    if (out[len] != '\0' && out[len + strspn(out + len, "\r\n")] != '\0')
        return sw_error_set(err, SW_EINVAL,
                            "%s password file \"%s\": expected the password on one line", what,
                            path);
    out[len] = '\0';
    if (len == 0 || memchr(out, '\0', n) != out + len)
        return sw_error_set(err, SW_EINVAL,
                            "%s password file \"%s\": expected a password, found %s", what, path,
                            len == 0 ? "none" : "a NUL byte");
    return 0;
}

static int read_password_file(const char *path, char *out, size_t outlen, struct sw_error *err)
{
    return read_password_file_of("Redis", path, out, outlen, err);
}

int sw_cli_redis_url(const struct sw_cli_globals *g, char *out, size_t outlen, struct sw_error *err)
{
    if (g->redis_url == NULL)
        return sw_error_set(err, SW_ENOENT,
                            "no Redis: give --redis URL or set " SW_CLI_REDIS_URL_ENV
                            " (the password in --redis-password-file or " SW_CLI_REDIS_PASSWORD_ENV
                            ")");
    const char *source = g->redis_url_given ? "--redis" : SW_CLI_REDIS_URL_ENV;
    char pw[PASSWORD_FILE_MAX + 1];
    const char *password = NULL;
    if (g->redis_password_file != NULL) {
        int rc = read_password_file(g->redis_password_file, pw, sizeof(pw), err);
        if (rc != 0) {
            memset(pw, 0, sizeof(pw));
            return rc;
        }
        password = pw;
    } else {
        password = nonempty(getenv(SW_CLI_REDIS_PASSWORD_ENV));
    }
    char with_data[SW_CLI_REDIS_URL_MAX];
    int rc = sw_redis_url_with_password(g->redis_url, password, with_data, sizeof(with_data), err);
    memset(pw, 0, sizeof(pw));
    if (rc != 0) {
        sw_error_wrap(err, "%s", source);
        return rc;
    }
    /* The Sentinels' own password, for a Sentinel URL. */
    struct sw_redis_url u;
    int sentinel = 0;
    if (sw_redis_url_parse(with_data, &u, NULL) == 0) {
        sentinel = u.sentinel;
        sw_redis_url_free(&u);
    }
    password = NULL;
    if (g->sentinel_password_file != NULL) {
        if (!sentinel) {
            explicit_bzero(with_data, sizeof(with_data));
            return sw_error_set(err, SW_EINVAL,
                                "--sentinel-password-file (or " SW_CLI_SENTINEL_PASSWORD_FILE_ENV
                                "): given, but %s is not a Sentinel URL "
                                "(" SW_REDIS_SENTINEL_SCHEME "HOST:PORT,.../MASTER)",
                                source);
        }
        rc = read_password_file_of("Sentinel", g->sentinel_password_file, pw, sizeof(pw), err);
        if (rc != 0) {
            memset(pw, 0, sizeof(pw));
            explicit_bzero(with_data, sizeof(with_data));
            return rc;
        }
        password = pw;
    } else if (sentinel) {
        password = nonempty(getenv(SW_CLI_SENTINEL_PASSWORD_ENV));
    }
    rc = sw_redis_url_with_sentinel_password(with_data, password, out, outlen, err);
    memset(pw, 0, sizeof(pw));
    explicit_bzero(with_data, sizeof(with_data));
    if (rc != 0)
        sw_error_wrap(err, "%s", source);
    return rc;
}

int sw_cli_secret_key(const struct sw_cli_globals *g, struct sw_seal_key **out,
                      struct sw_error *err)
{
    *out = NULL;
    if (g->secret_key_file == NULL && nonempty(getenv(SW_SEAL_KEY_ENV)) == NULL)
        return sw_error_set(err, SW_ENOENT,
                            "no secret key: give --secret-key-file FILE (mode 0600) or "
                            "set " SW_CLI_SECRET_KEY_FILE_ENV ", or set " SW_SEAL_KEY_ENV
                            " to the key (64 hex digits or base64 of 32 bytes)");
    return sw_seal_key_load(g->secret_key_file, out, err);
}

int sw_cli_no_output_format(const struct sw_cli_globals *g, const char *what, struct sw_error *err)
{
    if (!g->output_given || g->output == SW_CLI_TABLE)
        return 0;
    return sw_error_set(err, SW_EINVAL,
                        "%s: -o %s: this command prints no list; -o applies to listing commands "
                        "(see spillctl --help)",
                        what, sw_cli_format_name(g->output));
}

void sw_cli_globals_usage(FILE *out)
{
    fprintf(out,
            "Global options (before or after the command; a flag wins over its variable):\n"
            "  --redis URL                 Redis holding spillway's state:\n"
            "                              redis://[user:@]host[:port][/db], unix:///path[?db=N],\n"
            "                              redis+sentinel://h1:p1,h2:p2,.../MASTER[/db], or\n"
            "                              over TLS rediss://... and rediss+sentinel://... with\n"
            "                              ?tls_ca_file=/ca.pem[&tls_cert_file=F&tls_key_file=F]\n"
            "                              (env " SW_CLI_REDIS_URL_ENV ")\n"
            "  --redis-password-file FILE  the Redis password, on the first line of FILE\n"
            "                              (env " SW_CLI_REDIS_PASSWORD_FILE_ENV
            ", or the password\n"
            "                              itself in " SW_CLI_REDIS_PASSWORD_ENV ")\n"
            "  --sentinel-password-file FILE  with a Sentinel URL, the Sentinels' own\n"
            "                              password (env " SW_CLI_SENTINEL_PASSWORD_FILE_ENV
            ", or the\n"
            "                              password itself in " SW_CLI_SENTINEL_PASSWORD_ENV ")\n"
            "  --secret-key-file FILE      the 32-byte key sealing credentials, mode 0600\n"
            "                              (env " SW_CLI_SECRET_KEY_FILE_ENV ", or the key itself\n"
            "                              in " SW_SEAL_KEY_ENV ")\n"
            "  -o, --output FORMAT         listing commands: table (default), wide, json, yaml,\n"
            "                              csv, name (the first column) or jsonpath=TEMPLATE\n"
            "                              (kubectl's {.a.b}, {.items[*].x}, {range}...{end});\n"
            "                              each command's help names those it prints, and any\n"
            "                              other is refused\n"
            "  --no-headers                tables and csv without the header line\n"
            "  --log-level LEVEL           debug, info, warn (default), error or off\n"
            "                              (env " SW_CLI_LOG_ENV ")\n"
            "  -h, --help                  help; 'spillctl COMMAND --help' for a command\n");
}

int sw_cli_redis_open(const struct sw_cli_globals *g, const char *cmd, redisContext **c)
{
    char url[SW_CLI_REDIS_URL_MAX];
    struct sw_error err = {0};
    if (sw_cli_redis_url(g, url, sizeof(url), &err) != 0) {
        fprintf(stderr, "spillctl %s: %s\n", cmd, err.msg);
        return 2; /* SW_EXIT_USAGE */
    }
    int rc = sw_redis_sync_connect(url, 5000, c, &err);
    memset(url, 0, sizeof(url));
    if (rc != 0) {
        fprintf(stderr, "spillctl %s: %s\n", cmd, err.msg);
        return 1; /* SW_EXIT_FAIL */
    }
    return 0;
}
