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

{{/* The operator's image: image.tag, else the chart's appVersion. */}}
{{- define "vrrp-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (toString (.Values.image.tag | default .Chart.AppVersion)) -}}
{{- end -}}

{{/*
vrrpd's image (--vrrpd-image and the admission policy's vrrpdImage): vrrpd.image.tag, else the
operator's own tag, so vrrpd is of the operator's version unless pinned. vrrpdImage, a plain
string before 0.1.0, is refused rather than ignored.
*/}}
{{- define "vrrp-operator.vrrpdImage" -}}
{{- if hasKey .Values "vrrpdImage" }}{{ fail "vrrpdImage is now vrrpd.image.repository and vrrpd.image.tag" }}{{ end -}}
{{- $tag := .Values.vrrpd.image.tag | default .Values.image.tag | default .Chart.AppVersion -}}
{{- printf "%s:%s" .Values.vrrpd.image.repository (toString $tag) -}}
{{- end -}}

{{/* vrrpd's pull secrets as --vrrpd-image-pull-secrets' list: [{name: a}] or [a]. */}}
{{- define "vrrp-operator.vrrpdPullSecrets" -}}
{{- $names := list -}}
{{- range .Values.vrrpd.imagePullSecrets -}}
{{- if kindIs "map" . }}{{ $names = append $names .name }}{{ else }}{{ $names = append $names (toString .) }}{{ end -}}
{{- end -}}
{{- join "," $names -}}
{{- end -}}

{{- define "vrrp-operator.prometheusClusterRole" -}}
{{ include "vrrp-operator.fullname" . }}-prometheus-k8s
{{- end -}}

{{/* The operator's ServiceAccount: the chart's (serviceAccount.create), or one the admin
made, whose name the RBAC bindings and the admission policy then use. */}}
{{- define "vrrp-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "vrrp-operator.fullname" .) -}}
{{- else -}}
{{- required "serviceAccount.name: the ServiceAccount to run as when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}
