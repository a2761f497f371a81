{{- define "ngate.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ngate.serviceAccountName" -}}
{{- default (include "ngate.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- /* Namespaces where hook Jobs run. */ -}}
{{- define "ngate.jobNamespaces" -}}
{{- if .Values.jobNamespaces }}{{ join "," .Values.jobNamespaces }}{{ else }}{{ .Release.Namespace }}{{ end -}}
{{- end -}}

{{- /* ruleJobNamespaces as --rule-job-namespaces reads it: ns=a,b;ns2=c */ -}}
{{- define "ngate.ruleJobNamespaces" -}}
{{- $parts := list }}
{{- range $ns, $others := .Values.ruleJobNamespaces }}
{{- $parts = append $parts (printf "%s=%s" $ns (join "," $others)) }}
{{- end }}
{{- join ";" $parts -}}
{{- end -}}

{{- define "ngate.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ngate.labels" -}}
{{ include "ngate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: upshift
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "ngate.subject" -}}
- kind: ServiceAccount
  name: {{ include "ngate.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
