/*
 * dns1123.h - Kubernetes object names, checked the way the API server
 * checks them.
 *
 * Most Kubernetes objects (Secrets, ConfigMaps, Jobs, ...) are named by a
 * DNS-1123 subdomain, namespaces and a few others by a DNS-1123 label
 * (apimachinery's IsDNS1123Subdomain and IsDNS1123Label). A name read from
 * outside is checked here before it goes into an API path or a record, so
 * that it can never name anything else (another namespace, a
 * subresource).
 */
#ifndef SW_COMMON_DNS1123_H
#define SW_COMMON_DNS1123_H

#include <stdbool.h>

/** The longest DNS-1123 subdomain (a buffer holds one more byte, the NUL). */
#define SW_DNS1123_SUBDOMAIN_MAX 253
/** The longest DNS-1123 label. */
#define SW_DNS1123_LABEL_MAX 63

/**
 * Whether `s` (borrowed; NULL is false) is a DNS-1123 subdomain: 1-253
 * characters, labels of lowercase letters, digits and '-' separated by
 * single dots, each label starting and ending with a letter or digit.
 */
bool sw_dns1123_subdomain(const char *s);

/** Whether `s` (borrowed; NULL is false) is a DNS-1123 label: 1-63 of the
 * same characters as one label of a subdomain, no dot. */
bool sw_dns1123_label(const char *s);

#endif
