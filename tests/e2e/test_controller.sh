#!/usr/bin/env bash
# The controller against a real kube-apiserver + etcd and the CVM emulator:
# CRD validation, convergence, reclaim refill, scale, ownership, crash safety,
# deletion (Delete and Retain), credentials from Secrets, apiserver restarts.
source "$(dirname "$0")/lib.sh"

start_emulator
start_cluster
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
TAG=spotpool.jokerbai.com/pool
CTL_LOG=ctl

# --- The CRD rejects bad input at the API, naming the field -------------------
check "CRD applied and established" kubectl get crd spotpools.devops.jokerbai.com
reject() { # NAME MIN MAX WANT
	pool_manifest "$1" default "$2" "$3" | kubectl apply -f - >"$E2E_TMP/apply.out" 2>&1
	if [[ $? != 0 ]] && grep -qF "$4" "$E2E_TMP/apply.out"; then
		pass "apiserver rejects $2/$3: $4"
	else
		fail "apiserver accepted or said something else for min=$2 max=$3" "$(cat "$E2E_TMP/apply.out")"
	fi
}
reject bad1 3 1 "spec.minimum: Invalid value"
reject bad2 '"abc"' 1 "spec.minimum in body must be of type integer"
pool_manifest bad3 default 1 2 "  replicas: 5" | kubectl apply -f - >"$E2E_TMP/apply.out" 2>&1
check "replicas outside [min, max] rejected naming spec.replicas" grep -q "spec.replicas" "$E2E_TMP/apply.out"
pool_manifest bad4 default 1 2 "  bogusField: 1" | kubectl apply -f - >"$E2E_TMP/apply.out" 2>&1
check "unknown field rejected (strict validation)" grep -q 'unknown field "spec.bogusField"' "$E2E_TMP/apply.out"
check "nothing was created for rejected manifests" test "$(kubectl get sp -A -o name | wc -l)" = 0

# --- Foreign instances exist from the start and must never be touched ----------
foreign=$(emu_post instances '{"region":"ap-singapore","zone":"ap-singapore-2","instanceType":"GN7.2XLARGE32","count":3}' | jq -r '.instanceIds[]')
other=$(emu_post instances "{\"region\":\"ap-singapore\",\"zone\":\"ap-singapore-2\",\"instanceType\":\"GN7.2XLARGE32\",\"count\":2,\"tags\":[{\"Key\":\"$TAG\",\"Value\":\"elsewhere/not-a-pool-here\"}]}" | jq -r '.instanceIds[]')

# --- The earlier operator's manifest applies unchanged and converges ----------
sed "s/secretId: xxx/secretId: $EMU_SECRET_ID/; s/secretKey: xxx/secretKey: $EMU_SECRET_KEY/" \
	"$E2E_ROOT/examples/earlier-operator-sample.yaml" >"$E2E_TMP/sample.yaml"
check "earlier-operator sample applies unchanged" kubectl apply -f "$E2E_TMP/sample.yaml"
start_controller "$CTL_LOG" --sold-out-seconds 5
converged() { # NAME SIZE [NS]: size, IDs and public IPs for every instance, Ready
	local j
	j=$(kubectl get sp "$1" -n "${3:-default}" -o json 2>/dev/null) || return 1
	[[ $(jq '.status.size' <<<"$j") == "$2" &&
		$(jq '[.status.instances[] | select(.instanceId != "" and .publicIp != "" and .state == "RUNNING")] | length' <<<"$j") == "$2" &&
		$(jq -r '.status.conditions[] | select(.type == "Ready") | .status' <<<"$j") == True ]]
}
if wait_for 40 converged spotpool-sample 2; then
	pass "sample pool converges: size 2, IDs and public IPs in status, Ready"
else
	fail "sample pool did not converge" "$(sp_json spotpool-sample | jq -c .status)" "$(tail -20 "$E2E_TMP/$CTL_LOG.log")"
fi
check "emulator holds exactly 2 live instances for it" test "$(emu_live default/spotpool-sample)" = 2
check "InsecureCredentials condition set for inline keys" \
	test "$(sp_field spotpool-sample '.status.conditions[] | select(.type=="InsecureCredentials") | .status')" = True
kubectl get sp >"$E2E_TMP/get.out"
check "kubectl get sp shows MINIMUM MAXIMUM REPLICAS SIZE READY REASON AGE" \
	bash -c "head -1 '$E2E_TMP/get.out' | grep -qE 'NAME +MINIMUM +MAXIMUM +REPLICAS +SIZE +READY +REASON +AGE' && grep -qE 'spotpool-sample +2 +2 +.*2 +True' '$E2E_TMP/get.out'"
check "Launched event recorded" bash -c "kubectl get events -o json | jq -e '[.items[] | select(.reason==\"Launched\" and .involvedObject.name==\"spotpool-sample\")] | length > 0' >/dev/null"
check "finalizer added" test "$(sp_field spotpool-sample '.metadata.finalizers | index("spotpool.jokerbai.com/finalizer")')" != null

# --- Reclaim: the emulator removes an instance; the pool is refilled ----------
victim=$(sp_field spotpool-sample '.status.instances[0].instanceId')
emu_post reclaim "{\"instanceIds\":[\"$victim\"]}" >/dev/null
refilled() { converged spotpool-sample 2 && ! sp_field spotpool-sample '.status.instances[].instanceId' | grep -qx "$victim"; }
if wait_for 30 refilled; then
	pass "reclaimed instance $victim replaced, status updated"
else
	fail "reclaim not refilled" "$(sp_json spotpool-sample | jq -c .status)"
fi
check "InstanceReclaimed event" bash -c "kubectl get events -o json | jq -e '[.items[] | select(.reason==\"InstanceReclaimed\")] | length > 0' >/dev/null"

# --- kubectl scale within [minimum, maximum] -----------------------------------
pool_manifest scaler default 1 5 | kubectl apply -f - >/dev/null
check "scaler converges to minimum 1" wait_for 30 converged scaler 1
check "kubectl scale --replicas=4" kubectl scale sp/scaler --replicas=4
check "scaled up to 4" wait_for 40 converged scaler 4
kubectl scale sp/scaler --replicas=2 >/dev/null
check "scaled down to 2" wait_for 40 converged scaler 2
check "emulator agrees: 2 live" wait_for 10 bash -c "[[ \$(curl -s '$EMU_URL/_emulator/stats?tagKey=$TAG&tagValue=default/scaler' | jq .live) == 2 ]]"
check "kubectl scale beyond maximum is refused" bash -c "! kubectl scale sp/scaler --replicas=9 2>/dev/null"
check "scaler never exceeded maximum 5 (emulator high-water mark)" test "$(emu_max_live default/scaler)" -le 5

# --- Two pools in another namespace, credentials from a Secret ---------------
kubectl create namespace team-b >/dev/null
kubectl -n team-b create secret generic tc-creds --from-literal=secretId="$EMU_SECRET_ID" \
	--from-literal=secretKey="$EMU_SECRET_KEY" >/dev/null
pool_manifest b1 team-b 2 2 "  credentialsSecretRef: {name: tc-creds}" | kubectl apply -f - >/dev/null
pool_manifest b2 team-b 1 1 "  credentialsSecretRef: {name: tc-creds}" | kubectl apply -f - >/dev/null
check "team-b/b1 converges with Secret credentials" wait_for 40 converged b1 2 team-b
check "team-b/b2 converges beside it" wait_for 40 converged b2 1 team-b
check "no InsecureCredentials condition with a Secret" \
	test "$(sp_field b1 '[.status.conditions[] | select(.type=="InsecureCredentials")] | length' team-b)" = 0

# --- A wrong secret key surfaces as Degraded/CredentialsInvalid, nothing leaks ---
BAD_KEY=WrongKeyThatMustNotLeak$RANDOM
kubectl -n team-b create secret generic bad-creds --from-literal=secretId="$EMU_SECRET_ID" \
	--from-literal=secretKey="$BAD_KEY" >/dev/null
pool_manifest b3 team-b 1 1 "  credentialsSecretRef: {name: bad-creds}" | kubectl apply -f - >/dev/null
degraded() { [[ $(sp_field b3 '.status.conditions[] | select(.type=="Degraded") | .status + "/" + .reason' team-b) == True/CredentialsInvalid ]]; }
check "wrong key: Degraded=True reason CredentialsInvalid" wait_for 30 degraded
check "condition message names the Tencent error" bash -c "kubectl get sp b3 -n team-b -o json | jq -r '.status.conditions[] | select(.type==\"Degraded\") | .message' | grep -q AuthFailure.SignatureFailure"
check "nothing launched for b3" test "$(emu_live team-b/b3)" = 0
pool_manifest b4 team-b 1 1 "  credentialsSecretRef: {name: missing-secret}" | kubectl apply -f - >/dev/null
check "missing Secret: Degraded CredentialsInvalid naming it" wait_for 30 bash -c \
	"kubectl get sp b4 -n team-b -o json | jq -r '.status.conditions[] | select(.type==\"Degraded\") | .message' | grep -q 'team-b/missing-secret'"

# --- SIGKILL right after a launch request, then restart: never above maximum ---
# The reply held 10 s: the kill must come while the call is in flight, after the test
# saw it journaled, which took over 4 s once on a loaded machine (ASan, a benchmark).
emu_post fault '{"action":"RunInstances","latencyMs":10000,"times":1}' >/dev/null
pool_manifest crash default 3 3 | kubectl apply -f - >/dev/null
crash_token=$(token_prefix crash)
launched() { emu_get journal | jq -e --arg t "$crash_token" '[.[] | select(.action=="RunInstances" and (.dryRun|not) and (.clientToken // "" | startswith($t)) and .count == 3)] | length > 0' >/dev/null; }
if wait_for 30 launched; then
	kill -KILL "$CTL_PID"
	wait "$CTL_PID" 2>/dev/null
	pass "controller killed with SIGKILL while RunInstances was in flight"
else
	fail "no launch for pool crash observed"
fi
check "the launch was recorded in status before the call" test "$(sp_field crash '.status.launch.count')" = 3
start_controller "$CTL_LOG" --sold-out-seconds 5
check "after restart the pool converges to 3" wait_for 40 converged crash 3
check "never more than maximum 3 live (high-water mark $(emu_max_live default/crash))" test "$(emu_max_live default/crash)" -le 3
# The first launch's outcome was unknown at restart: no launch under a new token may
# follow (its instances showed up, so nothing else was needed).
check "no second launch sequence after the restart (launchSeq $(sp_field crash .status.launchSeq))" \
	test "$(sp_field crash .status.launchSeq)" = 1
check "the launch of unknown outcome is resolved by its instances' launch tag (status.launch cleared)" \
	wait_for 10 test "$(sp_field crash .status.launch)" = null

# --- Reply lost after the launch happened: retried with the same token ---------
emu_post fault '{"action":"RunInstances","applyThenFail":true,"times":1}' >/dev/null
kubectl scale sp/crash --replicas=3 >/dev/null
pool_manifest lost default 2 2 | kubectl apply -f - >/dev/null
check "lost reply: pool converges to 2" wait_for 40 converged lost 2
check "lost reply: never more than 2 live" test "$(emu_max_live default/lost)" -le 2

# --- Invisible launches (eventual consistency) still count toward maximum -------
emu_post fault '{"action":"RunInstances","invisibleSeconds":6,"times":1}' >/dev/null
pool_manifest slowlist default 2 2 | kubectl apply -f - >/dev/null
check "invisible-for-6s launch: converges to 2" wait_for 40 converged slowlist 2
check "invisible-for-6s launch: never more than 2 live" test "$(emu_max_live default/slowlist)" -le 2

# --- A dead instance is refilled while the refill's reply is lost and the new
#     instance stays invisible: the old launch's IDs must not be mistaken for the
#     new launch's (a merge patch keeps keys it does not mention) -----------------
emu_post fault '{"action":"RunInstances","launchFail":true,"times":1}' >/dev/null
pool_manifest refill default 1 1 | kubectl apply -f - >/dev/null
failed_seen() { emu_get instances | jq -e '[.[] | select(.InstanceState=="LAUNCH_FAILED" and (.Tags[]? | .Value=="default/refill"))] | length > 0' >/dev/null; }
check "first launch of pool refill ends LAUNCH_FAILED" wait_for 30 failed_seen
emu_post fault '{"action":"RunInstances","applyThenFail":true,"times":1}' >/dev/null
emu_post fault '{"action":"RunInstances","invisibleSeconds":5,"times":1}' >/dev/null
check "refill: converges to 1 RUNNING instance" wait_for 60 converged refill 1
check "refill: never more than 1 live (high-water mark $(emu_max_live default/refill))" test "$(emu_max_live default/refill)" -le 1
refill_token=$(token_prefix refill)
check "refill: the lost reply was resumed with pool refill's same ClientToken" bash -c \
	"curl -s '$EMU_URL/_emulator/journal' | jq -e --arg t '$refill_token' '[.[] | select(.action==\"RunInstances\" and .replay==true and (.clientToken | startswith(\$t)))] | length >= 1' >/dev/null"
check "refill: the dead instance was cleaned up" wait_for 20 bash -c "! curl -s '$EMU_URL/_emulator/instances' | jq -e '[.[] | select(.InstanceState==\"LAUNCH_FAILED\")] | length > 0' >/dev/null"

# --- Capacity: a sold-out zone is reported, nothing overshoots ----------------
emu_post stock '{"zone":"ap-singapore-3","instanceType":"GN7.2XLARGE32","count":0,"errorCode":"ResourcesSoldOut.SpecifiedInstanceType"}' >/dev/null
pool_manifest soldout default 1 1 | sed 's/ap-singapore-2/ap-singapore-3/' | kubectl apply -f - >/dev/null
capacity() { [[ $(sp_field soldout '.status.conditions[] | select(.type=="Degraded") | .reason') == CapacityUnavailable ]]; }
check "sold out: Degraded reason CapacityUnavailable" wait_for 30 capacity
sleep 6  # several backoff retries (1 s, 2 s, 4 s) while still sold out
retries=$(emu_get journal | jq '[.[] | select(.action=="RunInstances" and .error=="ResourcesSoldOut.SpecifiedInstanceType")] | length')
events=$(kubectl get events -o json | jq '[.items[] | select(.involvedObject.name=="soldout" and .reason=="CapacityUnavailable")] | length')
check "sold out: $retries refused launches, one Warning event ($events)" test "$retries" -ge 2 -a "$events" = 1
emu_post stock '{"zone":"ap-singapore-3","instanceType":"GN7.2XLARGE32","count":null}' >/dev/null
check "stock returns: the pool fills and Degraded clears" wait_for 60 converged soldout 1

# --- The apiserver restarts mid-watch; the controller relists and carries on ---
"$E2E_ROOT/scripts/k8s-restart-apiserver" "$E2E_TMP/k8s" >"$E2E_TMP/restart.log" 2>&1
check "apiserver restarted" kubectl get --raw /readyz
pool_manifest afterrestart default 1 1 | kubectl apply -f - >/dev/null
check "a pool created after the restart converges (watch re-established)" wait_for 60 converged afterrestart 1
check "controller survived the restart" kill -0 "$CTL_PID"

# --- Deletion: Delete terminates first; Retain leaves instances ---------------
ids=$(sp_field scaler '.status.instances[].instanceId')
kubectl delete sp scaler --wait=false >/dev/null
gone() { ! kubectl get sp "$1" -n "${2:-default}" >/dev/null 2>&1; }
check "deleted pool disappears" wait_for 40 gone scaler
states=$(emu_get instances | jq -r --arg ids "$ids" '[.[] | select(.InstanceId as $i | $ids | split("\n") | index($i))] | map(.InstanceState) | unique | join(",")')
check "its instances were terminated first (states now: ${states:-gone})" test "$states" = "" -o "$states" = TERMINATING
# A pool whose own credentials are gone is never cleaned up with anyone else's: it
# keeps its finalizer, says why (condition, one event, a log line) and finishes once
# its Secret is back.
b2_ids=$(sp_field b2 '.status.instances[].instanceId' team-b)
kubectl -n team-b delete secret tc-creds >/dev/null
kubectl -n team-b delete sp b2 --wait=false >/dev/null
stuck() { [[ $(sp_field b2 '.status.conditions[] | select(.type=="Degraded") | .status + "/" + .reason' team-b) == True/CredentialsInvalid ]]; }
check "Secret gone: the deleted pool stays, Degraded CredentialsInvalid" wait_for 30 stuck
sleep 4  # several retries
check "Secret gone: Progressing says Deleting" test "$(sp_field b2 '.status.conditions[] | select(.type=="Progressing") | .reason' team-b)" = Deleting
check "Secret gone: its instance was not released to anyone else's credentials (still RUNNING)" \
	test "$(emu_get instances | jq -r --arg id "$b2_ids" '.[] | select(.InstanceId==$id) | .InstanceState')" = RUNNING
b2_events=$(kubectl get events -n team-b -o json | jq '[.items[] | select(.involvedObject.name=="b2" and .reason=="CredentialsInvalid")] | length')
check "Secret gone: one Warning event for the episode ($b2_events)" test "$b2_events" = 1
check "Secret gone: a log line names the pool" grep -q "team-b/b2: CredentialsInvalid" "$E2E_TMP/$CTL_LOG.log"
kubectl -n team-b create secret generic tc-creds --from-literal=secretId="$EMU_SECRET_ID" \
	--from-literal=secretKey="$EMU_SECRET_KEY" >/dev/null
check "Secret back: the pool is released" wait_for 40 gone b2 team-b
check "Secret back: its instance was terminated" test "$(emu_get instances | jq -r --arg id "$b2_ids" '.[] | select(.InstanceId==$id) | .InstanceState')" != RUNNING
# A pool that never launched anything has nothing to clean up: deleting it does not
# wait for credentials that will never work.
b4_events=$(kubectl get events -n team-b -o json | jq '[.items[] | select(.involvedObject.name=="b4" and .type=="Warning")] | length')
check "missing Secret: one Warning event over many retries ($b4_events)" test "$b4_events" = 1
check "missing Secret: a log line names the pool and the Secret" grep -q "team-b/b4: CredentialsInvalid.*missing-secret" "$E2E_TMP/$CTL_LOG.log"
check "missing Secret: Progressing says why the pool is below minimum" \
	test "$(sp_field b4 '.status.conditions[] | select(.type=="Progressing") | .reason' team-b)" = BelowMinimum
kubectl -n team-b delete sp b4 --wait=false >/dev/null
check "never-launched pool with a missing Secret is deleted at once" wait_for 10 gone b4 team-b
pool_manifest keep default 1 1 "  deletionPolicy: Retain" | kubectl apply -f - >/dev/null
check "Retain pool converges" wait_for 30 converged keep 1
kept=$(sp_field keep '.status.instances[0].instanceId')
kubectl delete sp keep --wait=false >/dev/null
check "Retain pool disappears" wait_for 30 gone keep
sleep 2
check "Retain: its instance $kept still RUNNING" test "$(emu_get instances | jq -r --arg id "$kept" '.[] | select(.InstanceId==$id) | .InstanceState')" = RUNNING

# --- Ownership, across everything above -----------------------------------------
untouched=true
for id in $foreign $other; do
	[[ $(emu_get instances | jq -r --arg id "$id" '.[] | select(.InstanceId==$id) | .InstanceState') == RUNNING ]] || untouched=false
	emu_get journal | jq -e --arg id "$id" '[.[] | select(.action=="TerminateInstances" and (.instanceIds | index($id)))] | length == 0' >/dev/null || untouched=false
done
check "5 foreign instances never terminated, still RUNNING" $untouched
# Every instance the controller ever asked to terminate was one it had launched.
emu_get journal >"$E2E_TMP/journal.json"
terminated=$(jq '[.[] | select(.action=="TerminateInstances") | .instanceIds[]] | unique | length' "$E2E_TMP/journal.json")
stray=$(jq -r '([.[] | select(.action=="RunInstances") | .instanceIds // [] | .[]]) as $ours
	| [.[] | select(.action=="TerminateInstances") | .instanceIds[] | select(. as $i | $ours | index($i) | not)] | unique | join(" ")' "$E2E_TMP/journal.json")
check "all $terminated terminated instances were launched by spotpool ${stray:+(stray: $stray)}" test -n "$terminated" -a "$terminated" -gt 0 -a -z "$stray"

# --- Secrets never appear in status, events or logs ----------------------------
kubectl get sp -A -o json >"$E2E_TMP/all-sp.json"
kubectl get events -A -o json >"$E2E_TMP/all-events.json"
leak=$(grep -l -e "$EMU_SECRET_KEY" -e "$BAD_KEY" "$E2E_TMP/all-events.json" "$E2E_TMP/$CTL_LOG.log" "$E2E_TMP/emulator.log" 2>/dev/null)
check "no secret key in events or controller/emulator logs ${leak}" test -z "$leak"
check "no secret key in any status" bash -c "! jq '[.items[].status]' '$E2E_TMP/all-sp.json' | grep -q -e '$EMU_SECRET_KEY' -e '$BAD_KEY'"

stop_controller "$CTL_PID"
check "SIGTERM: controller exits 0" test $? = 0
finish
