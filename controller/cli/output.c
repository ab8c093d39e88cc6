/*
 * output.c - the -o printer: aligned tables, and JSON and YAML written
 * here rather than by cJSON_Print, so that indentation and number forms are
 * the same on every machine and a YAML string is always read back as the
 * same string.
 */
#include "controller/cli/output.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/json.h"
#include "controller/cli/jsonpath.h"

static const char *const format_names[] = {"table", "wide", "json",    "yaml",
                                           "csv",   "name", "jsonpath"};
#define NFORMATS (sizeof(format_names) / sizeof(format_names[0]))

/* Set once by spillctl (sw_cli_print_options). */
static int no_headers;
static const char *jsonpath_template;

void sw_cli_print_options(int no_headers_, const char *jsonpath)
{
    no_headers = no_headers_;
    jsonpath_template = jsonpath;
}

int sw_cli_format_parse2(const char *s, enum sw_cli_format *out, const char **tmpl,
                         struct sw_error *err)
{
    if (tmpl != NULL)
        *tmpl = NULL;
    if (s != NULL && strncmp(s, "jsonpath=", 9) == 0) {
        if (sw_cli_jsonpath_check(s + 9, err) != 0)
            return SW_EINVAL;
        *out = SW_CLI_JSONPATH;
        if (tmpl != NULL)
            *tmpl = s + 9;
        return 0;
    }
    for (size_t i = 0; i + 1 < NFORMATS; i++)
        if (s != NULL && strcmp(s, format_names[i]) == 0) {
            *out = (enum sw_cli_format)i;
            return 0;
        }
    return sw_error_set(err, SW_EINVAL,
                        "-o/--output: expected table, wide, json, yaml, csv, name or "
                        "jsonpath=TEMPLATE, got \"%s\"",
                        s ? s : "");
}

int sw_cli_format_parse(const char *s, enum sw_cli_format *out, struct sw_error *err)
{
    return sw_cli_format_parse2(s, out, NULL, err);
}

const char *sw_cli_format_name(enum sw_cli_format f)
{
    return (unsigned)f < NFORMATS ? format_names[f] : "unknown";
}

/* ---- numbers ------------------------------------------------------------ */

/* The shortest %g form of v that reads back as v. */
static void format_number(double v, char *buf, size_t len)
{
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, len, "%.0f", v == 0 ? 0.0 : v); /* no "-0" */
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* ---- JSON --------------------------------------------------------------- */

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        case '\b':
            fputs("\\b", out);
            break;
        case '\f':
            fputs("\\f", out);
            break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

static void pad(FILE *out, int n)
{
    for (int i = 0; i < n; i++)
        fputc(' ', out);
}

void sw_cli_write_json(FILE *out, const cJSON *v, int indent)
{
    char num[64];
    if (v == NULL || cJSON_IsNull(v) || cJSON_IsInvalid(v)) {
        fputs("null", out);
    } else if (cJSON_IsBool(v)) {
        fputs(cJSON_IsTrue(v) ? "true" : "false", out);
    } else if (cJSON_IsNumber(v)) {
        if (!isfinite(v->valuedouble)) {
            fputs("null", out);
        } else {
            format_number(v->valuedouble, num, sizeof(num));
            fputs(num, out);
        }
    } else if (cJSON_IsString(v) || cJSON_IsRaw(v)) {
        json_string(out, v->valuestring ? v->valuestring : "");
    } else {
        int obj = cJSON_IsObject(v);
        const cJSON *c = v->child;
        if (c == NULL) {
            fputs(obj ? "{}" : "[]", out);
            return;
        }
        fputc(obj ? '{' : '[', out);
        for (; c != NULL; c = c->next) {
            fputc('\n', out);
            pad(out, indent + 2);
            if (obj) {
                json_string(out, c->string ? c->string : "");
                fputs(": ", out);
            }
            sw_cli_write_json(out, c, indent + 2);
            if (c->next != NULL)
                fputc(',', out);
        }
        fputc('\n', out);
        pad(out, indent);
        fputc(obj ? '}' : ']', out);
    }
}

/* ---- YAML --------------------------------------------------------------- */

static int yaml_needs_quotes(const char *s)
{
    static const char *const words[] = {"null", "~",  "true", "false", "yes",
                                        "no",   "on", "off",  "y",     "n"};
    if (s[0] == '\0')
        return 1;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcasecmp(s, words[i]) == 0)
            return 1;
    unsigned char c0 = (unsigned char)s[0];
    if (isdigit(c0) || strchr("+.-?:,[]{}#&*!|>'\"%@` \t", c0) != NULL)
        return 1;
    size_t n = strlen(s);
    if (s[n - 1] == ':' || s[n - 1] == ' ' || s[n - 1] == '\t')
        return 1;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            return 1;
        if ((p[0] == ':' && p[1] == ' ') || (p[0] == ' ' && p[1] == '#'))
            return 1;
    }
    return 0;
}

static void yaml_string(FILE *out, const char *s)
{
    if (!yaml_needs_quotes(s)) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(out, "\\x%02x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* A value written on the line of its key or dash. */
static int yaml_inline(const cJSON *v)
{
    return !(cJSON_IsObject(v) || cJSON_IsArray(v)) || v->child == NULL;
}

static void yaml_scalar(FILE *out, const cJSON *v)
{
    char num[64];
    if (cJSON_IsObject(v)) {
        fputs("{}", out);
    } else if (cJSON_IsArray(v)) {
        fputs("[]", out);
    } else if (cJSON_IsBool(v)) {
        fputs(cJSON_IsTrue(v) ? "true" : "false", out);
    } else if (cJSON_IsNumber(v)) {
        if (isnan(v->valuedouble))
            fputs(".nan", out);
        else if (isinf(v->valuedouble))
            fputs(v->valuedouble > 0 ? ".inf" : "-.inf", out);
        else {
            format_number(v->valuedouble, num, sizeof(num));
            fputs(num, out);
        }
    } else if (cJSON_IsString(v) || cJSON_IsRaw(v)) {
        yaml_string(out, v->valuestring ? v->valuestring : "");
    } else {
        fputs("null", out);
    }
}

static void yaml_seq(FILE *out, const cJSON *a, int indent, int first_inline);

/* A mapping at `indent`; its first key goes on the current line when
 * first_inline (after "- "). */
static void yaml_map(FILE *out, const cJSON *m, int indent, int first_inline)
{
    for (const cJSON *c = m->child; c != NULL; c = c->next) {
        if (c != m->child || !first_inline)
            pad(out, indent);
        yaml_string(out, c->string ? c->string : "");
        if (yaml_inline(c)) {
            fputs(": ", out);
            yaml_scalar(out, c);
            fputc('\n', out);
        } else if (cJSON_IsObject(c)) {
            fputs(":\n", out);
            yaml_map(out, c, indent + 2, 0);
        } else {
            /* kubectl's style: a list under a key starts at the key's column. */
            fputs(":\n", out);
            yaml_seq(out, c, indent, 0);
        }
    }
}

static void yaml_seq(FILE *out, const cJSON *a, int indent, int first_inline)
{
    for (const cJSON *c = a->child; c != NULL; c = c->next) {
        if (c != a->child || !first_inline)
            pad(out, indent);
        fputs("- ", out);
        if (yaml_inline(c)) {
            yaml_scalar(out, c);
            fputc('\n', out);
        } else if (cJSON_IsObject(c)) {
            yaml_map(out, c, indent + 2, 1);
        } else {
            yaml_seq(out, c, indent + 2, 1);
        }
    }
}

void sw_cli_write_yaml(FILE *out, const cJSON *v)
{
    if (v == NULL || yaml_inline(v)) {
        if (v == NULL)
            fputs("null", out);
        else
            yaml_scalar(out, v);
        fputc('\n', out);
    } else if (cJSON_IsObject(v)) {
        yaml_map(out, v, 0, 0);
    } else {
        yaml_seq(out, v, 0, 0);
    }
}

/* ---- tables ------------------------------------------------------------- */

/* The text of one cell, a new string (sw_free), or NULL when out of memory. */
static char *value_text(const cJSON *v)
{
    char num[64];
    char *s = NULL;
    if (v == NULL || cJSON_IsNull(v)) {
        s = sw_strdup("<none>");
    } else if (cJSON_IsString(v)) {
        s = sw_strdup(v->valuestring ? v->valuestring : "");
    } else if (cJSON_IsBool(v)) {
        s = sw_strdup(cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsNumber(v)) {
        format_number(v->valuedouble, num, sizeof(num));
        s = sw_strdup(num);
    } else if (cJSON_IsArray(v)) {
        /* The elements joined with ",". */
        s = sw_strdup("");
        const cJSON *e;
        cJSON_ArrayForEach(e, v)
        {
            char *t = value_text(e);
            char *j = s && t ? sw_malloc(strlen(s) + strlen(t) + 2) : NULL;
            if (j != NULL)
                sprintf(j, "%s%s%s", s, e != v->child ? "," : "", t);
            sw_free(s);
            sw_free(t);
            s = j;
            if (s == NULL)
                return NULL;
        }
    } else {
        char *j = cJSON_PrintUnformatted(v);
        s = j ? sw_strdup(j) : NULL;
        cJSON_free(j);
    }
    if (s != NULL)
        for (char *p = s; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = ' ';
    return s;
}

/* Width in characters: UTF-8 continuation bytes do not count. */
static size_t text_width(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p & 0xc0) != 0x80)
            n++;
    return n;
}

static int print_table(FILE *out, const cJSON *rows, const struct sw_cli_column *cols, size_t ncols,
                       int wide)
{
    size_t nrows = (size_t)cJSON_GetArraySize(rows);
    size_t shown[64], nshown = 0;
    for (size_t c = 0; c < ncols && nshown < 64; c++)
        if (wide || !cols[c].wide_only)
            shown[nshown++] = c;
    if (nshown == 0)
        return 0;
    char **cells = sw_calloc((nrows + 1) * nshown, sizeof(char *));
    size_t *width = sw_calloc(nshown, sizeof(size_t));
    int rc = 0;
    if (cells == NULL || width == NULL) {
        rc = SW_ENOMEM;
        goto out;
    }
    for (size_t c = 0; c < nshown; c++) {
        const char *h = cols[shown[c]].header;
        char *u = sw_strdup(h ? h : "");
        if (u == NULL) {
            rc = SW_ENOMEM;
            goto out;
        }
        for (char *p = u; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        cells[c] = u;
    }
    size_t r = 1;
    const cJSON *row;
    cJSON_ArrayForEach(row, rows)
    {
        for (size_t c = 0; c < nshown; c++) {
            const char *key = cols[shown[c]].json_key;
            const cJSON *v = key ? sw_json_path(row, key) : NULL;
            if ((cells[r * nshown + c] = value_text(v)) == NULL) {
                rc = SW_ENOMEM;
                goto out;
            }
        }
        r++;
    }
    for (size_t i = no_headers ? nshown : 0; i < r * nshown; i++) {
        size_t w = text_width(cells[i]);
        if (w > width[i % nshown])
            width[i % nshown] = w;
    }
    for (size_t i = no_headers ? 1 : 0; i < r; i++) {
        /* Stop after the last non-empty cell: no trailing blanks. */
        size_t last = nshown;
        while (last > 1 && cells[i * nshown + last - 1][0] == '\0')
            last--;
        for (size_t c = 0; c < last; c++) {
            const char *t = cells[i * nshown + c];
            fputs(t, out);
            if (c + 1 < last)
                pad(out, (int)(width[c] - text_width(t) + 3));
        }
        fputc('\n', out);
    }
out:
    if (cells != NULL)
        for (size_t i = 0; i < (nrows + 1) * nshown; i++)
            sw_free(cells[i]);
    sw_free(cells);
    sw_free(width);
    return rc;
}

/* One CSV field, quoted when it holds a comma, a quote or a line break. */
static void csv_field(FILE *out, const char *t)
{
    if (strpbrk(t, ",\"\r\n") == NULL) {
        fputs(t, out);
        return;
    }
    fputc('"', out);
    for (; *t; t++) {
        if (*t == '"')
            fputc('"', out);
        fputc(*t, out);
    }
    fputc('"', out);
}

static int print_csv(FILE *out, const cJSON *rows, const struct sw_cli_column *cols, size_t ncols)
{
    for (size_t c = 0; c < ncols && !no_headers; c++) {
        if (c)
            fputc(',', out);
        csv_field(out, cols[c].json_key ? cols[c].json_key : "");
    }
    if (!no_headers)
        fputc('\n', out);
    const cJSON *row;
    cJSON_ArrayForEach(row, rows)
    {
        for (size_t c = 0; c < ncols; c++) {
            const cJSON *v = cols[c].json_key ? sw_json_path(row, cols[c].json_key) : NULL;
            char *t = value_text(v);
            if (t == NULL)
                return SW_ENOMEM;
            if (c)
                fputc(',', out);
            csv_field(out, t);
            sw_free(t);
        }
        fputc('\n', out);
    }
    return 0;
}

int sw_cli_print(FILE *out, enum sw_cli_format fmt, const cJSON *items, const cJSON *rows,
                 const struct sw_cli_column *cols, size_t ncols)
{
    if (!cJSON_IsArray(items) || (rows != NULL && !cJSON_IsArray(rows)))
        return SW_EINVAL;
    int rc = 0;
    switch (fmt) {
    case SW_CLI_TABLE:
    case SW_CLI_WIDE:
        rc = print_table(out, rows ? rows : items, cols, ncols, fmt == SW_CLI_WIDE);
        break;
    case SW_CLI_JSON:
        fputs("{\n  \"items\": ", out);
        sw_cli_write_json(out, items, 2);
        fputs("\n}\n", out);
        break;
    case SW_CLI_CSV:
        rc = print_csv(out, rows ? rows : items, cols, ncols);
        break;
    case SW_CLI_NAME: {
        const cJSON *row, *list = rows ? rows : items;
        cJSON_ArrayForEach(row, list)
        {
            char *t = value_text(ncols > 0 && cols[0].json_key ? sw_json_path(row, cols[0].json_key)
                                                               : NULL);
            if (t == NULL)
                return SW_ENOMEM;
            fprintf(out, "%s\n", t);
            sw_free(t);
        }
        break;
    }
    case SW_CLI_JSONPATH: {
        cJSON *doc = cJSON_CreateObject();
        struct sw_error err;
        if (doc == NULL || !cJSON_AddItemReferenceToObject(doc, "items", (cJSON *)items)) {
            cJSON_Delete(doc);
            return SW_ENOMEM;
        }
        rc = sw_cli_jsonpath_print(out, jsonpath_template ? jsonpath_template : "", doc, &err);
        cJSON_Delete(doc);
        break;
    }
    case SW_CLI_YAML:
        if (items->child == NULL) {
            fputs("items: []\n", out);
        } else {
            fputs("items:\n", out);
            yaml_seq(out, items, 0, 0);
        }
        break;
    default:
        return SW_EINVAL;
    }
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        rc = SW_EIO;
    return rc;
}
