/*
 * limits.h - one limit per name, shared by every module that holds one.
 *
 * A name (a member cluster, a pool, a region, a zone, a team) is validated
 * once, where it enters (clusters/spec.c for registration), against the
 * same maximum every struct that carries it can hold: the registry, the
 * hub's records, the placement engine's snapshot. A limit that differs
 * between two of them cuts a name silently in one place and the lookup by
 * the whole name fails in the next.
 */
#ifndef SW_COMMON_LIMITS_H
#define SW_COMMON_LIMITS_H

/** A name's buffer: up to 63 characters (a DNS label) and the NUL. */
#define SW_NAME_MAX 64

/** A GPU product's buffer (nvidia.com/gpu.product): up to 63 characters and the NUL. */
#define SW_GPU_PRODUCT_MAX 64

#endif
