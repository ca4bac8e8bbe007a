#!/usr/bin/env bash
# Nodes (docs/how-it-works.md#nodes) on a real kube-apiserver, the test playing the
# kubelet's part: the controller launches 3 instances in the emulator; the test
# creates their Nodes (one with providerID qcloud:///900002/<id>, one with the label
# spotpool.jokerbai.com/instance-id, both with the instance's private IP as InternalIP,
# one named by and with only that InternalIP) and sets them Ready. The status shows each instance's node and
# ready, readyNodes 3 (READYNODES 3 in `kubectl get sp -o wide`) and the launch ->
# Ready metric; a reclaimed instance's Node is deleted (with an event), and a
# scale-down victim's; a Node of an instance spotpool does not know is left alone; a
# deletion answered 500 is retried, and a Node re-registered under a gone one's name
# (a new UID) is not deleted; a reclaimed instance's IP-only Node waits while Ready is
# True and is deleted once the test, as the node lifecycle controller, marks it Unknown,
# unless registered again meanwhile; with the controller's Node watch held, a Node its
# cache does not show yet is drained and deleted all the same.
source "$(dirname "$0")/lib.sh"

start_emulator
start_cluster
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
port=$(free_port)
# The controller talks to the apiserver through tests/faults/kubeproxy.py, which can
# fail its Node deletions (the last cases); the test's kubectl talks to it directly.
python3 "$E2E_ROOT/tests/faults/kubeproxy.py" "$E2E_TMP/k8s" "$E2E_TMP/proxy.kubeconfig" "$E2E_TMP/proxy.control" \
	"$E2E_TMP/proxy.trace" 2>>"$E2E_TMP/proxy.log" &
E2E_PIDS+=("$!")
wait_for 10 test -s "$E2E_TMP/proxy.kubeconfig" || { echo "kubeproxy did not start"; exit 1; }
KUBECONFIG=$E2E_TMP/proxy.kubeconfig start_controller ctl --listen "127.0.0.1:$port"

pool_manifest gpu default 3 3 | kubectl apply -f - >/dev/null
check "the pool reaches 3 instances" wait_for 60 at_size gpu 3
mapfile -t ids < <(sp_field gpu '.status.instances[].instanceId')
mapfile -t ips < <(sp_field gpu '.status.instances[].privateIp')
check "3 instances with private IPs (${ips[*]})" test "${#ips[@]}" = 3 -a -n "${ips[2]}"

node() { register_node "$@"; }
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
check "log: the deletion" grep -q "deleted Node by-provider of gone instance ${ids[0]}" "$E2E_TMP/ctl.log"
check "no node-related errors in the log" bash -c "! grep -E 'may not list nodes|delete-node.*failed' '$E2E_TMP/ctl.log'"

# Node deletions the apiserver answers 500 (the proxy fails them): both gone instances'
# Nodes are kept in status.nodeDeletions (Degraded NodeDeletionFailed, one event) and
# retried with backoff; one of them is re-registered meanwhile under its name (a new
# UID, as TKE reuses a private IP's name): once deletions work again the other Node is
# deleted and the re-registered one is not (409 on the old UID), and the list empties.
mapfile -t last < <(sp_field gpu '.status.instances[] | select(.state == "RUNNING") | "\(.instanceId) \(.node)"')
read -r ra na <<<"${last[0]}"
read -r rb nb <<<"${last[1]}"
# A gone instance's Node matched by its IP waits for Ready Unknown (below): it gets the label.
kubectl label node --overwrite "$na" "spotpool.jokerbai.com/instance-id=$ra" >/dev/null
kubectl label node --overwrite "$nb" "spotpool.jokerbai.com/instance-id=$rb" >/dev/null
sleep 1
pending_is() { [[ $(sp_field gpu '[.status.nodeDeletions[]?.name] | sort | join(" ")') == "$1" ]]; }
both=$(printf '%s\n' "$na" "$nb" | sort | paste -sd' ')
echo "fail DELETE /api/v1/nodes/ 500" >"$E2E_TMP/proxy.control"
sleep 0.5
emu_post reclaim "{\"instanceIds\":[\"$ra\",\"$rb\"]}" >/dev/null
check "deletions answered 500: status.nodeDeletions keeps $both" wait_for 30 pending_is "$both"
check "Degraded NodeDeletionFailed" bash -c "[[ \$(kubectl get sp gpu -o json | jq -r '.status.conditions[] | select(.type == \"Degraded\") | .reason') == NodeDeletionFailed ]]"
check "one NodeDeletionFailed event" bash -c "[[ \$(kubectl get events --field-selector reason=NodeDeletionFailed -o json | jq '[.items[] | .count // 1] | add') == 1 ]]"
old_uid=$(kubectl get node "$na" -o jsonpath='{.metadata.uid}')
kubectl delete node "$na" >/dev/null
check "$na re-registered under its name" node "$na" "" "" 192.0.2.30
check "... with a new UID" test "$(kubectl get node "$na" -o jsonpath='{.metadata.uid}')" != "$old_uid"
: >"$E2E_TMP/proxy.control"
check "retried once deletions work: $nb deleted" wait_for 30 bash -c "! kubectl get node '$nb' >/dev/null 2>&1"
check "status.nodeDeletions empties" wait_for 30 pending_is ""
check "the re-registered $na is not deleted" kubectl get node "$na"
check "the old UID's deletion was refused (409), not repeated" bash -c \
	"[[ \$(grep -c 'DELETE /api/v1/nodes/$na -> 409' '$E2E_TMP/proxy.trace') == 1 ]]"
check "the deletions were retried after a 500" bash -c \
	"grep -q 'DELETE /api/v1/nodes/$nb -> 500 (injected)' '$E2E_TMP/proxy.trace' && grep -q 'DELETE /api/v1/nodes/$nb -> 200' '$E2E_TMP/proxy.trace'"

# IP-only Nodes (no providerID, no label; named by and with the instance's private IP, as
# TKE registers them), the test playing the node lifecycle controller too: both
# instances reclaimed, each Node waits in status.nodeDeletions (with its privateIp and
# UID) and is not deleted while Ready is True (its kubelet may be a new instance's);
# once its Ready is Unknown (no kubelet reports it) it is deleted. The other Node is
# registered again under its name (a new UID, a new kubelet) before it goes Unknown: it
# is left, never deleted.
check "the pool refills to 2" wait_for 60 bash -c "[[ \$(kubectl get sp gpu -o json | jq '[.status.instances[] | select(.state == \"RUNNING\" and .instanceId != \"$ra\" and .instanceId != \"$rb\")] | length') == 2 ]]"
mapfile -t ipn < <(sp_field gpu ".status.instances[] | select(.state == \"RUNNING\" and .instanceId != \"$ra\" and .instanceId != \"$rb\") | \"\(.instanceId) \(.privateIp)\"")
read -r ia pa <<<"${ipn[0]}"
read -r ib pb <<<"${ipn[1]}"
check "IP-only Nodes $pa and $pb" bash -c "$(declare -f register_node); register_node '$pa' '' '' '$pa' && register_node '$pb' '' '' '$pb'"
check "... shown as the instances' nodes" wait_for 30 bash -c "[[ \$(kubectl get sp gpu -o json | jq -r '[.status.instances[] | select(.state == \"RUNNING\") | .node] | sort | join(\" \")') == '$(printf '%s\n' "$pa" "$pb" | sort | paste -sd' ')' ]]"
uid_a=$(kubectl get node "$pa" -o jsonpath='{.metadata.uid}')
uid_b=$(kubectl get node "$pb" -o jsonpath='{.metadata.uid}')
emu_post reclaim "{\"instanceIds\":[\"$ia\",\"$ib\"]}" >/dev/null
entries() { sp_field gpu '[.status.nodeDeletions[]? | "\(.name)/\(.uid)/\(.privateIp)"] | sort | join(" ")'; }
both=$(printf '%s\n' "$pa/$uid_a/$pa" "$pb/$uid_b/$pb" | sort | paste -sd' ')
check "reclaimed: status.nodeDeletions holds both with their UID and privateIp" wait_for 20 bash -c "$(declare -f sp_field entries); [[ \$(entries) == '$both' ]]"
kubectl delete node "$pb" >/dev/null
check "$pb registered again (a new kubelet): a new UID" bash -c "$(declare -f register_node); register_node '$pb' '' '' '$pb' && [[ \$(kubectl get node '$pb' -o jsonpath='{.metadata.uid}') != '$uid_b' ]]"
check "... its entry dropped (another Node now)" wait_for 10 bash -c "$(declare -f sp_field entries); [[ \$(entries) == '$pa/$uid_a/$pa' ]]"
sleep 3
check "Ready True: $pa not deleted 3 s on, still waiting" bash -c "$(declare -f sp_field entries); [[ \$(kubectl get node '$pa' -o jsonpath='{.metadata.uid}') == '$uid_a' && \$(entries) == '$pa/$uid_a/$pa' ]]"
unknown() { # the node lifecycle controller's mark: no kubelet reports the Node
	local now
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	kubectl patch node "$1" --subresource=status --type=strategic -p "{\"status\":{\"conditions\":[{\"type\":\"Ready\",
		\"status\":\"Unknown\",\"reason\":\"NodeStatusUnknown\",\"message\":\"Kubelet stopped posting node status.\",
		\"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
}
unknown "$pa" && unknown "$pb"
check "Ready Unknown: $pa is deleted" wait_for 40 bash -c "! kubectl get node '$pa' >/dev/null 2>&1"
check "... once, with an event naming it and $ia" bash -c "[[ \$(grep -cF 'DELETE /api/v1/nodes/$pa -> 200' '$E2E_TMP/proxy.trace') == 1 ]] &&
	kubectl get events --field-selector reason=NodeDeleted -o json | jq -e '.items[] | select(.message | contains(\"$pa \") and contains(\"$ia\"))' >/dev/null"
check "status.nodeDeletions empties" wait_for 10 pending_is ""
check "the re-registered $pb is left, never deleted" bash -c "[[ \$(kubectl get node '$pb' -o jsonpath='{.metadata.uid}') != '$uid_b' ]] && ! grep -qF 'DELETE /api/v1/nodes/$pb ' '$E2E_TMP/proxy.trace'"

# A deleted pool one of whose Nodes cannot have its pods listed (the proxy answers 403
# for that Node's listing alone): the other Node's drain goes on (empty: its instance
# goes at once), the unlisted Node's drain still starts (drain-started), one
# PodsNotListed event names it, and its instance goes at drainTimeout (10 s), so the
# pool is released (before, it stayed Terminating with its instances running).
pool_manifest drn default 2 2 '  drainTimeout: 10s' | kubectl apply -f - >/dev/null
check "drn: the pool reaches 2 instances" wait_for 60 at_size drn 2
mapfile -t dids < <(sp_field drn '.status.instances[].instanceId')
mapfile -t dips < <(sp_field drn '.status.instances[].privateIp')
check "drn: Nodes for ${dids[*]}" bash -c "$(declare -f register_node node); node drn-a 'qcloud:///900002/${dids[0]}' '' '${dips[0]}' && node drn-b 'qcloud:///900002/${dids[1]}' '' '${dips[1]}'"
check "drn: the Nodes show" wait_for 30 bash -c "[[ \$(kubectl get sp drn -o json | jq -r '[.status.instances[].node] | sort | join(\" \")') == 'drn-a drn-b' ]]"
echo "fail GET /api/v1/pods?fieldSelector=spec.nodeName%3Ddrn-a 403" >"$E2E_TMP/proxy.control"
sleep 0.5
deleted_at=$SECONDS
kubectl delete sp drn --wait=false >/dev/null
terminated() { kubectl get events --field-selector reason=Terminated -o json |
	jq -e --arg id "$1" '[.items[] | select(.involvedObject.name == "drn" and (.message | contains($id)))] | length > 0' >/dev/null; }
check "drn: the listed Node's instance goes at once" wait_for 8 terminated "${dids[1]}"
check "drn: the unlisted Node's instance waits" bash -c "$(declare -f terminated); ! terminated '${dids[0]}'"
check "drn: the unlisted Node's drain started (drain-started)" bash -c \
	"kubectl get node drn-a -o json | jq -e '.metadata.annotations[\"spotpool.jokerbai.com/drain-started\"]' >/dev/null"
check "drn: one PodsNotListed event names drn-a" bash -c "[[ \$(kubectl get events --field-selector reason=PodsNotListed -o json | jq '[.items[] | select(.message | contains(\"drn-a\")) | .count // 1] | add') == 1 ]]"
check "drn: released after drainTimeout though the listing still fails" wait_for 40 bash -c "! kubectl get sp drn >/dev/null 2>&1"
check "drn: ... not before drainTimeout ($((SECONDS - deleted_at)) s)" test $((SECONDS - deleted_at)) -ge 10
: >"$E2E_TMP/proxy.control"

# The Node cache lags (the proxy holds the controller's Node watch events for 30 s): a
# deleted pool's instance whose Node registered meanwhile (named by its IP, with its
# label, as the shipped bootstrap registers it) is drained before it goes, and its Node
# is deleted once it is gone: before the controller terminates an instance its cache
# shows without a Node, or forgets one gone, it lists the Nodes live (fault campaign
# seeds 476 and 465: terminated undrained; a Node never deleted).
pool_manifest lag default 1 1 | kubectl apply -f - >/dev/null
check "lag: the pool reaches 1 instance" wait_for 60 at_size lag 1
lid=$(sp_field lag '.status.instances[0].instanceId')
lip=$(sp_field lag '.status.instances[0].privateIp')
echo "delay 30 /api/v1/nodes?" >"$E2E_TMP/proxy.control"
sleep 0.5
check "lag: its Node $lip registers, unseen by the controller's cache" node "$lip" "" "$lid" "$lip"
kubectl delete sp lag --wait=false >/dev/null
check "lag: the pool is released" wait_for 30 bash -c "! kubectl get sp lag >/dev/null 2>&1"
check "lag: its Node was drained (the cache would have shown it only 30 s later)" \
	grep -q "tainted and cordoned node $lip" "$E2E_TMP/ctl.log"
check "lag: its Node is deleted" wait_for 10 bash -c "! kubectl get node '$lip' >/dev/null 2>&1"
: >"$E2E_TMP/proxy.control"
finish
