/* Tests for clusters/rest.c's paths: every segment built from a name is
 * one segment, escaped, and never a step out of its collection. Pure: no
 * server is contacted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "clusters/rest.h"

static void test_segment_escapes(void **state)
{
    (void)state;
    char buf[128] = "/api/v1/namespaces";
    assert_int_equal(sw_kube_path_segment(buf, sizeof(buf), "team-a"), 0);
    assert_string_equal(buf, "/api/v1/namespaces/team-a");
    /* RFC 3986's unreserved characters stay, every other byte is %XX. */
    assert_int_equal(sw_kube_path_segment(buf, sizeof(buf), "a.B_c~9-"), 0);
    assert_string_equal(buf, "/api/v1/namespaces/team-a/a.B_c~9-");
    strcpy(buf, "");
    assert_int_equal(sw_kube_path_segment(buf, sizeof(buf), "a b?c#d%e&f=\"\n\xc3\xa9"), 0);
    assert_string_equal(buf, "/a%20b%3Fc%23d%25e%26f%3D%22%0A%C3%A9");
    /* Dots inside a segment are only characters. */
    strcpy(buf, "");
    assert_int_equal(sw_kube_path_segment(buf, sizeof(buf), "..."), 0);
    assert_string_equal(buf, "/...");
    strcpy(buf, "");
    assert_int_equal(sw_kube_path_segment(buf, sizeof(buf), "%2e%2e"), 0);
    assert_string_equal(buf, "/%252e%252e");
}

/* What the API server would read as a step or as two segments: refused,
 * and buf left as it was. */
static void test_segment_refuses(void **state)
{
    (void)state;
    const char *bad[] = {"", ".", "..", "a/b", "../../kube-system", "/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        char buf[64] = "/api/v1";
        if (sw_kube_path_segment(buf, sizeof(buf), bad[i]) != SW_EINVAL)
            fail_msg("segment \"%s\" accepted", bad[i]);
        assert_string_equal(buf, "/api/v1");
    }
    char buf[64] = "/api/v1";
    assert_int_equal(sw_kube_path_segment(buf, sizeof(buf), NULL), SW_EINVAL);
    assert_string_equal(buf, "/api/v1");
}

/* Exactly full and one byte short. */
static void test_segment_size(void **state)
{
    (void)state;
    char buf[8] = "/ab";
    assert_int_equal(sw_kube_path_segment(buf, sizeof(buf), "cde"), 0); /* "/ab/cde" + NUL */
    assert_string_equal(buf, "/ab/cde");
    char small[8] = "/ab";
    assert_int_equal(sw_kube_path_segment(small, sizeof(small), "cdef"), SW_ETOOBIG);
    assert_string_equal(small, "/ab");
    /* An escape that does not fit whole is not written in part. */
    char esc[9] = "/ab";
    assert_int_equal(sw_kube_path_segment(esc, sizeof(esc), "c d"), SW_ETOOBIG);
    assert_string_equal(esc, "/ab");
    char esc2[10] = "/ab";
    assert_int_equal(sw_kube_path_segment(esc2, sizeof(esc2), "c d"), 0);
    assert_string_equal(esc2, "/ab/c%20d");
}

/* The typed helpers' paths go through it: "." and ".." are no names. */
static void test_kube_path(void **state)
{
    (void)state;
    char buf[256];
    assert_int_equal(sw_kube_path(SW_KIND_JOB, "team-a", "train-7", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/apis/batch/v1/namespaces/team-a/jobs/train-7");
    assert_int_equal(sw_kube_path(SW_KIND_POD, NULL, NULL, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/api/v1/pods");
    assert_int_equal(sw_kube_path(SW_KIND_NODE, "ignored", "node-1.example", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/api/v1/nodes/node-1.example");
    assert_int_equal(sw_kube_path(SW_KIND_JOB, "team-a", NULL, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/apis/batch/v1/namespaces/team-a/jobs");

    assert_int_equal(sw_kube_path(SW_KIND_JOB, "team-a", "..", buf, sizeof(buf)), SW_EINVAL);
    assert_int_equal(sw_kube_path(SW_KIND_JOB, "team-a", ".", buf, sizeof(buf)), SW_EINVAL);
    assert_int_equal(sw_kube_path(SW_KIND_JOB, "..", "x", buf, sizeof(buf)), SW_EINVAL);
    assert_int_equal(sw_kube_path(SW_KIND_NAMESPACE, NULL, "..", buf, sizeof(buf)), SW_EINVAL);
    assert_int_equal(sw_kube_path(SW_KIND_JOB, "team-a", "a/b", buf, sizeof(buf)), SW_EINVAL);
    assert_int_equal(sw_kube_path(SW_KIND_JOB, "team-a", "A", buf, sizeof(buf)), SW_EINVAL);
    assert_int_equal(sw_kube_path(SW_KIND_JOB, NULL, "x", buf, sizeof(buf)), SW_EINVAL);
    char tiny[20];
    assert_int_equal(sw_kube_path(SW_KIND_JOB, "team-a", "x", tiny, sizeof(tiny)), SW_ETOOBIG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segment_escapes),
        cmocka_unit_test(test_segment_refuses),
        cmocka_unit_test(test_segment_size),
        cmocka_unit_test(test_kube_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
