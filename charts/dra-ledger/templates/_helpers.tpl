{{/*
Rules of the chart's templates:
1. Every object is the object of manifests/ (base, components, overlays) with the release's namespace where that
   names draledger-system; tests/manifests/test_chart_overlays.py holds them equal for the matching values.
2. Helm's own labels (helm.sh/chart, app.kubernetes.io/managed-by, instance, version) go on every object's
   metadata, never on selectors or pod templates: a selector cannot change on upgrade.
3. A combination of values that cannot work fails the render with one line naming the value.
*/}}

{{/* The namespace of every namespaced object: the release's. */}}
{{- define "draledger.namespace" -}}
{{ .Release.Namespace }}
{{- end }}

{{/* The operator's ServiceAccount as the API server names its requests (the guardrail matches on it). */}}
{{- define "draledger.username" -}}
system:serviceaccount:{{ include "draledger.namespace" . }}:draledger
{{- end }}

{{- define "draledger.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* The labels of most objects: the manifests' two, then Helm's. */}}
{{- define "draledger.labels" -}}
app.kubernetes.io/name: draledger
app.kubernetes.io/part-of: dra-ledger
{{ include "draledger.helmLabels" . }}
{{- end }}

{{- define "draledger.selectorLabels" -}}
app.kubernetes.io/name: draledger
app.kubernetes.io/component: operator
{{- end }}

{{- define "draledger.webhook" -}}
{{- eq .Values.gating.mode "webhook" -}}
{{- end }}

{{- define "draledger.certManager" -}}
{{- and (eq .Values.gating.mode "webhook") (eq .Values.gating.webhook.certificate "cert-manager") -}}
{{- end }}

{{/* The namespaces whose pods are gated: never kube-system or ours; then all but those opted out, or (canary)
those the canary's namespaceSelector selects. */}}
{{- define "draledger.namespaceSelector" -}}
matchExpressions:
- key: kubernetes.io/metadata.name
  operator: NotIn
  values: [kube-system, {{ include "draledger.namespace" . }}]
{{- if .Values.canary.enabled }}
{{- with .Values.canary.namespaceSelector.matchExpressions }}
{{ toYaml . }}
{{- end }}
{{- with .Values.canary.namespaceSelector.matchLabels }}
matchLabels:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- else }}
- key: draledger.dev/gating
  operator: NotIn
  values: [disabled]
{{- end }}
{{- end }}

{{- define "draledger.image" -}}
{{- $image := .Values.image -}}
{{- if $image.digest -}}
{{ $image.repository }}@{{ $image.digest }}
{{- else -}}
{{ $image.repository }}:{{ $image.tag | default .Chart.AppVersion }}
{{- end }}
{{- end }}

{{/* The DRALEDGER_* variables of the operator (every flag of `draledger run` reads one). */}}
{{- define "draledger.config" -}}
DRALEDGER_GATE_EXCLUDE_NAMESPACES: {{ printf "kube-system,%s" (include "draledger.namespace" .) }}
DRALEDGER_LOG_FORMAT: json
DRALEDGER_METRICS_PORT: "8080"
DRALEDGER_NODE_SELECTOR: {{ ternary .Values.canary.nodeSelector "" .Values.canary.enabled | quote }}
DRALEDGER_POD_STATUS: {{ .Values.podStatus }}
DRALEDGER_WEBHOOK: {{ include "draledger.webhook" . | quote }}
DRALEDGER_WEBHOOK_CERT_DIR: /etc/draledger/tls
DRALEDGER_WEBHOOK_PORT: "9443"
{{- end }}

{{/* The ConfigMap's name carries a hash of its data, as kustomize's generator does: a change rolls the Deployment. */}}
{{- define "draledger.configName" -}}
draledger-config-{{ include "draledger.config" . | sha256sum | trunc 10 }}
{{- end }}

{{/* Values that cannot work together: one line each, naming the value. */}}
{{- define "draledger.checks" -}}
{{- if and (not .Values.leaderElection.enabled) (ne (int .Values.replicas) 1) }}
{{- fail (printf "replicas: %v replicas need leaderElection.enabled=true (without it every replica writes); set replicas: 1" .Values.replicas) }}
{{- end }}
{{- if and (eq .Values.gating.mode "webhook") (eq .Values.gating.webhook.certificate "secret") (not .Values.gating.webhook.caBundle) }}
{{- fail "gating.webhook.caBundle: gating.webhook.certificate=secret needs the base64 PEM of the CA that signed the Secret's tls.crt" }}
{{- end }}
{{- if and .Values.canary.enabled (not .Values.canary.nodeSelector) }}
{{- fail "canary.nodeSelector: canary.enabled=true needs a label selector (an empty one selects every node)" }}
{{- end }}
{{- end }}
