/*
 * Tests for controller/hub/nsselect.c: the hub's namespaceSelector parsed
 * as kubectl reads a label selector, and matched against a namespace's
 * labels, one row per case; bad selectors refused naming the term and
 * what was expected; labels a hostile answer could carry match nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "controller/hub/nsselect.h"

struct row {
    const char *selector;
    const char *labels; /* a JSON object, or NULL for a namespace without labels */
    bool match;
};

static const struct row ROWS[] = {
    /* The empty selector: every namespace, labelled or not. */
    {"", NULL, true},
    {"  ", "{\"a\":\"b\"}", true},
    /* Equality. */
    {"spillway.io/test=burst", "{\"spillway.io/test\":\"burst\"}", true},
    {"spillway.io/test==burst", "{\"spillway.io/test\":\"burst\"}", true},
    {"spillway.io/test=burst", "{\"spillway.io/test\":\"crash\"}", false},
    {"spillway.io/test=burst", "{\"other\":\"burst\"}", false},
    {"spillway.io/test=burst", NULL, false},
    /* Keys and values are case-sensitive, as Kubernetes' are. */
    {"team=cv", "{\"team\":\"CV\"}", false},
    {"Team=cv", "{\"team\":\"cv\"}", false},
    /* Inequality: absent or another value. */
    {"team!=cv", "{\"team\":\"nlp\"}", true},
    {"team!=cv", NULL, true},
    {"team!=cv", "{\"team\":\"cv\"}", false},
    /* Sets. */
    {"team in (cv, nlp)", "{\"team\":\"nlp\"}", true},
    {"team in (cv,nlp)", "{\"team\":\"recsys\"}", false},
    {"team in (cv)", NULL, false},
    {"team notin (cv,nlp)", "{\"team\":\"recsys\"}", true},
    {"team notin (cv,nlp)", NULL, true},
    {"team notin (cv,nlp)", "{\"team\":\"cv\"}", false},
    {"team in(cv)", "{\"team\":\"cv\"}", true},
    /* Existence. */
    {"spillway.io/hub", "{\"spillway.io/hub\":\"\"}", true},
    {"spillway.io/hub", "{\"x\":\"y\"}", false},
    {"!spillway.io/hub", "{\"x\":\"y\"}", true},
    {"!spillway.io/hub", "{\"spillway.io/hub\":\"a\"}", false},
    /* An empty value is a value. */
    {"tier=", "{\"tier\":\"\"}", true},
    {"tier=", "{\"tier\":\"gold\"}", false},
    /* Every term must hold. */
    {"hub=a, team in (cv,nlp), !frozen", "{\"hub\":\"a\",\"team\":\"cv\"}", true},
    {"hub=a, team in (cv,nlp), !frozen", "{\"hub\":\"a\",\"team\":\"cv\",\"frozen\":\"1\"}", false},
    {"hub=a,team in (cv,nlp)", "{\"hub\":\"b\",\"team\":\"cv\"}", false},
    /* What a hostile or broken answer could carry matches nothing: a
     * label of another type, a label given twice, labels that are not an
     * object. (A label no term names does not matter.) */
    {"team!=cv", "{\"team\":5}", false},
    {"team notin (cv)", "{\"team\":null}", false},
    {"team=cv", "{\"team\":\"cv\",\"team\":\"cv\"}", false},
    {"team!=cv", "[\"team\"]", false},
    {"!team", "\"team=cv\"", false},
    {"team=cv", "{\"team\":\"cv\",\"other\":{\"x\":1}}", true},
};

static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(ROWS) / sizeof(ROWS[0]); i++) {
        const struct row *r = &ROWS[i];
        struct sw_nssel s;
        struct sw_error err = {0};
        if (sw_nssel_parse(r->selector, &s, &err) != 0)
            fail_msg("row %zu: \"%s\" refused: %s", i, r->selector, err.msg);
        cJSON *labels = r->labels ? cJSON_Parse(r->labels) : NULL;
        if (r->labels != NULL && labels == NULL)
            fail_msg("row %zu: bad test JSON %s", i, r->labels);
        bool got = sw_nssel_match(&s, labels);
        cJSON_Delete(labels);
        if (got != r->match)
            fail_msg("row %zu: \"%s\" on %s: %s, expected %s", i, r->selector,
                     r->labels ? r->labels : "no labels", got ? "match" : "no match",
                     r->match ? "match" : "no match");
    }
}

static void test_parsed_terms(void **state)
{
    (void)state;
    struct sw_nssel s;
    struct sw_error err = {0};
    assert_int_equal(sw_nssel_parse(" a.example/hub == x , t notin ( p , q ) ,!z, y", &s, &err), 0);
    assert_int_equal(s.nterms, 4);
    assert_int_equal(s.terms[0].op, SW_NSSEL_EQ);
    assert_string_equal(s.terms[0].key, "a.example/hub");
    assert_int_equal(s.terms[0].nvalues, 1);
    assert_string_equal(s.terms[0].values[0], "x");
    assert_int_equal(s.terms[1].op, SW_NSSEL_NOTIN);
    assert_int_equal(s.terms[1].nvalues, 2);
    assert_string_equal(s.terms[1].values[1], "q");
    assert_int_equal(s.terms[2].op, SW_NSSEL_ABSENT);
    assert_string_equal(s.terms[2].key, "z");
    assert_int_equal(s.terms[3].op, SW_NSSEL_EXISTS);
    assert_string_equal(s.text, " a.example/hub == x , t notin ( p , q ) ,!z, y");
}

struct bad_row {
    const char *selector;
    const char *msg; /* a part of the error message */
};

static const struct bad_row BAD[] = {
    {"team in cv", "term 1 (\"team in cv\"): expected \"(\" after \"in\""},
    {"a=b,team in (cv", "term 2 (\"team in (cv\"): expected \",\" or \")\" in the set"},
    {"team in ()", "expected a value in the set, not an empty one"},
    {"team in (cv,)", "expected a value in the set, not an empty one"},
    {"a=b,,c", "term 2 (\"\"): expected a label key"},
    {"a=b,", "term 2 (\"\"): expected a label key"},
    {"=b", "term 1 (\"=b\"): expected a label key"},
    {"-a=b", "term 1 (\"-a=b\"): expected a label key ([prefix/]name"},
    {"Example.com/a=b", "expected a label key"},
    {"example.com/=b", "expected a label key"},
    {"a/b/c=d", "expected a label key"},
    {"a=-b", "expected a label value"},
    {"a=b c", "term 1 (\"a=b c\"): expected \",\" or the end of the selector"},
    {"a>1", "expected =, ==, !=, in (...), notin (...)"},
    {"a=b;c", "expected \",\" or the end of the selector"},
    {"a=\xc3\xa9", "expected \",\" or the end of the selector"},
    {"a=0123456789012345678901234567890123456789012345678901234567890123",
     "expected a label value"},
    {"a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,o=15,p=16,q=17",
     "term 17 (\"q=17\"): more than 16 terms"},
    {"a in (1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17)", "more than 16 values in a set"},
};

static void test_bad(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(BAD) / sizeof(BAD[0]); i++) {
        struct sw_nssel s;
        struct sw_error err = {0};
        int rc = sw_nssel_parse(BAD[i].selector, &s, &err);
        if (rc != SW_EINVAL)
            fail_msg("row %zu: \"%s\" gave %d, expected SW_EINVAL", i, BAD[i].selector, rc);
        if (strstr(err.msg, BAD[i].msg) == NULL)
            fail_msg("row %zu: \"%s\": message \"%s\" lacks \"%s\"", i, BAD[i].selector, err.msg,
                     BAD[i].msg);
    }
}

/* At the limits: 16 terms, 16 values, a 253-byte prefix, 63-byte names and
 * values, 511 bytes of text; one more of any is refused. */
static void test_limits(void **state)
{
    (void)state;
    struct sw_nssel s;
    struct sw_error err = {0};
    char buf[1024];
    char prefix[254], name[64], value[64];
    /* 253 bytes: labels of 63 and 61 characters, dot-separated. */
    memset(prefix, 'p', 253);
    prefix[63] = prefix[127] = prefix[191] = '.';
    prefix[253] = '\0';
    memset(name, 'n', 63);
    name[63] = '\0';
    memset(value, 'v', 63);
    value[63] = '\0';
    snprintf(buf, sizeof(buf), "%s/%s=%s", prefix, name, value);
    assert_int_equal(sw_nssel_parse(buf, &s, &err), 0);
    assert_string_equal(s.terms[0].key + 254, name);
    snprintf(buf, sizeof(buf), "%sp/%s=%s", prefix, name, value);
    assert_int_equal(sw_nssel_parse(buf, &s, &err), SW_EINVAL);
    snprintf(buf, sizeof(buf), "%s/%sn=%s", prefix, name, value);
    assert_int_equal(sw_nssel_parse(buf, &s, &err), SW_EINVAL);

    assert_int_equal(sw_nssel_parse("a in (1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)", &s, &err), 0);
    assert_int_equal(s.terms[0].nvalues, 16);
    assert_int_equal(
        sw_nssel_parse("a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,o=15,p=16", &s,
                       &err),
        0);
    assert_int_equal(s.nterms, 16);

    memset(buf, ' ', 511);
    buf[509] = 'a';
    buf[510] = 'b';
    buf[511] = '\0';
    assert_int_equal(sw_nssel_parse(buf, &s, &err), 0);
    assert_int_equal(s.nterms, 1);
    buf[511] = ' ';
    buf[512] = '\0';
    assert_int_equal(sw_nssel_parse(buf, &s, &err), SW_EINVAL);
    assert_non_null(strstr(err.msg, "512 bytes, expected at most 511"));
}

/* One answer to GET namespace: served, not served, or no answer (the last
 * verdict stands). */
static void test_answer(void **state)
{
    (void)state;
    struct sw_nssel s;
    struct sw_error err = {0};
    assert_int_equal(sw_nssel_parse("spillway.io/hub=a", &s, &err), 0);
    struct {
        int rc, status;
        const char *body;
        enum sw_nssel_verdict v;
        const char *why;
    } rows[] = {
        {0, 200, "{\"metadata\":{\"name\":\"team\",\"labels\":{\"spillway.io/hub\":\"a\"}}}",
         SW_NSSEL_SERVED, "its labels"},
        {0, 200, "{\"metadata\":{\"name\":\"team\",\"labels\":{\"spillway.io/hub\":\"b\"}}}",
         SW_NSSEL_NOT_SERVED, "its labels"},
        {0, 200, "{\"metadata\":{\"name\":\"team\"}}", SW_NSSEL_NOT_SERVED, "its labels"},
        /* Another object, or none: not served. */
        {0, 200, "{\"metadata\":{\"name\":\"other\",\"labels\":{\"spillway.io/hub\":\"a\"}}}",
         SW_NSSEL_NOT_SERVED, "another object"},
        {0, 200, "{\"metadata\":{\"name\":7}}", SW_NSSEL_NOT_SERVED, "another object"},
        {0, 200, NULL, SW_NSSEL_NOT_SERVED, "another object"},
        /* Labels that are not an object of strings: not served. */
        {0, 200, "{\"metadata\":{\"name\":\"team\",\"labels\":[\"spillway.io/hub\"]}}",
         SW_NSSEL_NOT_SERVED, "its labels"},
        /* Gone or not ours to read: not served. */
        {-1, 404, NULL, SW_NSSEL_NOT_SERVED, "not found"},
        {-1, 403, "{\"kind\":\"Status\"}", SW_NSSEL_NOT_SERVED, "forbidden"},
        /* No answer: the last verdict stands. */
        {-1, 500, NULL, SW_NSSEL_NO_ANSWER, "no answer"},
        {-1, 503, NULL, SW_NSSEL_NO_ANSWER, "no answer"},
        {-1, 0, NULL, SW_NSSEL_NO_ANSWER, "no answer"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        cJSON *b = rows[i].body ? cJSON_Parse(rows[i].body) : NULL;
        const char *why = NULL;
        enum sw_nssel_verdict v = sw_nssel_answer(&s, "team", rows[i].rc, rows[i].status, b, &why);
        if (v != rows[i].v || why == NULL || strstr(why, rows[i].why) == NULL)
            fail_msg("row %zu: verdict %d (%s), expected %d (%s)", i, (int)v, why ? why : "(null)",
                     (int)rows[i].v, rows[i].why);
        cJSON_Delete(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),   cmocka_unit_test(test_parsed_terms),
        cmocka_unit_test(test_bad),    cmocka_unit_test(test_limits),
        cmocka_unit_test(test_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
