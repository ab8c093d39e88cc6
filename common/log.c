/*
 * log.c - the writer behind SW_LOG, and logfmt escaping of values.
 *
 * Values are escaped here rather than by each caller so that an error
 * message with quotes or a newline (an exec plugin's stderr, say) cannot
 * break a line into fields that were never written, or into two lines.
 */
#include "log.h"

#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

enum sw_log_level sw_log_threshold = SW_LOG_INFO;
static FILE *log_stream;

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

void sw_log_set_level(enum sw_log_level level)
{
    sw_log_threshold = level;
}

int sw_log_level_parse(const char *s)
{
    for (int i = 0; i <= SW_LOG_OFF; i++)
        if (strcasecmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

void sw_log_set_stream(FILE *f)
{
    log_stream = f;
}

/* ---- escaping ----------------------------------------------------------- */

static int needs_quotes(const char *v)
{
    if (v[0] == '\0')
        return 1;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p <= ' ' || *p == '=' || *p == '"' || *p == 0x7f)
            return 1;
    return 0;
}

/* The escaped form of one byte inside quotes, in buf; returns its length. */
static size_t escape_byte(unsigned char c, char buf[5])
{
    static const char hex[] = "0123456789abcdef";
    switch (c) {
    case '"':
        memcpy(buf, "\\\"", 2);
        return 2;
    case '\\':
        memcpy(buf, "\\\\", 2);
        return 2;
    case '\n':
        memcpy(buf, "\\n", 2);
        return 2;
    case '\r':
        memcpy(buf, "\\r", 2);
        return 2;
    case '\t':
        memcpy(buf, "\\t", 2);
        return 2;
    default:
        if (c < ' ' || c == 0x7f) {
            buf[0] = '\\';
            buf[1] = 'x';
            buf[2] = hex[c >> 4];
            buf[3] = hex[c & 15];
            return 4;
        }
        buf[0] = (char)c;
        return 1;
    }
}

/* Steps back over a UTF-8 sequence cut at v[i] (not written): returns how
 * many of its bytes were already written, so that they can be dropped. */
static size_t partial_utf8(const unsigned char *v, size_t i)
{
    if ((v[i] & 0xc0) != 0x80)
        return 0;
    size_t j = i;
    while (j > 0 && (v[j - 1] & 0xc0) == 0x80)
        j--;
    return j > 0 ? i - j + 1 : 0;
}

size_t sw_log_escape(const char *v, char *out, size_t outlen)
{
    if (outlen == 0)
        return 0;
    if (v == NULL)
        v = "";
    const unsigned char *u = (const unsigned char *)v;
    char piece[5];
    if (!needs_quotes(v)) {
        size_t n = strlen(v);
        if (n < outlen) {
            memcpy(out, v, n + 1);
            return n;
        }
        if (outlen < 4) {
            out[0] = '\0';
            return 0;
        }
        size_t k = outlen - 4;
        k -= partial_utf8(u, k);
        memcpy(out, v, k);
        memcpy(out + k, "...", 4);
        return k + 3;
    }
    size_t total = 2;
    for (const unsigned char *p = u; *p; p++)
        total += escape_byte(*p, piece);
    /* Room for the closing quote and the NUL; when cut, for '...' too. */
    size_t reserve = total < outlen ? 2 : 5;
    if (outlen < reserve + 1) {
        out[0] = '\0';
        return 0;
    }
    size_t k = 0, i = 0;
    out[k++] = '"';
    for (; u[i]; i++) {
        size_t n = escape_byte(u[i], piece);
        if (k + n + reserve > outlen)
            break;
        memcpy(out + k, piece, n);
        k += n;
    }
    if (u[i] != '\0') {
        k -= partial_utf8(u, i);
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k++] = '"';
    out[k] = '\0';
    return k;
}

const char *sw_log_q(const char *v)
{
    static _Thread_local char ring[SW_LOG_Q_SLOTS][SW_LOG_Q_MAX];
    static _Thread_local unsigned next;
    char *slot = ring[next++ % SW_LOG_Q_SLOTS];
    sw_log_escape(v, slot, SW_LOG_Q_MAX);
    return slot;
}

/* ---- lines -------------------------------------------------------------- */

void sw__log(enum sw_log_level level, const char *msg, const char *fmt, ...)
{
    FILE *out = log_stream ? log_stream : stderr;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    /* msg is always quoted, even when logfmt would not need it, so that a
     * line reads the same whatever the message says. */
    char qmsg[SW_LOG_Q_MAX];
    if (needs_quotes(msg ? msg : "")) {
        sw_log_escape(msg, qmsg, sizeof(qmsg));
    } else {
        qmsg[0] = '"';
        size_t n = sw_log_escape(msg, qmsg + 1, sizeof(qmsg) - 2);
        qmsg[n + 1] = '"';
        qmsg[n + 2] = '\0';
    }
    fprintf(out, "ts=%s.%03ldZ level=%s msg=%s", ts, (long)(tv.tv_usec / 1000), level_names[level],
            qmsg);
    if (fmt != NULL && fmt[0] != '\0') {
        /* A caller that forgot sw_log_q must still not split the line:
         * control characters left in the fields are written escaped. */
        char fields[4096];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(fields, sizeof(fields), fmt, ap);
        va_end(ap);
        fputc(' ', out);
        for (const unsigned char *p = (const unsigned char *)fields; *p; p++) {
            char piece[5];
            size_t len = (*p < ' ' || *p == 0x7f) ? escape_byte(*p, piece) : 1;
            if (len == 1)
                fputc(*p, out);
            else
                fwrite(piece, 1, len, out);
        }
        if (n >= (int)sizeof(fields))
            fputs("...", out);
    }
    fputc('\n', out);
    fflush(out);
}
