#!/usr/bin/env bash
# Node identity (docs/how-it-works.md#nodes, issue 27) on a real kube-apiserver, the
# test playing the kubelets' part. A pool of 1; a Node control-plane-1 with another
# InternalIP registers first with the pool instance's instance-id label and a
# SpotTerminating "reclaim at" 30 s ahead, a pod on it; then the instance's own Node as
# examples/bootstrap/kubeadm-join.sh registers it (named by and with the InternalIP of
# the instance's private IP, the label). Until 3 s past that reclaim: control-plane-1 is never cordoned,
# tainted or annotated, its pod never evicted, nothing launched or terminated; the
# instance shows its own Node; one Warning NodeClaimRejected names control-plane-1 and
# the instance. The instance reclaimed: its own Node is deleted, control-plane-1 stays.
# Two Nodes with the replacement's ID and IP: neither shows, NodeClaimsRefused
# True/NodeIdentityConflict names both (no event: the last episode ended too recently).
source "$(dirname "$0")/lib.sh"

start_emulator
start_cluster
kubectl apply -f "$E2E_ROOT/crds/spotnotice.yaml" >/dev/null
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
start_controller ctl

NS=ident
kubectl create namespace $NS >/dev/null
pool_manifest gpu $NS 0 2 '  replicas: 1' | kubectl apply -f - >/dev/null
check "the pool reaches 1 instance" wait_for 60 at_size gpu 1 $NS
ID=$(sp_field gpu '.status.instances[0].instanceId' $NS)
IP=$(emu_private_ip "$ID")
check "instance $ID has a private IP ($IP)" test -n "$IP"

# node NAME INSTANCE_ID IP [CONDITION]: a Node as a kubelet registers it (the label of
# kubeadm-join.sh, InternalIP IP), Ready, and CONDITION (JSON) if given.
node() {
	local now cond
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	cond="{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"test\",
		\"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"}${4:+,$4}"
	kubectl create -f - >/dev/null <<JSON || return 1
{"apiVersion":"v1","kind":"Node","metadata":{"name":"$1","labels":{"spotpool.jokerbai.com/instance-id":"$2"}}}
JSON
	kubectl patch node "$1" --subresource=status --type=merge -p "{\"status\":{
		\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$3\"},{\"type\":\"Hostname\",\"address\":\"$1\"}],
		\"conditions\":[$cond]}}" >/dev/null
}
reclaim_at=$(date -u -d @$(($(date +%s) + 30)) +%Y-%m-%dT%H:%M:%SZ)
check "control-plane-1 (10.255.0.1) claims $ID, reclaim at $reclaim_at" node control-plane-1 "$ID" 10.255.0.1 \
	"{\"type\":\"SpotTerminating\",\"status\":\"True\",\"reason\":\"SpotInstanceTerminating\",\"message\":\"reclaim at $reclaim_at\"}"
kubectl create -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"etcd-backup","namespace":"default"},
 "spec":{"nodeName":"control-plane-1","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}
JSON
kubectl patch pod etcd-backup --subresource=status --type=merge \
	-p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null
check "the instance's own Node $IP, as kubeadm-join.sh registers it" node "$IP" "$ID" "$IP"
t0=$(date +%s.%N)

node_json() { kubectl get node "$1" -o json; }
# untouched: control-plane-1 exists, not cordoned, no spotpool taint or annotation; its
# pod is not being deleted.
untouched() {
	local j
	j=$(node_json control-plane-1) || return 1
	jq -e '(.spec.unschedulable // false) == false and ([.spec.taints[]? | select(.key | startswith("spotpool"))] | length) == 0
		and ([(.metadata.annotations // {}) | keys[] | select(startswith("spotpool"))] | length) == 0' <<<"$j" >/dev/null &&
		kubectl get pod etcd-backup -n default -o json | jq -e '.metadata.deletionTimestamp == null' >/dev/null
}
# Cloud calls since the Nodes came: ACTION's successful ones.
calls_since() {
	emu_get journal | jq --arg a "$1" --argjson t "$t0" '[.[] | select(.action == $a and (.error | not) and (.dryRun | not) and .time >= $t)] | length'
}
shown() { [[ $(sp_field gpu '.status.instances[0].node // ""' $NS) == "$1" ]]; }
check "the instance shows its own Node $IP" wait_for 20 shown "$IP"
ok=true
while (($(date +%s) < ${reclaim_at_s:=$(date -d "$reclaim_at" +%s)} + 3)); do
	untouched || { ok=false; echo "# control-plane-1 or its pod touched at $(date +%T)"; break; }
	sleep 1
done
check "until 3 s past control-plane-1's 'reclaim at' (33 s): it is never cordoned, tainted or annotated, its pod never evicted" $ok
check "... nothing launched, nothing terminated" test "$(calls_since RunInstances)/$(calls_since TerminateInstances)" = 0/0
check "... $ID shows no reclaimAt" test "$(sp_field gpu '.status.instances[0].reclaimAt // ""' $NS)" = ""
event() { # event REASON TEXT...: a Warning event on the pool with REASON whose message holds every TEXT
	kubectl get events -n $NS -o json | jq -e --arg r "$1" '[.items[] | select(.type == "Warning" and .reason == $r
		and .involvedObject.name == "gpu")]' >"$E2E_TMP/events.json" &&
		jq -e --args '[.[] | select(.message as $m | $ARGS.positional | all(. as $t | $m | contains($t)))] | length == 1' \
			"${@:2}" <"$E2E_TMP/events.json" >/dev/null
}
check "one Warning NodeClaimRejected names control-plane-1 and $ID" event NodeClaimRejected control-plane-1 "$ID"
check "condition NodeClaimsRefused True/NodeClaimRejected" test \
	"$(sp_field gpu '.status.conditions[] | select(.type == "NodeClaimsRefused") | "\(.status)/\(.reason)"' $NS)" = True/NodeClaimRejected

# --- the instance reclaimed: its own Node goes, control-plane-1 stays ----------------------
emu_post reclaim "{\"instanceIds\":[\"$ID\"]}" >/dev/null
check "$ID reclaimed: its own Node $IP is deleted" wait_for 30 bash -c "! kubectl get node '$IP' >/dev/null 2>&1"
check "control-plane-1 is not deleted, nor its pod evicted" untouched

# --- two Nodes claim the replacement: neither is honoured ------------------------------------
replacement() { [[ $(sp_field gpu '[.status.instances[] | select(.state == "RUNNING" and .instanceId != "'"$ID"'")] | length' $NS) == 1 ]]; }
check "the replacement runs" wait_for 30 replacement
ID2=$(sp_field gpu '[.status.instances[] | select(.instanceId != "'"$ID"'")][0].instanceId' $NS)
IP2=$(emu_private_ip "$ID2")
node "$IP2" "$ID2" "$IP2" && node impostor "$ID2" "$IP2"
# The condition was True a minute ago: this episode is told by the condition alone (an
# event only after 10 minutes of quiet, so a flapping Node cannot flood events).
conflict() {
	sp_field gpu '.status.conditions[] | select(.type == "NodeClaimsRefused") | "\(.status)/\(.reason) \(.message)"' $NS >"$E2E_TMP/cond.txt" &&
		grep -q "^True/NodeIdentityConflict " "$E2E_TMP/cond.txt" && grep -qF "$IP2 (InternalIP $IP2), impostor (InternalIP $IP2) all claim instance $ID2" "$E2E_TMP/cond.txt"
}
check "Nodes $IP2 and impostor both claim $ID2 with its IP: NodeClaimsRefused True/NodeIdentityConflict names both" \
	wait_for 20 conflict
check "... no second event within 10 minutes of the first episode" bash -c \
	"! kubectl get events -n $NS -o json | jq -e '.items[] | select(.reason == \"NodeIdentityConflict\")' >/dev/null"
check "... the instance shows no Node" test "$(sp_field gpu "[.status.instances[] | select(.instanceId == \"$ID2\")][0].node // \"\"" $NS)" = ""
check "no error in the controller's log" bash -c "! grep -E ' error ' '$E2E_TMP/ctl.log'"
finish
