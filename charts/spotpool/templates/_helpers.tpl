{{/* Chart name, or nameOverride. */}}
{{- define "spotpool.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: fullnameOverride, else the release name if it contains the
chart name, else RELEASE-NAME. "spotpool" for a release named spotpool. */}}
{{- define "spotpool.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "spotpool.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "spotpool.labels" -}}
helm.sh/chart: {{ include "spotpool.chart" . }}
{{ include "spotpool.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: spotpool
{{- end }}

{{/* Pod selector: the controller pods of this release. */}}
{{- define "spotpool.selectorLabels" -}}
app.kubernetes.io/name: {{ include "spotpool.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "spotpool.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "spotpool.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "spotpool.leaseName" -}}
{{- default (include "spotpool.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{/* Secret with the controller-wide credentials. */}}
{{- define "spotpool.credentialsSecretName" -}}
{{- default (printf "%s-credentials" (include "spotpool.fullname" .)) .Values.credentials.existingSecret }}
{{- end }}

{{/* True (non-empty) when the credentials Secret is expected to exist. */}}
{{- define "spotpool.credentialsRequired" -}}
{{- if or .Values.credentials.existingSecret .Values.credentials.create }}true{{ end }}
{{- end }}

{{- define "spotpool.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The PodDisruptionBudget is on when enabled is true, or when it is null
(unset) and there is more than one replica. */}}
{{- define "spotpool.pdbEnabled" -}}
{{- $e := .Values.podDisruptionBudget.enabled }}
{{- if kindIs "invalid" $e }}
{{- if gt (int .Values.replicas) 1 }}true{{ end }}
{{- else if $e }}true{{ end }}
{{- end }}

{{/* The notice agent is on when agent.enabled is true, or when it is null
(unset) and the mode is clusterWide. */}}
{{- define "spotpool.agentEnabled" -}}
{{- $e := .Values.agent.enabled }}
{{- if kindIs "invalid" $e }}
{{- if eq .Values.mode "clusterWide" }}true{{ end }}
{{- else if $e }}true{{ end }}
{{- end }}

{{- define "spotpool.agentName" -}}
{{- printf "%s-agent" (include "spotpool.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of the agent's objects, and its pod selector. */}}
{{- define "spotpool.agentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "spotpool.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}
{{- define "spotpool.agentLabels" -}}
helm.sh/chart: {{ include "spotpool.chart" . }}
{{ include "spotpool.agentSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: spotpool
{{- end }}

{{/* The rules the controller needs on pools, Secrets, Events and SpotNotices: in a
ClusterRole (clusterWide) or in a Role per watched namespace (namespaced).
Same as conf/kubernetes/clusterrole.yaml (tests/e2e/test_helm.sh compares). */}}
{{- define "spotpool.controllerRules" -}}
# Informer (list + watch), reads, and merge-patches of spec-side metadata
# (the finalizer that makes deletion terminate the pool's instances).
- apiGroups: ["devops.jokerbai.com"]
  resources: ["spotpools"]
  verbs: ["get", "list", "watch", "patch"]
# Status writes go through the status subresource.
- apiGroups: ["devops.jokerbai.com"]
  resources: ["spotpools/status"]
  verbs: ["get", "patch"]
# Only needed with the OwnerReferencesPermissionEnforcement admission plugin.
- apiGroups: ["devops.jokerbai.com"]
  resources: ["spotpools/finalizers"]
  verbs: ["update"]
# Per-pool Tencent Cloud credentials (spec.credentialsSecretRef): get by
# name only, never list or watch.
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get"]
# Events on Spotpools (launches, terminations, capacity errors).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{ include "spotpool.noticesRule" . }}
{{- end }}

{{/* SpotNotices, the reclaim notices of hosts that are not Nodes: in the controller
rules, and in namespaced mode also in the release namespace (Role <fullname>-notices),
whose notices count for every pool. Same as conf/kubernetes/namespaced/notices-role.yaml. */}}
{{- define "spotpool.noticesRule" -}}
# SpotNotices, the reclaim notices of hosts that are not Nodes: list + watch,
# deleted an hour past their deadline. Never created.
- apiGroups: ["devops.jokerbai.com"]
  resources: ["spotnotices"]
  verbs: ["get", "list", "watch", "delete"]
{{- end }}

{{/* Reading this cluster's identity at start-up (without clusterName): the UID
of the namespace kube-system, nothing else. In the ClusterRole (clusterWide), or
alone in the ClusterRole <fullname>-cluster-id (namespaced). Same as the last
rule of conf/kubernetes/clusterrole.yaml and conf/kubernetes/namespaced/cluster-id.yaml. */}}
{{- define "spotpool.clusterIdRule" -}}
# This cluster's identity, read once at start-up when --cluster-name is not
# set: the UID of the kube-system namespace (tagged on every launch, so that
# clusters sharing a cloud account never count each other's instances).
- apiGroups: [""]
  resources: ["namespaces"]
  resourceNames: ["kube-system"]
  verbs: ["get"]
{{- end }}

{{/* Node features (docs/how-it-works.md#nodes): `nodes: auto` is on in clusterWide
mode and off in namespaced mode, where true adds the ClusterRole <fullname>-nodes. */}}
{{- define "spotpool.nodesEnabled" -}}
{{- $n := toString .Values.nodes }}
{{- if or (eq $n "true") (and (eq $n "auto") (eq .Values.mode "clusterWide")) }}true{{ end }}
{{- end }}

{{/* Reading and deleting Nodes: cluster-scoped, so in the ClusterRole (clusterWide) or
alone in the ClusterRole <fullname>-nodes (namespaced). Same as the nodes rule of
conf/kubernetes/clusterrole.yaml and conf/kubernetes/namespaced/nodes.yaml. */}}
{{- define "spotpool.nodesRule" -}}
# Nodes: each instance's Node and Ready in the pool's status, the drain's taint
# and cordon (patch), and the deletion of the Nodes of instances that are gone.
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["get", "list", "watch", "patch", "delete"]
# Draining: a Node's pods listed by spec.nodeName, each evicted.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
- apiGroups: [""]
  resources: ["pods/eviction"]
  verbs: ["create"]
{{- end }}

{{/* Refuse value combinations that would deploy something broken. */}}
{{- define "spotpool.validate" -}}
{{- if not (has (toString .Values.nodes) (list "auto" "true" "false")) }}
{{- fail (printf "nodes must be auto, true or false, not %q" (toString .Values.nodes)) }}
{{- end }}
{{- if not (has .Values.mode (list "clusterWide" "namespaced")) }}
{{- fail (printf "mode must be clusterWide or namespaced, not %q" (toString .Values.mode)) }}
{{- end }}
{{- if eq .Values.mode "namespaced" }}
{{- if not .Values.watchNamespaces }}
{{- fail "mode namespaced needs at least one namespace in watchNamespaces" }}
{{- end }}
{{- if ne (len .Values.watchNamespaces) (len (uniq .Values.watchNamespaces)) }}
{{- fail "watchNamespaces has duplicates" }}
{{- end }}
{{- range .Values.watchNamespaces }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" (toString .)) }}
{{- fail (printf "watchNamespaces: %q is not a valid namespace name" (toString .)) }}
{{- end }}
{{- end }}
{{- else if .Values.watchNamespaces }}
{{- fail "watchNamespaces is only used with mode: namespaced (clusterWide watches all namespaces)" }}
{{- end }}
{{- if and .Values.clusterName (not (regexMatch "^[A-Za-z0-9._-]{1,63}$" (toString .Values.clusterName))) }}
{{- fail (printf "clusterName: %q must be 1 to 63 characters of A-Z a-z 0-9 . _ - (it is an instance tag value)" (toString .Values.clusterName)) }}
{{- end }}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicas > 1 needs leaderElection.enabled: true (otherwise every replica would launch and terminate instances)" }}
{{- end }}
{{- if and .Values.credentials.create (not .Values.credentials.existingSecret) }}
{{- if not (and .Values.credentials.secretId .Values.credentials.secretKey) }}
{{- fail "credentials.create needs credentials.secretId and credentials.secretKey (or use credentials.existingSecret)" }}
{{- end }}
{{- end }}
{{- end }}
