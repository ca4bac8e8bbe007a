#!/usr/bin/env bash
# Offerings against a real kube-apiserver and the CVM emulator: a manifest with only
# the seed fields launches exactly as before; a sold-out first choice falls back to
# the next offering in the same pass; the sold-out offering sees at most one launch per
# TTL and is used again after a probe once stock returns; spread balances zones.
source "$(dirname "$0")/lib.sh"

start_emulator
start_cluster
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
TAG=spotpool.jokerbai.com/pool
TTL=10
start_controller ctl --sold-out-seconds "$TTL"

TYPE=GN7.2XLARGE32
condition() { sp_field "$1" ".status.conditions[] | select(.type==\"$2\") | .status + \"/\" + .reason"; }
zones_of() { sp_field "$1" '[.status.instances[] | .zone] | sort | join(",")'; }
runs_on() { # ZONE TYPE [SINCE]: RunInstances calls (not dry runs) for that offering
	emu_get "journal?since=${3:-0}" | jq --arg z "$1" '[.[] | select(.action=="RunInstances" and (.dryRun|not) and .zone==$z)] | length'
}

# --- A manifest with only the seed fields behaves exactly as before --------------
pool_manifest seed default 2 2 | kubectl apply -f - >/dev/null
check "seed-only pool converges to 2" wait_for 40 at_size seed 2
check "seed-only: both in the seed zone" test "$(zones_of seed)" = "ap-singapore-2,ap-singapore-2"
check "seed-only: instance type in status" test "$(sp_field seed '[.status.instances[].instanceType] | unique | join(",")')" = "$TYPE"
check "seed-only: CapacityAvailable True" test "$(condition seed CapacityAvailable)" = True/Available

# --- Sold-out first choice: the shortfall goes to the next offering at once -----
emu_post stock "{\"zone\":\"ap-singapore-3\",\"instanceType\":\"$TYPE\",\"count\":0,\"errorCode\":\"ResourcesSoldOut.SpecifiedInstanceType\"}" >/dev/null
pool_manifest fall default 2 4 "  availabilityZone: ap-singapore-3
  availabilityZones: [ap-singapore-4]
  instanceTypes: [GN7.5XLARGE80]" | sed '0,/availabilityZone: ap-singapore-2/{/availabilityZone: ap-singapore-2/d}' | kubectl apply -f - >/dev/null
check "fallback: converges to 2" wait_for 40 at_size fall 2
check "fallback: on the next offering in preference order (type-major: $TYPE in ap-singapore-4)" \
	test "$(zones_of fall)" = "ap-singapore-4,ap-singapore-4"
refused_at=$(emu_get journal | jq '[.[] | select(.action=="RunInstances" and .error=="ResourcesSoldOut.SpecifiedInstanceType")][0].time')
launched_at=$(emu_get journal | jq '[.[] | select(.action=="RunInstances" and (.error|not) and (.dryRun|not) and .zone=="ap-singapore-4")][0].time')
check "fallback: launched $(python3 -c "print(round($launched_at - $refused_at, 2))") s after the sold-out answer (<= 2 s)" \
	python3 -c "import sys; sys.exit(0 if $launched_at - $refused_at <= 2 else 1)"
check "fallback: CapacityAvailable False/SoldOut" test "$(condition fall CapacityAvailable)" = False/SoldOut
check "fallback: the condition names the sold-out offering and the next probe" bash -c \
	"kubectl get sp fall -o json | jq -r '.status.conditions[] | select(.type==\"CapacityAvailable\") | .message' | grep -q '$TYPE in ap-singapore-3.*next probe'"
check "fallback: the pool is not Degraded (it is at size)" test "$(condition fall Degraded)" = False/AsExpected
events=$(kubectl get events -o json | jq '[.items[] | select(.involvedObject.name=="fall" and .type=="Warning")] | length')
check "fallback: one Warning event ($events)" test "$events" = 1

# --- At most one launch on the sold-out offering per TTL, across pools -----------
since=$(emu_get journal | jq 'map(.seq) | max')
start=$SECONDS
kubectl patch sp fall --type=merge -p '{"spec":{"replicas":3}}' >/dev/null
pool_manifest fall2 default 1 1 "  availabilityZone: ap-singapore-3
  availabilityZones: [ap-singapore-4]" | sed '0,/availabilityZone: ap-singapore-2/{/availabilityZone: ap-singapore-2/d}' | kubectl apply -f - >/dev/null
check "second pool converges on the fallback too" wait_for 40 at_size fall2 1
kubectl patch sp fall --type=merge -p '{"spec":{"replicas":4}}' >/dev/null
check "fall grows to 4" wait_for 40 at_size fall 4
sleep $((TTL + 2))
window=$((SECONDS - start))
tries=$(runs_on ap-singapore-3 "$TYPE" "$since")
check "sold out: $tries launch attempts on it in $window s with a $TTL s TTL (at most one per TTL)" \
	test "$tries" -le $(((window + TTL - 1) / TTL))

# --- Stock returns: after the TTL a probe launches there again -------------------
emu_post stock "{\"zone\":\"ap-singapore-3\",\"instanceType\":\"$TYPE\",\"count\":null}" >/dev/null
kubectl patch sp fall --type=merge -p '{"spec":{"replicas":2}}' >/dev/null
check "fall back to 2" wait_for 40 at_size fall 2
sleep $((TTL + 1))
kubectl patch sp fall --type=merge -p '{"spec":{"replicas":3}}' >/dev/null
check "recovery: the first choice launches again after the TTL" wait_for 40 bash -c \
	"kubectl get sp fall -o json | jq -e '[.status.instances[] | select(.zone==\"ap-singapore-3\" and .state==\"RUNNING\")] | length >= 1' >/dev/null"
check "recovery: CapacityAvailable True again" wait_for 20 bash -c "[[ \$(kubectl get sp fall -o json | jq -r '.status.conditions[] | select(.type==\"CapacityAvailable\") | .status') == True ]]"

# --- Spread balances the available zones -----------------------------------------
pool_manifest wide default 0 6 "  replicas: 6
  availabilityZones: [ap-singapore-3, ap-singapore-4]
  allocationStrategy: spread" | kubectl apply -f - >/dev/null
check "spread: converges to 6" wait_for 60 at_size wide 6
check "spread: 2 per zone ($(zones_of wide))" \
	test "$(zones_of wide)" = "ap-singapore-2,ap-singapore-2,ap-singapore-3,ap-singapore-3,ap-singapore-4,ap-singapore-4"
check "spread: never above 6 ($(emu_max_live default/wide))" test "$(emu_max_live default/wide)" -le 6

stop_controller "$CTL_PID"
check "SIGTERM: controller exits 0" test $? = 0
finish
