#!/usr/bin/env bash
# Draining and noticed reclaims (docs/how-it-works.md#draining) on a real
# kube-apiserver, the test playing the kubelet's part (and the disruption
# controller's): a Node per instance (matched by providerID qcloud:///900002/<id>), set
# Ready; Pods bound to it (spec.nodeName), Running and Ready; and since no kubelet
# confirms a graceful deletion, a background loop force-deletes every pod that gets a
# deletionTimestamp, noting when it first saw it (kubelet.log). A PodDisruptionBudget's
# status is written by the test. Cases, each in its own namespace (a, b, d and e started
# at once; c and f, whose checks have time windows, when their checks begin):
#   a  scale-down 3 -> 1: the emptiest nodes go; their pods are evicted before
#      TerminateInstances; DaemonSet, mirror and Succeeded pods stay and do not hold it
#   b  a PodDisruptionBudget refuses (429, retried) while the drain waits; relaxed, the
#      drain ends
#   c  drainTimeout 20s and a budget that never allows: the drain gives up, the node is
#      as it was (a node cordoned before stays cordoned), DrainBlocked DrainTimedOut, one
#      Warning event
#   d  a node annotated scale-down-disabled is not chosen while another can go; a pod
#      with safe-to-evict "false" holds its node's drain until it ends
#   e  a pool deleted with pods on its nodes: evicted before termination, then it goes
#   f  a noticed reclaim (the emulator announcing it 60 s ahead and reclaiming then,
#      `spotpool agent` setting the Node condition SpotTerminating): the replacement
#      launched within 2 s of the announcement (at maximum), the doomed node drained,
#      gone at the deadline, its Node deleted; with maximumIncludesDoomed the
#      replacement waits until the doomed instance is gone
#   g  drainTimeout "10x" rejected naming spec.drainTimeout, nothing launched
#   h  reclaim deadlines are claims (issue 27 item 1), written on the Node by the test:
#      h1 "reclaim at" ten years ahead: status reclaimAt within 10 minutes of when it was
#      announced; its pod under a budget that never allows: the instance is not
#      terminated (the replacement up all the same); h2 "reclaim at
#      2000-01-01T00:00:00Z" with two pods: both evicted before the instance is
#      terminated (it was terminated at once, its pods never evicted)
source "$(dirname "$0")/lib.sh"

NOTICE_AHEAD=${NOTICE_AHEAD:-60}
start_emulator
start_cluster
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
port=$(free_port)
start_controller ctl --listen "127.0.0.1:$port"

# --- g: bad input ----------------------------------------------------------------
kubectl create namespace g >/dev/null
pool_manifest badtimeout g 1 2 '  drainTimeout: "10x"' >"$E2E_TMP/g.yaml"
kubectl apply -f "$E2E_TMP/g.yaml" >"$E2E_TMP/g-apply.out" 2>&1
check "g: drainTimeout \"10x\" rejected by the apiserver naming spec.drainTimeout" \
	bash -c "grep -q 'spec.drainTimeout' '$E2E_TMP/g-apply.out' && ! kubectl get sp badtimeout -n g >/dev/null 2>&1"
"$SPOTPOOL_BIN" dry-run --endpoint "$EMU_URL" -f "$E2E_TMP/g.yaml" >"$E2E_TMP/g-dry.out" 2>&1
check "g: spotpool dry-run rejects it naming spec.drainTimeout" grep -q 'spec.drainTimeout' "$E2E_TMP/g-dry.out"

# --- the pools -------------------------------------------------------------------
# pool NS NAME MIN MAX REPLICAS [EXTRA]
pool() {
	kubectl create namespace "$1" >/dev/null 2>&1
	pool_manifest "$2" "$1" "$3" "$4" "  replicas: $5
${6:-}" | kubectl apply -f - >/dev/null
}
pool a a 0 3 3
pool b b 0 2 2
pool c1 c1 0 2 2 '  drainTimeout: 20s'
pool c2 c2 0 2 2 '  drainTimeout: 20s'
pool d d 0 3 3
pool e e 0 2 2
pool f1 f1 0 2 2
pool f2 f2 0 2 2 '  maximumIncludesDoomed: true'
pool h1 h1 0 1 1
pool h2 h2 0 1 1
for p in a b c1 c2 d e f1 f2 h1 h2; do
	check "$p: the pool reaches its size" wait_for 90 at_size "$p" "$(sp_field "$p" .spec.replicas "$p")" "$p"
done
check "g: nothing launched for the rejected pool" bash -c \
	"[[ \$(curl -sf '$EMU_URL/_emulator/stats?tagKey=spotpool.jokerbai.com/pool&tagValue=g/badtimeout' | jq .launched) == 0 ]]"

# The pool's instances: ids NS
ids() { sp_field "$1" '.status.instances[].instanceId' "$1"; }

# node NAME INSTANCE: the Node of that instance (its InternalIP the instance's private
# IP), by providerID.
node() {
	local ip
	ip=$(emu_private_ip "$2") && [[ -n $ip ]] || return 1
	kubelet_node "$1" "$2" "$ip"
}

# pod NS NAME NODE [KIND [LABEL]]: a pod bound to NODE, Running and Ready (KIND plain),
# or owned by a DaemonSet (ds), a mirror pod (mirror), Succeeded (done), or marked
# safe-to-evict "false" (blocking). LABEL (app=LABEL) is what a budget selects.
pod() {
	local ns=$1 name=$2 node=$3 kind=${4:-plain} app=${5:-none} meta status
	meta="\"name\":\"$name\",\"namespace\":\"$ns\",\"labels\":{\"app\":\"$app\"}"
	case $kind in
	ds) meta+=",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"name\":\"agent\",\"uid\":\"$(cat /proc/sys/kernel/random/uuid)\",\"controller\":true}]" ;;
	mirror) meta+=",\"annotations\":{\"kubernetes.io/config.mirror\":\"e2e\"}" ;;
	blocking) meta+=",\"annotations\":{\"cluster-autoscaler.kubernetes.io/safe-to-evict\":\"false\"}" ;;
	esac
	kubectl create -f - >/dev/null <<JSON || return 1
{"apiVersion":"v1","kind":"Pod","metadata":{$meta},
 "spec":{"nodeName":"$node","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}
JSON
	status='{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}'
	[[ $kind == done ]] && status='{"status":{"phase":"Succeeded"}}'
	kubectl patch pod "$name" -n "$ns" --subresource=status --type=merge -p "$status" >/dev/null
}

# pdb NS NAME APP MIN ALLOWED: a PodDisruptionBudget over app=APP and the status the
# disruption controller would write (no kube-controller-manager runs here).
pdb() {
	local gen
	kubectl apply -f - >/dev/null <<JSON || return 1
{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"$2","namespace":"$1"},
 "spec":{"minAvailable":$4,"selector":{"matchLabels":{"app":"$3"}}}}
JSON
	gen=$(kubectl get pdb "$2" -n "$1" -o jsonpath='{.metadata.generation}')
	kubectl patch pdb "$2" -n "$1" --subresource=status --type=merge -p "{\"status\":{
		\"observedGeneration\":$gen,\"disruptionsAllowed\":$5,\"currentHealthy\":$4,
		\"desiredHealthy\":$4,\"expectedPods\":$4}}" >/dev/null
}

declare -A ID # ID[ns/i]: the i-th instance in status of the pool in namespace ns
for p in a b c1 c2 d e f1 f2 h1 h2; do
	mapfile -t list < <(ids "$p")
	for i in 0 1 2; do
		ID[$p/$i]=${list[$i]:-ins-missing}  # a pool short of instances fails its checks, not the script
		[[ -n ${list[$i]:-} ]] && { node "n-${list[$i]}" "${list[$i]}" || fail "$p: Node for ${list[$i]}"; }
	done
done
N() { echo "n-${ID[$1]}"; }

# Node matching (h18-node): each instance shows its Node, Ready.
nodes_shown() {
	[[ $(sp_field a '[.status.instances[] | select(.node == ("n-" + .instanceId) and .ready == true)] | length' a) == 3 ]]
}
check "status: each instance of a shows its Node n-<id>, ready" wait_for 30 nodes_shown

# a: node 0 busy (3 pods), node 1 one pod and the pods that stay, node 2 two pods.
for i in 1 2 3; do pod a a0-$i "$(N a/0)"; done
pod a a1-1 "$(N a/1)"
pod a a1-ds "$(N a/1)" ds
pod a a1-mirror "$(N a/1)" mirror
pod a a1-done "$(N a/1)" done
pod a a2-1 "$(N a/2)"
pod a a2-2 "$(N a/2)"
# b: node 0 one pod under a budget that refuses, node 1 two pods.
pod b b0-1 "$(N b/0)" plain guarded
pod b b1-1 "$(N b/1)"
pod b b1-2 "$(N b/1)"
pdb b guard guarded 1 0
# c1, c2: the same with drainTimeout 20s; c1's victim was cordoned before.
for p in c1 c2; do
	pod $p $p-0-1 "$(N $p/0)" plain guarded
	pod $p $p-1-1 "$(N $p/1)"
	pod $p $p-1-2 "$(N $p/1)"
	pdb $p guard guarded 1 0
done
kubectl patch node "$(N c1/0)" --type=merge -p '{"spec":{"unschedulable":true}}' >/dev/null
# d: node 0 empty but scale-down-disabled, node 1 one pod, node 2 two pods and one
# that must not be evicted.
kubectl annotate node "$(N d/0)" cluster-autoscaler.kubernetes.io/scale-down-disabled=true >/dev/null
pod d d1-1 "$(N d/1)"
pod d d2-1 "$(N d/2)"
pod d d2-2 "$(N d/2)"
pod d d2-keep "$(N d/2)" blocking
# e: pods on both nodes.
for i in 0 1; do pod e e$i-1 "$(N e/$i)"; done
# f1, f2: node 0 is the doomed one (a pod and a safe-to-evict "false" pod, which a
# forced drain evicts too), node 1 one pod.
for p in f1 f2; do
	pod $p $p-0-1 "$(N $p/0)"
	pod $p $p-0-keep "$(N $p/0)" blocking
	pod $p $p-1-1 "$(N $p/1)"
done
# h1: one pod under a budget that never allows; h2: two pods.
pod h1 h1-0-1 "$(N h1/0)" plain guarded
pdb h1 guard guarded 1 0
pod h2 h2-0-1 "$(N h2/0)"
pod h2 h2-0-2 "$(N h2/0)"
check "pods created (Running, Ready) and budgets written" bash -c \
	"[[ \$(kubectl get pods -A -o json | jq '.items | length') == 33 ]]"

# The kubelet's part: force-delete pods being deleted; kubelet.log has "<epoch> ns/name"
# when one was first seen with a deletionTimestamp (so before it was gone).
kubelet() {
	local t ns name
	while :; do
		t=$(date +%s.%N)
		kubectl get pods -A -o json 2>/dev/null |
			jq -r '.items[] | select(.metadata.deletionTimestamp) | "\(.metadata.namespace) \(.metadata.name)"' |
			while read -r ns name; do
				grep -q " $ns/$name\$" "$E2E_TMP/kubelet.log" || echo "$t $ns/$name" >>"$E2E_TMP/kubelet.log"
				kubectl delete pod -n "$ns" "$name" --grace-period=0 --force --wait=false >/dev/null 2>&1
			done
		sleep 0.2
	done
}
touch "$E2E_TMP/kubelet.log"
kubelet &
E2E_PIDS+=($!)

evicted() { grep -q " $1\$" "$E2E_TMP/kubelet.log"; }
evicted_at() { awk -v p="$1" '$2 == p {print $1; exit}' "$E2E_TMP/kubelet.log"; }
# Emulator journal: when an instance was terminated (TerminateInstances), empty if not.
terminated_at() {
	emu_get journal | jq -r --arg id "$1" \
		'[.[] | select(.action == "TerminateInstances" and (.error | not) and (.instanceIds | index($id)))][0].time // empty'
}
terminated() { [[ -n $(terminated_at "$1") ]]; }
# An instance the emulator still holds in a live state.
live() { emu_get instances | jq -e --arg id "$1" '.[] | select(.InstanceId == $id and (.InstanceState | test("PENDING|RUNNING")))' >/dev/null; }
gone() { ! emu_get instances | jq -e --arg id "$1" '.[] | select(.InstanceId == $id and .InstanceState != "TERMINATING")' >/dev/null; }
node_json() { kubectl get node "$1" -o json; }
tainted() { node_json "$1" | jq -e '[.spec.taints[]? | select(.key == "spotpool.jokerbai.com/draining" and .effect == "NoSchedule")] | length == 1' >/dev/null; }
cordoned() { [[ $(node_json "$1" | jq -r '.spec.unschedulable // false') == true ]]; }
annotated() { node_json "$1" | jq -e '.metadata.annotations["spotpool.jokerbai.com/drain-started"]' >/dev/null; }
# as_before NODE: no drain taint or annotations (left, or never put).
as_before() { ! tainted "$1" && ! annotated "$1" && ! node_json "$1" |
	jq -e '.metadata.annotations["spotpool.jokerbai.com/was-unschedulable"]' >/dev/null; }
as_before_uncordoned() { as_before "$1" && ! cordoned "$1"; }
event_names() { kubectl get events -n "$1" -o json | jq -e --arg r "$2" --arg s "$3" '.items[] | select(.reason == $r and (.message | contains($s)))' >/dev/null; }
condition() { sp_field "$1" ".status.conditions[]? | select(.type == \"$2\") | \"\(.status)/\(.reason)\"" "$1"; }

# --- start a, b, d, e at once (c and f, whose checks have windows, start with them) ----
kubectl scale sp/a -n a --replicas=1 >/dev/null
kubectl scale sp/b -n b --replicas=1 >/dev/null
kubectl scale sp/d -n d --replicas=2 >/dev/null
kubectl delete sp e -n e --wait=false >/dev/null
# h: SpotTerminating as the agent writes it (a strategic merge keeps Ready).
claim_reclaim() {
	kubectl patch node "$1" --subresource=status -p "{\"status\":{\"conditions\":[{\"type\":\"SpotTerminating\",
		\"status\":\"True\",\"reason\":\"SpotInstanceTerminating\",\"message\":\"reclaim at $2\",
		\"lastHeartbeatTime\":\"$(date -u +%FT%TZ)\",\"lastTransitionTime\":\"$(date -u +%FT%TZ)\"}]}}" >/dev/null
}
h_claimed=$(date +%s)
claim_reclaim "$(N h1/0)" "$(date -u -d '+10 years' +%FT%TZ)"
claim_reclaim "$(N h2/0)" 2000-01-01T00:00:00Z

# --- a: the emptiest go, evicted before terminated ---------------------------------------
# before POD INSTANCE: the pod was evicted (seen being deleted) before the instance's
# TerminateInstances.
before() {
	local e t
	e=$(evicted_at "$1") t=$(terminated_at "$2")
	[[ -n $e && -n $t ]] && python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "$e" "$t"
}
a_victims() { terminated "${ID[a/1]}" && terminated "${ID[a/2]}"; }
a_kept() { live "${ID[a/0]}" && ! terminated "${ID[a/0]}"; }
a_events() { event_names a DrainStarted "$(N a/1)" && event_names a DrainStarted "$(N a/2)" && ! event_names a DrainStarted "$(N a/0)"; }
a_stay() { ! grep -qE ' a/(a1-ds|a1-mirror|a1-done|a0-[123])$' "$E2E_TMP/kubelet.log"; }
a_nodes_gone() { ! kubectl get node "$(N a/1)" >/dev/null 2>&1 && ! kubectl get node "$(N a/2)" >/dev/null 2>&1; }
check "a: the two least busy instances are terminated" wait_for 60 a_victims
check "a: the busiest (3 pods) stays" a_kept
check "a: one DrainStarted event per drained node, naming it" a_events
check "a: a1-1 evicted before ${ID[a/1]} was terminated" before a/a1-1 "${ID[a/1]}"
check "a: a2-1 evicted before ${ID[a/2]} was terminated" before a/a2-1 "${ID[a/2]}"
check "a: a2-2 evicted before ${ID[a/2]} was terminated" before a/a2-2 "${ID[a/2]}"
check "a: DaemonSet, mirror and Succeeded pods (and the busy node's) not evicted" a_stay
check "a: the terminated instances' Nodes are deleted" wait_for 60 a_nodes_gone
check "a: the busy node untouched" as_before_uncordoned "$(N a/0)"

# --- b: a budget refuses, the drain waits ---------------------------------------------
draining_node() { tainted "$1" && cordoned "$1" && annotated "$1"; }
draining_status() { [[ $(sp_field "$1" ".status.instances[] | select(.instanceId == \"$2\") | .draining" "$1") == true ]]; }
# Evictions that did not succeed (result other than evicted/gone), from the metrics.
refusals() { curl -sf "http://127.0.0.1:$port/metrics" | awk '/^spotpool_evictions_total\{/ && !/result="(evicted|gone|ok|success)"/ {n += $2} END {print n + 0}'; }
not_terminated() { ! terminated "$1"; }
not_evicted() { ! evicted "$1/$2" && kubectl get pod "$2" -n "$1" -o json | jq -e '.metadata.deletionTimestamp | not' >/dev/null; }
check "b: the victim (fewest pods) tainted, cordoned, annotated" wait_for 20 draining_node "$(N b/0)"
check "b: status shows the instance draining" wait_for 10 draining_status b "${ID[b/0]}"
r0=$(refusals)
sleep 12
r1=$(refusals)
check "b: the eviction the budget refuses is retried ($r0 -> $r1 refusals in 12 s)" test "$r1" -ge "$((r0 + 2))"
check "b: the guarded pod is still there, not evicted" not_evicted b b0-1
check "b: the instance is not terminated while the budget refuses" not_terminated "${ID[b/0]}"
pdb b guard guarded 0 1
check "b: relaxed, the pod is evicted and then the instance terminated" wait_for 30 before b/b0-1 "${ID[b/0]}"
check "b: the other node's pods stay" bash -c "! grep -q ' b/b1-' '$E2E_TMP/kubelet.log'"

# --- c: drainTimeout 20s with a budget that never allows -------------------------------
# Checked between the give-up (20 s) and the next try (20 s after it).
kubectl scale sp/c1 -n c1 --replicas=1 >/dev/null
kubectl scale sp/c2 -n c2 --replicas=1 >/dev/null
timed_out() { [[ $(condition "$1" DrainBlocked) == True/DrainTimedOut ]]; }
kept() { live "$1" && ! terminated "$1"; }
warnings() { kubectl get events -n "$1" -o json | jq --arg r "$2" '[.items[] | select(.reason == $r and .type == "Warning") | .count // 1] | add // 0'; }
# The event, not the condition: once the drain is given up another instance may go
# instead, and the condition then turns False (no scale-down waits any more).
names_pod() { kubectl get events -n "$1" -o json | jq -r '.items[] | select(.reason == "DrainTimedOut") | .message' | grep -q "$2"; }
# Both pools are watched at once: each shows the condition for about 20 s, and checking
# c1's other points first could outlast c2's window on a loaded machine.
declare -A c_seen=()
both_timed_out() {
	local p
	for p in c1 c2; do
		[[ -n ${c_seen[$p]:-} ]] || ! timed_out $p || c_seen[$p]=1
	done
	[[ -n ${c_seen[c1]:-} && -n ${c_seen[c2]:-} ]]
}
wait_for 45 both_timed_out
for p in c1 c2; do
	check "$p: DrainBlocked=True reason DrainTimedOut" test -n "${c_seen[$p]:-}"
	check "$p: no drain taint or annotations left" as_before "$(N $p/0)"
	check "$p: the instance is kept" kept "${ID[$p/0]}"
	check "$p: exactly one Warning event DrainTimedOut ($(warnings $p DrainTimedOut))" test "$(warnings $p DrainTimedOut)" = 1
	check "$p: the DrainTimedOut event names the pod left" names_pod $p $p-0-1
	check "$p: the guarded pod was never evicted" not_evicted $p $p-0-1
done
check "c1: the node cordoned before the drain stays cordoned" cordoned "$(N c1/0)"
check "c2: the node is schedulable again" as_before_uncordoned "$(N c2/0)"

# --- d: scale-down-disabled, safe-to-evict "false" ---------------------------------------
d_first() { live "${ID[d/0]}" && live "${ID[d/2]}" && ! tainted "$(N d/0)"; }
d_evicted() { evicted d/d2-1 && evicted d/d2-2; }
d_held() { not_evicted d d2-keep && live "${ID[d/2]}"; }
check "d: the node with one pod goes" wait_for 60 terminated "${ID[d/1]}"
check "d: the empty node marked scale-down-disabled is not chosen" d_first
kubectl scale sp/d -n d --replicas=1 >/dev/null
check "d: at 1, the node with a safe-to-evict \"false\" pod is drained (the disabled one goes last)" wait_for 20 tainted "$(N d/2)"
check "d: its other pods are evicted" wait_for 20 d_evicted
sleep 8
check "d: the safe-to-evict \"false\" pod holds the drain: not evicted, the instance live" d_held
kubectl delete pod d2-keep -n d --grace-period=0 --force >/dev/null 2>&1
check "d: once that pod ended, the instance is terminated" wait_for 20 terminated "${ID[d/2]}"
check "d: the scale-down-disabled node stays" live "${ID[d/0]}"

# --- e: a pool deleted with pods on its nodes ------------------------------------------
e_gone() { ! kubectl get sp e -n e >/dev/null 2>&1; }
for i in 0 1; do
	check "e: e$i-1 evicted before ${ID[e/$i]} was terminated" wait_for 60 before "e/e$i-1" "${ID[e/$i]}"
done
check "e: the pool is gone" wait_for 60 e_gone

# --- h: deadlines claimed ten years ahead and long past ---------------------------------------
reclaim_at() { sp_field "$1" ".status.instances[] | select(.instanceId == \"$2\") | .reclaimAt // empty" "$1"; }
h1_bounded() {
	local at
	at=$(reclaim_at h1 "${ID[h1/0]}")
	[[ -n $at ]] && at=$(date -u -d "$at" +%s) && ((at >= h_claimed && at <= h_claimed + 600 + 5))
}
check "h1: reclaim ten years ahead: status reclaimAt within 10 min of the announcement" wait_for 20 h1_bounded
echo "# h1: reclaimAt $(reclaim_at h1 "${ID[h1/0]}"), announced $(date -u -d "@$h_claimed" +%FT%TZ)"
h1_replaced() { [[ $(sp_field h1 "[.status.instances[] | select(.state == \"RUNNING\" and .instanceId != \"${ID[h1/0]}\")] | length" h1) -ge 1 ]]; }
check "h1: the replacement is RUNNING (at maximum)" wait_for 30 h1_replaced
sleep 5
check "h1: the doomed instance whose pod the budget keeps is not terminated" kept "${ID[h1/0]}"
check "h1: ... its pod not evicted" not_evicted h1 h1-0-1
# The replacement joins as a Node (a doomed instance goes once its replacement's Node is Ready).
h2_new() { sp_field h2 ".status.instances[] | select(.instanceId != \"${ID[h2/0]}\") | .instanceId" h2 | head -1; }
h2_launched() { [[ -n $(h2_new) ]]; }
check "h2: a replacement is launched" wait_for 20 h2_launched
h2_id=$(h2_new)
check "h2: its Node registers" node "n-$h2_id" "${h2_id:-ins-missing}"
check "h2: reclaim at 2000-01-01: h2-0-1 evicted before ${ID[h2/0]} was terminated" wait_for 60 before h2/h2-0-1 "${ID[h2/0]}"
check "h2: ... h2-0-2 too" before h2/h2-0-2 "${ID[h2/0]}"
echo "# h2: evicted $(evicted_at h2/h2-0-1) / $(evicted_at h2/h2-0-2), terminated $(terminated_at "${ID[h2/0]}"), announced $h_claimed"

# --- f: noticed reclaims ------------------------------------------------------------------
# f: the notice of node 0: `spotpool agent` on each doomed instance (its metadata in the
# emulator, polled every 0.1 s so the announcement is the notice to within 0.1 s) sets
# SpotTerminating on its Node; the emulator reclaims at the deadline it announced.
for p in f1 f2; do
	NODE_NAME=$(N $p/0) "$SPOTPOOL_BIN" agent --metadata-url "$EMU_URL/metadata/${ID[$p/0]}/latest/meta-data" \
		--interval 0.1 --log-format plain >>"$E2E_TMP/agent-$p.log" 2>&1 &
	E2E_PIDS+=($!)
done
notice_time=$(date +%s.%N)
emu_post reclaim "{\"instanceIds\":[\"${ID[f1/0]}\",\"${ID[f2/0]}\"],\"noticeSeconds\":$NOTICE_AHEAD}" >"$E2E_TMP/announce.json"
deadline=$(jq '.reclaimAt | floor' "$E2E_TMP/announce.json")
noticed() { [[ $(node_json "$1" | jq -r '.status.conditions[] | select(.type == "SpotTerminating") | .status') == True ]]; }
# The first successful RunInstances of a pool (ClientToken prefix) after the notice.
run_after() {
	emu_get journal | jq -r --arg t "$1" --argjson since "$notice_time" \
		'[.[] | select(.action == "RunInstances" and (.dryRun | not) and (.error | not) and .time >= $since and (.clientToken // "" | startswith($t)))][0].time // empty'
}
within() { python3 -c 'import sys; sys.exit(not float(sys.argv[2]) - float(sys.argv[1]) <= float(sys.argv[3]))' "$@"; }
f_evicted() { evicted "$1/$1-0-1" && evicted "$1/$1-0-keep"; }
# running_others NS DOOMED: two instances besides DOOMED are RUNNING while DOOMED is still live.
running_others() { [[ $(sp_field "$1" "[.status.instances[] | select(.state == \"RUNNING\" and .instanceId != \"$2\")] | length" "$1") -ge 2 ]] && live "$2"; }
node_gone() { ! kubectl get node "$1" >/dev/null 2>&1; }
f_noticed() { noticed "$(N f1/0)" && noticed "$(N f2/0)"; }
check "f1, f2: the agents report the notice on the doomed Nodes" wait_for 5 f_noticed
tok_f1=$(token_prefix f1 f1)
tok_f2=$(token_prefix f2 f2)
f1_within() { local t; t=$(run_after "$tok_f1"); [[ -n $t ]] && within "$notice_time" "$t" 2; }
check "f1: the replacement's RunInstances within 2 s of the announcement, at maximum" wait_for 5 f1_within
f1_run=$(run_after "$tok_f1")
echo "# f1: notice -> RunInstances $(python3 -c "print(round(${f1_run:-0} - $notice_time, 2))") s"
check "f1: the doomed node is tainted and cordoned" wait_for 10 draining_node "$(N f1/0)"
check "f1: the doomed node's pods are evicted, the safe-to-evict \"false\" one too" wait_for 20 f_evicted f1
check "f1: the other node's pod stays" not_evicted f1 f1-1-1
check "f1: the replacement Running before the doomed instance is gone" \
	wait_for "$((deadline - $(date +%s) > 1 ? deadline - $(date +%s) : 1))" running_others f1 "${ID[f1/0]}"
sleep "$((deadline - 2 - $(date +%s) > 0 ? deadline - 2 - $(date +%s) : 0))"
check "f2 (maximumIncludesDoomed): no replacement while the doomed instance lives (2 s before its deadline)" \
	test -z "$(run_after "$tok_f2")"
sleep "$((deadline - $(date +%s) > 0 ? deadline - $(date +%s) : 0))"
for p in f1 f2; do
	check "$p: the doomed instance is gone at the deadline (+3 s)" wait_for 3 gone "${ID[$p/0]}"
	check "$p: its Node is deleted afterwards" wait_for 30 node_gone "$(N $p/0)"
	check "$p: the pool is back at 2" wait_for 60 at_size "$p" 2 "$p"
done
gone_time=$(emu_get journal | jq -r --arg id "${ID[f2/0]}" '[.[] | select(((.action == "_reclaim" and (.noticeSeconds | not)) or .action == "_reclaimed" or (.action == "TerminateInstances" and (.error | not))) and (.instanceIds // [] | index($id)))][0].time // empty')
f2_run=$(run_after "$tok_f2")
check "f2: the replacement launched only after the doomed instance went (${gone_time:-none} <= ${f2_run:-none})" \
	within "${gone_time:-1e12}" "${f2_run:-0}" 1e12
check "f2: never above maximum ($(emu_max_live f2/f2))" test "$(emu_max_live f2/f2)" -le 2
check "f1: above maximum only by the doomed instance ($(emu_max_live f1/f1))" test "$(emu_max_live f1/f1)" -le 3

check "no failed drain requests in the log" bash -c "! grep -E '(evict|drain|taint|cordon).*failed' '$E2E_TMP/ctl.log'"
finish
