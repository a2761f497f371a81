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

{{- /* The image: upshift.image (_upshift.tpl), with global.imageRegistry. */ -}}
{{- define "aromon.image" -}}
{{ include "upshift.image" . }}
{{- end -}}

{{- /* Arguments both roles take. */ -}}
{{- define "aromon.commonArgs" -}}
- --metrics-bind-address=:{{ .Values.metrics.port }}
- --metrics-secure={{ .Values.metrics.secure }}
{{- if or .Values.metrics.certSecret .Values.monitoring.openshift.serviceCA }}
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
  agent's subnet is its node's), SSL_CERT_DIR with the trusted CA bundle. The
  proxy is not here: HTTPS_PROXY would
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
{{- with include "upshift.trustedCABundle.env" . }}
{{ . }}
{{- end }}
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

{{- /*
OpenShift monitoring (values monitoring.openshift.*). The Service the
platform or user-workload Prometheus scrapes, and the name its serving
certificate is checked against.
*/ -}}
{{- /* Each role has its own metrics Service, so these take
(dict "ctx" $ "role" "master"|"worker"). */ -}}
{{- define "aromon.metricsService" -}}
{{- include "aromon.fullname" .ctx }}-{{ .role }}-metrics
{{- end -}}

{{- define "aromon.metricsServerName" -}}
{{- default (printf "%s.%s.svc" (include "aromon.metricsService" .) .ctx.Release.Namespace) .ctx.Values.metrics.serviceMonitor.serverName -}}
{{- end -}}

{{- /* The Secret the metrics serving certificate is mounted from: the
user's (metrics.certSecret), or the one OpenShift's service CA issues for
the role's metrics Service (monitoring.openshift.serviceCA). Empty:
self-signed. */ -}}
{{- define "aromon.metricsCertSecret" -}}
{{- if .ctx.Values.metrics.certSecret -}}
{{- .ctx.Values.metrics.certSecret -}}
{{- else if .ctx.Values.monitoring.openshift.serviceCA -}}
{{- include "aromon.metricsService" . }}-tls
{{- end -}}
{{- end -}}

{{- /* The ConfigMap the service CA injects its bundle into (key
service-ca.crt), for a Prometheus that reads the CA from the API rather than
from a file: user-workload monitoring, or your own Prometheus Operator. */ -}}
{{- define "aromon.metricsCABundle" -}}
{{- include "aromon.fullname" . }}-metrics-service-ca
{{- end -}}

{{- /* The ServiceAccount whose token user-workload monitoring sends. */ -}}
{{- define "aromon.metricsScraper" -}}
{{- include "aromon.fullname" . }}-metrics-scraper
{{- end -}}

{{- /* Refuses the combinations that would leave OpenShift's Prometheus
unable to scrape, or scraping without checking whom it talks to. Rendered by
every template that depends on them, so that no subset renders. */ -}}
{{- define "aromon.validateMonitoring" -}}
{{- $os := .Values.monitoring.openshift -}}
{{- if and $os.platform $os.userWorkload -}}
{{- fail "monitoring.openshift: set platform or userWorkload, not both (user-workload monitoring ignores a namespace labelled openshift.io/cluster-monitoring=true)" -}}
{{- end -}}
{{- if and $os.serviceCA .Values.metrics.certSecret -}}
{{- fail "monitoring.openshift.serviceCA and metrics.certSecret both name the metrics certificate: set one" -}}
{{- end -}}
{{- if and $os.serviceCA .Values.metrics.serviceMonitor.caSecret -}}
{{- fail "monitoring.openshift.serviceCA and metrics.serviceMonitor.caSecret both name the CA to verify metrics with: set one" -}}
{{- end -}}
{{- if and $os.serviceCA (not .Values.metrics.service.enabled) -}}
{{- fail "monitoring.openshift.serviceCA needs metrics.service.enabled: the certificate is issued for the metrics Service" -}}
{{- end -}}
{{- if or $os.platform $os.userWorkload -}}
{{- if not .Values.metrics.secure -}}
{{- fail "monitoring.openshift.platform and userWorkload need metrics.secure=true: OpenShift's Prometheus scrapes over verified HTTPS" -}}
{{- end -}}
{{- if not .Values.metrics.service.enabled -}}
{{- fail "monitoring.openshift.platform and userWorkload need metrics.service.enabled: the ServiceMonitor selects the metrics Service" -}}
{{- end -}}
{{- if not (or $os.serviceCA .Values.metrics.serviceMonitor.caSecret) -}}
{{- fail "monitoring.openshift.platform and userWorkload verify the metrics certificate: set monitoring.openshift.serviceCA=true (OpenShift's service CA issues it), or metrics.certSecret with metrics.serviceMonitor.caSecret" -}}
{{- end -}}
{{- end -}}
{{- if and $os.platform (not $os.createNamespace) -}}
{{- /* lookup answers only against a cluster (install, upgrade): helm
template and --dry-run render without this check. */ -}}
{{- $ns := lookup "v1" "Namespace" "" .Release.Namespace -}}
{{- if and $ns (ne (dig "metadata" "labels" "openshift.io/cluster-monitoring" "" $ns) "true") -}}
{{- fail (printf "monitoring.openshift.platform: namespace %s is not labelled openshift.io/cluster-monitoring=true, so the platform Prometheus would not scrape it; run `oc label namespace %s openshift.io/cluster-monitoring=true` first (or let the chart create the namespace: monitoring.openshift.createNamespace=true, without --create-namespace)" .Release.Namespace .Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* A ServiceMonitor endpoint's scheme, credentials and TLS settings,
for the Prometheus the values name. Called with (dict "ctx" $ "serverName"
<name the certificate is issued for>). */ -}}
{{- define "aromon.serviceMonitorSecurity" -}}
{{- $ := .ctx -}}
{{- $sm := $.Values.metrics.serviceMonitor -}}
{{- $os := $.Values.monitoring.openshift -}}
{{- if $.Values.metrics.secure -}}
scheme: https
# The component asks the kube-apiserver whether this token may get /metrics:
# its ServiceAccount must be bound to the metrics-reader ClusterRole.
{{- if $sm.tokenSecret }}
authorization:
  type: Bearer
  credentials:
    name: {{ required "metrics.serviceMonitor.tokenSecret.name" $sm.tokenSecret.name }}
    key: {{ required "metrics.serviceMonitor.tokenSecret.key" $sm.tokenSecret.key }}
{{- else if $os.userWorkload }}
# User-workload monitoring refuses bearerTokenFile: the chart's scraper
# ServiceAccount's token, from its Secret.
authorization:
  type: Bearer
  credentials:
    name: {{ include "aromon.metricsScraper" $ }}-token
    key: token
{{- else }}
bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
{{- end }}
tlsConfig:
  {{- if and $os.serviceCA $os.platform }}
  # The service CA's bundle, which the cluster-monitoring-operator mounts
  # into the platform Prometheus.
  caFile: /etc/prometheus/configmaps/serving-certs-ca-bundle/service-ca.crt
  serverName: {{ .serverName }}
  {{- else if $os.serviceCA }}
  ca:
    configMap:
      name: {{ include "aromon.metricsCABundle" $ }}
      key: service-ca.crt
  serverName: {{ .serverName }}
  {{- else if $sm.caSecret }}
  ca:
    secret:
      name: {{ required "metrics.serviceMonitor.caSecret.name" $sm.caSecret.name }}
      key: {{ required "metrics.serviceMonitor.caSecret.key" $sm.caSecret.key }}
  serverName: {{ .serverName }}
  {{- else }}
  # Self-signed serving certificate unless metrics.certSecret is set:
  # encrypted, not verified. Set caSecret (or, on OpenShift,
  # monitoring.openshift.serviceCA) to verify it.
  insecureSkipVerify: true
  {{- end }}
{{- end }}
{{- end -}}
