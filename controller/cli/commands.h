/*
 * commands.h - the subcommands of spillctl.
 *
 * Each subcommand lives in its own file under controller/cli/ and is listed
 * once in the table in spillctl.c. A subcommand receives argv starting at its
 * own name (argv[0] == "simulate", say), prints its own --help, and returns
 * the process exit status: 0 success, 1 failure it has explained on stderr,
 * 2 bad usage.
 */
#ifndef SW_CONTROLLER_CLI_COMMANDS_H
#define SW_CONTROLLER_CLI_COMMANDS_H

struct sw_cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

/** Exit statuses shared by every subcommand. */
enum { SW_EXIT_OK = 0, SW_EXIT_FAIL = 1, SW_EXIT_USAGE = 2 };

/** `spillctl cluster add|list|show|remove`. */
int sw_cli_cluster(int argc, char **argv);

/** `spillctl version`. */
int sw_cli_version(int argc, char **argv);

/** `spillctl replicate`: object stores, replication rules, runs, RPO. */
int sw_cli_replicate(int argc, char **argv);

/** `spillctl simulate`: replays a job trace under placement policies. */
int sw_cli_simulate(int argc, char **argv);
/** `spillctl report chargeback ...` */
int sw_cli_report(int argc, char **argv);

/**
 * Reads the whole file `path` (at most 1 GiB) into a new NUL-terminated
 * buffer `*buf` of `*len` bytes, freed by the caller with sw_free. On
 * failure prints `spillctl CMD: PATH: reason` and returns -1.
 */
int sw__cli_read_file(const char *cmd, const char *path, char **buf, size_t *len);

#endif
