{{/* The namespace of every namespaced object: namespace.name, or the
release's; a DNS-1123 label, checked here too (values.schema.json checks
namespace.name), since it is written into every object. */}}
{{- define "spillway.namespace" -}}
{{- $ns := toString (.Values.namespace.name | default .Release.Namespace) -}}
{{- if not (and (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $ns) (le (len $ns) 63)) -}}
{{- fail (printf "namespace.name: %q; expected a namespace's name (DNS-1123 label: at most 63 of a-z, 0-9, '-')" $ns) -}}
{{- end -}}
{{- $ns -}}
{{- end -}}

{{/* A boolean value, strictly: "true" for true, "" for false, and a
failure naming the value for anything else (the string "false" included,
which a template's `if` would take for true). Called with list VALUE
"its.name". values.schema.json refuses these first; this holds when the
schema is skipped (--skip-schema-validation). */}}
{{- define "spillway.bool" -}}
{{- $v := index . 0 -}}
{{- if not (kindIs "bool" $v) -}}
{{- fail (printf "%s: %q (a %s); expected true or false, unquoted (--set, not --set-string)" (index . 1) (toString $v) (kindOf $v)) -}}
{{- end -}}
{{- if $v }}true{{ end -}}
{{- end -}}

{{/* Labels of an object's metadata: the Kustomize base's (name, component,
part-of; the components' objects have no part-of, as in Kustomize) and
Helm's own two. Called with dict "root" $ and optionally "component" (""
for none; default hub) and "partOf" false. */}}
{{- define "spillway.labels" -}}
app.kubernetes.io/name: spillway
{{- $component := ternary .component "hub" (hasKey . "component") }}
{{- with $component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- if ne (toString .partOf) "false" }}
app.kubernetes.io/part-of: spillway
{{- end }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{/* The hub's pods, as the Deployment, Service, PDB and NetworkPolicy select them. */}}
{{- define "spillway.selector" -}}
app.kubernetes.io/name: spillway
app.kubernetes.io/component: hub
{{- end -}}

{{/* redis.url from the redis values: redis://, rediss://, redis+sentinel://
or rediss+sentinel://, with the TLS files where the Deployment mounts them. */}}
{{- define "spillway.redisURL" -}}
{{- $r := .Values.redis -}}
{{- $tls := include "spillway.bool" (list $r.tls.enabled "redis.tls.enabled") -}}
{{- $scheme := ternary "rediss" "redis" (eq $tls "true") -}}
{{- $user := "" -}}
{{- with $r.username -}}
{{- if not (regexMatch "^[^:@/%?#,[:space:][:cntrl:]]+$" (toString .)) -}}
{{- fail (printf "redis.username: %q; expected an ACL user's name without ':', '@', '/', '%%', '?', '#', ',' or spaces (it goes into redis.url as USER:@HOST)" (toString .)) -}}
{{- end -}}
{{- $user = printf "%s:@" . -}}
{{- end -}}
{{- $url := "" -}}
{{- if include "spillway.bool" (list $r.sentinel.enabled "redis.sentinel.enabled") -}}
{{- if not $r.sentinel.hosts }}{{ fail "redis.sentinel.hosts: empty; expected the Sentinels as host:port, e.g. [redis-sentinel-0.redis:26379, ...]" }}{{ end -}}
{{- if gt (len $r.sentinel.hosts) 16 }}{{ fail (printf "redis.sentinel.hosts: %d Sentinels; at most 16" (len $r.sentinel.hosts)) }}{{ end -}}
{{- if not (regexMatch "^[A-Za-z0-9._-]+$" (toString $r.sentinel.masterName)) }}{{ fail (printf "redis.sentinel.masterName: %q; expected the master's name in letters, digits, '.', '_', '-'" (toString $r.sentinel.masterName)) }}{{ end -}}
{{- range $r.sentinel.hosts }}{{ if not (regexMatch "^[^,/@?]+$" (toString .)) }}{{ fail (printf "redis.sentinel.hosts: %q; expected host:port" (toString .)) }}{{ end }}{{ end -}}
{{- $url = printf "%s+sentinel://%s%s/%s/%d" $scheme $user (join "," $r.sentinel.hosts) $r.sentinel.masterName (int $r.db) -}}
{{- else -}}
{{- if not (regexMatch "^[^,/@?:]+$" (toString $r.host)) }}{{ fail (printf "redis.host: %q; expected a host name or address" (toString $r.host)) }}{{ end -}}
{{- $url = printf "%s://%s%s:%d/%d" $scheme $user $r.host (int $r.port) (int $r.db) -}}
{{- end -}}
{{- if $tls -}}
{{- $q := list -}}
{{- if and $r.tls.existingSecret $r.tls.caKey }}{{ $q = append $q "tls_ca_file=/etc/spillway-redis-tls/ca.crt" }}{{ end -}}
{{- if and $r.tls.existingSecret (not $r.tls.caKey) (not $r.tls.certKey) }}{{ fail "redis.tls.existingSecret: set, but neither redis.tls.caKey nor redis.tls.certKey names a key of it" }}{{ end -}}
{{- if ne (empty $r.tls.certKey) (empty $r.tls.keyKey) }}{{ fail "redis.tls.certKey and redis.tls.keyKey: a client certificate and its key go together; give both or neither" }}{{ end -}}
{{- if $r.tls.certKey -}}
{{- if not $r.tls.existingSecret }}{{ fail "redis.tls.certKey: set, but redis.tls.existingSecret is empty; expected the Secret holding the client certificate" }}{{ end -}}
{{- $q = append $q "tls_cert_file=/etc/spillway-redis-tls/tls.crt" -}}
{{- $q = append $q "tls_key_file=/etc/spillway-redis-tls/tls.key" -}}
{{- end -}}
{{- with $q }}{{ $url = printf "%s?%s" $url (join "&" .) }}{{ end -}}
{{- else if $r.tls.existingSecret -}}
{{- fail "redis.tls.existingSecret: set, but redis.tls.enabled is false; expected enabled: true (rediss://)" -}}
{{- end -}}
{{- $url -}}
{{- end -}}

{{/* spillwayd's configuration (hub.yaml). */}}
{{- define "spillway.config" -}}
{{- $c := deepCopy (.Values.config | default dict) -}}
{{- range list "redis" "secretKeyFile" "listen" "tenancy" -}}
{{- if hasKey $c . }}{{ fail (printf "config.%s: set by the chart; use the values redis, secretKey and tenancy.grants" .) }}{{ end -}}
{{- end -}}
{{- $redis := dict "url" (include "spillway.redisURL" .) -}}
{{- if .Values.redis.existingSecret }}{{ $_ := set $redis "passwordFile" "/run/spillway/password" }}{{ end -}}
{{- if .Values.redis.sentinel.existingSecret -}}
{{- if not (include "spillway.bool" (list .Values.redis.sentinel.enabled "redis.sentinel.enabled")) }}{{ fail "redis.sentinel.existingSecret: set, but redis.sentinel.enabled is false" }}{{ end -}}
{{- $_ := set $redis "sentinelPasswordFile" "/run/spillway/sentinel-password" -}}
{{- end -}}
{{- $_ := set $c "redis" $redis -}}
{{- $_ := set $c "secretKeyFile" "/run/spillway/secret.key" -}}
{{- $_ := set $c "listen" "0.0.0.0:9464" -}}
{{- with .Values.tenancy.grants }}{{ $_ := set $c "tenancy" (dict "grants" .) }}{{ end -}}
{{- toYaml $c -}}
{{- end -}}

{{/* The ConfigMap's name, with Kustomize's hash of its content as the
suffix (as configMapGenerator names it: the hash of kind, data and an empty
name, kustomize/api/hasher), so that a change of the config
rolls the hubs. */}}
{{- define "spillway.configName" -}}
{{- $m := dict "kind" "ConfigMap" "name" "" "data" (dict "hub.yaml" (printf "%s\n" (include "spillway.config" .))) -}}
{{- $h := $m | toJson | sha256sum | trunc 10 | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t" -}}
{{- printf "spillway-hub-config-%s" $h -}}
{{- end -}}
