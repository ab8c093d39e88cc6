/*
 * libFuzzer target for clusters/kubeconfig.c: any bytes must give either a
 * target or an error with a message, never a crash or a leak. The first
 * byte picks the context to ask for, to reach the named-context paths.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "clusters/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *contexts[] = {NULL, "a", "prod", "ex"};
    const char *ctx = size > 0 ? contexts[data[0] % 4] : NULL;
    struct sw_kube_target *t = NULL;
    struct sw_error err;
    sw_error_clear(&err);
    int rc = sw_kubeconfig_parse((const char *)data, size, "dir/fuzz.kubeconfig", ctx, &t, &err);
    if (rc == 0) {
        if (t == NULL || t->server == NULL)
            __builtin_trap();
        (void)sw_kube_target_auth_kind(t);
        sw_kube_target_free(t);
    } else if (t != NULL || err.msg[0] == '\0' || strstr(err.msg, "fuzz.kubeconfig") == NULL) {
        __builtin_trap(); /* every error names the file */
    }
    return 0;
}
