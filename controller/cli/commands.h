/*
 * commands.h - the subcommands of spillctl.
 *
 * Each subcommand lives in its own file under controller/cli/ and is listed
 * once in the table in spillctl.c. spillctl.c takes the global options
 * (controller/cli/globals.h) out of argv first, wherever they were, and
 * hands them to the subcommand, which receives the rest of argv starting at
 * its own name (argv[0] == "simulate", say). A subcommand prints its own
 * --help, which refers to `spillctl --help` for the global options, and
 * returns the process exit status: 0 success, 1 failure it has explained on
 * stderr, 2 bad usage.
 */
#ifndef SW_CONTROLLER_CLI_COMMANDS_H
#define SW_CONTROLLER_CLI_COMMANDS_H

#include "controller/cli/globals.h"

struct sw_cli_command {
    const char *name;
    const char *summary;
    int (*run)(const struct sw_cli_globals *g, int argc, char **argv);
};

/** Exit statuses shared by every subcommand. */
enum { SW_EXIT_OK = 0, SW_EXIT_FAIL = 1, SW_EXIT_USAGE = 2 };

/** The line each command's --help ends with. */
#define SW_CLI_GLOBAL_HELP "Global options (--redis, -o, ...): see spillctl --help.\n"

/** `spillctl cluster add|list|show|remove`. */
int sw_cli_cluster(const struct sw_cli_globals *g, int argc, char **argv);

/** `spillctl version`. */
int sw_cli_version(const struct sw_cli_globals *g, int argc, char **argv);

/** `spillctl replicate`: object stores, replication rules, runs, RPO. */
int sw_cli_replicate(const struct sw_cli_globals *g, int argc, char **argv);

/** `spillctl simulate`: replays a job trace under placement policies. */
int sw_cli_simulate(const struct sw_cli_globals *g, int argc, char **argv);

/** `spillctl status`: the Jobs the hub manages (controller/cli/status.c). */
int sw_cli_status(const struct sw_cli_globals *g, int argc, char **argv);

/** `spillctl explain CLUSTER/NAMESPACE/JOB`: the stored decision. */
int sw_cli_explain(const struct sw_cli_globals *g, int argc, char **argv);

/** `spillctl hub status`: leader, epoch, members' health. */
int sw_cli_hub(const struct sw_cli_globals *g, int argc, char **argv);
/** `spillctl drill cluster-loss|hub-loss`: DR drills against the running hub. */
int sw_cli_drill(const struct sw_cli_globals *g, int argc, char **argv);
/** `spillctl reseal --new-secret-key-file FILE`: rotates the sealing key. */
int sw_cli_reseal(const struct sw_cli_globals *g, int argc, char **argv);

/** `spillctl report chargeback ...` */
int sw_cli_report(const struct sw_cli_globals *g, int argc, char **argv);

/**
 * Reads the whole file `path` (at most 1 GiB) into a new NUL-terminated
 * buffer `*buf` of `*len` bytes, freed by the caller with sw_free. On
 * failure prints `spillctl CMD: PATH: reason` and returns -1.
 */
int sw__cli_read_file(const char *cmd, const char *path, char **buf, size_t *len);

#endif
