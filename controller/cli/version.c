/*
 * version.c - `spillctl version`.
 */
#include <stdio.h>

#include "controller/cli/commands.h"
#include "controller/version.h"

int sw_cli_version(const struct sw_cli_globals *g, int argc, char **argv)
{
    (void)g;
    (void)argc;
    (void)argv;
    printf("spillctl %s\n", SW_VERSION);
    return SW_EXIT_OK;
}
