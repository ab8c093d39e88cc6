/*
 * libFuzzer target for controller/cli/jsonpath.c, -o jsonpath's template:
 * the input is the template (up to its first NUL). sw_cli_jsonpath_check
 * and sw_cli_jsonpath_print must never crash nor read past the template;
 * print refuses exactly what check refuses, with a message; and the same
 * bytes read as a duration (controller/cli/args.c) give a finite,
 * non-negative number or SW_EINVAL.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "controller/cli/args.h"
#include "controller/cli/jsonpath.h"
#include "fuzz.h"

static const char doc_json[] =
    "{\"items\":[{\"name\":\"a\",\"n\":1,\"m\":{\"x-y\":[true,null,{\"k\":\"v\"}]}},"
    "{\"name\":\"b\",\"n\":2.5,\"tags\":[\"t1\",\"t2\"]},[1,[2,[3]]],\"s\",null]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static cJSON *doc;
    static FILE *sink;
    if (doc == NULL) {
        doc = cJSON_Parse(doc_json);
        sink = fopen("/dev/null", "w");
        FUZZ_CHECK(doc != NULL && sink != NULL);
    }
    /* Exactly the template's bytes on the heap, so ASan sees any over-read. */
    size_t n = strnlen((const char *)data, size);
    char *tmpl = malloc(n + 1);
    FUZZ_CHECK(tmpl != NULL);
    memcpy(tmpl, data, n);
    tmpl[n] = '\0';
    struct sw_error e1 = {0}, e2 = {0};
    int checked = sw_cli_jsonpath_check(tmpl, &e1);
    int printed = sw_cli_jsonpath_print(sink, tmpl, doc, &e2);
    FUZZ_CHECK(checked == 0 || checked == SW_EINVAL);
    FUZZ_CHECK(printed == checked || printed == SW_ENOMEM);
    if (checked != 0)
        FUZZ_CHECK(e1.msg[0] != '\0' && strcmp(e1.msg, e2.msg) == 0);
    double s = -1;
    int rc = sw_cli_duration_parse(tmpl, &s);
    FUZZ_CHECK(rc == SW_EINVAL || (rc == 0 && isfinite(s) && s >= 0));
    free(tmpl);
    return 0;
}
