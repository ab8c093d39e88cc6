/* nsselect.c - see nsselect.h. */
#include "controller/hub/nsselect.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* A letter or digit; the characters a label name or value may hold. */
static bool alnum(char c)
{
    return (unsigned char)c < 0x80 && isalnum((unsigned char)c); /* isascii is not C11 */
}
static bool word_char(char c)
{
    return alnum(c) || c == '-' || c == '_' || c == '.';
}

/* A label value: empty, or at most 63 of [A-Za-z0-9-_.], beginning and
 * ending with a letter or digit. */
static bool valid_value(const char *v, size_t n)
{
    if (n == 0)
        return true;
    if (n > 63 || !alnum(v[0]) || !alnum(v[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!word_char(v[i]))
            return false;
    return true;
}

/* A DNS subdomain of at most 253 characters: dot-separated labels of
 * [a-z0-9-], each beginning and ending with a letter or digit. */
static bool valid_prefix(const char *p, size_t n)
{
    if (n == 0 || n > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '.') {
            char c = p[i];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                return false;
            continue;
        }
        if (i == start || p[start] == '-' || p[i - 1] == '-' || i - start > 63)
            return false;
        start = i + 1;
    }
    return true;
}

/* A label key: [prefix/]name. */
static bool valid_key(const char *k, size_t n)
{
    const char *slash = memchr(k, '/', n);
    if (slash == NULL)
        return n > 0 && valid_value(k, n);
    size_t pn = (size_t)(slash - k), nn = n - pn - 1;
    return valid_prefix(k, pn) && nn > 0 && valid_value(slash + 1, nn);
}

static bool key_char(char c)
{
    return word_char(c) || c == '/';
}

struct scan {
    const char *s;
    size_t i;
    int term; /* 1-based, for messages */
    size_t term_start;
    struct sw_error *err;
};

static void blanks(struct scan *sc)
{
    while (sc->s[sc->i] == ' ' || sc->s[sc->i] == '\t')
        sc->i++;
}

/* An error naming the current term (its text up to the next comma outside
 * a set, at most 80 bytes) and `what` was expected. */
static int bad(struct scan *sc, const char *what)
{
    size_t end = sc->term_start;
    int depth = 0;
    while (sc->s[end] != '\0' && end - sc->term_start < 80 && (depth > 0 || sc->s[end] != ',')) {
        depth += sc->s[end] == '(' ? 1 : sc->s[end] == ')' ? -1 : 0;
        end++;
    }
    while (end > sc->term_start && (sc->s[end - 1] == ' ' || sc->s[end - 1] == '\t'))
        end--;
    return sw_error_set(sc->err, SW_EINVAL, "term %d (\"%.*s\"): %s", sc->term,
                        (int)(end - sc->term_start), sc->s + sc->term_start, what);
}

/* Reads a run of `ok` characters; its start and length in *at, *n. */
static void run(struct scan *sc, bool (*ok)(char), size_t *at, size_t *n)
{
    *at = sc->i;
    while (sc->s[sc->i] != '\0' && ok(sc->s[sc->i]))
        sc->i++;
    *n = sc->i - *at;
}

static int key_of(struct scan *sc, struct sw_nssel_term *t)
{
    size_t at, n;
    run(sc, key_char, &at, &n);
    if (n == 0)
        return bad(sc, "expected a label key");
    if (!valid_key(sc->s + at, n))
        return bad(sc, "expected a label key ([prefix/]name: a DNS subdomain of at most 253 "
                       "characters, a name of at most 63 letters, digits, '-', '_' or '.' "
                       "beginning and ending with a letter or digit)");
    memcpy(t->key, sc->s + at, n);
    t->key[n] = '\0';
    return 0;
}

static int value_of(struct scan *sc, struct sw_nssel_term *t)
{
    size_t at, n;
    blanks(sc);
    run(sc, word_char, &at, &n);
    if (!valid_value(sc->s + at, n))
        return bad(sc, "expected a label value (at most 63 letters, digits, '-', '_' or '.', "
                       "beginning and ending with a letter or digit, or empty)");
    if (t->nvalues >= SW_NSSEL_MAX_VALUES)
        return bad(sc, "more than 16 values in a set");
    memcpy(t->values[t->nvalues], sc->s + at, n);
    t->values[t->nvalues][n] = '\0';
    t->nvalues++;
    blanks(sc);
    return 0;
}

/* "(v1, v2)" after in or notin. */
static int set_of(struct scan *sc, struct sw_nssel_term *t, const char *op)
{
    blanks(sc);
    if (sc->s[sc->i] != '(') {
        char why[64];
        snprintf(why, sizeof(why), "expected \"(\" after \"%s\"", op);
        return bad(sc, why);
    }
    sc->i++;
    for (;;) {
        int rc = value_of(sc, t);
        if (rc != 0)
            return rc;
        if (t->values[t->nvalues - 1][0] == '\0')
            return bad(sc, "expected a value in the set, not an empty one");
        if (sc->s[sc->i] == ',') {
            sc->i++;
            continue;
        }
        if (sc->s[sc->i] == ')') {
            sc->i++;
            return 0;
        }
        return bad(sc, "expected \",\" or \")\" in the set");
    }
}

/* Whether the word `w` follows at the scan, then a blank or "(". */
static bool keyword(const struct scan *sc, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(sc->s + sc->i, w, n) != 0)
        return false;
    char c = sc->s[sc->i + n];
    return c == ' ' || c == '\t' || c == '(';
}

static int term_of(struct scan *sc, struct sw_nssel_term *t)
{
    memset(t, 0, sizeof(*t));
    blanks(sc);
    sc->term_start = sc->i;
    if (sc->s[sc->i] == '!' && sc->s[sc->i + 1] != '=') {
        sc->i++;
        blanks(sc);
        t->op = SW_NSSEL_ABSENT;
        int rc = key_of(sc, t);
        blanks(sc);
        return rc;
    }
    int rc = key_of(sc, t);
    if (rc != 0)
        return rc;
    blanks(sc);
    char c = sc->s[sc->i];
    if (c == '\0' || c == ',') {
        t->op = SW_NSSEL_EXISTS;
        return 0;
    }
    if (c == '=' || (c == '!' && sc->s[sc->i + 1] == '=')) {
        t->op = c == '=' ? SW_NSSEL_EQ : SW_NSSEL_NE;
        sc->i += c == '=' && sc->s[sc->i + 1] == '=' ? 2 : (c == '!' ? 2 : 1);
        return value_of(sc, t);
    }
    if (keyword(sc, "in")) {
        sc->i += 2;
        t->op = SW_NSSEL_IN;
        rc = set_of(sc, t, "in");
    } else if (keyword(sc, "notin")) {
        sc->i += 5;
        t->op = SW_NSSEL_NOTIN;
        rc = set_of(sc, t, "notin");
    } else {
        return bad(sc, "expected =, ==, !=, in (...), notin (...) or the end of the term after "
                       "the key");
    }
    blanks(sc);
    return rc;
}

int sw_nssel_parse(const char *text, struct sw_nssel *out, struct sw_error *err)
{
    memset(out, 0, sizeof(*out));
    if (strlen(text) > SW_NSSEL_TEXT_MAX)
        return sw_error_set(err, SW_EINVAL, "%zu bytes, expected at most %d", strlen(text),
                            SW_NSSEL_TEXT_MAX);
    snprintf(out->text, sizeof(out->text), "%s", text);
    struct scan sc = {.s = out->text, .err = err};
    blanks(&sc);
    if (sc.s[sc.i] == '\0')
        return 0; /* the empty selector: every namespace */
    for (;;) {
        sc.term++;
        if (out->nterms >= SW_NSSEL_MAX_TERMS) {
            sc.term_start = sc.i;
            return bad(&sc, "more than 16 terms");
        }
        int rc = term_of(&sc, &out->terms[out->nterms]);
        if (rc != 0)
            return rc;
        out->nterms++;
        if (sc.s[sc.i] == '\0')
            return 0;
        if (sc.s[sc.i] != ',')
            return bad(&sc, "expected \",\" or the end of the selector after the term");
        sc.i++;
    }
}

/* The string value of label `key` in `labels`: 1 and *v when it is there
 * once as a string, 0 when it is absent, -1 when it cannot be judged (not
 * a string, or given twice). */
static int label(const cJSON *labels, const char *key, const char **v)
{
    int found = 0;
    const cJSON *l;
    *v = NULL;
    cJSON_ArrayForEach(l, labels)
    {
        if (l->string == NULL || strcmp(l->string, key) != 0)
            continue;
        if (found || !cJSON_IsString(l) || l->valuestring == NULL)
            return -1;
        *v = l->valuestring;
        found = 1;
    }
    return found;
}

static bool in_set(const struct sw_nssel_term *t, const char *v)
{
    for (size_t i = 0; i < t->nvalues; i++)
        if (strcmp(t->values[i], v) == 0)
            return true;
    return false;
}

bool sw_nssel_match(const struct sw_nssel *s, const cJSON *labels)
{
    if (s->nterms == 0)
        return true;
    if (labels != NULL && !cJSON_IsObject(labels))
        return false;
    for (size_t i = 0; i < s->nterms; i++) {
        const struct sw_nssel_term *t = &s->terms[i];
        const char *v;
        int has = labels != NULL ? label(labels, t->key, &v) : 0;
        if (has < 0)
            return false;
        bool ok;
        switch (t->op) {
        case SW_NSSEL_EQ:
            ok = has && strcmp(v, t->values[0]) == 0;
            break;
        case SW_NSSEL_NE:
            ok = !has || strcmp(v, t->values[0]) != 0;
            break;
        case SW_NSSEL_IN:
            ok = has && in_set(t, v);
            break;
        case SW_NSSEL_NOTIN:
            ok = !has || !in_set(t, v);
            break;
        case SW_NSSEL_EXISTS:
            ok = has;
            break;
        case SW_NSSEL_ABSENT:
        default:
            ok = !has;
            break;
        }
        if (!ok)
            return false;
    }
    return true;
}

enum sw_nssel_verdict sw_nssel_answer(const struct sw_nssel *s, const char *ns, int rc, int status,
                                      const cJSON *body, const char **why)
{
    if (rc == 0) {
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(body, "metadata");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
        if (!cJSON_IsString(name) || ns == NULL || strcmp(name->valuestring, ns) != 0) {
            *why = "the API server answered with another object";
            return SW_NSSEL_NOT_SERVED;
        }
        *why = "its labels";
        return sw_nssel_match(s, cJSON_GetObjectItemCaseSensitive(md, "labels"))
                   ? SW_NSSEL_SERVED
                   : SW_NSSEL_NOT_SERVED;
    }
    if (status == 404 || status == 403) {
        *why = status == 404 ? "not found" : "forbidden";
        return SW_NSSEL_NOT_SERVED;
    }
    *why = "no answer";
    return SW_NSSEL_NO_ANSWER;
}
