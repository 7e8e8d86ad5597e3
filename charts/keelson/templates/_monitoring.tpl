{{/* keelson.monitoringLabels: labels of the monitoring objects the three controllers share (root). */}}
{{- define "keelson.monitoringLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: keelson
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: monitoring
app.kubernetes.io/part-of: keelson
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* keelson.metricsReader: the ServiceAccount, ClusterRole and token Secret a scraper uses (root). */}}
{{- define "keelson.metricsReader" -}}
{{- printf "%s-metrics-reader" (include "keelson.prefix" .) | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/* keelson.serviceMonitorNamespace: where the ServiceMonitors and the token Secret live (root). */}}
{{- define "keelson.serviceMonitorNamespace" -}}
{{- default .Release.Namespace .Values.metrics.serviceMonitor.namespace -}}
{{- end }}

{{/*
keelson.selectorOf: the PromQL label matchers of one controller's series (dict root, name): its namespace and its
job, which the ServiceMonitor names after the controller's Service.
*/}}
{{- define "keelson.selectorOf" -}}
namespace="{{ .root.Release.Namespace }}", job="{{ include "keelson.fullname" . }}"
{{- end }}

{{/* keelson.selectorOfAll: the PromQL label matchers of every enabled controller's series (root). */}}
{{- define "keelson.selectorOfAll" -}}
{{- $jobs := list -}}
{{- range $c := include "keelson.enabled" . | fromYamlArray -}}
{{- $jobs = append $jobs (include "keelson.fullname" (dict "root" $ "name" $c.name)) -}}
{{- end -}}
namespace="{{ .Release.Namespace }}", job=~"{{ join "|" $jobs }}"
{{- end }}

{{/*
Where the alerts' runbooks and the dashboard's link point: metrics.prometheusRule.runbookBaseURL, or the operations
guide of the release the chart installs (its tag), so a runbook matches the alerts that link to it.
*/}}
{{- define "keelson.runbooks" -}}
{{- .Values.metrics.prometheusRule.runbookBaseURL | default (printf "https://github.com/keelson-dev/keelson/blob/v%s/docs/operations.md" .Chart.AppVersion) -}}
{{- end }}
