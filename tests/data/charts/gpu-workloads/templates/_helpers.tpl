{{/* Written in this repository (see the chart's README.md). */}}
{{- define "gpu-workloads.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpu-workloads.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpu-workloads.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
