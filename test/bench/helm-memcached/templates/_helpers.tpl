{{- define "memcached.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- define "memcached.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end -}}
{{- define "memcached.labels" -}}
{{ include "memcached.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: cache
app.kubernetes.io/part-of: {{ .Chart.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
{{- define "memcached.image" -}}
{{- if kindIs "string" .Values.image -}}
{{ .Values.image }}
{{- else if .Values.image.digest -}}
{{ required "image.repository is required" .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ required "image.repository is required" .Values.image.repository }}:{{ required "image.tag is required" .Values.image.tag }}
{{- end -}}
{{- end -}}
