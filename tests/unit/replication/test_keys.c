/* Tests for replication/replicator.c's check of listed keys: only keys
 * under the prefix asked for, and none with a "." or ".." segment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "replication/replicator.h"

static void test_keys(void **state)
{
    (void)state;
    assert_null(sw_repl_key_problem("out/attempt-1/", "out/attempt-1/model.bin"));
    assert_null(sw_repl_key_problem("out/attempt-1/", "out/attempt-1/a/b/c..d"));
    assert_null(sw_repl_key_problem("", "x/...")); /* "..." is a name, not a step up */
    assert_null(sw_repl_key_problem("", "x//y"));  /* empty segments are S3 names */
    /* A pod's key that climbs out of its prefix. */
    assert_non_null(sw_repl_key_problem("out/attempt-1/", "out/attempt-1/../../team-b/x"));
    assert_non_null(sw_repl_key_problem("out/attempt-1/", "out/attempt-1/./x"));
    assert_non_null(sw_repl_key_problem("out/", "out/.."));
    /* A listing that answers with another prefix's key (shorter, or beside). */
    assert_non_null(sw_repl_key_problem("out/attempt-1/", "out/"));
    assert_non_null(sw_repl_key_problem("out/attempt-1/", "other/attempt-1/x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_keys)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
