/* Tests for controller/cli/plot.c: the pictures hold one mark per run,
 * frontier marks filled, names escaped, and usage bands stacked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/cli/plot.h"

/* Renders into memory through a temporary file; the caller frees. */
static char *render(int (*draw)(FILE *, const void *), const void *arg)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(draw(f, arg), 0);
    long n = ftell(f);
    char *buf = calloc((size_t)n + 1, 1);
    assert_non_null(buf);
    rewind(f);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return buf;
}

static size_t count(const char *s, const char *needle)
{
    size_t k = 0;
    for (const char *p = strstr(s, needle); p != NULL; p = strstr(p + 1, needle))
        k++;
    return k;
}

static const struct sw_plot_point pts[] = {
    {"cost-aware", "cost-aware", 60000, 31000, 18000, true},
    {"burst-now", "burst-now", 99000, 30000, 17000, true},
    {"starburst:0.25", "starburst", 88000, 35000, 26000, false},
    {"a<b&c", "greedy", 86000, 31100, 17200, false},
};

static int draw_frontier(FILE *f, const void *arg)
{
    (void)arg;
    return sw_plot_frontier(f, pts, 4, "t");
}

static void test_frontier(void **state)
{
    (void)state;
    char *svg = render(draw_frontier, NULL);
    assert_true(strncmp(svg, "<svg ", 5) == 0);
    assert_non_null(strstr(svg, "</svg>\n"));
    /* Two panels of four marks, plus one legend mark per policy shown. */
    assert_int_equal(count(svg, "<circle cx="), 2 * 4 + 4);
    /* Frontier marks are filled with their colour, the others hollow. */
    assert_int_equal(count(svg, "fill='white' stroke="), 2 * 2);
    assert_int_equal(count(svg, "<polyline"), 2);
    assert_non_null(strstr(svg, "<title>a&lt;b&amp;c</title>"));
    assert_null(strstr(svg, "a<b"));
    free(svg);
}

static const struct sw_sim_usage use[] = {
    {0, {16, 0, 0}}, {3600, {16, 4, 0}}, {7200, {16, 4, 8}}, {10800, {10, 0, 0}}};

static int draw_usage(FILE *f, const void *arg)
{
    (void)arg;
    return sw_plot_usage(f, use, 4, "u");
}

static void test_usage(void **state)
{
    (void)state;
    char *svg = render(draw_usage, NULL);
    /* Three stacked bands, one vertex per sample plus two to close. */
    assert_int_equal(count(svg, "<polygon"), 3);
    const char *pts_at = strstr(strstr(svg, "<polygon"), "points='") + 8;
    const char *end = strchr(pts_at, '\'');
    assert_non_null(end);
    size_t commas = 0;
    for (const char *p = pts_at; p < end; p++)
        commas += *p == ',';
    assert_int_equal(commas, 4 + 2);
    FILE *f = tmpfile();
    assert_non_null(f);
    assert_int_equal(sw_plot_usage(f, use, 1, "one"), -1); /* nothing to draw */
    fclose(f);
    free(svg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frontier),
        cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
