{{- /*
  Generated copy: the source is charts/_shared/templates/ (see its README);
  `make generate` writes it into every component chart.
*/ -}}

{{- /* The container image: <repository>@<digest> when a digest is given, else
  <repository>:<tag>, the tag defaulting to the chart's appVersion (`make
  charts` sets it to the release, the tag `make push` pushes).
  global.imageRegistry, for a mirror or a disconnected cluster's registry,
  replaces everything before the image's name: <imageRegistry>/<name>, where
  <name> is the last path element of image.repository, as `make push
  REGISTRY=<imageRegistry>` names the images. */ -}}
{{- define "upshift.image" -}}
{{- $global := .Values.global | default dict -}}
{{- $repository := .Values.image.repository -}}
{{- with $global.imageRegistry -}}
{{- $repository = printf "%s/%s" (trimSuffix "/" .) (base $repository) -}}
{{- end -}}
{{- with .Values.image.digest -}}
{{- printf "%s@%s" $repository . -}}
{{- else -}}
{{- printf "%s:%s" $repository (default $.Chart.AppVersion $.Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{- /* The pod's imagePullSecrets: global.imagePullSecrets (the umbrella
  chart's, for every component) then the chart's own imagePullSecrets,
  without repeats. Empty when neither names one. */ -}}
{{- define "upshift.imagePullSecrets" -}}
{{- $global := .Values.global | default dict -}}
{{- $secrets := concat ($global.imagePullSecrets | default list) (.Values.imagePullSecrets | default list) | uniq -}}
{{- with $secrets -}}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end -}}
{{- end -}}

{{- /* The cluster-wide proxy as the environment Go's net/http reads
  (http.ProxyFromEnvironment, which the default transport and every client
  of these components use). client-go reads it too: the kube-apiserver's
  in-cluster address is always added to NO_PROXY (the kubelet expands
  $(KUBERNETES_SERVICE_HOST) from the service variables it gives every
  container), so the controller never reaches the apiserver through the
  proxy, whatever proxy.noProxy says. */ -}}
{{- define "upshift.proxyEnv" -}}
{{- $proxy := .Values.proxy | default dict -}}
{{- $env := list -}}
{{- with $proxy.httpProxy }}{{ $env = append $env (dict "name" "HTTP_PROXY" "value" .) }}{{ end -}}
{{- with $proxy.httpsProxy }}{{ $env = append $env (dict "name" "HTTPS_PROXY" "value" .) }}{{ end -}}
{{- if $env -}}
{{- $noProxy := list $proxy.noProxy "$(KUBERNETES_SERVICE_HOST)" | compact | join "," -}}
{{- $env = append $env (dict "name" "NO_PROXY" "value" $noProxy) -}}
{{- end -}}
{{- with $env }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{- /* "true" when openshift.trustedCABundle.enabled is set, else empty. */ -}}
{{- define "upshift.trustedCABundle.enabled" -}}
{{- if dig "trustedCABundle" "enabled" false (.Values.openshift | default dict) }}true{{ end -}}
{{- end -}}

{{- /* The ConfigMap OpenShift's network operator fills: <fullname>-trusted-ca. */ -}}
{{- define "upshift.trustedCABundle.name" -}}
{{- $fullname := ternary .Release.Name (printf "%s-%s" .Release.Name .Chart.Name) (contains .Chart.Name .Release.Name) -}}
{{- printf "%s-trusted-ca" ($fullname | trunc 52 | trimSuffix "-") -}}
{{- end -}}

{{- /* Where the bundle is mounted: the folder Red Hat's images keep the
  system's extracted trust in. SSL_CERT_DIR names it, so Go's crypto/x509
  loads every file in it in addition to the image's own bundle
  (SSL_CERT_FILE, the public roots): the cluster's CAs, a TLS-inspecting
  proxy's included, are trusted on top of the public roots. */ -}}
{{- define "upshift.trustedCABundle.dir" -}}
/etc/pki/ca-trust/extracted/pem
{{- end -}}

{{- define "upshift.trustedCABundle.env" -}}
{{- if include "upshift.trustedCABundle.enabled" . -}}
- name: SSL_CERT_DIR
  value: {{ include "upshift.trustedCABundle.dir" . }}
{{- end -}}
{{- end -}}

{{- define "upshift.trustedCABundle.volumeMount" -}}
{{- if include "upshift.trustedCABundle.enabled" . -}}
- name: trusted-ca-bundle
  mountPath: {{ include "upshift.trustedCABundle.dir" . }}
  readOnly: true
{{- end -}}
{{- end -}}

{{- /* Not optional: until the network operator has filled the ConfigMap,
  the kubelet does not start the pod, rather than start it with TLS to the
  proxy or OCM failing. */ -}}
{{- define "upshift.trustedCABundle.volume" -}}
{{- if include "upshift.trustedCABundle.enabled" . -}}
- name: trusted-ca-bundle
  configMap:
    name: {{ include "upshift.trustedCABundle.name" . }}
    items:
      - key: ca-bundle.crt
        path: tls-ca-bundle.pem
{{- end -}}
{{- end -}}
