/*
 * libFuzzer target for the exec credential plugin's output parser
 * (sw_exec_cred_parse in clusters/exec.c): any bytes, read as the stdout of
 * a plugin of client.authentication.k8s.io/v1 and of v1beta1, must give
 * either a credential (a token, or a client certificate and key together,
 * NUL-terminated) or an error naming the plugin with nothing handed out.
 * (That errors never echo the credential is asserted in
 * tests/unit/clusters/test_exec.c: here a fuzzed secret may equal message
 * text by chance.)
 *
 * The same bytes as a time for sw_parse_rfc3339: a time it accepts must
 * name that very instant, so formatting it back (in the input's offset)
 * gives the input's date and time; nothing is normalised (Feb 30 is not
 * Mar 2). A refused time says why and leaves the output alone.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clusters/exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_time(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s == NULL)
        return;
    memcpy(s, data, size);
    s[size] = '\0';
    int64_t ms = INT64_MIN;
    const char *why = NULL;
    if (sw_parse_rfc3339(s, &ms, &why) != 0) {
        if (why == NULL || ms != INT64_MIN)
            __builtin_trap();
        free(s);
        return;
    }
    size_t n = strlen(s);
    int64_t offset_s = 0;
    if (s[n - 1] != 'Z') { /* "+hh:mm" or "-hh:mm" */
        const char *o = s + n - 6;
        offset_s =
            ((o[1] - '0') * 10 + (o[2] - '0')) * 3600 + ((o[4] - '0') * 10 + (o[5] - '0')) * 60;
        if (o[0] == '-')
            offset_s = -offset_s;
    }
    int64_t secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    time_t local = (time_t)(secs + offset_s);
    struct tm tm;
    char back[64];
    if (gmtime_r(&local, &tm) == NULL)
        __builtin_trap();
    snprintf(back, sizeof(back), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (strncmp(back, s, 19) != 0)
        __builtin_trap(); /* accepted, but names another instant */
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *versions[] = {"client.authentication.k8s.io/v1",
                                     "client.authentication.k8s.io/v1beta1"};
    for (int i = 0; i < 2; i++) {
        struct sw_exec_cred cred;
        struct sw_error err;
        sw_error_clear(&err);
        int rc = sw_exec_cred_parse((const char *)data, size, versions[i], "exec plugin \"fuzz\"",
                                    &cred, &err);
        if (rc != 0) {
            if (cred.token != NULL || cred.cert != NULL || cred.key != NULL)
                __builtin_trap(); /* nothing is handed out on failure */
            if (err.msg[0] == '\0' || strstr(err.msg, "exec plugin \"fuzz\"") == NULL)
                __builtin_trap(); /* every error names the plugin */
            continue;
        }
        if ((cred.cert == NULL) != (cred.key == NULL))
            __builtin_trap();
        if (cred.token == NULL && cred.cert == NULL)
            __builtin_trap();
        if (cred.token != NULL && cred.token[0] == '\0')
            __builtin_trap();
        if (cred.cert != NULL &&
            (cred.cert[cred.cert_len] != '\0' || cred.key[cred.key_len] != '\0'))
            __builtin_trap();
        sw_exec_cred_clear(&cred);
    }
    check_time(data, size);
    return 0;
}
