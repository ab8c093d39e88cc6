/*
 * spillctl.c - the command-line interface to spillway.
 *
 * This file only dispatches: each subcommand is a function in
 * controller/cli/, listed once in the table below.
 */
#include <stdio.h>
#include <string.h>

#include "controller/cli/commands.h"

static const struct sw_cli_command commands[] = {
    {"cluster", "register, list, show and remove member clusters", sw_cli_cluster},
    {"replicate", "replicate S3 data between stores and report RPO", sw_cli_replicate},
    {"report", "per-team chargeback report (GPU-hours, cost, savings)", sw_cli_report},
    {"simulate", "replay a job trace under placement policies", sw_cli_simulate},
    {"version", "print spillctl's version", sw_cli_version},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: spillctl COMMAND [ARGS...]\n\n"
                 "spillctl manages spillway, the burst-to-cloud controller for GPU Jobs.\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'spillctl COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
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
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "spillctl: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return SW_EXIT_USAGE;
}
