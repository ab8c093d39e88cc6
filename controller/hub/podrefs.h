/*
 * podrefs.h - every Secret and ConfigMap a pod spec references, in one
 * list (pure: no I/O, no clock).
 *
 * The hub copies what a mirror's pod template references from the origin's
 * namespace into the target's (dispatch.c), with its own credentials, and
 * refuses a burst whose target already holds an object of that name that
 * is not spillway's copy. That guard is only as good as the list: a
 * reference it misses is used in the target as whatever happens to be
 * there, and a name that is not a Kubernetes name could make the hub read
 * another object. So the list is complete, bounded and validated here:
 *
 *   containers[], initContainers[], ephemeralContainers[]:
 *     env[].valueFrom.configMapKeyRef.name, env[].valueFrom.secretKeyRef.name,
 *     envFrom[].configMapRef.name, envFrom[].secretRef.name
 *   volumes[]:
 *     configMap.name, secret.secretName,
 *     projected.sources[].configMap.name, projected.sources[].secret.name,
 *     csi.nodePublishSecretRef.name,
 *     cephfs.secretRef.name, rbd.secretRef.name, flexVolume.secretRef.name,
 *     iscsi.secretRef.name, scaleIO.secretRef.name, storageos.secretRef.name,
 *     cinder.secretRef.name, azureFile.secretName
 *   imagePullSecrets[].name
 *
 * (docs/workloads.md has the same list.) Each name must be a DNS-1123
 * subdomain, as the API server requires of Secret and ConfigMap names.
 */
#ifndef SW_CONTROLLER_HUB_PODREFS_H
#define SW_CONTROLLER_HUB_PODREFS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/dns1123.h"
#include "common/error.h"

/** The most distinct Secrets and ConfigMaps one pod spec may reference. */
#define SW_POD_REFS_MAX 64
/** A field path's buffer ("spec.template.spec.volumes[2].secret.secretName"). */
#define SW_POD_REF_FIELD_MAX 192

enum sw_pod_ref_kind { SW_POD_REF_CONFIGMAP = 0, SW_POD_REF_SECRET };

/** One referenced object, in the pod's own namespace. */
struct sw_pod_ref {
    enum sw_pod_ref_kind kind;
    /** True only when every reference to it says `optional: true`. */
    bool optional;
    char name[SW_DNS1123_SUBDOMAIN_MAX + 1];
    /** Where it was first found, e.g. "spec.template.spec.imagePullSecrets[0].name". */
    char field[SW_POD_REF_FIELD_MAX];
};

/** A de-duplicated list: one entry per (kind, name), in the order first found. */
struct sw_pod_refs {
    size_t n;
    struct sw_pod_ref refs[SW_POD_REFS_MAX];
};

/** "Secret" or "ConfigMap". */
const char *sw_pod_ref_kind_name(enum sw_pod_ref_kind k);
/** The API resource: "secrets" or "configmaps". */
const char *sw_pod_ref_resource(enum sw_pod_ref_kind k);

/**
 * Adds every Secret and ConfigMap `pod_spec` (a PodSpec, borrowed; NULL has
 * none) references to `out`, which the caller zeroes first; several pod
 * specs (a workload with more than one template) may be added to one list.
 * `where` is the field path of `pod_spec` for messages and for
 * sw_pod_ref.field (NULL: "spec").
 *
 * Returns 0, or on failure clears `out` (n = 0) and returns:
 *   SW_EINVAL  a field of the wrong JSON type, a reference without a name,
 *              or a name that is not a DNS-1123 subdomain; the message names
 *              the field path and quotes the value (escaped and cut);
 *   SW_ETOOBIG more than SW_POD_REFS_MAX distinct references; the message
 *              says how many and the limit (the list is never cut);
 *   SW_ENOMEM  counting the references past the limit ran out of memory.
 * An entry of imagePullSecrets without a name names nothing (the API
 * server admits it with a warning and the kubelet skips it) and is skipped.
 */
int sw_pod_refs_collect(const cJSON *pod_spec, const char *where, struct sw_pod_refs *out,
                        struct sw_error *err);

#endif
