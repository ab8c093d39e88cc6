/*
 * prom.c - escaping label values of the Prometheus text format (prom.h).
 */
#include "common/prom.h"

const char *sw_prom_label(const char *v, char *out, size_t cap)
{
    size_t n = 0;
    for (; v && *v; v++) {
        const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
        size_t len = esc ? 2 : 1;
        if (n + len >= cap)
            break;
        if (esc) {
            out[n++] = esc[0];
            out[n++] = esc[1];
        } else
            out[n++] = *v;
    }
    out[n] = '\0';
    return out;
}
