/*
 * args.h - the one option parser of spillctl.
 *
 * Every command (a leaf such as "cluster add" or "status") describes
 * itself once, as a struct sw_cli_spec: its path, positional arguments,
 * options, help text and examples. spillctl.c finds the command from the
 * words of argv, and this parser reads the rest with the command's table,
 * the same way for every command:
 *  - "--opt VALUE" and "--opt=VALUE"; a short form "-x VALUE" or "-xVALUE"
 *    where the table gives one; "--" ends the options;
 *  - options and positional arguments in any order;
 *  - an option the command lacks is refused, naming the commands that do
 *    have it ("misplaced") or the nearest option of this command ("did you
 *    mean --concurrency?");
 *  - durations in one syntax everywhere (sw_cli_duration_parse);
 *  - -h/--help asks for help (the caller prints it on stdout, exit 0).
 * Errors are usage errors: the caller prints the message and exits 2.
 * The same tables generate shell completion, so it never drifts.
 */
#ifndef SW_CONTROLLER_CLI_ARGS_H
#define SW_CONTROLLER_CLI_ARGS_H

#include <stddef.h>
#include <stdio.h>

#include "common/error.h"
#include "controller/cli/globals.h"

/** What an option takes. */
enum sw_cli_optkind {
    SW_CLI_FLAG = 0, /* nothing: --dry-run */
    SW_CLI_VALUE,    /* a string the command checks: --kubeconfig FILE */
    SW_CLI_DURATION, /* a duration, checked here: --timeout 10m */
};

/** One option of a command. The strings are borrowed (literals). */
struct sw_cli_opt {
    const char *name; /* long name without the dashes: "kubeconfig" */
    char shorthand;   /* single-letter form, or 0 */
    enum sw_cli_optkind kind;
    int key;             /* what the command switches on */
    const char *metavar; /* FILE, NAME, DURATION... (completion: FILE completes files) */
};

struct sw_cli_args;

/** A bit of sw_cli_spec.formats per -o format (enum sw_cli_format). */
#define SW_CLI_FMT(f) (1u << (f))
/** Every format: the listing commands. */
#define SW_CLI_FMT_LIST                                                                            \
    (SW_CLI_FMT(SW_CLI_TABLE) | SW_CLI_FMT(SW_CLI_WIDE) | SW_CLI_FMT(SW_CLI_JSON) |                \
     SW_CLI_FMT(SW_CLI_YAML) | SW_CLI_FMT(SW_CLI_CSV) | SW_CLI_FMT(SW_CLI_NAME) |                  \
     SW_CLI_FMT(SW_CLI_JSONPATH))
/** One object, printed as text, JSON or YAML. */
#define SW_CLI_FMT_OBJECT                                                                          \
    (SW_CLI_FMT(SW_CLI_TABLE) | SW_CLI_FMT(SW_CLI_JSON) | SW_CLI_FMT(SW_CLI_YAML))

/** One command of spillctl. The strings are borrowed (literals). */
struct sw_cli_spec {
    const char *path;     /* words after "spillctl": "cluster add" */
    const char *summary;  /* one line, for the parent's list of commands */
    const char *help;     /* usage, description and options, ending with a newline */
    const char *examples; /* lines "  spillctl ..." ending with newlines */
    const struct sw_cli_opt *opts;
    size_t nopts;
    int min_pos, max_pos; /* how many positional arguments it takes */
    /* The -o formats it prints (SW_CLI_FMT_* bits); 0: it prints no list
     * and takes no -o (an explicit -o table is let through). spillctl.c
     * refuses any other -o before the command runs, naming these. */
    unsigned formats;
    /** Runs the command; returns the process's exit status (0, 1 or 2). */
    int (*run)(const struct sw_cli_globals *g, const struct sw_cli_args *a);
};

/** At most this many options and positional arguments on one command line. */
#define SW_CLI_ARGS_MAX 128

/** A parsed command line. The strings are borrowed from argv. */
struct sw_cli_args {
    const struct sw_cli_spec *spec;
    int help; /* -h or --help was given */
    size_t n; /* options, in the order given */
    struct {
        const struct sw_cli_opt *opt;
        const char *value; /* "" for a flag */
        double seconds;    /* SW_CLI_DURATION: the value in seconds */
    } item[SW_CLI_ARGS_MAX];
    int npos;
    const char *pos[SW_CLI_ARGS_MAX];
};

/**
 * Parses argv[0..argc-1] (the words after the command's path) for `spec`
 * into *out. `all` (nall entries, borrowed) is every command, to tell a
 * misplaced option from a misspelt one. Returns 0, or SW_EINVAL with a
 * message naming the option or argument and what was expected. When -h
 * or --help is given, returns 0 with out->help set and checks nothing
 * else.
 */
int sw_cli_args_parse(const struct sw_cli_spec *spec, const struct sw_cli_spec *const *all,
                      size_t nall, int argc, char **argv, struct sw_cli_args *out,
                      struct sw_error *err);

/** The last value given for the option `key`, "" for a flag, or NULL when absent. */
const char *sw_cli_arg(const struct sw_cli_args *a, int key);

/**
 * Walks the options in the order given, as getopt_long does: returns the
 * next option's key and sets *value ("" for a flag), or -1 after the last.
 * *it starts at 0.
 */
int sw_cli_next(const struct sw_cli_args *a, size_t *it, const char **value);

/** The last duration given for `key` in seconds, or `dflt` when absent. */
double sw_cli_arg_seconds(const struct sw_cli_args *a, int key, double dflt);

/**
 * Parses a duration: one or more NUMBER UNIT pairs with units h, m, s or
 * ms ("10m", "1h30m", "90s", "1.5h", "500ms"), or a plain number of
 * seconds ("600"). Returns 0 and *seconds, or SW_EINVAL.
 */
int sw_cli_duration_parse(const char *s, double *seconds);

/**
 * The edit distance between a and b (insertions, deletions and
 * substitutions), for "did you mean"; strings longer than 63 bytes count
 * as far from everything.
 */
size_t sw_cli_edit_distance(const char *a, const char *b);

/**
 * Checks the global -o against what `spec` prints (spec->formats): 0, or
 * SW_EINVAL with a message naming the value and the formats accepted
 * ("-o csv: expected table, json or yaml here"), or saying the command
 * takes no -o.
 */
int sw_cli_output_check(const struct sw_cli_spec *spec, const struct sw_cli_globals *g,
                        struct sw_error *err);

/** Prints a command's help: its text, its examples, the global-options line. */
void sw_cli_spec_help(FILE *out, const struct sw_cli_spec *spec);

#endif
