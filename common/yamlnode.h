/*
 * yamlnode.h - small questions about a libyaml document node, asked alike
 * by every reader of a YAML file (cluster specs, the hub's configuration,
 * kubeconfigs), so that their errors name things the same way.
 */
#ifndef SW_COMMON_YAMLNODE_H
#define SW_COMMON_YAMLNODE_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

/** "a scalar", "a list", "a mapping", or "nothing" (NULL too), for "got ...". */
const char *sw_yaml_kind(const yaml_node_t *n);

/** The node's line, counted from 1; 0 for NULL. */
size_t sw_yaml_line(const yaml_node_t *n);

/** A plain scalar spelled as YAML's null: "", "~", "null", "Null", "NULL". */
bool sw_yaml_is_null(const yaml_node_t *n);

/** A scalar that is text: not null, no NUL byte inside. */
bool sw_yaml_is_text(const yaml_node_t *n);

/** What a node that is not usable text is, for "expected X, got Y". */
const char *sw_yaml_not_text(const yaml_node_t *n);

/** Whether `k` is a scalar spelled exactly `name`. */
bool sw_yaml_key_eq(const yaml_node_t *k, const char *name);

#endif
