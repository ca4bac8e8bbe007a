#!/usr/bin/env bash
# Ownership across clusters: two real control planes (A and B, each etcd +
# kube-apiserver) share ONE emulator, i.e. one cloud account, and each holds a
# pool of the SAME namespace/name. Every launch carries the cluster tag
# (spotpool.jokerbai.com/cluster): A's value from --cluster-name, B's the UID of
# its kube-system namespace (the default). Each pool converges to its own size,
# neither controller terminates the other's instances (emulator journal),
# deleting the pool in A leaves B's instances running, and an instance carrying
# only the pool tag (launched before the cluster tag existed) is counted by its
# pool. Start-up: a bad --cluster-name is refused; without --cluster-name and
# without `get` on namespaces/kube-system the controller refuses to start,
# naming --cluster-name.
source "$(dirname "$0")/lib.sh"

POOL_TAG=spotpool.jokerbai.com/pool
CLUSTER_TAG=spotpool.jokerbai.com/cluster
LIVE='["PENDING","RUNNING","STARTING","REBOOTING"]'
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY

# Cluster B is a second control plane in its own directory: stopped on exit too.
KB_DIR=$E2E_TMP/k8s-b
cleanup_both() {
	local pid
	for pid in "${E2E_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${E2E_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	[[ -d $KB_DIR ]] && "$E2E_ROOT/scripts/k8s-down" "$KB_DIR" >/dev/null 2>&1
	cleanup
}
trap cleanup_both EXIT

start_emulator
start_cluster # A: $KUBECONFIG
KA=$KUBECONFIG
"$E2E_ROOT/scripts/k8s-up" "$KB_DIR" >"$E2E_TMP/k8s-up-b.log" 2>&1 ||
	{ echo "k8s-up (cluster B) failed"; cat "$E2E_TMP/k8s-up-b.log"; exit 1; }
KB=$KB_DIR/kubeconfig
ka() { KUBECONFIG=$KA kubectl "$@"; }
kb() { KUBECONFIG=$KB kubectl "$@"; }
kb apply -f "$E2E_ROOT/crds/spotpool.yaml" >/dev/null &&
	wait_for 30 kb wait --for condition=established --timeout=5s crd/spotpools.devops.jokerbai.com >/dev/null 2>&1 ||
	{ echo "CRD did not become established in cluster B"; exit 1; }
check "two control planes: A and B are different apiservers" \
	test "$(ka config view --minify -o jsonpath='{.clusters[0].cluster.server}')" != "$(kb config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
UID_B=$(kb get namespace kube-system -o jsonpath='{.metadata.uid}')
UID_A=$(ka get namespace kube-system -o jsonpath='{.metadata.uid}')
check "kube-system UIDs differ between A ($UID_A) and B ($UID_B)" test -n "$UID_A" -a -n "$UID_B" -a "$UID_A" != "$UID_B"

# emu_ids POOL CLUSTER: IDs of the live instances carrying the pool tag POOL and the
# cluster tag CLUSTER ("" = no cluster tag at all), one per line, sorted.
emu_ids() {
	emu_get instances | jq -r --arg p "$1" --arg c "$2" --argjson live "$LIVE" --arg pk "$POOL_TAG" --arg ck "$CLUSTER_TAG" \
		'[.[] | select(.InstanceState as $s | $live | index($s)) | select(any(.Tags[]?; .Key == $pk and .Value == $p)) |
		  select(([.Tags[]? | select(.Key == $ck) | .Value][0] // "") == $c) | .InstanceId] | sort | .[]'
}
# emu_count POOL CLUSTER: how many.
emu_count() { emu_ids "$1" "$2" | grep -c .; }
# terminated: every instance ID any TerminateInstances call named, one per line.
terminated() { emu_get journal | jq -r '.[] | select(.action == "TerminateInstances") | .instanceIds[]?' | sort -u; }
# converged KUBECTL NAME SIZE: status.size and Ready.
converged() {
	local j
	j=$("$1" get sp "$2" -n default -o json 2>/dev/null) || return 1
	[[ $(jq '.status.size' <<<"$j") == "$3" && $(jq -r '.status.conditions[]? | select(.type == "Ready") | .status' <<<"$j") == True ]]
}

# --- Start-up: the cluster identity is never missing -------------------------------
out=$(SPOTPOOL_CVM_ENDPOINT=$EMU_URL KUBECONFIG=$KA timeout 20 "$SPOTPOOL_BIN" run --listen "" --cluster-name 'a/b' 2>&1)
rc=$?
printf '%s\n' "$out" >"$E2E_TMP/cluster-name.out"
check "--cluster-name a/b refused (exit $rc = 2, a usage error), naming clusterName and the allowed characters" \
	bash -c "[[ $rc == 2 ]] && grep -q 'clusterName: must be 1 to 63 characters' '$E2E_TMP/cluster-name.out'"
ka create serviceaccount nobody -n default >/dev/null
TOKEN=$(ka create token nobody -n default --duration=1h 2>/dev/null)
NOBODY=$E2E_TMP/nobody.kubeconfig
{
	kubectl config --kubeconfig="$NOBODY" set-cluster c --server="$(ka config view --minify -o jsonpath='{.clusters[0].cluster.server}')" \
		--certificate-authority="$(sed -n 's/^K8S_CA_FILE=//p' "$E2E_TMP/k8s/env")" &&
		kubectl config --kubeconfig="$NOBODY" set-credentials sa --token="$TOKEN" &&
		kubectl config --kubeconfig="$NOBODY" set-context c --cluster=c --user=sa --namespace=default &&
		kubectl config --kubeconfig="$NOBODY" use-context c
} >/dev/null
SPOTPOOL_CVM_ENDPOINT=$EMU_URL timeout 20 "$SPOTPOOL_BIN" run --listen "" --log-format plain --kubeconfig "$NOBODY" >"$E2E_TMP/nobody.log" 2>&1
rc=$?
check "no --cluster-name and no RBAC on namespaces/kube-system: start-up fails (exit $rc = 3) naming --cluster-name" \
	bash -c "[[ $rc == 3 ]] && grep -q 'forbidden' '$E2E_TMP/nobody.log' && grep -q 'Pass --cluster-name NAME' '$E2E_TMP/nobody.log'"
check "... and nothing was launched" test "$(emu_get stats | jq .launched)" = 0

# --- The same pool default/gpu in both clusters; a legacy instance for default/old ----
legacy=$(emu_post instances "{\"region\":\"ap-singapore\",\"zone\":\"ap-singapore-2\",\"instanceType\":\"GN7.2XLARGE32\",\"tags\":[{\"Key\":\"$POOL_TAG\",\"Value\":\"default/old\"}]}" | jq -r '.instanceIds[0]')
check "legacy instance $legacy (pool tag only, no cluster tag) created" test -n "$legacy" -a "$legacy" != null
pool_manifest gpu default 2 2 | ka apply -f - >/dev/null
pool_manifest old default 2 2 | ka apply -f - >/dev/null
pool_manifest gpu default 3 3 | kb apply -f - >/dev/null
KUBECONFIG=$KA start_controller a --cluster-name cluster-a
CTL_A=$CTL_PID
KUBECONFIG=$KB start_controller b
CTL_B=$CTL_PID

if wait_for 60 converged ka gpu 2; then
	pass "cluster A: default/gpu converges to 2 (Ready)"
else
	fail "cluster A: default/gpu did not converge to 2" "$(ka get sp gpu -o json | jq -c .status)" "$(tail -15 "$E2E_TMP/a.log")"
fi
if wait_for 60 converged kb gpu 3; then
	pass "cluster B: default/gpu converges to 3 (Ready)"
else
	fail "cluster B: default/gpu did not converge to 3" "$(kb get sp gpu -o json | jq -c .status)" "$(tail -15 "$E2E_TMP/b.log")"
fi
check "log B: the cluster name is the UID of B's kube-system namespace" grep -q "cluster name $UID_B (the UID of the kube-system namespace)" "$E2E_TMP/b.log"
sleep 6 # a few resyncs (--resync 2) of both controllers over the shared account
check "emulator: 2 live default/gpu instances tagged cluster-a" test "$(emu_count default/gpu cluster-a)" = 2
check "emulator: 3 live default/gpu instances tagged with B's kube-system UID" test "$(emu_count default/gpu "$UID_B")" = 3
check "emulator: no default/gpu instance without a cluster tag (every launch carries it)" test "$(emu_count default/gpu "")" = 0
ids_a=$(emu_ids default/gpu cluster-a)
ids_b=$(emu_ids default/gpu "$UID_B")
status_ids() { "$1" get sp gpu -n default -o json | jq -r '[.status.instances[]?.instanceId] | sort | .[]'; }
check "status A lists exactly cluster A's instances" test "$(status_ids ka)" = "$ids_a"
check "status B lists exactly cluster B's instances" test "$(status_ids kb)" = "$ids_b"
check "journal: no TerminateInstances for any default/gpu instance (neither touched the other's)" \
	test -z "$(comm -12 <(terminated) <(printf '%s\n%s\n' "$ids_a" "$ids_b" | sort -u))"

# --- Legacy rule: the untagged instance counts for its pool ------------------------
if wait_for 40 converged ka old 2; then
	pass "cluster A: default/old converges to 2 (Ready)"
else
	fail "cluster A: default/old did not converge" "$(ka get sp old -o json | jq -c .status)" "$(tail -15 "$E2E_TMP/a.log")"
fi
check "legacy: default/old counts the untagged $legacy: one launch only (1 tagged cluster-a + 1 legacy)" \
	test "$(emu_count default/old cluster-a)" = 1 -a "$(emu_count default/old "")" = 1
check "legacy: $legacy still live" test "$(emu_ids default/old "")" = "$legacy"
check "legacy: $legacy in A's status" bash -c "KUBECONFIG='$KA' kubectl get sp old -n default -o json |
	jq -e --arg id '$legacy' '[.status.instances[]?.instanceId] | index(\$id) != null'"
check "legacy: $legacy never terminated" test -z "$(terminated | grep -x "$legacy")"

# --- Deleting the pool in A leaves B's instances running ---------------------------
ka delete sp gpu -n default --wait=false >/dev/null
check "cluster A: pool default/gpu deleted (finalizer done)" wait_for 40 bash -c "! KUBECONFIG='$KA' kubectl get sp gpu -n default >/dev/null 2>&1"
check "emulator: cluster A's default/gpu instances are gone" wait_for 10 bash -c "[[ \$(curl -sf '$EMU_URL/_emulator/instances' |
	jq --arg c cluster-a '[.[] | select(.InstanceState != \"TERMINATING\") | select(any(.Tags[]?; .Key == \"$CLUSTER_TAG\" and .Value == \$c) and
	 any(.Tags[]?; .Key == \"$POOL_TAG\" and .Value == \"default/gpu\"))] | length') == 0 ]]"
sleep 4
check "cluster B's 3 instances still live, the same IDs" test "$(emu_ids default/gpu "$UID_B")" = "$ids_b"
check "journal: none of cluster B's instances was ever terminated" test -z "$(comm -12 <(terminated) <(sort <<<"$ids_b"))"
check "cluster B: default/gpu still size 3, Ready" converged kb gpu 3
check "cluster A terminated exactly its own 2 instances" test "$(comm -12 <(terminated) <(sort <<<"$ids_a") | wc -l)" = 2

for c in "$CTL_A" "$CTL_B"; do
	stop_controller "$c"
	check "controller $c: SIGTERM, exits 0" test $? = 0
done
check "no secret key in either log" bash -c "! grep -qF '$EMU_SECRET_KEY' '$E2E_TMP/a.log' '$E2E_TMP/b.log'"
finish
