{{/*
The labels every object carries: the manifests' own (app.kubernetes.io/name, and app.kubernetes.io/part-of
that manifests/kustomization.yaml adds), then Helm's (chart, release, manager). Only in metadata.labels:
selectors and the pod template keep the manifests' labels alone (a Deployment's selector is immutable,
so an install moved from kubectl apply -k to Helm keeps its pods).
*/}}
{{- define "nvcre-hooks.labels" -}}
app.kubernetes.io/name: nvcre-hooks
{{ include "nvcre-hooks.commonLabels" . }}
{{- end }}

{{/* The labels of an object the manifests do not name nvcre-hooks (the dashboard ConfigMap). */}}
{{- define "nvcre-hooks.commonLabels" -}}
app.kubernetes.io/part-of: nvcre-hooks
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The pod selector of the hooks (Deployment, Service, PodDisruptionBudget, NetworkPolicy). */}}
{{- define "nvcre-hooks.selector" -}}
app.kubernetes.io/name: nvcre-hooks
{{- end }}

{{/* The Secret holding the hook token: the operator's (hookToken.existingSecret) or the chart's. */}}
{{- define "nvcre-hooks.tokenSecret" -}}
{{- .Values.hookToken.existingSecret | default "nvcre-hooks-token" -}}
{{- end }}

{{/*
One hook of the CompositeController: the Service, the path, the timeout and the bearer token's Secret.
Called with (list $ "/path").
*/}}
{{- define "nvcre-hooks.webhook" -}}
{{- $ := index . 0 -}}
version: v2
webhook:
  service:
    name: nvcre-hooks
    namespace: {{ $.Release.Namespace }}
    port: 80
    protocol: http
  path: {{ index . 1 }}
  timeout: 10s
  responseUnMarshallMode: strict
  authorization:
    type: Bearer
    secretRef:
      name: {{ include "nvcre-hooks.tokenSecret" $ }}
      namespace: {{ $.Release.Namespace }}
      key: token
{{- end }}

{{/*
The text of a file of files/ (links to manifests/, the one home of the CRD's schema, the rules and the
dashboard) from its first top-level `spec:` on, as it stands: the chart writes the head (kind, name,
labels) itself, and a YAML round trip through fromYaml would turn the schema's integers into floats.
Called with (list $ "files/NAME").
*/}}
{{- define "nvcre-hooks.specOf" -}}
{{- $text := (index . 0).Files.Get (index . 1) -}}
{{- $parts := splitn "\nspec:\n" 2 $text -}}
{{- if not $parts._1 -}}
{{- fail (printf "%s has no top-level spec:" (index . 1)) -}}
{{- end -}}
spec:
{{ $parts._1 }}
{{- end }}
