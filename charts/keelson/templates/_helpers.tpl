{{/*
The controllers of the chart: their values key, binary name and CRD file. Every per-controller template ranges
over this list and renders only the enabled ones.
*/}}
{{- define "keelson.controllers" -}}
- key: daemonsetController
  name: daemonset-controller
  crd: daemonset.keelson.dev_daemonsets.yaml
- key: workloadSizer
  name: workload-sizer
  crd: sizer.keelson.dev_workloadsizers.yaml
- key: pipelineController
  name: pipeline-controller
  crd: inference.keelson.dev_pipelines.yaml
{{- end }}

{{/* keelson.enabled: the enabled controllers, as a list of the entries above. */}}
{{- define "keelson.enabled" -}}
{{- $out := list -}}
{{- range $c := include "keelson.controllers" . | fromYamlArray -}}
{{- if (index $.Values $c.key).enabled -}}{{- $out = append $out $c -}}{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end }}

{{/* keelson.config: global merged with a controller's overrides (dict root, key). */}}
{{- define "keelson.config" -}}
{{- $block := index .root.Values .key -}}
{{- toYaml (mergeOverwrite (deepCopy .root.Values.global) (omit $block "enabled" "replicas" "concurrency" "pdb")) -}}
{{- end }}

{{/* keelson.fullname: <release>-<binary> (dict root, name). */}}
{{- define "keelson.fullname" -}}
{{- printf "%s-%s" .root.Release.Name .name | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/* keelson.labels: standard labels of a controller's objects (dict root, name). */}}
{{- define "keelson.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: keelson
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{/* keelson.selector: the labels that select a controller's pods (dict root, name). */}}
{{- define "keelson.selector" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{/* keelson.image: <registry>/<repository>/<binary>:<tag> (dict root, name, cfg). */}}
{{- define "keelson.image" -}}
{{- $i := .cfg.image -}}
{{- printf "%s/%s/%s:%s" $i.registry $i.repository .name (default .root.Chart.AppVersion $i.tag) -}}
{{- end }}

{{/* keelson.certSecret: the Secret holding a controller's webhook certificate (dict root, name). */}}
{{- define "keelson.certSecret" -}}
{{- printf "%s-webhook-tls" (include "keelson.fullname" .) -}}
{{- end }}
