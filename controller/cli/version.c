/*
 * version.c - `spillctl version` (and `spillctl --version`, spillctl.c).
 */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "controller/cli/commands.h"
#include "controller/cli/output.h"
#include "controller/version.h"

static int run(const struct sw_cli_globals *g, const struct sw_cli_args *a)
{
    (void)a;
    if (g->output != SW_CLI_JSON && g->output != SW_CLI_YAML) {
        if (g->output_given && g->output != SW_CLI_TABLE) {
            fprintf(stderr, "spillctl version: -o %s: expected json or yaml (or no -o)\n",
                    sw_cli_format_name(g->output));
            return SW_EXIT_USAGE;
        }
        printf("spillctl %s\n", SW_VERSION);
        return SW_EXIT_OK;
    }
    cJSON *o = cJSON_CreateObject();
    if (o == NULL || cJSON_AddStringToObject(o, "version", SW_VERSION) == NULL) {
        cJSON_Delete(o);
        fprintf(stderr, "spillctl version: out of memory\n");
        return SW_EXIT_FAIL;
    }
    if (g->output == SW_CLI_JSON) {
        sw_cli_write_json(stdout, o, 0);
        fputc('\n', stdout);
    } else {
        sw_cli_write_yaml(stdout, o);
    }
    cJSON_Delete(o);
    return SW_EXIT_OK;
}

const struct sw_cli_spec sw_cli_version_specs[] = {
    {.path = "version",
     .formats = SW_CLI_FMT_OBJECT,
     .summary = "print spillctl's version",
     .help = "Usage: spillctl version [-o json|yaml]\n\n"
             "Prints spillctl's version: \"spillctl X.Y.Z\", or with -o json or yaml an\n"
             "object {\"version\": \"X.Y.Z\"}. spillctl --version prints the same line.\n",
     .examples = "  spillctl version\n"
                 "  spillctl version -o json\n",
     .run = run},
};
const size_t sw_cli_version_nspecs = 1;
