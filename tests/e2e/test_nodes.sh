#!/usr/bin/env bash
# Nodes (docs/how-it-works.md#nodes) on a real kube-apiserver, the test playing the
# kubelet's part: the controller launches 3 instances in the emulator; the test
# creates their Nodes (one with providerID qcloud:///900002/<id>, one with the label
# spotpool.jokerbai.com/instance-id, both with the instance's private IP as InternalIP,
# one named by and with only that InternalIP) and sets them Ready. The status shows each instance's node and
# ready, readyNodes 3 (READYNODES 3 in `kubectl get sp -o wide`) and the launch ->
# Ready metric; a reclaimed instance's Node is deleted (with an event), and a
# scale-down victim's; a Node of an instance spotpool does not know is left alone.
source "$(dirname "$0")/lib.sh"

start_emulator
start_cluster
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
port=$(free_port)
start_controller ctl --listen "127.0.0.1:$port"

pool_manifest gpu default 3 3 | kubectl apply -f - >/dev/null
check "the pool reaches 3 instances" wait_for 60 at_size gpu 3
mapfile -t ids < <(sp_field gpu '.status.instances[].instanceId')
mapfile -t ips < <(sp_field gpu '.status.instances[].privateIp')
check "3 instances with private IPs (${ips[*]})" test "${#ips[@]}" = 3 -a -n "${ips[2]}"

# node NAME PROVIDER_ID LABEL_ID IP: a Node as a kubelet registers it, then Ready.
node() {
	local spec='{}' labels='{}' now
	[[ -n $2 ]] && spec="{\"providerID\":\"$2\"}"
	[[ -n $3 ]] && labels="{\"spotpool.jokerbai.com/instance-id\":\"$3\"}"
	kubectl create -f - >/dev/null <<JSON || return 1
{"apiVersion":"v1","kind":"Node","metadata":{"name":"$1","labels":$labels},"spec":$spec}
JSON
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	kubectl patch node "$1" --subresource=status --type=merge -p "{\"status\":{
		\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$4\"},{\"type\":\"Hostname\",\"address\":\"$1\"}],
		\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"test\",
		\"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
}
check "Node by providerID for ${ids[0]}" node by-provider "qcloud:///900002/${ids[0]}" "" "${ips[0]}"
check "Node by label for ${ids[1]}" node by-label "" "${ids[1]}" "${ips[1]}"
check "Node by InternalIP for ${ids[2]} (${ips[2]})" node "${ips[2]}" "" "" "${ips[2]}"
check "Node of an instance spotpool does not know" node stranger "qcloud:///900002/ins-notours0" "" "${ips[0]}"

nodes_shown() {
	[[ $(sp_field gpu '[.status.instances[] | "\(.instanceId)=\(.node)/\(.ready)"] | sort | join(" ")') == \
		"$(printf '%s\n' "${ids[0]}=by-provider/true" "${ids[1]}=by-label/true" "${ids[2]}=${ips[2]}/true" | sort | paste -sd' ')" ]]
}
check "status: each instance's node and ready" wait_for 30 nodes_shown
check "status: readyNodes 3" test "$(sp_field gpu .status.readyNodes)" = 3
check "kubectl get sp -o wide: READYNODES 3" bash -c "kubectl get sp gpu -o wide | head -1 | grep -q 'READYNODES\$' && [[ \$(kubectl get sp gpu -o wide --no-headers | awk '{print \$NF}') == 3 ]]"
ready_count() { curl -sf "http://127.0.0.1:$port/metrics" | awk '$1 == "spotpool_node_ready_seconds_count" {print $2}'; }
check "metric: spotpool_node_ready_seconds observed once per instance ($(ready_count))" test "$(ready_count)" = 3
check "status: nodeReadySeconds recorded for the 3" test "$(sp_field gpu '[.status.instances[] | select(.nodeReadySeconds >= 0)] | length')" = 3

# A Ready flip and back: the time stays, the metric is not observed again.
kubectl patch node by-label --subresource=status --type=merge -p '{"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletNotReady","message":"test","lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}' >/dev/null
check "a Node turning NotReady shows: readyNodes 2" wait_for 20 bash -c "[[ \$(kubectl get sp gpu -o jsonpath='{.status.readyNodes}') == 2 ]]"

# The reclaim: the instance goes; its Node is deleted; the stranger stays.
emu_post reclaim "{\"instanceIds\":[\"${ids[0]}\"]}" >/dev/null
check "the reclaimed instance's Node is deleted" wait_for 60 bash -c "! kubectl get node by-provider >/dev/null 2>&1"
check "event NodeDeleted names the Node and the instance" bash -c \
	"kubectl get events --field-selector reason=NodeDeleted -o json | jq -e '.items[] | select(.message | contains(\"by-provider\") and contains(\"${ids[0]}\"))' >/dev/null"
check "the Node of an unknown instance is left alone" kubectl get node stranger
check "the other Nodes stay" kubectl get node by-label "${ips[2]}"
check "the pool refills to 3" wait_for 60 at_size gpu 3
# A scale-down: the victim (whichever spotpool picks) loses its Node, the others keep theirs.
new_id=$(sp_field gpu "[.status.instances[].instanceId | select(. != \"${ids[1]}\" and . != \"${ids[2]}\")][0]")
check "Node by label for the replacement $new_id" node replacement "" "$new_id" "$(emu_private_ip "$new_id")"
check "the replacement's node shows" wait_for 30 bash -c "[[ \$(kubectl get sp gpu -o json | jq -r '.status.instances[] | select(.instanceId == \"$new_id\") | .node') == replacement ]]"
kubectl patch sp gpu --type=merge -p '{"spec":{"minimum":2,"maximum":2}}' >/dev/null
check "scaled down to 2" wait_for 60 at_size gpu 2
nodes_of_instances() { # the Nodes left but the stranger's == the Nodes of the 2 RUNNING instances
	local want
	want=$(sp_field gpu '[.status.instances[] | select(.state == "RUNNING") | .node] | sort | join(" ")')
	[[ $(wc -w <<<"$want") == 2 &&
		$(kubectl get nodes -o json | jq -r '[.items[].metadata.name | select(. != "stranger")] | sort | join(" ")') == "$want" ]]
}
check "scale-down: the victim's Node is deleted, the others stay" wait_for 30 nodes_of_instances
check "log: the deletion" grep -q "deleted Node(s) by-provider of gone instance(s) ${ids[0]}" "$E2E_TMP/ctl.log"
check "no node-related errors in the log" bash -c "! grep -E 'may not list nodes|delete-node.*failed' '$E2E_TMP/ctl.log'"
finish
