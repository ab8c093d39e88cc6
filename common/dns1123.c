/*
 * dns1123.c - Kubernetes object names (see dns1123.h).
 */
#include "common/dns1123.h"

#include <string.h>

static bool alnum_lower(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One label of `n` bytes at `s`: [a-z0-9]([-a-z0-9]*[a-z0-9])? */
static bool label_ok(const char *s, size_t n)
{
    if (n == 0 || n > SW_DNS1123_LABEL_MAX || !alnum_lower(s[0]) || !alnum_lower(s[n - 1]))
        return false;
    for (size_t i = 1; i + 1 < n; i++)
        if (!alnum_lower(s[i]) && s[i] != '-')
            return false;
    return true;
}

bool sw_dns1123_subdomain(const char *s)
{
    if (s == NULL)
        return false;
    size_t n = strnlen(s, SW_DNS1123_SUBDOMAIN_MAX + 1);
    if (n == 0 || n > SW_DNS1123_SUBDOMAIN_MAX)
        return false;
    /* A subdomain's labels are not limited to 63 on their own: the API
     * server checks the regular expression and the whole length only. */
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.')
            continue;
        size_t len = i - start;
        if (len == 0 || !alnum_lower(s[start]) || !alnum_lower(s[i - 1]))
            return false;
        for (size_t k = start + 1; k + 1 < i; k++)
            if (!alnum_lower(s[k]) && s[k] != '-')
                return false;
        start = i + 1;
    }
    return true;
}

bool sw_dns1123_label(const char *s)
{
    if (s == NULL)
        return false;
    size_t n = strnlen(s, SW_DNS1123_LABEL_MAX + 1);
    return label_ok(s, n);
}
