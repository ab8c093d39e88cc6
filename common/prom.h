/*
 * prom.h - label values for the Prometheus text exposition format.
 *
 * A label value is printed between double quotes; in it a backslash, a
 * double quote and a line feed must be written \\, \" and \n. Values the
 * hub prints come from its config, from member clusters and from Jobs'
 * authors (a team name, a ClusterQueue's name): unescaped, one of them
 * could end the value early and forge labels or whole series.
 */
#ifndef SW_COMMON_PROM_H
#define SW_COMMON_PROM_H

#include <stddef.h>

/** Room for any value of up to 127 bytes escaped (each byte takes at most 2) and the NUL. */
#define SW_PROM_LABEL_MAX 256

/**
 * Writes `v` (NUL-terminated; NULL reads as "") into `out` (`cap` bytes,
 * cap >= 1) escaped as a label value, NUL-terminated, and returns `out`.
 * A value that does not fit is cut before the escape that would not fit
 * whole, so the result never ends in a lone backslash. Pure.
 */
const char *sw_prom_label(const char *v, char *out, size_t cap);

#endif
