/*
 * libFuzzer target for the exec credential plugin's output parser
 * (sw_exec_cred_parse in clusters/exec.c): any bytes, read as the stdout of
 * a plugin of client.authentication.k8s.io/v1 and of v1beta1, must give
 * either a credential (a token, or a client certificate and key together,
 * NUL-terminated) or an error naming the plugin with nothing handed out.
 * (That errors never echo the credential is asserted in
 * tests/unit/clusters/test_exec.c: here a fuzzed secret may equal message
 * text by chance.)
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "clusters/exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
    return 0;
}
