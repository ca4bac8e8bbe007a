#!/usr/bin/env bash
# The invariants of docs/how-it-works.md when the cloud misbehaves, one scenario per
# defect of issue 8 (each failed on the code before the fix): a lagging, non-monotonic
# tag index, launches that never become visible, kills around RunInstances, a spec
# edited mid-pass, a refusal after a lost reply, failing reads, a spec that stopped
# validating, a terminate that keeps failing; plus scale-down versus reclaim and
# backoff across resyncs. Real kube-apiserver, the project's CVM emulator.
source "$(dirname "$0")/lib.sh"

start_emulator
start_cluster
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
TAG=spotpool.jokerbai.com/pool
GRACE=8
METRICS_PORT=$(free_port)
run_ctl() { start_controller ctl --launch-grace "$GRACE" --listen "127.0.0.1:$METRICS_PORT"; }
run_ctl

gone() { ! kubectl get sp "$1" >/dev/null 2>&1; }
stat() { emu_get "stats?tagKey=$TAG&tagValue=default/$1" | jq ".$2"; }
journal_has() { emu_get journal | jq -e "$1" >/dev/null; }
kill_hook() { # ACTION WHEN
	emu_post killhook "{\"action\":\"$1\",\"when\":\"$2\",\"pid\":$CTL_PID,\"comm\":\"spotpool\"}" >/dev/null
}
wait_killed() {
	if wait_for 30 bash -c "! kill -0 $CTL_PID 2>/dev/null"; then
		wait "$CTL_PID" 2>/dev/null
		return 0
	fi
	return 1
}
condition() { sp_field "$1" ".status.conditions[] | select(.type==\"$2\") | .status + \"/\" + .reason"; }

# --- Defect 4: a spec edit mid-pass makes the guarded ledger write conflict; the
#     conflicting launch must not be persisted by any other write -------------------
emu_post fault '{"action":"DescribeInstances","latencyMs":3000,"times":1}' >/dev/null
pool_manifest conflict default 4 4 | kubectl apply -f - >/dev/null
if wait_for 20 journal_has '[.[] | select(.action=="DescribeInstances" and ((.faults // []) | index("latencyMs")))] | length > 0'; then
	kubectl patch sp conflict --type=merge -p '{"spec":{"minimum":1,"maximum":1}}' >/dev/null
	check "spec lowered to 1 mid-pass: converges to 1" wait_for 40 at_size conflict 1
	check "never more than 1 live after the edit (high-water mark $(stat conflict maxLive))" test "$(stat conflict maxLive)" -le 1
else
	fail "the slow DescribeInstances of pool conflict was never seen"
fi
kubectl delete sp conflict >/dev/null

# --- Defect 5: the reply is lost (the launch happened), the same-token retry is
#     refused: the launch is still unresolved, not forgotten ------------------------
emu_post fault '{"action":"RunInstances","applyThenFail":true,"times":1}' >/dev/null
emu_post fault '{"action":"RunInstances","errorCode":"ResourceInsufficient.SpecifiedInstanceType","times":1}' >/dev/null
pool_manifest refused default 2 2 | kubectl apply -f - >/dev/null
check "lost reply + refused retry: converges to 2" wait_for 40 at_size refused 2
check "lost reply + refused retry: never more than 2 live ($(stat refused maxLive))" test "$(stat refused maxLive)" -le 2
check "lost reply + refused retry: exactly 2 launched ($(stat refused launched))" test "$(stat refused launched)" = 2

# --- Defect 1: the tag index drops instances already seen; that is not a reclaim ---
pool_manifest flaky default 2 2 | kubectl apply -f - >/dev/null
check "flaky: converges to 2 before the tag index misbehaves" wait_for 40 at_size flaky 2
emu_post config '{"tagIndexDropProbability":0.6,"tagIndexDropSeconds":4}' >/dev/null
sleep 12  # several passes while listings keep dropping instances
hidden=$(emu_get journal | jq '[.[] | select(.action=="DescribeInstances" and (.indexHidden // 0) > 0)] | length')
check "tag listings hid instances ($hidden listings)" test "$hidden" -gt 0
check "tag drops: never more than 2 live ($(stat flaky maxLive))" test "$(stat flaky maxLive)" -le 2
check "tag drops: nothing relaunched (launched $(stat flaky launched))" test "$(stat flaky launched)" = 2
reclaims=$(kubectl get events -o json | jq '[.items[] | select(.involvedObject.name=="flaky" and .reason=="InstanceReclaimed")] | length')
check "tag drops: no reclaim reported ($reclaims)" test "$reclaims" = 0
# Deleted while its instances keep dropping out of listings: all terminated by ID.
kubectl delete sp flaky --wait=false >/dev/null
check "tag drops: the deleted pool is released" wait_for 40 gone flaky
check "tag drops: nothing of it left live ($(stat flaky live))" test "$(stat flaky live)" = 0
emu_post config '{"tagIndexDropProbability":0}' >/dev/null

# --- Defect 2: a launched instance that never becomes visible (reclaimed before
#     anyone saw it) stalls the pool only for the launch grace ($GRACE s) -----------
emu_post fault '{"action":"RunInstances","invisibleSeconds":600,"times":1}' >/dev/null
pool_manifest ghost default 1 1 | kubectl apply -f - >/dev/null
ghost_id() { emu_get instances | jq -r '[.[] | select(.visible == false and (.Tags[]? | .Value == "default/ghost"))][0].InstanceId // empty'; }
has_ghost() { [[ -n $(ghost_id) ]]; }
if wait_for 20 has_ghost; then
	emu_post reclaim "{\"instanceIds\":[\"$(ghost_id)\"]}" >/dev/null
	started=$SECONDS
	check "never-visible launch: refilled" wait_for 40 at_size ghost 1
	check "never-visible launch: refilled within grace + a few passes ($((SECONDS - started)) s)" \
		test $((SECONDS - started)) -le $((GRACE + 15))
	check "never-visible launch: never more than 1 live" test "$(stat ghost maxLive)" -le 1
else
	fail "the invisible launch of pool ghost was never made"
fi

# --- Defect 2 (deletion): killed right after RunInstances, then deleted: the
#     unresolved launch does not hold the pool for ten minutes ----------------------
kill_hook RunInstances after
pool_manifest doomed default 1 1 | kubectl apply -f - >/dev/null
if wait_killed; then
	pass "controller killed right after RunInstances of pool doomed"
	check "the launch is recorded with an unknown outcome" test "$(sp_field doomed '.status.launch.instanceIds // [] | length')" = 0
	kubectl delete sp doomed --wait=false >/dev/null
	run_ctl
	started=$SECONDS
	check "deleted after the kill: released" wait_for 60 gone doomed
	check "deleted after the kill: released within grace + a few passes ($((SECONDS - started)) s)" \
		test $((SECONDS - started)) -le $((GRACE + 20))
	check "deleted after the kill: its instance is not left live" wait_for 10 test "$(stat doomed live)" = 0
else
	fail "the kill hook did not fire for pool doomed"
	run_ctl
fi

# --- Defect 3: killed before the call reached the cloud, maximum lowered 3 -> 1:
#     the resumed launch asks for no more than the pool needs now ------------------
kill_hook RunInstances before
pool_manifest lower default 3 3 | kubectl apply -f - >/dev/null
if wait_killed; then
	pass "controller killed before RunInstances of pool lower"
	check "the launch of 3 is recorded" test "$(sp_field lower .status.launch.count)" = 3
	kubectl patch sp lower --type=merge -p '{"spec":{"minimum":1,"maximum":1}}' >/dev/null
	run_ctl
	check "lowered maximum: converges to 1" wait_for 40 at_size lower 1
	check "lowered maximum: never more than 1 live ($(stat lower maxLive))" test "$(stat lower maxLive)" -le 1
	check "lowered maximum: the same ClientToken was repeated for 1 instance" journal_has \
		"[.[] | select(.action==\"RunInstances\" and .count==1 and (.clientToken // \"\" | startswith(\"$(token_prefix lower)\")) and (.clientToken | endswith(\"-1\")))] | length == 1"
else
	fail "the kill hook did not fire for pool lower"
	run_ctl
fi

# --- Defect 7: a failed DescribeInstances keeps the last known status -------------
pool_manifest keepstat default 1 3 "  replicas: 2" | kubectl apply -f - >/dev/null
check "keepstat converges to 2" wait_for 40 at_size keepstat 2
emu_post fault '{"action":"DescribeInstances","errorCode":"InternalError","times":-1}' >/dev/null
check "failed reads: Degraded CloudAPIError" wait_for 30 bash -c "[[ \$(kubectl get sp keepstat -o json | jq -r '.status.conditions[] | select(.type==\"Degraded\") | .status + \"/\" + .reason') == True/CloudAPIError ]]"
check "failed reads: size still 2" test "$(sp_field keepstat .status.size)" = 2
check "failed reads: instances still listed" test "$(sp_field keepstat '.status.instances | length')" = 2
kubectl get --raw /apis/devops.jokerbai.com/v1/namespaces/default/spotpools/keepstat/scale >"$E2E_TMP/scale.json" 2>&1
check "failed reads: /scale still reads 2" bash -c "cat '$E2E_TMP/scale.json'; test \"\$(jq .status.replicas '$E2E_TMP/scale.json')\" = 2"
check "failed reads: the condition says the status is the last known one" bash -c \
	"kubectl get sp keepstat -o json | jq -r '.status.conditions[] | select(.type==\"Degraded\") | .message' | grep -q 'last known'"
check "failed reads: nothing launched meanwhile" test "$(stat keepstat launched)" = 2
emu_post fault '{"clear":true}' >/dev/null
check "reads work again: Degraded clears" wait_for 30 bash -c "[[ \$(kubectl get sp keepstat -o json | jq -r '.status.conditions[] | select(.type==\"Degraded\") | .status') == False ]]"

# --- Defect 8: a pool whose spec no longer validates can still be deleted ---------
pool_manifest stale default 1 1 | kubectl apply -f - >/dev/null
check "stale converges to 1" wait_for 40 at_size stale 1
kubectl patch crd spotpools.devops.jokerbai.com --type=json -p \
	'[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-preserve-unknown-fields","value":true}]' >/dev/null
sleep 1
kubectl patch sp stale --type=merge -p '{"spec":{"fieldFromAFutureSchema":"x"}}' >/dev/null
check "invalid spec: Degraded InvalidSpec naming the field" wait_for 30 bash -c \
	"kubectl get sp stale -o json | jq -r '.status.conditions[] | select(.type==\"Degraded\") | .reason + \" \" + .message' | grep -q 'InvalidSpec.*fieldFromAFutureSchema'"
stale_id=$(sp_field stale '.status.instances[0].instanceId')
kubectl delete sp stale --wait=false >/dev/null
check "invalid spec: the deleted pool is released" wait_for 40 gone stale
check "invalid spec: its instance was terminated" test "$(emu_get instances | jq -r --arg id "$stale_id" '.[] | select(.InstanceId==$id) | .InstanceState')" != RUNNING
kubectl apply -f "$E2E_ROOT/crds/spotpool.yaml" >/dev/null

# --- Defect 12 + issue 10: a terminate that keeps failing posts one event per
#     episode; what spotpool terminates is not a reclaim ---------------------------
pool_manifest shrink default 0 3 "  replicas: 2" | kubectl apply -f - >/dev/null
check "shrink converges to 2" wait_for 40 at_size shrink 2
# metric SERIES: the value of one exact series, or "absent".
metric() { curl -s "127.0.0.1:$METRICS_PORT/metrics" | awk -v s="$1" '$1 == s {v = $2} END {print v == "" ? "absent" : v}'; }
emu_post fault '{"action":"TerminateInstances","errorCode":"InternalError","times":-1}' >/dev/null
kubectl scale sp/shrink --replicas=0 >/dev/null
check "failing terminate: retried" wait_for 30 journal_has '[.[] | select(.action=="TerminateInstances" and .error=="InternalError")] | length >= 4'
term_events=$(kubectl get events -o json | jq '[.items[] | select(.involvedObject.name=="shrink" and .type=="Warning")] | length')
check "failing terminate: one Warning event for the episode ($term_events)" test "$term_events" = 1
emu_post fault '{"clear":true}' >/dev/null
check "terminate works again: scaled down to 0" wait_for 60 bash -c "[[ \$(kubectl get sp shrink -o jsonpath='{.status.size}') == 0 && \$(curl -s '$EMU_URL/_emulator/stats?tagKey=$TAG&tagValue=default/shrink' | jq .live) == 0 ]]"
sleep 3  # passes after the instances vanished
reclaim_events=$(kubectl get events -o json | jq '[.items[] | select(.involvedObject.name=="shrink" and .reason=="InstanceReclaimed")] | length')
check "scale-down: no InstanceReclaimed event ($reclaim_events)" test "$reclaim_events" = 0
check "scale-down: counted as terminated by scale-down ($(metric 'spotpool_instances_terminated_total{namespace="default",pool="shrink",reason="scale_down"}'))" \
	test "$(metric 'spotpool_instances_terminated_total{namespace="default",pool="shrink",reason="scale_down"}')" = 2
check "scale-down: the reclaim counter stayed 0" \
	test "$(metric 'spotpool_instances_reclaimed_total{namespace="default",pool="shrink"}')" = 0

# --- A launch the tag index shows in part, for longer than the launch grace --------
# RunInstances answered both IDs; the first instance stays out of the tag listing for
# GRACE + 12 s. Its pool must confirm it by ID (the IDs of the answer are kept), not
# take it for never launched once the grace is over and launch a third.
emu_post fault "{\"action\":\"RunInstances\",\"tagIndexLagOneSeconds\":$((GRACE + 12)),\"times\":1}" >/dev/null
pool_manifest partial default 2 2 | kubectl apply -f - >/dev/null
check "partly listed launch: at size 2" wait_for 30 at_size partial 2
sleep $((GRACE + 4))
check "partly listed launch: exactly 2 launched past the grace ($(stat partial launched))" test "$(stat partial launched)" = 2
check "partly listed launch: never more than 2 live ($(stat partial maxLive))" test "$(stat partial maxLive)" -le 2
kubectl delete sp partial --wait=false >/dev/null

# --- Issue 19 defect 2: the same, but the process that got the answer dies with it
#     (killed as RunInstances completes): after the restart, one of 3 instances stays
#     out of the tag listing past the grace. The token is repeated to learn its ID; no
#     fourth launch (4 live before the fix) -----------------------------------------
emu_post fault "{\"action\":\"RunInstances\",\"tagIndexLagOneSeconds\":$((GRACE + 20)),\"times\":1}" >/dev/null
kill_hook RunInstances after
pool_manifest amnesia default 3 3 | kubectl apply -f - >/dev/null
if wait_killed; then
	pass "controller killed as RunInstances of pool amnesia completed"
	run_ctl
	check "answer lost with the process: at size 3" wait_for 40 at_size amnesia 3
	sleep $((GRACE + 4))
	check "answer lost with the process: exactly 3 launched past the grace ($(stat amnesia launched))" \
		test "$(stat amnesia launched)" = 3
	check "answer lost with the process: never more than 3 live ($(stat amnesia maxLive))" \
		test "$(stat amnesia maxLive)" -le 3
	check "answer lost with the process: the token was repeated for its answer" journal_has \
		"[.[] | select(.action==\"RunInstances\" and (.clientToken // \"\" | startswith(\"$(token_prefix amnesia)\")))] | length >= 2"
else
	fail "the kill hook did not fire for pool amnesia"
	run_ctl
fi
kubectl delete sp amnesia --wait=false >/dev/null

# --- Issue 19 defect 5: deleted while its launched instance is still invisible:
#     TerminateInstances answers NotFound for it, which does not prove it gone; the
#     finalizer is held until it shows and is terminated (it was left running) --------
emu_post fault '{"action":"RunInstances","invisibleSeconds":5,"times":1}' >/dev/null
pool_manifest unseen default 1 1 | kubectl apply -f - >/dev/null
launched_unseen() { [[ $(stat unseen launched) -ge 1 ]]; }
if wait_for 20 launched_unseen; then
	kubectl delete sp unseen --wait=false >/dev/null
	check "deleted while invisible: released" wait_for 40 gone unseen
	check "deleted while invisible: nothing of it left live" wait_for 10 test "$(stat unseen live)" = 0
else
	fail "pool unseen never launched"
fi

# --- Fault campaign seed 73: deleted while the answer of its launch died with the
#     process, and the tag index hides every instance of that launch past the grace.
#     Before letting the launch go, its zone is listed without a tag filter; its
#     instances carry the token and are terminated (both were left running) ---------
emu_post fault "{\"action\":\"RunInstances\",\"tagIndexLagSeconds\":$((GRACE + 40)),\"times\":1}" >/dev/null
kill_hook RunInstances after
since=$(emu_get journal | jq 'map(.seq) | max')
pool_manifest hidden default 2 2 | kubectl apply -f - >/dev/null
if wait_killed; then
	pass "controller killed as RunInstances of pool hidden completed"
	kubectl delete sp hidden --wait=false >/dev/null
	run_ctl
	check "hidden launch, deleted: released" wait_for $((GRACE + 30)) gone hidden
	check "hidden launch, deleted: both instances terminated ($(stat hidden launched) launched, $(stat hidden live) live)" \
		test "$(stat hidden launched)/$(stat hidden live)" = 2/0
	listed_zone() {
		emu_get "journal?since=$since" | jq -e '[.[] | select(.action=="DescribeInstances" and
			.filters == [{"Name": "zone", "Values": ["ap-singapore-2"]}])] | length >= 1' >/dev/null
	}
	check "hidden launch, deleted: found by a listing of its zone without a tag filter" listed_zone
else
	fail "the kill hook did not fire for pool hidden"
	run_ctl
fi

# --- Issue 10: backoff grows past the resync period while launches are refused ----
emu_post stock '{"zone":"ap-singapore-4","instanceType":"GN7.2XLARGE32","count":0,"errorCode":"ResourcesSoldOut.SpecifiedInstanceType"}' >/dev/null
pool_manifest dry default 1 1 | sed 's/ap-singapore-2/ap-singapore-4/' | kubectl apply -f - >/dev/null
check "sold out: Degraded CapacityUnavailable" wait_for 30 bash -c "[[ \$(kubectl get sp dry -o json | jq -r '.status.conditions[] | select(.type==\"Degraded\") | .reason') == CapacityUnavailable ]]"
check "sold out: Progressing says below minimum" test "$(condition dry Progressing)" = True/BelowMinimum
since=$(emu_get journal | jq 'map(.seq) | max')
sleep 20
attempts=$(emu_get "journal?since=$since" | jq '[.[] | select(.action=="RunInstances" and .error=="ResourcesSoldOut.SpecifiedInstanceType")] | length')
# resync every 2 s would mean ~10 attempts; backoff 1, 2, 4, 8, 16 s means at most 4-5
check "sold out: $attempts launch attempts in 20 s (backoff outlives the 2 s resync)" test "$attempts" -le 5

# --- No secret anywhere ---------------------------------------------------------
kubectl get sp -A -o json >"$E2E_TMP/all-sp.json"
kubectl get events -A -o json >"$E2E_TMP/all-events.json"
leak=$(grep -l -e "$EMU_SECRET_KEY" "$E2E_TMP/all-events.json" "$E2E_TMP/all-sp.json" "$E2E_TMP/ctl.log" "$E2E_TMP/emulator.log" 2>/dev/null)
check "no secret key in status, events or logs ${leak}" test -z "$leak"
stop_controller "$CTL_PID"
check "SIGTERM: controller exits 0" test $? = 0
finish
