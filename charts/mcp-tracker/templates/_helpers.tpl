{{- define "mcpt.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mcpt.serviceAccountName" -}}
{{- default (include "mcpt.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- /* The namespace of the UpgradeConfigs and of the configuration ConfigMap. */ -}}
{{- define "mcpt.watchNamespace" -}}
{{- default .Release.Namespace .Values.upgradeConfigNamespace -}}
{{- end -}}

{{- define "mcpt.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mcpt.labels" -}}
{{ include "mcpt.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: upshift
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "mcpt.subject" -}}
- kind: ServiceAccount
  name: {{ include "mcpt.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
