/*
 * log.c - the writer behind SW_LOG.
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

void sw__log(enum sw_log_level level, const char *msg, const char *fmt, ...)
{
    FILE *out = log_stream ? log_stream : stderr;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(out, "%s.%03ldZ level=%s msg=\"%s\"", ts, (long)(tv.tv_usec / 1000), level_names[level],
            msg);
    if (fmt != NULL && fmt[0] != '\0') {
        fputc(' ', out);
        va_list ap;
        va_start(ap, fmt);
        vfprintf(out, fmt, ap);
        va_end(ap);
    }
    fputc('\n', out);
    fflush(out);
}
