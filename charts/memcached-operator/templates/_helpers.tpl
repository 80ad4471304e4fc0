{{/* The prefix of every name: the release's name, with the chart's appended unless it holds it already. */}}
{{- define "memcached-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "memcached-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.name -}}
{{- .Values.serviceAccount.name -}}
{{- else -}}
{{- include "memcached-operator.fullname" . }}-controller-manager
{{- end -}}
{{- end -}}

{{/* A Service's name is a DNS label: 63 characters at most. */}}
{{- define "memcached-operator.metricsServiceName" -}}
{{- printf "%s-controller-manager-metrics-service" (include "memcached-operator.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "memcached-operator.leaseName" -}}
{{- .Values.leaderElection.id | default (printf "%s-leader" (include "memcached-operator.fullname" .)) -}}
{{- end -}}

{{/* What selects the manager's pods; the same labels as kustomize/manager plus the release. */}}
{{- define "memcached-operator.selectorLabels" -}}
control-plane: controller-manager
app.kubernetes.io/name: memcached-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "memcached-operator.labels" -}}
{{ include "memcached-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: memcached-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* rbac.namespaced needs the namespaces it grants in. */}}
{{- define "memcached-operator.checkValues" -}}
{{- if and .Values.rbac.namespaced (not .Values.namespaces) -}}
{{- fail "rbac.namespaced=true needs namespaces: the manager's Roles are created in the namespaces it watches" -}}
{{- end -}}
{{- range $k, $v := .Values.podLabels -}}
{{- if hasKey (include "memcached-operator.selectorLabels" $ | fromYaml) $k -}}
{{- fail (printf "podLabels.%s: the Deployment's selector sets this label" $k) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The platform's overlays file (`run --overlays`): the file format of kustomize/manager/platform-overlays.yaml. */}}
{{- define "memcached-operator.platformOverlays" -}}
{{ toYaml (dict "overlays" .Values.platformOverlays) }}
{{- end -}}
