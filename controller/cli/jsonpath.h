/*
 * jsonpath.h - the subset of kubectl's JSONPath that `-o jsonpath=TEMPLATE`
 * takes.
 *
 * A template is text with expressions in braces, evaluated against the
 * listing as `-o json` prints it ({"items": [...]}):
 *  - {.a.b}, {.items[0].name}, {.items[*].name}, {['a-b']}: values at a
 *    path from the current object ("." and "@" are the current object,
 *    "$" the document); a [*] takes every element, so a path may give
 *    several values, printed separated by single spaces;
 *  - {range EXPR}...{end}: the text between, once per value of EXPR (the
 *    elements of EXPR when it is one array), with "." that value;
 *  - {"text"}: the text, with \n, \t, \" and \\ escapes;
 *  - text outside braces is printed as it is.
 * A string value is printed as it is, a number in its shortest form, true,
 * false, null, and an object or array as compact JSON; a missing key
 * prints nothing, as kubectl's -o jsonpath. Filters ([?(...)]), recursive
 * descent (..), slices ([1:3]), unions ([a,b]) and functions are refused
 * with a message naming them.
 */
#ifndef SW_CONTROLLER_CLI_JSONPATH_H
#define SW_CONTROLLER_CLI_JSONPATH_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "common/error.h"

/**
 * Checks `tmpl` without evaluating it. Returns 0, or SW_EINVAL with a
 * message naming the position and what is wrong or unsupported.
 */
int sw_cli_jsonpath_check(const char *tmpl, struct sw_error *err);

/**
 * Prints `tmpl` evaluated against `doc` (borrowed) to `out`. Returns 0,
 * SW_EINVAL as sw_cli_jsonpath_check, or SW_ENOMEM.
 */
int sw_cli_jsonpath_print(FILE *out, const char *tmpl, const cJSON *doc, struct sw_error *err);

#endif
