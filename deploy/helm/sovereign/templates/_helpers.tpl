{{/*
Names, labels and the decisions every template shares. The checks that
refuse a combination of values (instead of rendering pods that cannot work)
are in sovereign.validate, included by the Deployment.
*/}}

{{- define "sovereign.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "sovereign.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The migration Job's name: the full name leaves room for the suffix. */}}
{{- define "sovereign.migrateName" -}}
{{- printf "%s-migrate" (include "sovereign.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{- define "sovereign.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels shared by the server's and the migration Job's objects. */}}
{{- define "sovereign.labels" -}}
helm.sh/chart: {{ include "sovereign.chart" . }}
{{ include "sovereign.instanceLabels" . }}
app.kubernetes.io/version: {{ include "sovereign.tag" . | replace "+" "_" | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sovereign
{{- end }}

{{/* What the NetworkPolicy selects: the server's pods and the Job's. */}}
{{- define "sovereign.instanceLabels" -}}
app.kubernetes.io/name: {{ include "sovereign.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The server's pods. The component keeps the migration Job's pod out of the
Service, the PodDisruptionBudget and the Deployment's selector.
*/}}
{{- define "sovereign.selectorLabels" -}}
{{ include "sovereign.instanceLabels" . }}
app.kubernetes.io/component: server
{{- end }}

{{- define "sovereign.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sovereign.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
PostgreSQL mode: a database URL given inline or in a Secret. Otherwise the
server uses SQLite under /data on a PersistentVolumeClaim. Renders "true" or
nothing.
*/}}
{{- define "sovereign.postgres" -}}
{{- if or .Values.database.url .Values.database.existingSecret }}true{{ end }}
{{- end }}

{{- define "sovereign.redis" -}}
{{- if or .Values.redis.url .Values.redis.existingSecret }}true{{ end }}
{{- end }}

{{/* The replica count: null means 1 with SQLite, 2 with PostgreSQL. */}}
{{- define "sovereign.replicas" -}}
{{- if kindIs "invalid" .Values.replicaCount }}
{{- if include "sovereign.postgres" . }}2{{ else }}1{{ end }}
{{- else }}
{{- .Values.replicaCount | int }}
{{- end }}
{{- end }}

{{/* The image tag, before the models suffix. */}}
{{- define "sovereign.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "sovereign.image" -}}
{{- $tag := include "sovereign.tag" . }}
{{- if eq .Values.models.source "image" }}
{{- $tag = printf "%s%s" $tag .Values.models.imageTagSuffix }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The chart's own Secret: the bootstrap key and the URLs given inline. */}}
{{- define "sovereign.secretName" -}}
{{- include "sovereign.fullname" . }}
{{- end }}

{{/* Where each secret value comes from: a Secret name and a key. */}}
{{- define "sovereign.bootstrapKeyRef" -}}
name: {{ default (include "sovereign.secretName" .) .Values.auth.existingSecret }}
key: {{ if .Values.auth.existingSecret }}{{ .Values.auth.existingSecretKey }}{{ else }}bootstrap-key{{ end }}
{{- end }}

{{- define "sovereign.databaseURLRef" -}}
name: {{ default (include "sovereign.secretName" .) .Values.database.existingSecret }}
key: {{ if .Values.database.existingSecret }}{{ .Values.database.existingSecretKey }}{{ else }}database-url{{ end }}
{{- end }}

{{/*
The migration Job runs before the release's own Secret exists (a
pre-install hook runs before the release's objects are created), so an
inline URL reaches it through a hook Secret of its own.
*/}}
{{- define "sovereign.migrateDatabaseURLRef" -}}
{{- if .Values.database.existingSecret -}}
{{ include "sovereign.databaseURLRef" . }}
{{- else -}}
name: {{ include "sovereign.migrateName" . }}
key: database-url
{{- end }}
{{- end }}

{{- define "sovereign.redisURLRef" -}}
name: {{ default (include "sovereign.secretName" .) .Values.redis.existingSecret }}
key: {{ if .Values.redis.existingSecret }}{{ .Values.redis.existingSecretKey }}{{ else }}redis-url{{ end }}
{{- end }}

{{/*
The port of a URL (postgres://…, redis://…), or the default when the URL
names none or sits in a Secret the chart cannot read.
*/}}
{{- define "sovereign.urlPort" -}}
{{- $port := .default }}
{{- if .url }}
{{- $host := (urlParse .url).host }}
{{- if regexMatch ":[0-9]+$" $host }}
{{- $port = regexFind "[0-9]+$" $host }}
{{- end }}
{{- end }}
{{- $port }}
{{- end }}

{{- define "sovereign.scheme" -}}
{{- if .Values.tls.existingSecret }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/* /data: a PVC with SQLite, else an emptyDir. */}}
{{- define "sovereign.dataClaimName" -}}
{{- default (printf "%s-data" (include "sovereign.fullname" .)) .Values.persistence.existingClaim }}
{{- end }}

{{/*
sovereign.validate fails the render, with a message saying what to change,
on values that would deploy pods that cannot work.
*/}}
{{- define "sovereign.validate" -}}
{{- $replicas := include "sovereign.replicas" . | int }}
{{- if not (include "sovereign.postgres" .) }}
{{- if gt $replicas 1 }}
{{- fail (printf "replicaCount is %d but no database is set: SQLite (database.url empty) serves from one pod's volume. Set database.url (PostgreSQL) for several replicas, or replicaCount 1." $replicas) }}
{{- end }}
{{- if .Values.autoscaling.enabled }}
{{- fail "autoscaling.enabled needs PostgreSQL: SQLite (database.url empty) serves from one pod's volume. Set database.url, or autoscaling.enabled false." }}
{{- end }}
{{- end }}
{{- $grace := .Values.terminationGracePeriodSeconds | int }}
{{- $drain := add .Values.server.shutdownTimeoutSeconds .Values.server.preStopSleepSeconds | int }}
{{- if le $grace $drain }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed server.preStopSleepSeconds + server.shutdownTimeoutSeconds (%d): the kubelet would kill the streams the server is still finishing." $grace $drain) }}
{{- end }}
{{- if and (eq .Values.models.source "volume") (not .Values.models.existingClaim) (not .Values.models.volume) }}
{{- fail "models.source is volume: set models.existingClaim (a PVC holding the models) or models.volume (any volume source)." }}
{{- end }}
{{- range $k := list "database_url" "redis_url" "bootstrap_key" "migrate_on_start" "data_dir" "addr" "tls_cert" "tls_key" "allow_insecure_http" "shutdown_timeout" "models_dir" }}
{{- if hasKey $.Values.config $k }}
{{- fail (printf "config.%s is set by the chart: use the chart's value instead (database.url, redis.url, auth.bootstrapKey, tls.existingSecret, server.*, models.source; see docs/helm.md)." $k) }}
{{- end }}
{{- end }}
{{- if and .Values.podDisruptionBudget.enabled (not (kindIs "invalid" .Values.podDisruptionBudget.minAvailable)) (not (kindIs "invalid" .Values.podDisruptionBudget.maxUnavailable)) }}
{{- fail "podDisruptionBudget: set minAvailable or maxUnavailable, not both (null the other)." }}
{{- end }}
{{- end }}
