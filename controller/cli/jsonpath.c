/*
 * jsonpath.c - `-o jsonpath=TEMPLATE`: a small, documented subset of
 * kubectl's JSONPath (see jsonpath.h), evaluated straight from the
 * template text. Checking is the same walk with no document, so a
 * template is refused before anything is read from Redis.
 */
#include "controller/cli/jsonpath.h"

#include <ctype.h>
#include <string.h>

#include "common/alloc.h"
#include "controller/cli/output.h"

struct nodes {
    const cJSON **v;
    size_t n, cap;
};

static int push(struct nodes *ns, const cJSON *v)
{
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 16;
        const cJSON **p = sw_realloc(ns->v, cap * sizeof(*p));
        if (p == NULL)
            return SW_ENOMEM;
        ns->v = p;
        ns->cap = cap;
    }
    ns->v[ns->n++] = v;
    return 0;
}

static int bad(struct sw_error *err, const char *tmpl, const char *at, const char *what)
{
    return sw_error_set(err, SW_EINVAL, "-o jsonpath: at offset %d of \"%s\": %s", (int)(at - tmpl),
                        tmpl, what);
}

/* Index of the '}' closing the expression that starts after tmpl[i] == '{', or -1. */
static long close_of(const char *tmpl, long i)
{
    char quote = 0;
    for (long j = i + 1; tmpl[j] != '\0'; j++) {
        if (quote) {
            if (tmpl[j] == '\\' && tmpl[j + 1] != '\0')
                j++;
            else if (tmpl[j] == quote)
                quote = 0;
        } else if (tmpl[j] == '"' || tmpl[j] == '\'') {
            quote = tmpl[j];
        } else if (tmpl[j] == '}') {
            return j;
        }
    }
    return -1;
}

/* Adds every child of v (elements or member values). */
static int children(struct nodes *out, const cJSON *v)
{
    const cJSON *c;
    if (v == NULL || !(cJSON_IsArray(v) || cJSON_IsObject(v)))
        return 0;
    cJSON_ArrayForEach(c, v)
    {
        if (push(out, c) != 0)
            return SW_ENOMEM;
    }
    return 0;
}

/*
 * Evaluates the path expr[0..len) from `cur` (and `doc` for "$") into
 * *out. With cur == NULL and doc == NULL it only checks the syntax.
 */
static int eval_path(const char *tmpl, const char *expr, size_t len, const cJSON *cur,
                     const cJSON *doc, struct nodes *out, struct sw_error *err)
{
    const char *p = expr, *end = expr + len;
    struct nodes a = {0}, b = {0};
    int rc = 0;
    for (const char *q = p; q + 1 < end; q++)
        if (q[0] == '[' && q[1] == '?')
            return bad(err, tmpl, q, "filters ([?(...)]) are not supported");
    if (memchr(p, '(', len) != NULL)
        return bad(err, tmpl, p, "functions and script expressions are not supported");
    if (*p == '$') {
        cur = doc;
        p++;
    } else if (*p == '@') {
        p++;
    } else if (*p != '.' && *p != '[') {
        return bad(err, tmpl, p, "expected a path starting with '.', '@', '$' or '['");
    }
    if (cur != NULL && (rc = push(&a, cur)) != 0)
        goto done;
    while (p < end) {
        b.n = 0;
        if (p[0] == '.' && p + 1 < end && p[1] == '.') {
            rc = bad(err, tmpl, p, "recursive descent (..) is not supported");
            goto done;
        }
        if (p[0] == '.') {
            p++;
            if (p == end)
                break; /* "{.}": the current object */
            if (*p == '*') {
                p++;
                for (size_t i = 0; i < a.n && rc == 0; i++)
                    rc = children(&b, a.v[i]);
            } else if (*p == '[') {
                continue;
            } else {
                const char *s = p;
                while (p < end && (isalnum((unsigned char)*p) || *p == '_' || *p == '-'))
                    p++;
                if (p == s) {
                    rc = bad(err, tmpl, s, "expected a key name after '.'");
                    goto done;
                }
                char key[256];
                snprintf(key, sizeof(key), "%.*s", (int)(p - s), s);
                for (size_t i = 0; i < a.n && rc == 0; i++) {
                    const cJSON *v = cJSON_IsObject(a.v[i])
                                         ? cJSON_GetObjectItemCaseSensitive(a.v[i], key)
                                         : NULL;
                    if (v != NULL)
                        rc = push(&b, v);
                }
            }
        } else if (p[0] == '[') {
            const char *close = memchr(p, ']', (size_t)(end - p));
            if (close == NULL) {
                rc = bad(err, tmpl, p, "'[' without ']'");
                goto done;
            }
            const char *in = p + 1;
            size_t n = (size_t)(close - in);
            if (n > 0 && *in == '?') {
                rc = bad(err, tmpl, p, "filters ([?(...)]) are not supported");
                goto done;
            }
            if (n >= 2 && (*in == '\'' || *in == '"') && in[n - 1] == *in) {
                char key[256];
                snprintf(key, sizeof(key), "%.*s", (int)(n - 2), in + 1);
                for (size_t i = 0; i < a.n && rc == 0; i++) {
                    const cJSON *v = cJSON_IsObject(a.v[i])
                                         ? cJSON_GetObjectItemCaseSensitive(a.v[i], key)
                                         : NULL;
                    if (v != NULL)
                        rc = push(&b, v);
                }
            } else if (n == 1 && *in == '*') {
                for (size_t i = 0; i < a.n && rc == 0; i++)
                    rc = children(&b, a.v[i]);
            } else if (memchr(in, ':', n) != NULL) {
                rc = bad(err, tmpl, p, "slices ([a:b]) are not supported");
                goto done;
            } else if (memchr(in, ',', n) != NULL) {
                rc = bad(err, tmpl, p, "unions ([a,b]) are not supported");
                goto done;
            } else {
                size_t k = 0;
                long idx = 0;
                while (k < n && isdigit((unsigned char)in[k]) && idx < 100000000)
                    idx = idx * 10 + (in[k++] - '0');
                if (n == 0 || k != n) {
                    rc = bad(err, tmpl, p, "expected [N], [*] or ['key'] (no negative indexes)");
                    goto done;
                }
                for (size_t i = 0; i < a.n && rc == 0; i++) {
                    const cJSON *v =
                        cJSON_IsArray(a.v[i]) ? cJSON_GetArrayItem(a.v[i], (int)idx) : NULL;
                    if (v != NULL)
                        rc = push(&b, v);
                }
            }
            p = close + 1;
        } else {
            rc = bad(err, tmpl, p, "expected '.' or '[' in the path");
            goto done;
        }
        if (rc != 0)
            goto done;
        struct nodes t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < a.n && rc == 0; i++)
        rc = push(out, a.v[i]);
done:
    sw_free(a.v);
    sw_free(b.v);
    return rc;
}

static void print_value(FILE *out, const cJSON *v)
{
    if (cJSON_IsString(v)) {
        fputs(v->valuestring, out);
    } else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
        char *s = cJSON_PrintUnformatted(v);
        if (s != NULL)
            fputs(s, out);
        cJSON_free(s);
    } else {
        sw_cli_write_json(out, v, 0);
    }
}

/* Prints a {"..."} literal (between the quotes, escapes undone). */
static void print_literal(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < n) {
            c = s[++i];
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        }
        if (out != NULL)
            fputc(c, out);
    }
}

/* Trims blanks from both ends of [*s, *s + *n). */
static void trim(const char **s, size_t *n)
{
    while (*n > 0 && isspace((unsigned char)**s))
        (*s)++, (*n)--;
    while (*n > 0 && isspace((unsigned char)(*s)[*n - 1]))
        (*n)--;
}

/*
 * Runs tmpl[from..to) with `cur` as "." (out NULL: only checks). Returns
 * 0, SW_EINVAL or SW_ENOMEM.
 */
static int run(FILE *out, const char *tmpl, long from, long to, const cJSON *cur, const cJSON *doc,
               struct sw_error *err)
{
    long i = from;
    while (i < to) {
        if (tmpl[i] != '{') {
            if (tmpl[i] == '}')
                return bad(err, tmpl, tmpl + i, "'}' without '{'");
            if (out != NULL)
                fputc(tmpl[i], out);
            i++;
            continue;
        }
        long close = close_of(tmpl, i);
        if (close < 0 || close > to)
            return bad(err, tmpl, tmpl + i, "'{' without '}'");
        const char *e = tmpl + i + 1;
        size_t n = (size_t)(close - i - 1);
        trim(&e, &n);
        if (n == 0)
            return bad(err, tmpl, tmpl + i, "empty expression {}");
        if (n >= 2 && (e[0] == '"' || e[0] == '\'') && e[n - 1] == e[0]) {
            print_literal(out, e + 1, n - 2);
            i = close + 1;
            continue;
        }
        if (n == 3 && strncmp(e, "end", 3) == 0)
            return bad(err, tmpl, e, "{end} without {range}");
        if (n > 6 && strncmp(e, "range", 5) == 0 && isspace((unsigned char)e[5])) {
            /* Find the matching {end}. */
            long j = close + 1, body = close + 1, end_at = -1;
            int depth = 1;
            while (j < to) {
                if (tmpl[j] != '{') {
                    j++;
                    continue;
                }
                long c = close_of(tmpl, j);
                if (c < 0)
                    return bad(err, tmpl, tmpl + j, "'{' without '}'");
                const char *x = tmpl + j + 1;
                size_t xn = (size_t)(c - j - 1);
                trim(&x, &xn);
                if (xn > 6 && strncmp(x, "range", 5) == 0 && isspace((unsigned char)x[5]))
                    depth++;
                else if (xn == 3 && strncmp(x, "end", 3) == 0 && --depth == 0) {
                    end_at = j;
                    j = c + 1;
                    break;
                }
                j = c + 1;
            }
            if (end_at < 0)
                return bad(err, tmpl, e, "{range} without {end}");
            const char *pe = e + 6;
            size_t pn = n - 6;
            trim(&pe, &pn);
            struct nodes ns = {0};
            int rc = eval_path(tmpl, pe, pn, cur, doc, &ns, err);
            if (rc == 0 && out == NULL) {
                rc = run(NULL, tmpl, body, end_at, NULL, NULL, err);
            } else if (rc == 0) {
                /* One array: its elements. */
                if (ns.n == 1 && cJSON_IsArray(ns.v[0])) {
                    const cJSON *arr = ns.v[0];
                    ns.n = 0;
                    rc = children(&ns, arr);
                }
                for (size_t k = 0; k < ns.n && rc == 0; k++)
                    rc = run(out, tmpl, body, end_at, ns.v[k], doc, err);
            }
            sw_free(ns.v);
            if (rc != 0)
                return rc;
            i = j;
            continue;
        }
        struct nodes ns = {0};
        int rc = eval_path(tmpl, e, n, cur, doc, &ns, err);
        for (size_t k = 0; k < ns.n && rc == 0 && out != NULL; k++) {
            if (k > 0)
                fputc(' ', out);
            print_value(out, ns.v[k]);
        }
        sw_free(ns.v);
        if (rc != 0)
            return rc;
        i = close + 1;
    }
    return 0;
}

int sw_cli_jsonpath_check(const char *tmpl, struct sw_error *err)
{
    if (tmpl == NULL || tmpl[0] == '\0')
        return sw_error_set(err, SW_EINVAL,
                            "-o jsonpath: expected a template, e.g. jsonpath='{.items[*].name}'");
    return run(NULL, tmpl, 0, (long)strlen(tmpl), NULL, NULL, err);
}

int sw_cli_jsonpath_print(FILE *out, const char *tmpl, const cJSON *doc, struct sw_error *err)
{
    int rc = sw_cli_jsonpath_check(tmpl, err);
    if (rc != 0)
        return rc;
    return run(out, tmpl, 0, (long)strlen(tmpl), doc, doc, err);
}
