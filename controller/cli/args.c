/*
 * args.c - the one option parser of spillctl (see args.h): every command's
 * options are read here, from the command's table, with the same grammar
 * and the same messages.
 */
#include "controller/cli/args.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cli/commands.h"
#include "controller/hub/annotations.h"

int sw_cli_duration_parse(const char *s, double *seconds)
{
    if (s == NULL || *s == '\0')
        return SW_EINVAL;
    /* A plain number of seconds, as the flags that took seconds did. */
    size_t i = 0;
    while (isdigit((unsigned char)s[i]))
        i++;
    if (i > 0 && s[i] == '\0' && i <= 12) {
        double v = strtod(s, NULL);
        if (v <= 0)
            return SW_EINVAL; /* as "0s": a zero duration means nothing */
        *seconds = v;
        return 0;
    }
    double v;
    if (sw_duration_parse(s, &v) != 0 || !isfinite(v) || v < 0)
        return SW_EINVAL;
    *seconds = v;
    return 0;
}

size_t sw_cli_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return (size_t)-1;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static const struct sw_cli_opt *find_long(const struct sw_cli_spec *spec, const char *name,
                                          size_t len)
{
    for (size_t i = 0; i < spec->nopts; i++)
        if (strlen(spec->opts[i].name) == len && strncmp(spec->opts[i].name, name, len) == 0)
            return &spec->opts[i];
    return NULL;
}

static const struct sw_cli_opt *find_short(const struct sw_cli_spec *spec, char c)
{
    for (size_t i = 0; i < spec->nopts; i++)
        if (spec->opts[i].shorthand == c)
            return &spec->opts[i];
    return NULL;
}

/* The message for an option `spec` lacks: where it belongs, or the nearest one. */
static int unknown_option(const struct sw_cli_spec *spec, const struct sw_cli_spec *const *all,
                          size_t nall, const char *word, const char *name, size_t len, int is_short,
                          struct sw_error *err)
{
    char owners[256] = "";
    size_t used = 0;
    for (size_t k = 0; k < nall; k++) {
        if (all[k] == spec)
            continue;
        const struct sw_cli_opt *o =
            is_short ? find_short(all[k], name[0]) : find_long(all[k], name, len);
        if (o == NULL)
            continue;
        int w = snprintf(owners + used, sizeof(owners) - used, "%s\"spillctl %s\"",
                         used ? ", " : "", all[k]->path);
        if (w < 0 || (size_t)w >= sizeof(owners) - used)
            break;
        used += (size_t)w;
    }
    if (used > 0)
        return sw_error_set(err, SW_EINVAL,
                            "%s is not an option of this command; it belongs to %s (see "
                            "spillctl %s --help)",
                            word, owners, spec->path);
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    char want[64];
    snprintf(want, sizeof(want), "%.*s", (int)(len < 63 ? len : 63), name);
    for (size_t i = 0; i < spec->nopts && !is_short; i++) {
        size_t d = sw_cli_edit_distance(want, spec->opts[i].name);
        size_t limit = strlen(spec->opts[i].name) / 3 + 1;
        if (d <= limit && d < best_d) {
            best = spec->opts[i].name;
            best_d = d;
        }
    }
    if (best != NULL)
        return sw_error_set(err, SW_EINVAL,
                            "unknown option %s; did you mean --%s? (see spillctl %s --help)", word,
                            best, spec->path);
    return sw_error_set(err, SW_EINVAL, "unknown option %s (see spillctl %s --help)", word,
                        spec->path);
}

static int add_item(const struct sw_cli_opt *o, const char *value, struct sw_cli_args *out,
                    struct sw_error *err)
{
    if (out->n >= SW_CLI_ARGS_MAX)
        return sw_error_set(err, SW_EINVAL, "more than %d options", SW_CLI_ARGS_MAX);
    double secs = 0;
    if (o->kind == SW_CLI_DURATION && sw_cli_duration_parse(value, &secs) != 0)
        return sw_error_set(err, SW_EINVAL,
                            "--%s: expected a duration such as 90s, 10m or 1h30m (or plain "
                            "seconds), above 0, got \"%s\"",
                            o->name, value);
    if (o->kind != SW_CLI_FLAG && value[0] == '\0')
        return sw_error_set(err, SW_EINVAL, "--%s: expected %s, got an empty string", o->name,
                            o->metavar ? o->metavar : "a value");
    out->item[out->n].opt = o;
    out->item[out->n].value = value;
    out->item[out->n].seconds = secs;
    out->n++;
    return 0;
}

int sw_cli_args_parse(const struct sw_cli_spec *spec, const struct sw_cli_spec *const *all,
                      size_t nall, int argc, char **argv, struct sw_cli_args *out,
                      struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    out->spec = spec;
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--") == 0)
            break;
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            out->help = 1;
            return 0;
        }
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            if (out->npos >= SW_CLI_ARGS_MAX)
                return sw_error_set(err, SW_EINVAL, "more than %d arguments", SW_CLI_ARGS_MAX);
            out->pos[out->npos++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        const struct sw_cli_opt *o;
        const char *value = NULL;
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            o = find_long(spec, name, len);
            if (o == NULL) {
                char word[80];
                snprintf(word, sizeof(word), "--%.*s", (int)(len < 70 ? len : 70), name);
                return unknown_option(spec, all, nall, word, name, len, 0, err);
            }
            if (eq != NULL) {
                if (o->kind == SW_CLI_FLAG)
                    return sw_error_set(err, SW_EINVAL, "--%s takes no value, got \"%s\"", o->name,
                                        a);
                value = eq + 1;
            }
        } else {
            o = find_short(spec, a[1]);
            if (o == NULL) {
                char word[3] = {'-', a[1], '\0'};
                return unknown_option(spec, all, nall, word, a + 1, 1, 1, err);
            }
            if (a[2] != '\0') {
                if (o->kind == SW_CLI_FLAG)
                    return sw_error_set(err, SW_EINVAL, "-%c takes no value, got \"%s\"",
                                        o->shorthand, a);
                value = a[2] == '=' ? a + 3 : a + 2;
            }
        }
        if (o->kind == SW_CLI_FLAG) {
            value = "";
        } else if (value == NULL) {
            if (i + 1 >= argc)
                return sw_error_set(err, SW_EINVAL, "--%s: expected %s after it", o->name,
                                    o->metavar ? o->metavar : "a value");
            value = argv[++i];
        }
        int rc = add_item(o, value, out, err);
        if (rc != 0)
            return rc;
    }
    if (out->npos < spec->min_pos)
        return sw_error_set(err, SW_EINVAL,
                            "expected %d argument%s, got %d (see spillctl %s --help)",
                            spec->min_pos, spec->min_pos == 1 ? "" : "s", out->npos, spec->path);
    if (out->npos > spec->max_pos)
        return sw_error_set(err, SW_EINVAL, "unexpected argument \"%s\" (see spillctl %s --help)",
                            out->pos[spec->max_pos], spec->path);
    return 0;
}

const char *sw_cli_arg(const struct sw_cli_args *a, int key)
{
    for (size_t i = a->n; i-- > 0;)
        if (a->item[i].opt->key == key)
            return a->item[i].value;
    return NULL;
}

int sw_cli_next(const struct sw_cli_args *a, size_t *it, const char **value)
{
    if (*it >= a->n)
        return -1;
    *value = a->item[*it].value;
    return a->item[(*it)++].opt->key;
}

double sw_cli_arg_seconds(const struct sw_cli_args *a, int key, double dflt)
{
    for (size_t i = a->n; i-- > 0;)
        if (a->item[i].opt->key == key)
            return a->item[i].seconds;
    return dflt;
}

void sw_cli_spec_help(FILE *out, const struct sw_cli_spec *spec)
{
    fputs(spec->help, out);
    if (spec->examples != NULL && spec->examples[0] != '\0')
        fprintf(out, "\nExamples:\n%s", spec->examples);
    fprintf(out, "\n" SW_CLI_GLOBAL_HELP);
}

int sw_cli_output_check(const struct sw_cli_spec *spec, const struct sw_cli_globals *g,
                        struct sw_error *err)
{
    if (!g->output_given || (spec->formats & SW_CLI_FMT(g->output)) != 0)
        return 0;
    if (spec->formats == 0) {
        if (g->output == SW_CLI_TABLE)
            return 0;
        return sw_error_set(err, SW_EINVAL,
                            "-o %s: this command prints no list and takes no -o (see spillctl "
                            "%s --help)",
                            sw_cli_format_name(g->output), spec->path);
    }
    char names[128] = "";
    size_t used = 0, n = 0, total = 0;
    for (int f = SW_CLI_TABLE; f <= SW_CLI_JSONPATH; f++)
        total += (spec->formats & SW_CLI_FMT(f)) != 0;
    for (int f = SW_CLI_TABLE; f <= SW_CLI_JSONPATH; f++) {
        if ((spec->formats & SW_CLI_FMT(f)) == 0)
            continue;
        n++;
        int w = snprintf(names + used, sizeof(names) - used, "%s%s",
                         n == 1       ? ""
                         : n == total ? " or "
                                      : ", ",
                         f == SW_CLI_JSONPATH ? "jsonpath=TEMPLATE"
                                              : sw_cli_format_name((enum sw_cli_format)f));
        if (w < 0 || (size_t)w >= sizeof(names) - used)
            break;
        used += (size_t)w;
    }
    return sw_error_set(err, SW_EINVAL, "-o %s: expected %s here (see spillctl %s --help)",
                        sw_cli_format_name(g->output), names, spec->path);
}
