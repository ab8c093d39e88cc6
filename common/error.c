/*
 * error.c - the names and messages of the SW_E* codes, and struct sw_error.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *sw_strerror(int code)
{
    switch (code) {
    case SW_OK:
        return "success";
#define SW__ERR_MSG(name, value, msg)                                                              \
    case SW_##name:                                                                                \
        return msg;
        SW_ERRNO_MAP(SW__ERR_MSG)
#undef SW__ERR_MSG
    default:
        return "unknown error";
    }
}

const char *sw_err_name(int code)
{
    switch (code) {
    case SW_OK:
        return "SW_OK";
#define SW__ERR_NAME(name, value, msg)                                                             \
    case SW_##name:                                                                                \
        return "SW_" #name;
        SW_ERRNO_MAP(SW__ERR_NAME)
#undef SW__ERR_NAME
    default:
        return "SW_UNKNOWN";
    }
}

int sw_error_set(struct sw_error *err, int code, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return code;
}

int sw_error_wrap(struct sw_error *err, const char *fmt, ...)
{
    if (err == NULL)
        return SW_EINVAL;
    char old[SW_ERROR_MSG_MAX];
    if (err->msg[0] != '\0')
        memcpy(old, err->msg, sizeof(old));
    else
        snprintf(old, sizeof(old), "%s", sw_strerror(err->code));
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    /* Append ": old" to whatever of the prefix fitted. */
    size_t used = n < 0 ? 0 : (size_t)n;
    if (used < sizeof(err->msg) - 1) {
        size_t room = sizeof(err->msg) - used;
        size_t k = 0;
        const char *sep = ": ";
        for (const char *p = sep; *p != '\0' && k + 1 < room; p++)
            err->msg[used + k++] = *p;
        for (const char *p = old; *p != '\0' && k + 1 < room; p++)
            err->msg[used + k++] = *p;
        err->msg[used + k] = '\0';
    }
    return err->code;
}

void sw_error_clear(struct sw_error *err)
{
    if (err == NULL)
        return;
    err->code = SW_OK;
    err->msg[0] = '\0';
}
