{{/* Names: "<release>-lagwatch", or the release's name when it already says lagwatch. */}}
{{- define "lagwatch.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lagwatch.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: include "lagwatch.selector" (list . "web") */}}
{{- define "lagwatch.selector" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ $.Chart.Name }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "lagwatch.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "lagwatch.secretName" -}}
{{- default (printf "%s-secrets" (include "lagwatch.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{- define "lagwatch.webService" -}}
{{- printf "%s-web" (include "lagwatch.fullname" .) -}}
{{- end -}}

{{/*
The secret settings every Lagwatch process reads, each from the Secret: the URLs too, which
hold passwords (an in-chart Redis has none: its URL is a plain setting).
*/}}
{{- define "lagwatch.secretKeys" -}}
{{- $keys := list "DJANGO_SECRET_KEY" "LAGWATCH_INGEST_TOKEN" "DATABASE_URL" -}}
{{- if not .Values.redis.enabled }}{{ $keys = append $keys "REDIS_URL" }}{{ end -}}
{{- range $name, $_ := .Values.secrets.extra }}{{ $keys = append $keys $name }}{{ end -}}
{{- range .Values.secrets.extraKeys }}{{ $keys = append $keys . }}{{ end -}}
{{- toJson (uniq $keys) -}}
{{- end -}}

{{/*
The environment of every Lagwatch container (web, workers, beat, migrations): the settings
ConfigMap, and each secret from the Secret (docker-compose.yml's x-lagwatch-env, name for name).
include "lagwatch.env" (list . "a-secret") adds that Secret's keys (the migrations Job's
clusters file references).
*/}}
{{- define "lagwatch.env" -}}
{{- $ := index . 0 -}}
envFrom:
  - configMapRef:
      name: {{ include "lagwatch.fullname" $ }}-settings
{{- with (index . 1) }}
  - secretRef:
      name: {{ . }}
{{- end }}
env:
{{- range (include "lagwatch.secretKeys" $ | fromJsonArray) }}
  - name: {{ . }}
    valueFrom:
      secretKeyRef:
        name: {{ include "lagwatch.secretName" $ }}
        key: {{ . }}
{{- end }}
  - name: EMAIL_HOST_PASSWORD
    valueFrom:
      secretKeyRef:
        name: {{ include "lagwatch.secretName" $ }}
        key: EMAIL_HOST_PASSWORD
        optional: true
{{- range list "AWS_ACCESS_KEY_ID" "AWS_SECRET_ACCESS_KEY" "LAGWATCH_OIDC_CLIENT_SECRET" }}
  - name: {{ . }}
    valueFrom:
      secretKeyRef:
        name: {{ include "lagwatch.secretName" $ }}
        key: {{ . }}
        optional: true
{{- end }}
{{- end -}}

{{/* What every Lagwatch pod shares: the image's user, the data volume, placement. */}}
{{- define "lagwatch.podSpec" -}}
automountServiceAccountToken: false
securityContext:
  runAsNonRoot: true
  runAsUser: 10001  # the Dockerfile's lagwatch user
  runAsGroup: 10001
  fsGroup: 10001
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "lagwatch.dataVolume" -}}
- name: data
{{- if .Values.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ default (printf "%s-data" (include "lagwatch.fullname" .)) .Values.persistence.existingClaim }}
{{- else }}
  emptyDir: {}
{{- end }}
{{- end -}}

{{- define "lagwatch.podAnnotations" -}}
checksum/settings: {{ include (print .Template.BasePath "/settings.yaml") . | sha256sum }}
checksum/secrets: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Values without which Lagwatch cannot run in production: fail the render, naming them. */}}
{{- define "lagwatch.validate" -}}
{{- if not .Values.settings.allowedHosts -}}
{{- fail "settings.allowedHosts: the host names the dashboard is served under" -}}
{{- end -}}
{{- if not .Values.settings.email.host -}}
{{- fail "settings.email.host: the SMTP server for alert emails" -}}
{{- end -}}
{{- if not .Values.settings.email.from -}}
{{- fail "settings.email.from: the sender of alert emails" -}}
{{- end -}}
{{- if not .Values.secrets.existingSecret -}}
{{- if not .Values.secrets.djangoSecretKey -}}
{{- fail "secrets.djangoSecretKey (or secrets.existingSecret): Django's secret key" -}}
{{- end -}}
{{- if not .Values.secrets.ingestToken -}}
{{- fail "secrets.ingestToken (or secrets.existingSecret): the ingest endpoint's bearer token" -}}
{{- end -}}
{{- if and .Values.postgresql.enabled (not .Values.postgresql.password) -}}
{{- fail "postgresql.password (or secrets.existingSecret): the in-chart PostgreSQL's password" -}}
{{- end -}}
{{- if and (not .Values.postgresql.enabled) (not .Values.externalDatabase.url) -}}
{{- fail "externalDatabase.url (or postgresql.enabled, or secrets.existingSecret)" -}}
{{- end -}}
{{- if and (not .Values.redis.enabled) (not .Values.externalRedis.url) -}}
{{- fail "externalRedis.url (or redis.enabled, or secrets.existingSecret)" -}}
{{- end -}}
{{- end -}}
{{- range $name, $_ := .Values.settings.extra -}}
{{- if or (regexMatch "SECRET|PASSWORD|TOKEN" $name) (has $name (list "DATABASE_URL" "REDIS_URL")) -}}
{{- fail (printf "settings.extra.%s would land in a ConfigMap: put it in secrets.extra" $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
