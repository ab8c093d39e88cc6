/*
 * spillctl.c - the command-line interface to spillway.
 *
 * This file only dispatches: it takes the global options out of argv
 * (controller/cli/globals.c), sets the log level, and runs the subcommand,
 * a function in controller/cli/ listed once in the table below.
 */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "controller/cli/commands.h"

static const struct sw_cli_command commands[] = {
    {"cluster", "register, list, show and remove member clusters", sw_cli_cluster},
    {"replicate", "replicate S3 data between stores and report RPO", sw_cli_replicate},
    {"reseal", "seal every registered credential again with a new key", sw_cli_reseal},
    {"status", "the Jobs the hub manages: where they run, state, cost", sw_cli_status},
    {"explain", "the hub's decision for one Job, every option costed", sw_cli_explain},
    {"hub", "the hub's leader, epoch and members' health (hub status)", sw_cli_hub},
    {"drill", "DR drills: lose a member cluster or the leading hub, report RTO/RPO", sw_cli_drill},
    {"report", "per-team chargeback report (GPU-hours, cost, savings)", sw_cli_report},
    {"simulate", "replay a job trace under placement policies", sw_cli_simulate},
    {"version", "print spillctl's version", sw_cli_version},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: spillctl [GLOBAL OPTIONS] COMMAND [ARGS...]\n\n"
                 "spillctl manages spillway, the burst-to-cloud controller for GPU Jobs.\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n");
    sw_cli_globals_usage(out);
    fprintf(out, "\nRun 'spillctl COMMAND --help' for a command's options; docs/cli.md has "
                 "examples.\n");
}

int main(int argc, char **argv)
{
    struct sw_cli_globals g;
    struct sw_error err;
    if (sw_cli_globals_parse(&argc, argv, &g, stderr, &err) != 0) {
        fprintf(stderr, "spillctl: %s\n", err.msg);
        return SW_EXIT_USAGE;
    }
    sw_log_set_level(g.log_level);
    if (argc < 2) {
        usage(stderr);
        return SW_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return SW_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(&g, argc - 1, argv + 1);
    fprintf(stderr, "spillctl: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return SW_EXIT_USAGE;
}
