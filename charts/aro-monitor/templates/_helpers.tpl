{{- define "aromon.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 55 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 55 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "aromon.masterSA" -}}
{{- default (printf "%s-master" (include "aromon.fullname" .)) .Values.serviceAccount.masterName -}}
{{- end -}}

{{- define "aromon.workerSA" -}}
{{- printf "%s-worker" (include "aromon.fullname" .) -}}
{{- end -}}

{{- /* The Machines and MachineSets: on every OpenShift cluster. */ -}}
{{- define "aromon.machineNamespace" -}}
openshift-machine-api
{{- end -}}

{{- define "aromon.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "aromon.labels" -}}
{{ include "aromon.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: upshift
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "aromon.image" -}}
{{ .Values.image.repository }}{{ with .Values.image.digest }}@{{ . }}{{ else }}:{{ default .Chart.AppVersion .Values.image.tag }}{{ end }}
{{- end -}}

{{- /* Arguments both roles take. */ -}}
{{- define "aromon.commonArgs" -}}
- --metrics-bind-address=:{{ .Values.metrics.port }}
- --metrics-secure={{ .Values.metrics.secure }}
{{- if .Values.metrics.certSecret }}
- --metrics-cert-dir=/etc/upshift/metrics-certs
{{- end }}
- --health-probe-bind-address=:{{ .Values.probes.port }}
- --log-level={{ .Values.logLevel }}
- --log-format={{ .Values.logFormat }}
- --kube-api-qps={{ .Values.kubeAPI.qps }}
- --kube-api-burst={{ .Values.kubeAPI.burst }}
{{- with .Values.proxy.httpsProxy }}
- --probe-https-proxy={{ . }}
{{- end }}
{{- with .Values.proxy.httpProxy }}
- --probe-http-proxy={{ . }}
{{- end }}
{{- with .Values.proxy.noProxy }}
- --probe-no-proxy={{ . }}
{{- end }}
{{- end -}}

{{- /* Environment both roles take: the Lease namespace, the node (the worker
  agent's subnet is its node's). The proxy is not here: HTTPS_PROXY would
  route the apiserver's traffic through it too (client-go honours it); it
  goes to the prober alone, as flags (aromon.commonArgs). */ -}}
{{- define "aromon.env" -}}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "aromon.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
{{- end -}}

{{- define "aromon.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: probes
  initialDelaySeconds: 10
  periodSeconds: 20
readinessProbe:
  httpGet:
    path: /readyz
    port: probes
  periodSeconds: 10
{{- end -}}

{{- /* The worker agents' Lease namespace: apart from the master's Lease. */ -}}
{{- define "aromon.workerLeaseNamespace" -}}
{{- .Values.workers.leaseNamespace | default (printf "%s-worker-leases" .Release.Namespace) -}}
{{- end -}}
