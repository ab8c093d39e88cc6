/*
 * commands.h - the subcommands of spillctl.
 *
 * Each subcommand lives in its own file under controller/cli/ as a table of
 * struct sw_cli_spec (controller/cli/args.h), listed once in spillctl.c.
 * spillctl.c takes the global options (controller/cli/globals.h) out of
 * argv first, wherever they were, parses the command's own options with
 * its table, prints --help, and runs it with the parsed arguments. A
 * command returns the process exit status: 0 success, 1 failure it has
 * explained on stderr, 2 bad usage.
 */
#ifndef SW_CONTROLLER_CLI_COMMANDS_H
#define SW_CONTROLLER_CLI_COMMANDS_H

#include "controller/cli/args.h"
#include "controller/cli/globals.h"

/** Exit statuses shared by every subcommand. */
enum { SW_EXIT_OK = 0, SW_EXIT_FAIL = 1, SW_EXIT_USAGE = 2 };

/** The line each command's --help ends with. */
#define SW_CLI_GLOBAL_HELP "Global options (--redis, -o, ...): see spillctl --help.\n"

/** At most this many commands in all. */
#define SW_CLI_SPECS_MAX 64

/*
 * Each file's commands (struct sw_cli_spec, controller/cli/args.h), listed
 * by spillctl.c: cluster add|list|show|remove; replicate ...; reseal;
 * status, explain, hub status; logs; lint; drill ...; report chargeback;
 * simulate; completion; version.
 */
#define SW_CLI_SPECS(file)                                                                         \
    extern const struct sw_cli_spec sw_cli_##file##_specs[];                                       \
    extern const size_t sw_cli_##file##_nspecs
SW_CLI_SPECS(cluster);
SW_CLI_SPECS(replicate);
SW_CLI_SPECS(reseal);
SW_CLI_SPECS(status);
SW_CLI_SPECS(logs);
SW_CLI_SPECS(lint);
SW_CLI_SPECS(drill);
SW_CLI_SPECS(report);
SW_CLI_SPECS(simulate);
SW_CLI_SPECS(completion);
SW_CLI_SPECS(version);

/** Every command, in the order spillctl lists them (spillctl.c); *n gets how many. */
const struct sw_cli_spec *const *sw_cli_all_specs(size_t *n);

/**
 * Reads the whole file `path` (at most 1 GiB) into a new NUL-terminated
 * buffer `*buf` of `*len` bytes, freed by the caller with sw_free. On
 * failure prints `spillctl CMD: PATH: reason` and returns -1.
 */
int sw__cli_read_file(const char *cmd, const char *path, char **buf, size_t *len);

#endif
