{{/*
The controllers of the chart: their values key, binary name, kind, CRD file, API group and resources (the kind's
plural first, then its subresources), and whether they put finalizers on their objects (then an uninstall hook
takes them off, templates/uninstall.yaml). Every per-controller template ranges over this list and renders only
the enabled ones.
*/}}
{{- define "keelson.controllers" -}}
- key: daemonsetController
  name: daemonset-controller
  kind: DaemonSet
  crd: daemonset.keelson.dev_daemonsets.yaml
  group: daemonset.keelson.dev
  resources: [daemonsets, daemonsets/status]
- key: workloadSizer
  name: workload-sizer
  kind: WorkloadSizer
  crd: sizer.keelson.dev_workloadsizers.yaml
  group: sizer.keelson.dev
  resources: [workloadsizers, workloadsizers/status, workloadsizers/scale]
  finalizers: true
- key: pipelineController
  name: pipeline-controller
  kind: Pipeline
  crd: inference.keelson.dev_pipelines.yaml
  group: inference.keelson.dev
  createsClusterStorage: true
  resources: [pipelines, pipelines/status]
  finalizers: true
{{- end }}

{{/* keelson.enabled: the enabled controllers, as a list of the entries above. */}}
{{- define "keelson.enabled" -}}
{{- $out := list -}}
{{- range $c := include "keelson.controllers" . | fromYamlArray -}}
{{- if (index $.Values $c.key).enabled -}}{{- $out = append $out $c -}}{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end }}

{{/* keelson.releasesFinalizers: "true" when the controller entry c gets the uninstall hook (dict root, c). */}}
{{- define "keelson.releasesFinalizers" -}}
{{- if and .c.finalizers .root.Values.crds.releaseFinalizersOnUninstall -}}true{{- end -}}
{{- end }}

{{/* keelson.argocdPostDelete: the annotations of an object Argo CD makes for its PostDelete hook, and removes once
the hook succeeded (or before it runs again). */}}
{{- define "keelson.argocdPostDelete" -}}
argocd.argoproj.io/hook: PostDelete
argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded
{{- end }}

{{/* keelson.config: global merged with a controller's overrides (dict root, key). */}}
{{- define "keelson.config" -}}
{{- $block := index .root.Values .key -}}
{{- toYaml (mergeOverwrite (deepCopy .root.Values.global) (omit $block "enabled" "replicas" "concurrency" "pdb")) -}}
{{- end }}

{{/* keelson.prefix: what every object's name starts with: fullnameOverride, else <release>[-<nameOverride>]. */}}
{{- define "keelson.prefix" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride -}}
{{- else if .Values.nameOverride -}}
{{- printf "%s-%s" .Release.Name .Values.nameOverride -}}
{{- else -}}
{{- .Release.Name -}}
{{- end -}}
{{- end }}

{{/* keelson.fullname: <prefix>-<binary> (dict root, name). */}}
{{- define "keelson.fullname" -}}
{{- printf "%s-%s" (include "keelson.prefix" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{/* keelson.serviceAccount: the controller's ServiceAccount name (dict root, name, cfg). */}}
{{- define "keelson.serviceAccount" -}}
{{- default (include "keelson.fullname" .) .cfg.serviceAccount.name -}}
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
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* keelson.selector: the labels that select a controller's pods (dict root, name). */}}
{{- define "keelson.selector" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{/* keelson.image: <registry>/<repository>/<binary>:<tag>, or @<digest> when one is set (dict root, name, cfg). */}}
{{- define "keelson.image" -}}
{{- $i := .cfg.image -}}
{{- if $i.digest -}}
{{- printf "%s/%s/%s@%s" $i.registry $i.repository .name $i.digest -}}
{{- else -}}
{{- printf "%s/%s/%s:%s" $i.registry $i.repository .name (default .root.Chart.AppVersion $i.tag) -}}
{{- end -}}
{{- end }}

{{/* keelson.certSecret: the Secret holding a controller's webhook certificate (dict root, name). */}}
{{- define "keelson.certSecret" -}}
{{- printf "%s-webhook-tls" (include "keelson.fullname" .) -}}
{{- end }}

{{/*
keelson.certManagerSecret: the Secret cert-manager writes the webhook certificate into (dict root, name). A name
of its own, not the self-signed mode's: switching webhooks.certs.mode must never make Helm adopt or delete a
Secret the other mode owns.
*/}}
{{- define "keelson.certManagerSecret" -}}
{{- printf "%s-webhook-cert-manager" (include "keelson.fullname" .) -}}
{{- end }}

{{/*
keelson.affinity: the user's affinity, completed with what it leaves out (dict root, name, cfg): without a
nodeAffinity, pods may land only on Linux nodes of the architectures the images are built for
(nodeArchitectures), so a node that cannot run them never gets one; without a podAntiAffinity, a preferred one
spreads a controller's replicas across nodes.
*/}}
{{- define "keelson.affinity" -}}
{{- $a := deepCopy (default dict .cfg.affinity) -}}
{{- if not $a.nodeAffinity -}}
{{- $terms := list (dict "matchExpressions" (list
      (dict "key" "kubernetes.io/os" "operator" "In" "values" (list "linux"))
      (dict "key" "kubernetes.io/arch" "operator" "In" "values" .cfg.nodeArchitectures))) -}}
{{- $_ := set $a "nodeAffinity" (dict "requiredDuringSchedulingIgnoredDuringExecution" (dict "nodeSelectorTerms" $terms)) -}}
{{- end -}}
{{- if not $a.podAntiAffinity -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "keelson.selector" . | fromYaml)) -}}
{{- $_ := set $a "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) -}}
{{- end -}}
{{- toYaml $a -}}
{{- end }}

{{/*
keelson.hookPodLabels and keelson.hookPodAnnotations: the metadata of the pods that run to completion (the uninstall
hook, helm test): the controller's podLabels and podAnnotations, and an opt-out of service-mesh sidecar injection, as
a sidecar never exits and would keep such a pod running. Istio reads its switch from a label before the annotation:
both say no. (dict labels: the pod's own labels, cfg: the controller's config) and (cfg).
*/}}
{{- define "keelson.hookPodLabels" -}}
{{- toYaml (merge (dict "sidecar.istio.io/inject" "false") .labels (default (dict) .cfg.podLabels)) -}}
{{- end }}
{{- define "keelson.hookPodAnnotations" -}}
{{- toYaml (merge (dict "sidecar.istio.io/inject" "false" "linkerd.io/inject" "disabled") (default (dict) .podAnnotations)) -}}
{{- end }}

{{/*
keelson.admissionNamespace: where helm test dry-runs the kinds through their webhooks (root), or "" for a readiness
check only: tests.admissionNamespace, unless it is a namespace the webhooks spare (kube-system, the release's: a
release installed in `default` keeps the default value and checks readiness only), or the webhooks' selectors may
leave it out (a namespaceSelector, whose labels the test cannot know the namespace carries; an objectSelector with
expressions, which the probes' labels cannot be sure to meet).
*/}}
{{- define "keelson.admissionNamespace" -}}
{{- $ns := .Values.tests.admissionNamespace -}}
{{- $w := .Values.webhooks -}}
{{- if and $ns (not (has $ns (list "kube-system" .Release.Namespace))) (empty $w.namespaceSelector) (empty (dig "matchExpressions" list $w.objectSelector)) -}}
{{- $ns -}}
{{- end -}}
{{- end }}
