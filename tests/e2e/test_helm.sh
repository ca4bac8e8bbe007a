#!/usr/bin/env bash
# The Helm chart (charts/spotpool) and the namespaced kustomize overlay
# (conf/kubernetes/namespaced), against a real apiserver:
#   - one source of truth: the chart's CRDs are crds/*.yaml byte for byte,
#     its appVersion is VERSION, the overlay's shared files are the base's;
#   - `helm template` renders the main value combinations and
#     `kubectl apply --dry-run=server` accepts every object of each (no Pod
#     Security warning under "restricted"); bad combinations are refused;
#   - the notice agent (DaemonSet, its ClusterRole, the ValidatingAdmissionPolicy that
#     keeps it to its own Node (agent.admissionPolicy), the notice reporter's Role) as
#     conf/kubernetes/agent has them; on by default in clusterWide mode only;
#   - RBAC: the cluster-wide rendering has exactly the rules of
#     `kubectl kustomize conf/kubernetes`; the namespaced rendering's only
#     cluster-wide grant is `get` on the namespace kube-system (the cluster's
#     identity; none at all with clusterName) and it has exactly the overlay's
#     Roles; the Deployment runs
#     `spotpool run` with the expected flags per mode;
#   - a real `helm install` in namespaced mode: NOTES never show the key, the
#     ServiceAccount can read Secrets in the watched namespaces only, and
#     `spotpool run` with the rendered flags, authenticated as that
#     ServiceAccount, converges a pool in a watched namespace, ignores one
#     elsewhere and gets no 403; `helm upgrade` to clusterWide and
#     `helm uninstall` do what docs/install-kubernetes.md#helm says.
# helm comes from scripts/helm-build (Go modules, cached like the control plane;
# tests/run-tests builds it before the e2e suites, so this is then a no-op).
source "$(dirname "$0")/lib.sh"

unset TENCENTCLOUD_SECRET_ID TENCENTCLOUD_SECRET_KEY TENCENTCLOUD_SESSION_TOKEN
CHART=$E2E_ROOT/charts/spotpool
CONF=$E2E_ROOT/conf/kubernetes
NS=spotpool-system
SA_USER=system:serviceaccount:$NS:spotpool
export HELM_CONFIG_HOME=$E2E_TMP/helm/config HELM_CACHE_HOME=$E2E_TMP/helm/cache HELM_DATA_HOME=$E2E_TMP/helm/data

build_start=$SECONDS
HELM_DIR=$("$E2E_ROOT/scripts/helm-build" 2>"$E2E_TMP/helm-build.log") ||
	{ echo "scripts/helm-build failed"; tail -30 "$E2E_TMP/helm-build.log"; exit 1; }
HELM=$HELM_DIR/helm
echo "# $(tail -1 "$E2E_TMP/helm-build.log") ($((SECONDS - build_start)) s)"
helm_version=$("$HELM" version --template '{{.Version}}' 2>&1)
check "helm $helm_version runs from the cache ($HELM_DIR)" test -n "$helm_version"

# --- One source of truth ---------------------------------------------------------
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$CHART/Chart.yaml")
check "Chart.yaml appVersion ($app_version) equals VERSION ($(cat "$E2E_ROOT/VERSION"))" \
	test "$app_version" = "$(cat "$E2E_ROOT/VERSION")"
for crd in spotpool spotnotice; do
	check "charts/spotpool/crds/$crd.yaml is identical to crds/$crd.yaml (cp crds/$crd.yaml charts/spotpool/crds/)" \
		cmp "$E2E_ROOT/crds/$crd.yaml" "$CHART/crds/$crd.yaml"
done
for f in namespace.yaml serviceaccount.yaml leader-election-role.yaml leader-election-rolebinding.yaml deployment.yaml; do
	check "conf/kubernetes/namespaced/$f is identical to conf/kubernetes/$f" cmp "$CONF/$f" "$CONF/namespaced/$f"
done
check "helm lint --strict (clusterWide)" "$HELM" lint --strict "$CHART"
check "helm lint --strict (namespaced, 2 namespaces)" "$HELM" lint --strict "$CHART" --set mode=namespaced --set 'watchNamespaces={team-a,team-b}'

# --- Renderings --------------------------------------------------------------------
# render NAME [HELM ARGS...]: release "spotpool" in spotpool-system into $E2E_TMP/NAME.yaml.
render() {
	local name=$1
	shift
	"$HELM" template spotpool "$CHART" -n "$NS" "$@" >"$E2E_TMP/$name.yaml" 2>"$E2E_TMP/$name.err"
}
COMBOS=(default namespaced namespaced-named existing-secret created-secret monitoring single agent-reporter namespaced-agent namespaced-nodes no-nodes agent-no-vap)
declare -A COMBO_ARGS=(
	[default]=""
	[namespaced]="--set mode=namespaced --set watchNamespaces={team-a,team-b}"
	[namespaced-named]="--set mode=namespaced --set watchNamespaces={team-a,team-b} --set clusterName=prod-1.eu_west"
	[existing-secret]="--set credentials.existingSecret=my-tc-creds"
	[created-secret]="--set credentials.create=true --set credentials.secretId=$EMU_SECRET_ID --set credentials.secretKey=$EMU_SECRET_KEY"
	[monitoring]="--set serviceMonitor.enabled=true --set serviceMonitor.labels.release=prom --set podDisruptionBudget.enabled=true"
	[single]="--set replicas=1 --set leaderElection.enabled=false"
	[agent-reporter]="--set agent.noticeReporter.enabled=true"
	[namespaced-agent]="--set mode=namespaced --set watchNamespaces={team-a,team-b} --set agent.enabled=true"
	[namespaced-nodes]="--set mode=namespaced --set watchNamespaces={team-a,team-b} --set nodes=true"
	[no-nodes]="--set nodes=false"
	[agent-no-vap]="--set agent.admissionPolicy=false"
)
for c in "${COMBOS[@]}"; do
	# shellcheck disable=SC2086 # word splitting of the value list is intended
	check "helm template renders: $c ${COMBO_ARGS[$c]//$EMU_SECRET_KEY/***}" render "$c" ${COMBO_ARGS[$c]}
done
check "helm template renders: image overrides" render image --set image.repository=registry.example.com/gpu/spotpool \
	--set image.tag=1.2.3 --set image.pullPolicy=Always --set 'image.pullSecrets={regcred}' --set metrics.port=9500

# refused NAME "MESSAGE" [HELM ARGS...]: rendering fails with an error containing MESSAGE.
refused() {
	local name=$1 msg=$2
	shift 2
	! render "$name" "$@" && grep -qF "$msg" "$E2E_TMP/$name.err"
}
check "refused: mode namespaced without watchNamespaces" refused bad1 "needs at least one namespace" --set mode=namespaced
check "refused: replicas 3 without leader election" refused bad2 "replicas > 1 needs leaderElection.enabled" \
	--set replicas=3 --set leaderElection.enabled=false
check "refused: credentials.create without a key" refused bad3 "credentials.create needs" --set credentials.create=true
check "refused: unknown mode" refused bad4 'mode must be clusterWide or namespaced, not "cluster"' --set mode=cluster
check "refused: invalid namespace name" refused bad5 'is not a valid namespace name' --set mode=namespaced --set 'watchNamespaces={Team_A}'
check "refused: watchNamespaces in clusterWide mode" refused bad6 'only used with mode: namespaced' --set 'watchNamespaces={team-a}'
check "refused: nodes not auto, true or false" refused bad8 'nodes must be auto, true or false, not "yes"' --set nodes=yes
check "refused: clusterName not a tag value" refused bad7 'clusterName: "prod/1" must be 1 to 63 characters' --set clusterName=prod/1

# --- The cluster -------------------------------------------------------------------
start_emulator
start_cluster
kubectl apply -f "$CONF/namespace.yaml" >/dev/null # Pod Security "restricted" (enforce, warn)
for n in team-a team-b team-c; do kubectl create namespace "$n" >/dev/null; done
# A minimal ServiceMonitor CRD (the Prometheus Operator's, schema left open), so
# that the ServiceMonitor goes through the server dry run like everything else.
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servicemonitors.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
YAML
check "minimal ServiceMonitor CRD established" \
	wait_for 30 kubectl wait --for condition=established --timeout=5s crd/servicemonitors.monitoring.coreos.com

# tojson NAME: $E2E_TMP/NAME.yaml as a JSON array of objects in $E2E_TMP/NAME.json.
tojson() {
	kubectl create --dry-run=client -o json -f "$E2E_TMP/$1.yaml" 2>"$E2E_TMP/$1.tojson.err" |
		jq -cs '[.[] | if .kind == "List" then .items[] else . end]' >"$E2E_TMP/$1.json" &&
		[[ $(jq length "$E2E_TMP/$1.json") == "$(grep -c '^kind:' "$E2E_TMP/$1.yaml")" ]]
}
for c in "${COMBOS[@]}" image; do
	check "rendering $c parses into $(grep -c '^kind:' "$E2E_TMP/$c.yaml") objects" tojson "$c"
done
kubectl kustomize "$CONF" >"$E2E_TMP/base.yaml" 2>&1
check "kubectl kustomize conf/kubernetes" tojson base
kubectl kustomize "$CONF/namespaced" >"$E2E_TMP/overlay.yaml" 2>&1
check "kubectl kustomize conf/kubernetes/namespaced" tojson overlay
kubectl kustomize "$CONF/agent" >"$E2E_TMP/agent-base.yaml" 2>&1
check "kubectl kustomize conf/kubernetes/agent" tojson agent-base

# --- Server dry run of every rendering --------------------------------------------
# dry_run NAME: the apiserver accepts every object (one "(server dry run)" line
# each) and Pod Security "restricted" has nothing to warn about.
dry_run() {
	local f=$E2E_TMP/$1.yaml out=$E2E_TMP/$1.dry n want
	kubectl apply --dry-run=server -f "$f" >"$out" 2>&1 || { cat "$out"; return 1; }
	n=$(grep -c '(server dry run)' "$out")
	want=$(grep -c '^kind:' "$f")
	[[ $n == "$want" ]] || { echo "$n of $want objects accepted"; cat "$out"; return 1; }
	! grep -i 'would violate PodSecurity' "$out"
}
for c in "${COMBOS[@]}" image; do
	check "kubectl apply --dry-run=server accepts all $(grep -c '^kind:' "$E2E_TMP/$c.yaml") objects of $c, no PodSecurity warning" dry_run "$c"
done
check "kubectl apply --dry-run=server accepts conf/kubernetes/namespaced (all $(grep -c '^kind:' "$E2E_TMP/overlay.yaml") objects)" dry_run overlay
check "kubectl apply --dry-run=server accepts conf/kubernetes/agent (all $(grep -c '^kind:' "$E2E_TMP/agent-base.yaml") objects), no PodSecurity warning" dry_run agent-base

# --- Objects per combination -------------------------------------------------------
# kinds NAME: sorted "Kind namespace/name" lines.
kinds() { jq -r '.[] | "\(.kind) \(.metadata.namespace // "")/\(.metadata.name)"' "$E2E_TMP/$1.json" | sort | tr '\n' ';'; }
# obj NAME KIND [OBJECT NAME]: the first (or named) object of KIND.
obj() { jq -c --arg k "$2" --arg n "${3:-}" '[.[] | select(.kind == $k and ($n == "" or .metadata.name == $n))][0]' "$E2E_TMP/$1.json"; }
expect_kinds="ClusterRole /spotpool;ClusterRole /spotpool-agent;ClusterRoleBinding /spotpool;ClusterRoleBinding /spotpool-agent;DaemonSet $NS/spotpool-agent;Deployment $NS/spotpool;PodDisruptionBudget $NS/spotpool;Role $NS/spotpool-leader-election;RoleBinding $NS/spotpool-leader-election;Service $NS/spotpool-metrics;ServiceAccount $NS/spotpool;ServiceAccount $NS/spotpool-agent;ValidatingAdmissionPolicy /spotpool-agent-own-node;ValidatingAdmissionPolicyBinding /spotpool-agent-own-node;"
check "default: ClusterRole+binding, leader-election Role+binding, SA, Service, Deployment, PDB (replicas 2), the notice agent (DaemonSet, SA, ClusterRole+binding, ValidatingAdmissionPolicy+binding); no Secret, no ServiceMonitor" \
	test "$(kinds default)" = "$expect_kinds"

# --- RBAC: chart == kustomize -----------------------------------------------------
# rules NAME KIND OBJECT [NAMESPACE]: the object's rules, order-normalised.
NORM='map({apiGroups: ((.apiGroups // []) | sort), resources: ((.resources // []) | sort),
	resourceNames: ((.resourceNames // []) | sort), verbs: ((.verbs // []) | sort),
	nonResourceURLs: ((.nonResourceURLs // []) | sort)}) | sort'
rules() {
	jq -cS --arg k "$2" --arg n "$3" --arg ns "${4:-}" \
		"[.[] | select(.kind == \$k and .metadata.name == \$n and (\$ns == \"\" or .metadata.namespace == \$ns))] |
		 if length == 1 then .[0].rules | $NORM else error(\"\(length) objects\") end" "$E2E_TMP/$1.json"
}
same() { # A B: equal and not empty
	[[ -n $1 && $1 == "$2" ]] || { echo "$1"; echo "  !="; echo "$2"; return 1; }
}
base_rules=$(rules base ClusterRole spotpool)
check "clusterWide: chart ClusterRole rules == conf/kubernetes ClusterRole rules" same "$(rules default ClusterRole spotpool)" "$base_rules"
check "clusterWide: chart leader-election Role rules == conf/kubernetes's" \
	same "$(rules default Role spotpool-leader-election $NS)" "$(rules base Role spotpool-leader-election $NS)"
check "clusterWide: ClusterRoleBinding binds ClusterRole spotpool to $NS/spotpool" \
	same "$(obj default ClusterRoleBinding spotpool | jq -cS '[.roleRef, .subjects]')" "$(obj base ClusterRoleBinding spotpool | jq -cS '[.roleRef, .subjects]')"
# The cluster identity rule (get namespaces/kube-system): in the ClusterRole, or alone.
CLUSTER_ID_RULES='[{"apiGroups":[""],"nonResourceURLs":[],"resourceNames":["kube-system"],"resources":["namespaces"],"verbs":["get"]}]'
check "clusterWide: the ClusterRole may get the namespace kube-system (cluster identity), and no other namespace" \
	bash -c "jq -e --argjson id '$CLUSTER_ID_RULES' '[.[] | select(.resources == [\"namespaces\"])] == \$id' <<<'$base_rules'"
# cluster_objects NAME: every ClusterRole/ClusterRoleBinding (name, rules or roleRef+subjects), sorted.
cluster_objects() {
	jq -cS "[.[] | select(.kind | test(\"^Cluster\")) |
		{kind, name: .metadata.name, rules: ((.rules // []) | $NORM), roleRef, subjects}] | sort" "$E2E_TMP/$1.json"
}
check "namespaced: the only cluster-wide grant is ClusterRole spotpool-cluster-id (get namespaces/kube-system), bound to $NS/spotpool" \
	same "$(cluster_objects namespaced | jq -c '[.[] | [.kind, .name, .rules, .roleRef.name, .subjects]]')" \
	"[[\"ClusterRole\",\"spotpool-cluster-id\",$CLUSTER_ID_RULES,null,null],[\"ClusterRoleBinding\",\"spotpool-cluster-id\",[],\"spotpool-cluster-id\",[{\"kind\":\"ServiceAccount\",\"name\":\"spotpool\",\"namespace\":\"$NS\"}]]]"
check "namespaced: the chart's cluster-wide objects == conf/kubernetes/namespaced's (cluster-id.yaml)" \
	same "$(cluster_objects namespaced)" "$(cluster_objects overlay)"
check "namespaced with clusterName: no ClusterRole and no ClusterRoleBinding at all; --cluster-name prod-1.eu_west" bash -c \
	"! jq -e '.[] | select(.kind | test(\"^Cluster\"))' '$E2E_TMP/namespaced-named.json' >/dev/null &&
	 jq -e '[.[] | select(.kind==\"Deployment\")][0].spec.template.spec.containers[0].args | index(\"--cluster-name\") as \$i | .[\$i+1] == \"prod-1.eu_west\"' '$E2E_TMP/namespaced-named.json'"
check "namespaced: nothing grants secrets outside team-a and team-b" bash -c "jq -e '[.[] | select(.rules) |
	select(any(.rules[]; .resources | index(\"secrets\"))) | .metadata.namespace] == [\"team-a\", \"team-b\"]' '$E2E_TMP/namespaced.json'"
# Nodes (cluster-scoped): in the ClusterRole, off in namespaced mode (--no-nodes), or
# opted in there with the ClusterRole of conf/kubernetes/namespaced/nodes.yaml. With
# them the drain's rules: pods list (any namespace) and pods/eviction create.
NODES_RULES='[{"apiGroups":[""],"nonResourceURLs":[],"resourceNames":[],"resources":["nodes"],"verbs":["delete","get","list","patch","watch"]},{"apiGroups":[""],"nonResourceURLs":[],"resourceNames":[],"resources":["pods"],"verbs":["list"]},{"apiGroups":[""],"nonResourceURLs":[],"resourceNames":[],"resources":["pods/eviction"],"verbs":["create"]}]'
NODE_RES='.resources == ["nodes"] or .resources == ["pods"] or .resources == ["pods/eviction"]'
check "clusterWide: the ClusterRole may get, list, watch, patch and delete nodes, list pods and evict them" \
	bash -c "jq -e --argjson n '$NODES_RULES' '[.[] | select($NODE_RES)] == \$n' <<<'$base_rules'"
# SpotNotices (docs/notice-agent.md): read, watched and deleted 10 minutes past their
# deadline; in every mode (the Roles carry it too, through role_rules below).
NOTICE_RULES='[{"apiGroups":["devops.jokerbai.com"],"nonResourceURLs":[],"resourceNames":[],"resources":["spotnotices"],"verbs":["delete","get","list","watch"]}]'
check "clusterWide: the ClusterRole may get, list, watch and delete SpotNotices, and not create or change them" \
	bash -c "jq -e --argjson n '$NOTICE_RULES' '[.[] | select(.resources | index(\"spotnotices\"))] == \$n' <<<'$base_rules'"
check "nodes=false: the ClusterRole's rules but nodes and pods" same "$(rules no-nodes ClusterRole spotpool)" \
	"$(jq -c "map(select(($NODE_RES) | not))" <<<"$base_rules")"
check "nodes=false: --no-nodes" bash -c "jq -e '[.[] | select(.kind==\"Deployment\")][0].spec.template.spec.containers[0].args | index(\"--no-nodes\")' '$E2E_TMP/no-nodes.json' >/dev/null"
kubectl create --dry-run=client -o json -f "$CONF/namespaced/nodes.yaml" | jq -cs '[.[] | if .kind == "List" then .items[] else . end]' >"$E2E_TMP/nodes-optin.json"
check "namespaced nodes=true: ClusterRole+binding spotpool-nodes == conf/kubernetes/namespaced/nodes.yaml" same \
	"$(cluster_objects namespaced-nodes | jq -c '[.[] | select(.name == "spotpool-nodes")]')" "$(cluster_objects nodes-optin)"
check "namespaced nodes=true: ClusterRole spotpool-nodes has the nodes and drain rules only" same "$(rules namespaced-nodes ClusterRole spotpool-nodes)" "$NODES_RULES"
check "namespaced nodes=true: no --no-nodes" bash -c "! jq -e '[.[] | select(.kind==\"Deployment\")][0].spec.template.spec.containers[0].args | index(\"--no-nodes\")' '$E2E_TMP/namespaced-nodes.json' >/dev/null"
# The per-namespace Roles: the ClusterRole's rules but the cluster identity and nodes
# (namespaces and nodes are cluster-scoped: a Role cannot grant them).
role_rules=$(jq -c "map(select(.resources != [\"namespaces\"] and (($NODE_RES) | not)))" <<<"$base_rules")
for n in team-a team-b; do
	check "namespaced: Role spotpool in $n has the ClusterRole's rules (but get namespaces/kube-system)" same "$(rules namespaced Role spotpool $n)" "$role_rules"
	check "namespaced: RoleBinding spotpool in $n binds Role spotpool to $NS/spotpool" bash -c "jq -e --arg ns $n '[.[] |
		select(.kind == \"RoleBinding\" and .metadata.namespace == \$ns and .roleRef.kind == \"Role\" and .roleRef.name == \"spotpool\" and
		.subjects == [{kind: \"ServiceAccount\", name: \"spotpool\", namespace: \"$NS\"}])] | length == 1' '$E2E_TMP/namespaced.json'"
	check "overlay: Role spotpool in $n has the ClusterRole's rules (but get namespaces/kube-system)" same "$(rules overlay Role spotpool $n)" "$role_rules"
done
# rbac_set NAME: every Role/RoleBinding (namespace, name, rules or roleRef+subjects), sorted.
rbac_set() {
	jq -cS "[.[] | select(.kind == \"Role\" or .kind == \"RoleBinding\") |
		{kind, ns: .metadata.namespace, name: .metadata.name, rules: ((.rules // []) | $NORM), roleRef, subjects}] | sort" "$E2E_TMP/$1.json"
}
check "namespaced: the chart's Roles and RoleBindings == conf/kubernetes/namespaced's (namespaces, names, rules, bindings)" \
	same "$(rbac_set namespaced)" "$(rbac_set overlay)"
check "namespaced: Role spotpool-notices in $NS has the spotnotices rule only" same "$(rules namespaced Role spotpool-notices $NS)" \
	"$(jq -c 'map(select(.resources == ["spotnotices"]))' <<<"$role_rules")"
check "overlay: no cluster-wide grant but get namespaces/kube-system" same "$(cluster_objects overlay | jq -c '[.[].rules[]]')" "$CLUSTER_ID_RULES"

# --- The notice agent: chart == conf/kubernetes/agent ----------------------------------
check "agent: the chart's ClusterRole spotpool-agent rules == conf/kubernetes/agent's (patch nodes/status only)" \
	same "$(rules agent-reporter ClusterRole spotpool-agent)" "$(rules agent-base ClusterRole spotpool-agent)"
check "agent: ... which is exactly patch on nodes/status" same "$(rules agent-base ClusterRole spotpool-agent)" \
	'[{"apiGroups":[""],"nonResourceURLs":[],"resourceNames":[],"resources":["nodes/status"],"verbs":["patch"]}]'
check "agent: ClusterRoleBinding spotpool-agent binds it to $NS/spotpool-agent, as conf/kubernetes/agent's" \
	same "$(obj agent-reporter ClusterRoleBinding spotpool-agent | jq -cS '[.roleRef, .subjects]')" "$(obj agent-base ClusterRoleBinding spotpool-agent | jq -cS '[.roleRef, .subjects]')"
for k in ValidatingAdmissionPolicy ValidatingAdmissionPolicyBinding; do
	check "agent: the chart's $k spotpool-agent-own-node == conf/kubernetes/agent's (spec)" \
		same "$(obj default $k spotpool-agent-own-node | jq -cS .spec)" "$(obj agent-base $k spotpool-agent-own-node | jq -cS .spec)"
done
check "agent: the policy matches the agent's ServiceAccount spotpool-agent in any namespace, denies" same \
	"$(obj default ValidatingAdmissionPolicy spotpool-agent-own-node | jq -c '[.spec.matchConditions[0].expression, .spec.failurePolicy]')" \
	"[\"request.userInfo.username.startsWith('system:serviceaccount:') && request.userInfo.username.endsWith(':spotpool-agent')\",\"Fail\"]"
# An overlay that moves the agent (namespace:) cannot unbind the policy: kustomize does
# not rewrite the expression, so it must not pin the namespace.
mkdir -p "$E2E_TMP/agent-moved"
printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: gpu-ops\nresources:\n  - %s\n' \
	"$(realpath --relative-to="$E2E_TMP/agent-moved" "$CONF/agent")" >"$E2E_TMP/agent-moved/kustomization.yaml"
moved() {
	kubectl kustomize "$E2E_TMP/agent-moved" >"$E2E_TMP/agent-moved.yaml" && tojson agent-moved &&
		[[ $(obj agent-moved ServiceAccount spotpool-agent | jq -r .metadata.namespace) == gpu-ops ]] &&
		obj agent-moved ValidatingAdmissionPolicy spotpool-agent-own-node |
		jq -e '.spec.matchConditions[0].expression | (contains("spotpool-system") | not) and contains("endsWith(\u0027:spotpool-agent\u0027)")' >/dev/null
}
check "an overlay moving the agent to namespace gpu-ops: the policy still matches its ServiceAccount" moved
check "agent.admissionPolicy=false: the objects of the default but the ValidatingAdmissionPolicy and its binding" \
	test "$(kinds agent-no-vap)" = "${expect_kinds%%ValidatingAdmissionPolicy *}"
check "notice reporter: the chart's Role == conf/kubernetes/agent's (create SpotNotices only)" \
	same "$(rules agent-reporter Role spotpool-notice-reporter $NS)" "$(rules agent-base Role spotpool-notice-reporter $NS)"
check "notice reporter: bound to $NS/spotpool-notice-reporter, as conf/kubernetes/agent's" \
	same "$(obj agent-reporter RoleBinding spotpool-notice-reporter | jq -cS '[.roleRef, .subjects]')" "$(obj agent-base RoleBinding spotpool-notice-reporter | jq -cS '[.roleRef, .subjects]')"
check "notice reporter: off by default" bash -c "! jq -e '.[] | select(.metadata.name == \"spotpool-notice-reporter\")' '$E2E_TMP/default.json' >/dev/null"
ds() { obj "$1" DaemonSet; }
for part in '.spec.template.spec.securityContext' '.spec.template.spec.containers[0].securityContext' \
	'.spec.template.spec.containers[0].resources' '.spec.template.spec.containers[0].env' '.spec.template.spec.affinity' \
	'.spec.template.spec.tolerations' '.spec.template.spec.serviceAccountName' '.spec.updateStrategy' \
	'.spec.template.spec.terminationGracePeriodSeconds'; do
	check "agent DaemonSet $part == conf/kubernetes/agent's" same "$(ds default | jq -cS "$part")" "$(ds agent-base | jq -cS "$part")"
done
check "agent DaemonSet: spotpool agent --log-format json (--log-level info), NODE_NAME from spec.nodeName" \
	same "$(ds default | jq -c '.spec.template.spec.containers[0].args')" "$(ds agent-base | jq -c '.spec.template.spec.containers[0].args + ["--log-level","info"]')"
check "agent DaemonSet: only on nodes labelled spotpool.jokerbai.com/instance-id, every taint tolerated" \
	same "$(ds default | jq -c '[.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0], .spec.template.spec.tolerations]')" \
	'[{"key":"spotpool.jokerbai.com/instance-id","operator":"Exists"},[{"operator":"Exists"}]]'
check "agent DaemonSet: its own pods only (component agent, not the controller's selector)" \
	same "$(ds default | jq -c '.spec.selector.matchLabels["app.kubernetes.io/component"]')" '"agent"'
check "namespaced: no agent by default (no DaemonSet, no ClusterRole spotpool-agent)" bash -c \
	"! jq -e '.[] | select(.kind == \"DaemonSet\" or .metadata.name == \"spotpool-agent\")' '$E2E_TMP/namespaced.json' >/dev/null"
check "namespaced with agent.enabled: the DaemonSet and ClusterRole spotpool-agent (patch nodes/status), as in clusterWide" \
	same "$(rules namespaced-agent ClusterRole spotpool-agent)" "$(rules agent-base ClusterRole spotpool-agent)"

# --- The Deployment: `spotpool run` with the flags of each mode -------------------
dep() { obj "$1" Deployment; }
args() { dep "$1" | jq -c '.spec.template.spec.containers[0].args'; }
LE='"--leader-elect","--lease-name","spotpool","--lease-namespace","$(POD_NAMESPACE)"'
TAIL='"--listen","0.0.0.0:9464","--log-format","json","--log-level","info"'
check "default: spotpool run --leader-elect --lease-name spotpool --lease-namespace \$(POD_NAMESPACE) --listen 0.0.0.0:9464 (all namespaces)" \
	same "$(args default)" "[\"run\",$LE,$TAIL]"
check "namespaced: ... --namespace team-a --namespace team-b (one per entry)" \
	same "$(args namespaced)" "[\"run\",$LE,\"--namespace\",\"team-a\",\"--namespace\",\"team-b\",\"--no-nodes\",$TAIL]"
check "single: spotpool run without --leader-elect" same "$(args single)" "[\"run\",$TAIL]"
check "single: replicas 1, no leader-election Role/RoleBinding, no PDB" bash -c "[[ \$(jq -r '[.[] | select(.kind==\"Deployment\")][0].spec.replicas' '$E2E_TMP/single.json') == 1 ]] &&
	! jq -e '.[] | select(.metadata.name == \"spotpool-leader-election\" or .kind == \"PodDisruptionBudget\")' '$E2E_TMP/single.json' >/dev/null"
check "default: replicas 2 (leader election)" test "$(dep default | jq .spec.replicas)" = 2
# The overlay's flags: the base's plus the same --namespace pairs as the chart's.
ns_args() { jq -c '[. as $a | range(length) | select($a[.] == "--namespace") | $a[.+1]]'; }
check "overlay: Deployment args == base args + --namespace team-a --namespace team-b --no-nodes" same "$(args overlay)" \
	"$(args base | jq -c '. + ["--namespace","team-a","--namespace","team-b","--no-nodes"]')"
check "namespaced: the chart watches the overlay's namespaces" same "$(args namespaced | ns_args)" "$(args overlay | ns_args)"
check "the lease --lease-name (spotpool) is the Lease the leader-election Role names" bash -c "[[ \$(jq -r '.[] | select(.kind==\"Role\" and
	.metadata.name==\"spotpool-leader-election\") | .rules[] | select(.resourceNames) | .resourceNames[0]' '$E2E_TMP/default.json') == spotpool ]]"
for part in '.spec.template.spec.securityContext' '.spec.template.spec.containers[0].securityContext' \
	'.spec.template.spec.containers[0].resources' '.spec.template.spec.containers[0].livenessProbe' \
	'.spec.template.spec.containers[0].readinessProbe' '.spec.template.spec.containers[0].ports' \
	'.spec.template.spec.topologySpreadConstraints | map(.topologyKey)'; do
	check "Deployment $part == conf/kubernetes's" same "$(dep default | jq -cS "$part")" "$(dep base | jq -cS "$part")"
done
check "non-root 65532, read-only root fs, no privilege escalation, drop ALL, seccomp RuntimeDefault" bash -c "jq -e '
	[.[] | select(.kind==\"Deployment\")][0].spec.template.spec | .securityContext.runAsNonRoot and .securityContext.seccompProfile.type == \"RuntimeDefault\" and
	(.containers[0].securityContext | .readOnlyRootFilesystem and .allowPrivilegeEscalation == false and .capabilities.drop == [\"ALL\"] and .runAsUser == 65532)' \
	'$E2E_TMP/default.json'"
check "image defaults to spotpool:<appVersion>, IfNotPresent, no pull secrets" same \
	"$(dep default | jq -c '.spec.template.spec | [.containers[0].image, .containers[0].imagePullPolicy, .imagePullSecrets]')" \
	"[\"spotpool:$app_version\",\"IfNotPresent\",null]"
check "image overrides: repository, tag, pullPolicy, pullSecrets" same \
	"$(dep image | jq -c '.spec.template.spec | [.containers[0].image, .containers[0].imagePullPolicy, .imagePullSecrets]')" \
	'["registry.example.com/gpu/spotpool:1.2.3","Always",[{"name":"regcred"}]]'
check "metrics.port 9500: --listen 0.0.0.0:9500, containerPort 9500, Service port 9500" same \
	"$(jq -c '[([.[] | select(.kind=="Deployment")][0].spec.template.spec.containers[0] | (.args | index("--listen") as $i | .[$i+1]), .ports[0].containerPort),
		([.[] | select(.kind=="Service")][0].spec.ports[0] | .port, .targetPort)]' "$E2E_TMP/image.json")" '["0.0.0.0:9500",9500,9500,"metrics"]'

# --- Credentials --------------------------------------------------------------------
# env_refs NAME: [secret name, key, optional] of the TENCENTCLOUD_* variables.
env_refs() { dep "$1" | jq -c '[.spec.template.spec.containers[0].env[] | select(.name | startswith("TENCENTCLOUD_")) | .valueFrom.secretKeyRef | [.name, .key, .optional]]'; }
check "default: no Secret rendered; optional refs to spotpool-credentials (create it later)" bash -c \
	"! grep -q '^kind: Secret' '$E2E_TMP/default.yaml' && [[ '$(env_refs default)' == '[[\"spotpool-credentials\",\"secretId\",true],[\"spotpool-credentials\",\"secretKey\",true],[\"spotpool-credentials\",\"token\",true]]' ]]"
check "existing secret: no Secret rendered; refs to my-tc-creds, secretId/secretKey required, token optional" bash -c \
	"! grep -q '^kind: Secret' '$E2E_TMP/existing-secret.yaml' && [[ '$(env_refs existing-secret)' == '[[\"my-tc-creds\",\"secretId\",false],[\"my-tc-creds\",\"secretKey\",false],[\"my-tc-creds\",\"token\",true]]' ]]"
check "created secret: Secret spotpool-credentials in $NS with the values (base64) and no token key" same \
	"$(obj created-secret Secret | jq -c '[.metadata.namespace, .metadata.name, (.data.secretId | @base64d), (.data.secretKey | @base64d), (.data | keys)]')" \
	"[\"$NS\",\"spotpool-credentials\",\"$EMU_SECRET_ID\",\"$EMU_SECRET_KEY\",[\"secretId\",\"secretKey\"]]"
check "created secret: refs to it, required" same "$(env_refs created-secret)" \
	'[["spotpool-credentials","secretId",false],["spotpool-credentials","secretKey",false],["spotpool-credentials","token",true]]'
check "created secret: a checksum/credentials pod annotation (helm upgrade with a new key restarts the pods)" \
	bash -c "jq -e '[.[] | select(.kind==\"Deployment\")][0].spec.template.metadata.annotations[\"checksum/credentials\"] | test(\"^[0-9a-f]{64}$\")' '$E2E_TMP/created-secret.json'"
check "created secret: the key never appears in clear in the rendering" bash -c "! grep -qF '$EMU_SECRET_KEY' '$E2E_TMP/created-secret.yaml'"

# --- Monitoring and disruption budget -----------------------------------------------
check "ServiceMonitor monitoring.coreos.com/v1: selects the metrics Service, port metrics, /metrics, extra label release=prom" bash -c "jq -e '
	([.[] | select(.kind==\"Service\")][0]) as \$svc | ([.[] | select(.kind==\"ServiceMonitor\")][0]) as \$sm |
	\$sm.apiVersion == \"monitoring.coreos.com/v1\" and \$sm.metadata.labels.release == \"prom\" and
	(\$sm.spec.selector.matchLabels | to_entries | all(\$svc.metadata.labels[.key] == .value)) and
	\$sm.spec.endpoints[0].port == \$svc.spec.ports[0].name and \$sm.spec.endpoints[0].path == \"/metrics\" and
	\$sm.spec.namespaceSelector.matchNames == [\"$NS\"]' '$E2E_TMP/monitoring.json'"
check "Service selects exactly the Deployment's pods and targets its metrics port" bash -c "jq -e '
	([.[] | select(.kind==\"Service\")][0]) as \$svc | ([.[] | select(.kind==\"Deployment\")][0].spec) as \$d |
	\$svc.spec.selector == \$d.selector.matchLabels and (\$svc.spec.selector | to_entries | all(\$d.template.metadata.labels[.key] == .value)) and
	\$svc.spec.ports[0].targetPort == \$d.template.spec.containers[0].ports[0].name and \$svc.spec.ports[0].port == 9464' '$E2E_TMP/default.json'"
check "PodDisruptionBudget (policy/v1): maxUnavailable 1, selects the Deployment's pods" bash -c "jq -e '
	([.[] | select(.kind==\"PodDisruptionBudget\")][0]) as \$p | ([.[] | select(.kind==\"Deployment\")][0].spec) as \$d |
	\$p.apiVersion == \"policy/v1\" and \$p.spec.maxUnavailable == 1 and \$p.spec.selector.matchLabels == \$d.selector.matchLabels' '$E2E_TMP/monitoring.json'"
check "ServiceMonitor off by default" bash -c "! grep -q '^kind: ServiceMonitor' '$E2E_TMP/default.yaml'"

# --- A real install, namespaced, with a created Secret -------------------------------
"$HELM" install spotpool "$CHART" -n "$NS" --set mode=namespaced --set 'watchNamespaces={team-a,team-b}' \
	--set credentials.create=true --set credentials.secretId="$EMU_SECRET_ID" --set credentials.secretKey="$EMU_SECRET_KEY" \
	>"$E2E_TMP/install.out" 2>&1
check "helm install (namespaced: team-a, team-b; created Secret) succeeds" test $? = 0
check "NOTES name the mode and the watched namespaces" bash -c "grep -q 'Mode: namespaced' '$E2E_TMP/install.out' && grep -q 'team-a, team-b' '$E2E_TMP/install.out'"
"$HELM" get notes spotpool -n "$NS" >"$E2E_TMP/notes.out" 2>&1
check "the secret key appears neither in the install output nor in the NOTES (nor base64)" bash -c \
	"! grep -qF -e '$EMU_SECRET_KEY' -e '$(printf %s "$EMU_SECRET_KEY" | base64 -w0)' '$E2E_TMP/install.out' '$E2E_TMP/notes.out' && test -s '$E2E_TMP/notes.out'"
check "installed: Roles spotpool in team-a and team-b, none in team-c, no ClusterRole spotpool, ClusterRole spotpool-cluster-id" bash -c \
	"kubectl get role spotpool -n team-a && kubectl get role spotpool -n team-b && ! kubectl get role spotpool -n team-c && ! kubectl get clusterrole spotpool &&
	 kubectl get clusterrole spotpool-cluster-id"
can() { kubectl auth can-i "$@" --as="$SA_USER" 2>/dev/null; }
rbac_ok=true
{
	for q in "get secrets -n team-a" "get secrets -n team-b" "list spotpools.devops.jokerbai.com -n team-a" \
		"watch spotpools.devops.jokerbai.com -n team-b" "patch spotpools.devops.jokerbai.com --subresource=status -n team-a" \
		"create events -n team-b" "create leases.coordination.k8s.io -n $NS" "update leases.coordination.k8s.io/spotpool -n $NS" \
		"get namespaces/kube-system" "list spotnotices.devops.jokerbai.com -n team-a" "watch spotnotices.devops.jokerbai.com -n team-b" \
		"delete spotnotices.devops.jokerbai.com -n team-a"; do
		[[ $(can $q) == yes ]] || { rbac_ok=false; echo "denied: $q;"; }
	done
	for q in "get secrets -n team-c" "get secrets -n default" "get secrets -n $NS" "list secrets -n team-a" "list secrets -A" \
		"list spotnotices.devops.jokerbai.com -A" "list spotnotices.devops.jokerbai.com -n team-c" "create spotnotices.devops.jokerbai.com -n team-a" \
		"list spotpools.devops.jokerbai.com -A" "list spotpools.devops.jokerbai.com -n team-c" "delete spotpools.devops.jokerbai.com -n team-a" \
		"update leases.coordination.k8s.io/spotpool -n team-a" "get namespaces/default" "list namespaces"; do
		[[ $(can $q) == no ]] || { rbac_ok=false; echo "allowed: $q;"; }
	done
} >"$E2E_TMP/rbac.out"
check "namespaced SA: Secrets (by name), pools and SpotNotices in team-a/team-b only; cluster-wide only get namespaces/kube-system $(tr '\n' ' ' <"$E2E_TMP/rbac.out")" $rbac_ok

# `spotpool run` with the installed Deployment's flags, authenticated only as the
# chart's ServiceAccount (a TokenRequest token in a kubeconfig of its own).
K8S_URL=$(sed -n 's/^K8S_URL=//p' "$E2E_TMP/k8s/env")
K8S_CA_FILE=$(sed -n 's/^K8S_CA_FILE=//p' "$E2E_TMP/k8s/env")
TOKEN=$(kubectl create token spotpool -n "$NS" --duration=1h 2>/dev/null)
SA_KUBECONFIG=$E2E_TMP/sa.kubeconfig
{
	kubectl config --kubeconfig="$SA_KUBECONFIG" set-cluster c --server="$K8S_URL" --certificate-authority="$K8S_CA_FILE" &&
		kubectl config --kubeconfig="$SA_KUBECONFIG" set-credentials sa --token="$TOKEN" &&
		kubectl config --kubeconfig="$SA_KUBECONFIG" set-context c --cluster=c --user=sa --namespace="$NS" &&
		kubectl config --kubeconfig="$SA_KUBECONFIG" use-context c
} >/dev/null
check "kubeconfig with a token of $NS/spotpool" test -n "$TOKEN" -a -s "$SA_KUBECONFIG"
mapfile -t run_args < <(kubectl get deploy spotpool -n "$NS" -o json | jq -r '.spec.template.spec.containers[0].args[1:][]' | sed "s/\$(POD_NAMESPACE)/$NS/")
check "installed Deployment: spotpool run ${run_args[*]}" test "${run_args[*]}" = \
	"--leader-elect --lease-name spotpool --lease-namespace $NS --namespace team-a --namespace team-b --no-nodes --listen 0.0.0.0:9464 --log-format json --log-level info"
kubectl -n team-a create secret generic tc-creds --from-literal=secretId="$EMU_SECRET_ID" --from-literal=secretKey="$EMU_SECRET_KEY" >/dev/null
kubectl -n team-c create secret generic tc-creds --from-literal=secretId="$EMU_SECRET_ID" --from-literal=secretKey="$EMU_SECRET_KEY" >/dev/null
pool_manifest pa team-a 2 2 "  credentialsSecretRef: {name: tc-creds}" | kubectl apply -f - >/dev/null
pool_manifest pc team-c 1 1 "  credentialsSecretRef: {name: tc-creds}" | kubectl apply -f - >/dev/null
PORT=$(free_port)
# The rendered flags, then (later flags win) a free loopback port, plain logs and the SA's
# kubeconfig; --notices-namespace as the pod's service account namespace file says in the
# cluster (from a kubeconfig there is no home namespace otherwise).
KUBECONFIG=$SA_KUBECONFIG start_controller ns "${run_args[@]}" --listen "127.0.0.1:$PORT" --log-format plain --kubeconfig "$SA_KUBECONFIG" \
	--notices-namespace "$NS"
ctl=$CTL_PID
converged() { # NAME NS SIZE
	local j
	j=$(kubectl get sp "$1" -n "$2" -o json 2>/dev/null) || return 1
	[[ $(jq '.status.size' <<<"$j") == "$3" && $(jq -r '.status.conditions[]? | select(.type == "Ready") | .status' <<<"$j") == True ]]
}
check "as the SA: /readyz 200 (the list of both watched namespaces succeeded)" \
	wait_for 20 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/readyz) == 200 ]]"
check "as the SA: Lease $NS/spotpool held by it (*_$ctl)" wait_for 15 bash -c \
	"[[ \$(kubectl get lease spotpool -n $NS -o jsonpath='{.spec.holderIdentity}') == *_$ctl ]]"
if wait_for 40 converged pa team-a 2; then
	pass "as the SA: pool team-a/pa converges (size 2, Ready) with its Secret read under the Role"
else
	fail "pool team-a/pa did not converge" "$(kubectl get sp pa -n team-a -o json | jq -c .status)" "$(tail -20 "$E2E_TMP/ns.log")"
fi
check "emulator: exactly 2 live instances for team-a/pa" test "$(emu_live team-a/pa)" = 2
check "team-c/pc (not watched) untouched: no status, nothing launched" \
	test "$(sp_field pc .status.size team-c)" = null -a "$(emu_get 'stats?tagKey=spotpool.jokerbai.com/pool&tagValue=team-c/pc' | jq .launched)" = 0
check "log: listed spotpools in team-a and in team-b, never all namespaces" bash -c "grep -q 'listed spotpools in team-a ' '$E2E_TMP/ns.log' &&
	grep -q 'listed spotpools in team-b ' '$E2E_TMP/ns.log' && ! grep -q 'spotpools in all namespaces' '$E2E_TMP/ns.log'"
check "log: listed spotnotices (the chart's CRD) in team-a and in team-b, never all namespaces" bash -c "grep -q 'listed spotnotices in team-a ' '$E2E_TMP/ns.log' &&
	grep -q 'listed spotnotices in team-b ' '$E2E_TMP/ns.log' && ! grep -q 'spotnotices in all namespaces' '$E2E_TMP/ns.log'"
check "log: no 403/forbidden, no RBAC refusal said" bash -c "test -s '$E2E_TMP/ns.log' && ! grep -qE 'HTTP 403|forbidden|\(RBAC\)' '$E2E_TMP/ns.log'"
stop_controller "$ctl"
check "SIGTERM: exits 0" test $? = 0

# --- helm upgrade to clusterWide, then uninstall -------------------------------------
"$HELM" upgrade spotpool "$CHART" -n "$NS" --reuse-values --set mode=clusterWide --set-json 'watchNamespaces=[]' >"$E2E_TMP/upgrade.out" 2>&1
check "helm upgrade --set mode=clusterWide succeeds" test $? = 0
check "clusterWide: ClusterRole spotpool exists, the per-namespace Roles and ClusterRole spotpool-cluster-id are gone" bash -c \
	"kubectl get clusterrole spotpool && ! kubectl get role spotpool -n team-a && ! kubectl get role spotpool -n team-b &&
	 ! kubectl get clusterrole spotpool-cluster-id"
check "clusterWide SA: list spotpools and spotnotices -A and get secrets in team-c now allowed; list secrets still not" bash -c \
	"[[ \$(kubectl auth can-i list spotpools.devops.jokerbai.com -A --as=$SA_USER) == yes && \$(kubectl auth can-i list spotnotices.devops.jokerbai.com -A --as=$SA_USER) == yes && \$(kubectl auth can-i get secrets -n team-c --as=$SA_USER) == yes && \$(kubectl auth can-i list secrets -A --as=$SA_USER) == no ]]"
check "clusterWide Deployment: no --namespace flag" bash -c "! kubectl get deploy spotpool -n $NS -o json | jq -e '.spec.template.spec.containers[0].args | index(\"--namespace\")' >/dev/null"
"$HELM" uninstall spotpool -n "$NS" >"$E2E_TMP/uninstall.out" 2>&1
check "helm uninstall succeeds" test $? = 0
check "uninstalled: Deployment, ServiceAccount, Secret, ClusterRoles, leader-election Role gone" bash -c \
	"! kubectl get deploy spotpool -n $NS && ! kubectl get sa spotpool -n $NS && ! kubectl get secret spotpool-credentials -n $NS &&
	 ! kubectl get clusterrole spotpool && ! kubectl get clusterrole spotpool-cluster-id && ! kubectl get role spotpool-leader-election -n $NS"
check "uninstalled: the CRD and the Spotpools remain (helm never deletes crds/)" bash -c \
	"kubectl get crd spotpools.devops.jokerbai.com && kubectl get sp pa -n team-a"

# --- docs/uninstall.md: the finalizer with and without a controller ---------------
# Controller gone: a deleted pool hangs in Terminating and keeps its instances.
kubectl delete sp pa -n team-a --wait=false >/dev/null
sleep 3
check "no controller: deleted pool team-a/pa stays (deletionTimestamp set, finalizer kept), 2 instances still live" bash -c \
	"kubectl get sp pa -n team-a -o json | jq -e '.metadata.deletionTimestamp != null and (.metadata.finalizers | index(\"spotpool.jokerbai.com/finalizer\")) != null' >/dev/null &&
	 [[ \$(curl -s '$EMU_URL/_emulator/stats?tagKey=spotpool.jokerbai.com/pool&tagValue=team-a/pa' | jq .live) == 2 ]]"
# A controller again: it finishes the deletion, terminating the instances first.
start_controller again --namespace team-a
check "controller back: team-a/pa's instances are terminated, then the object goes" \
	wait_for 40 bash -c "! kubectl get sp pa -n team-a >/dev/null 2>&1"
check "emulator: no live instance left for team-a/pa" test "$(emu_live team-a/pa)" = 0
# Deleting the CRD with the controller running: every pool is finalized, then the CRD goes.
pool_manifest pb team-a 1 1 "  credentialsSecretRef: {name: tc-creds}" | kubectl apply -f - >/dev/null
check "pool team-a/pb converges (size 1)" wait_for 40 converged pb team-a 1
kubectl delete crd spotpools.devops.jokerbai.com --wait=false >/dev/null
check "CRD deleted with the controller running: the CRD is gone" \
	wait_for 60 bash -c "! kubectl get crd spotpools.devops.jokerbai.com >/dev/null 2>&1"
check "... and team-a/pb's instance was terminated first (no live instance)" test "$(emu_live team-a/pb)" = 0
check "team-c/pc (never watched, so no finalizer) went with the CRD, nothing launched for it" \
	test "$(emu_get 'stats?tagKey=spotpool.jokerbai.com/pool&tagValue=team-c/pc' | jq .launched)" = 0
finish
