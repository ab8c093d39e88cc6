/* yamlnode.c - see yamlnode.h. */
#include "common/yamlnode.h"

#include <string.h>

const char *sw_yaml_kind(const yaml_node_t *n)
{
    if (n == NULL)
        return "nothing";
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

size_t sw_yaml_line(const yaml_node_t *n)
{
    return n != NULL ? n->start_mark.line + 1 : 0;
}

bool sw_yaml_is_null(const yaml_node_t *n)
{
    if (n == NULL || n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    size_t l = n->data.scalar.length;
    return l == 0 || (l == 1 && v[0] == '~') ||
           (l == 4 && (strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0));
}

bool sw_yaml_is_text(const yaml_node_t *n)
{
    return n != NULL && n->type == YAML_SCALAR_NODE && !sw_yaml_is_null(n) &&
           memchr(n->data.scalar.value, '\0', n->data.scalar.length) == NULL;
}

const char *sw_yaml_not_text(const yaml_node_t *n)
{
    if (n != NULL && n->type == YAML_SCALAR_NODE)
        return sw_yaml_is_null(n) ? "null" : "a string with a NUL character";
    return sw_yaml_kind(n);
}

bool sw_yaml_key_eq(const yaml_node_t *k, const char *name)
{
    size_t l = strlen(name);
    return k != NULL && k->type == YAML_SCALAR_NODE && k->data.scalar.length == l &&
           memcmp(k->data.scalar.value, name, l) == 0;
}
