/*
 * spillctl.c - the command-line interface to spillway.
 *
 * This file only dispatches: it takes the global options out of argv
 * (controller/cli/globals.c), sets the log level, finds the command from
 * the words that follow ("cluster add", "status"), reads its options with
 * the one parser (controller/cli/args.c) and runs it. Every command is a
 * struct sw_cli_spec in its own file under controller/cli/, listed once in
 * the table below; help, "did you mean" and shell completion all come
 * from those tables.
 */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "controller/cli/args.h"
#include "controller/cli/commands.h"
#include "controller/cli/output.h"
#include "controller/version.h"

/* The command groups: a word with commands under it, and what it is for. */
static const struct {
    const char *path;
    const char *summary;
} groups[] = {
    {"cluster", "register, list, show and remove member clusters"},
    {"replicate", "replicate S3 data between stores and report RPO"},
    {"replicate store", "register, list and remove object stores"},
    {"hub", "the hub's leader, epoch and members' health"},
    {"drill", "DR drills: lose a member cluster, a region, the leading hub or Redis"},
    {"report", "reports from the hub's records or a simulation"},
};
#define NCMD_GROUPS (sizeof(groups) / sizeof(groups[0]))

static const struct sw_cli_spec *all[SW_CLI_SPECS_MAX];
static size_t nall;

static void collect(const struct sw_cli_spec *specs, size_t n)
{
    for (size_t i = 0; i < n && nall < SW_CLI_SPECS_MAX; i++)
        all[nall++] = &specs[i];
}

static void collect_all(void)
{
    collect(sw_cli_cluster_specs, sw_cli_cluster_nspecs);
    collect(sw_cli_replicate_specs, sw_cli_replicate_nspecs);
    collect(sw_cli_reseal_specs, sw_cli_reseal_nspecs);
    collect(sw_cli_status_specs, sw_cli_status_nspecs);
    collect(sw_cli_logs_specs, sw_cli_logs_nspecs);
    collect(sw_cli_lint_specs, sw_cli_lint_nspecs);
    collect(sw_cli_drill_specs, sw_cli_drill_nspecs);
    collect(sw_cli_report_specs, sw_cli_report_nspecs);
    collect(sw_cli_simulate_specs, sw_cli_simulate_nspecs);
    collect(sw_cli_completion_specs, sw_cli_completion_nspecs);
    collect(sw_cli_version_specs, sw_cli_version_nspecs);
}

/* The summary of a group, or NULL when `path` is none. */
static const char *group_summary(const char *path)
{
    for (size_t i = 0; i < NCMD_GROUPS; i++)
        if (strcmp(groups[i].path, path) == 0)
            return groups[i].summary;
    return NULL;
}

/* Whether `path` is `parent` followed by one more word; *word gets it. */
static int child_of(const char *path, const char *parent, const char **word)
{
    size_t lp = strlen(parent);
    const char *w = path;
    if (lp > 0) {
        if (strncmp(path, parent, lp) != 0 || path[lp] != ' ')
            return 0;
        w = path + lp + 1;
    }
    *word = w;
    return strchr(w, ' ') == NULL;
}

/* The commands and groups right under `parent` ("" for the top). */
static void list_children(FILE *out, const char *parent)
{
    const char *w;
    for (size_t i = 0; i < NCMD_GROUPS; i++)
        if (child_of(groups[i].path, parent, &w))
            fprintf(out, "  %-16s %s\n", w, groups[i].summary);
    for (size_t i = 0; i < nall; i++)
        if (child_of(all[i]->path, parent, &w))
            fprintf(out, "  %-16s %s\n", w, all[i]->summary);
}

/* Each child's first example, for a group's help. */
static void group_examples(FILE *out, const char *parent)
{
    size_t lp = strlen(parent);
    for (size_t i = 0; i < nall; i++) {
        if (strncmp(all[i]->path, parent, lp) != 0 || all[i]->path[lp] != ' ' ||
            all[i]->examples == NULL)
            continue;
        /* The first example, with its continuation lines ("\\" at the end). */
        const char *e = all[i]->examples, *nl;
        while ((nl = strchr(e, '\n')) != NULL && nl > e && nl[-1] == '\\')
            e = nl + 1;
        fprintf(out, "%.*s\n", (int)(nl ? nl - all[i]->examples : (long)strlen(all[i]->examples)),
                all[i]->examples);
    }
}

static void usage(FILE *out)
{
    fprintf(out, "Usage: spillctl [GLOBAL OPTIONS] COMMAND [ARGS...]\n\n"
                 "spillctl manages spillway, the burst-to-cloud controller for GPU Jobs.\n"
                 "Installed as kubectl-spillway too, it runs as \"kubectl spillway\".\n"
                 "Options go before or after the command's name (spillctl -n research status).\n"
                 "Exit status: 0 success, 1 failure, 2 bad usage (an option, an argument, -o,\n"
                 "or a file named on the command line that cannot be read or parsed).\n\n"
                 "Commands:\n");
    list_children(out, "");
    fprintf(out, "\nExamples:\n"
                 "  spillctl cluster list\n"
                 "  spillctl status -n research -w\n"
                 "  spillctl lint -f train-llama.yaml\n"
                 "  spillctl explain onprem/research/train-llama\n"
                 "  spillctl logs onprem/research/train-llama -f\n"
                 "  kubectl spillway status -o wide\n\n");
    sw_cli_globals_usage(out);
    fprintf(out, "  --version                   print spillctl's version\n"
                 "\nRun 'spillctl COMMAND --help' (or 'spillctl help COMMAND') for a command's "
                 "options.\n");
}

static void group_usage(FILE *out, const char *path)
{
    fprintf(out, "Usage: spillctl %s COMMAND [OPTIONS]\n\n%s.\n\nCommands:\n", path,
            group_summary(path));
    list_children(out, path);
    fprintf(out, "\nExamples:\n");
    group_examples(out, path);
    fprintf(out, "\nRun 'spillctl %s COMMAND --help' for a command's options.\n" SW_CLI_GLOBAL_HELP,
            path);
}

/*
 * Finds the command or group named by words argv[0..argc-1]: the longest
 * run of words that is a command's path, else the longest that is a
 * group's. *used gets how many words it took; *spec the command, or NULL
 * with *group the group's path ("" when not even the first word is one).
 */
static void resolve(int argc, char **argv, int *used, const struct sw_cli_spec **spec,
                    const char **group)
{
    char path[128] = "";
    *used = 0;
    *spec = NULL;
    *group = "";
    for (int k = 0; k < argc && k < 4; k++) {
        size_t len = strlen(path);
        if (argv[k][0] == '-' || snprintf(path + len, sizeof(path) - len, "%s%s", len ? " " : "",
                                          argv[k]) >= (int)(sizeof(path) - len))
            break;
        for (size_t i = 0; i < nall; i++)
            if (strcmp(all[i]->path, path) == 0) {
                *spec = all[i];
                *used = k + 1;
                return;
            }
        const char *g = NULL;
        for (size_t i = 0; i < NCMD_GROUPS; i++)
            if (strcmp(groups[i].path, path) == 0)
                g = groups[i].path;
        if (g == NULL)
            return;
        *group = g;
        *used = k + 1;
    }
}

/*
 * How many words the options argv[0..n-1] of `spec` take, read as its
 * parser reads them ("-n NS", "-nNS", "--namespace=NS", a flag alone), or
 * -1 when a word is not an option of `spec` or a value would run past n.
 */
static int leading_options_fit(const struct sw_cli_spec *spec, int n, char **argv)
{
    int i = 0;
    while (i < n) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == '\0' || strcmp(a, "--") == 0)
            return -1;
        const struct sw_cli_opt *o = NULL;
        int inline_value = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            i++;
            continue;
        }
        for (size_t k = 0; k < spec->nopts && o == NULL; k++) {
            const struct sw_cli_opt *c = &spec->opts[k];
            size_t len = strlen(c->name);
            if (a[1] == '-' && strncmp(a + 2, c->name, len) == 0 &&
                (a[2 + len] == '\0' || a[2 + len] == '=')) {
                o = c;
                inline_value = a[2 + len] == '=';
            } else if (a[1] != '-' && c->shorthand != 0 && a[1] == c->shorthand) {
                o = c;
                inline_value = a[2] != '\0';
            }
        }
        if (o == NULL)
            return -1;
        i += o->kind == SW_CLI_FLAG || inline_value ? 1 : 2;
    }
    return i == n ? n : -1;
}

/*
 * kubectl's habit: a command's own options before its name
 * (`spillctl -n research status`, `spillctl -A status`). The global
 * options are already out of argv. When argv[1..] starts with options,
 * finds the first word k after which the rest names a command whose
 * options the leading words are, and moves the command's words to the
 * front: argv becomes [spillctl, COMMAND WORDS, LEADING OPTIONS, REST]
 * (before any "--" of REST, so they stay options). When no word fits, the
 * first command named after the options takes them, so that its parser
 * names the option it lacks.
 */
static void hoist_leading_options(int argc, char **argv)
{
    int first = -1, first_used = 0;
    for (int k = 2; k < argc; k++) {
        if (argv[k][0] == '-' || strcmp(argv[k - 1], "--") == 0)
            continue;
        int used;
        const struct sw_cli_spec *spec;
        const char *group;
        resolve(argc - k, argv + k, &used, &spec, &group);
        if (spec == NULL)
            continue;
        if (first < 0)
            first = k, first_used = used;
        if (leading_options_fit(spec, k - 1, argv + 1) == k - 1) {
            first = k, first_used = used;
            break;
        }
    }
    if (first < 0)
        return;
    /* Rotate argv[1..first+used-1] so that the command's words come first. */
    char *words[8];
    int nw = first_used;
    if (nw > (int)(sizeof(words) / sizeof(words[0])))
        return;
    for (int i = 0; i < nw; i++)
        words[i] = argv[first + i];
    memmove(argv + 1 + nw, argv + 1, (size_t)(first - 1) * sizeof(*argv));
    for (int i = 0; i < nw; i++)
        argv[1 + i] = words[i];
}

/* "unknown command" with the nearest command under `group`. */
static int unknown_command(const char *group, const char *word)
{
    const char *best = NULL, *w;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < nall + NCMD_GROUPS; i++) {
        const char *p = i < nall ? all[i]->path : groups[i - nall].path;
        if (!child_of(p, group, &w))
            continue;
        size_t d = sw_cli_edit_distance(word, w);
        if (d <= strlen(w) / 3 + 1 && d < best_d)
            best = w, best_d = d;
    }
    fprintf(stderr, "spillctl: unknown command \"%s%s%s\"", group, group[0] ? " " : "", word);
    if (best != NULL)
        fprintf(stderr, "; did you mean \"%s%s%s\"?", group, group[0] ? " " : "", best);
    fprintf(stderr, " (see spillctl %s%s--help)\n", group, group[0] ? " " : "");
    return SW_EXIT_USAGE;
}

/* `spillctl help [COMMAND...]`: the help of what the words name, on stdout. */
static int help(int argc, char **argv)
{
    if (argc == 0) {
        usage(stdout);
        return SW_EXIT_OK;
    }
    int used;
    const struct sw_cli_spec *spec;
    const char *group;
    resolve(argc, argv, &used, &spec, &group);
    if (used < argc)
        return unknown_command(group, argv[used]);
    if (spec != NULL)
        sw_cli_spec_help(stdout, spec);
    else
        group_usage(stdout, group);
    return SW_EXIT_OK;
}

const struct sw_cli_spec *const *sw_cli_all_specs(size_t *n)
{
    *n = nall;
    return all;
}

int main(int argc, char **argv)
{
    struct sw_cli_globals g;
    struct sw_error err;
    collect_all();
    if (sw_cli_globals_parse(&argc, argv, &g, stderr, &err) != 0) {
        fprintf(stderr, "spillctl: %s\n", err.msg);
        return SW_EXIT_USAGE;
    }
    sw_log_set_level(g.log_level);
    sw_cli_print_options(g.no_headers, g.jsonpath);
    if (argc < 2) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return help(0, NULL);
    if (strcmp(argv[1], "help") == 0)
        return help(argc - 2, argv + 2);
    if (strcmp(argv[1], "--version") == 0) {
        if (argc > 2) {
            fprintf(stderr, "spillctl: --version takes nothing after it\n");
            return SW_EXIT_USAGE;
        }
        printf("spillctl %s\n", SW_VERSION);
        return SW_EXIT_OK;
    }
    int used;
    const struct sw_cli_spec *spec;
    const char *group;
    if (argv[1][0] == '-' && argv[1][1] != '\0' && strcmp(argv[1], "--") != 0)
        hoist_leading_options(argc, argv);
    resolve(argc - 1, argv + 1, &used, &spec, &group);
    if (spec == NULL) {
        if (used == 0)
            return unknown_command("", argv[1]);
        if (used + 1 >= argc) {
            fprintf(stderr, "spillctl %s: expected a command\n\n", group);
            group_usage(stderr, group);
            return SW_EXIT_USAGE;
        }
        const char *next = argv[used + 1];
        if (strcmp(next, "--help") == 0 || strcmp(next, "-h") == 0 || strcmp(next, "help") == 0) {
            group_usage(stdout, group);
            return SW_EXIT_OK;
        }
        return unknown_command(group, next);
    }
    struct sw_cli_args a;
    if (sw_cli_args_parse(spec, all, nall, argc - 1 - used, argv + 1 + used, &a, &err) != 0) {
        fprintf(stderr, "spillctl %s: %s\n", spec->path, err.msg);
        return SW_EXIT_USAGE;
    }
    if (a.help) {
        sw_cli_spec_help(stdout, spec);
        return SW_EXIT_OK;
    }
    if (sw_cli_output_check(spec, &g, &err) != 0) {
        fprintf(stderr, "spillctl %s: %s\n", spec->path, err.msg);
        return SW_EXIT_USAGE;
    }
    return spec->run(&g, &a);
}
