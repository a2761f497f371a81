{{- define "cpms.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "cpms.serviceAccountName" -}}
{{- default (include "cpms.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- /* The namespace of the ControlPlaneMachineSet and its Machines: the
  upstream operator's, the only one the controller manages. */ -}}
{{- define "cpms.machineNamespace" -}}
openshift-machine-api
{{- end -}}

{{- /* The webhook's Service, which the ValidatingWebhookConfiguration calls and
  the serving certificate names. */ -}}
{{- define "cpms.webhookService" -}}
{{- printf "%s-webhook" (include "cpms.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "cpms.webhookSecret" -}}
{{- printf "%s-webhook-cert" (include "cpms.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "cpms.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "cpms.labels" -}}
{{ include "cpms.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: upshift
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "cpms.subject" -}}
- kind: ServiceAccount
  name: {{ include "cpms.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end -}}
