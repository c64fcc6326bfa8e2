{{/* The name of every object of the release (63 characters at most, for labels). */}}
{{- define "vrrp-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Selects the operator's pods; the same labels as deploy/operator, plus the release. */}}
{{- define "vrrp-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vrrp-operator.labels" -}}
{{ include "vrrp-operator.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The SCC of vrrpd (OpenShift) and the ClusterRole that may use it. */}}
{{- define "vrrp-operator.scc" -}}
{{ include "vrrp-operator.fullname" . }}-vrrpd
{{- end -}}
{{- define "vrrp-operator.sccClusterRole" -}}
{{ include "vrrp-operator.fullname" . }}-vrrpd-scc
{{- end -}}

{{- define "vrrp-operator.prometheusClusterRole" -}}
{{ include "vrrp-operator.fullname" . }}-prometheus-k8s
{{- end -}}
