#!/usr/bin/env bash
# A deposed leader stops acting as soon as it learns it lost (issue 19 item 7). Two
# `spotpool run` processes with leader election; the leader is kept inside slow, failing
# and throttled RunInstances calls (each answer held 1.5 s, then InternalError, so every
# pass retries). Then the Lease is taken from it: first handed to another holder, then
# deleted. The process that no longer holds it must make no cloud call (the emulator's
# journal names the caller), post no event (reportingInstance) and write no status (the
# Degraded message of every status version names the RequestId of the call it reports)
# from 2.5 s after the Lease changed: one retry period (1 s) to notice, plus slack. Before
# the fix it went on until its renew deadline (8 s here) and, inside a call, longer. The
# pool never goes above maximum or below the size it had, and converges once the cloud
# answers again.
source "$(dirname "$0")/lib.sh"

leader_setup spotpool-fence 10 8 1
SLACK=2.5
holder() { kubectl get lease spotpool-fence -n default -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
now() { date +%s.%N; }

start_controller a --config "$cfg"
pid_a=$CTL_PID
start_controller b --config "$cfg"
pid_b=$CTL_PID
check "one of the two acquires the lease" wait_for 20 bash -c "[[ \$(kubectl get lease spotpool-fence -n default -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) == *_[0-9]* ]]"

pool_manifest fence default 2 2 | kubectl apply -f - >/dev/null
converged() { [[ $(sp_field fence '.status.size') == "$1" && $(sp_field fence '.status.conditions[] | select(.type=="Ready") | .status') == True ]]; }
check "pool converges to 2 under the leader" wait_for 40 converged 2
settled_at=$(now)

# Every status version, with the time it was seen: resourceVersion and Degraded message.
# (kubectl is the background job, so cleanup's kill ends it and the stamping loop.)
kubectl get sp fence -n default -w -o jsonpath='{.metadata.resourceVersion}{"\t"}{.status.conditions[?(@.type=="Degraded")].message}{"\n"}' 2>/dev/null \
	> >(while IFS= read -r line; do printf '%s\t%s\n' "$(date +%s.%N)" "$line"; done >"$E2E_TMP/watch.tsv") &
E2E_PIDS+=($!)

# The cloud turns slow, failing and throttled for launches; the pool asks for one more.
check "launches fail slowly from now on" \
	emu_post fault '{"action": "RunInstances", "errorCode": "InternalError", "times": -1}'
emu_post fault '{"action": "RunInstances", "latencyMs": 1500, "times": -1}' >/dev/null
emu_post throttle '{"action": "RunInstances", "perSecond": 0.5}' >/dev/null
kubectl patch sp fence -n default --type merge -p '{"spec": {"minimum": 3, "maximum": 3}}' >/dev/null

# Mutating calls (any answer) as "time pid" lines; status versions as "time pid" lines
# (the pid whose call the Degraded message reports).
pid_of_ua='((.userAgent // "") | capture("_(?<pid>[0-9]+)\\)")? | .pid) // "-"'
calls() { emu_get journal | jq -r ".[] | select((.action==\"RunInstances\" and (.dryRun|not)) or .action==\"TerminateInstances\") | \"\\(.time) \\($pid_of_ua)\""; }
# A status version reports a new failure when its Degraded message changed: the pass
# that made the call wrote it (a write that only keeps the condition is not counted).
writes() {
	emu_get journal | jq -r ".[] | select(.requestId) | \"\\(.requestId) \\($pid_of_ua)\"" >"$E2E_TMP/rid.txt"
	awk 'NR == FNR { pid[$1] = $2; next }
		$3 != last && match($3, /RequestId [0-9a-f-]+/) { print $1, pid[substr($3, RSTART + 10, RLENGTH - 10)] }
		{ last = $3 }' FS=' ' "$E2E_TMP/rid.txt" FS='\t' "$E2E_TMP/watch.tsv"
}
# late PID IDENTITY SINCE UNTIL: what PID did from SINCE + SLACK to UNTIL (calls, status
# versions, events). UNTIL: when it may have become the leader again, less 1 s for the
# polling that noticed.
late() {
	local pid=$1 identity=$2 from to
	from=$(python3 -c "print($3 + $SLACK)")
	to=$(python3 -c "print($4 - 1)")
	echo "calls: $(calls | awk -v p="$pid" -v a="$from" -v b="$to" '$2 == p && $1 > a && $1 < b' | wc -l)"
	echo "status: $(writes | awk -v p="$pid" -v a="$from" -v b="$to" '$2 == p && $1 > a && $1 < b' | wc -l)"
	# Event timestamps have whole seconds: stamped after the next whole second, before UNTIL's.
	local stamps
	stamps=$(python3 -c "import math, datetime
f = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
print(f(math.ceil($from)), f(math.floor($to)))")
	echo "events: $(kubectl get events -n default -o json | jq --arg who "$identity" --arg a "${stamps% *}" --arg b "${stamps#* }" \
		'[.items[] | select(.reportingInstance == $who and .lastTimestamp > $a and .lastTimestamp < $b)] | length')"
}
busy() { (($(calls | awk -v t="$1" '$1 > t' | wc -l) >= $2)); }
check "the leader is busy with slow, failing launches" wait_for 30 busy "$settled_at" 2

# --- 1. the Lease is given to another holder ------------------------------------
old=$(holder)
old_pid=${old##*_}
taken=$(now)
kubectl patch lease spotpool-fence -n default --type merge -p \
	"{\"spec\": {\"holderIdentity\": \"intruder_0\", \"renewTime\": \"$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)\"}}" >/dev/null
# Past the old leader's renew deadline (8 s), until one of ours takes the unrenewed
# Lease back after its duration (10 s).
check "one of ours holds the lease again after the intruder's lease expired" \
	wait_for 25 bash -c "[[ \$(kubectl get lease spotpool-fence -n default -o jsonpath='{.spec.holderIdentity}') == *_$pid_a || \$(kubectl get lease spotpool-fence -n default -o jsonpath='{.spec.holderIdentity}') == *_$pid_b ]]"
# The window closes when the next holder acquired: up to then nobody may act.
reacquired=$(now)
report=$(late "$old_pid" "$old" "$taken" "$reacquired")
check "taken lease: the old leader ($old_pid) stopped within ${SLACK}s ($(echo $report))" \
	test "$report" = "$(printf 'calls: 0\nstatus: 0\nevents: 0')"
check "the old leader logged that it stepped down" grep -q "is held by \"intruder_0\" now: stepping down" "$E2E_TMP/a.log" "$E2E_TMP/b.log"
check "the intruder's lease: no process of ours called the cloud while it held it" \
	test "$(calls | awk -v a="$(python3 -c "print($taken + $SLACK)")" -v b="$reacquired" '$1 > a && $1 < b - 1' | wc -l)" = 0

# --- 2. the Lease is deleted -----------------------------------------------------
check "the new leader is busy with launches" wait_for 30 busy "$reacquired" 2
old=$(holder)
old_pid=${old##*_}
deleted=$(now)
kubectl delete lease spotpool-fence -n default >/dev/null
sleep 6
new=$(holder)
new_pid=${new##*_}
if [[ $new_pid == "$old_pid" ]]; then
	other_pid=$([[ $old_pid == "$pid_a" ]] && echo "$pid_b" || echo "$pid_a")
	# It stepped down, then created the Lease again before the other did: one leader.
	check "deleted lease: only the holder ($new_pid) acted after it was recreated" \
		test "$(calls | awk -v p="$other_pid" -v t="$deleted" '$2 == p && $1 > t' | wc -l)" = 0
else
	report=$(late "$old_pid" "$old" "$deleted" "$(now)")
	check "deleted lease: the old leader ($old_pid) stopped within ${SLACK}s, $new_pid leads ($(echo $report))" \
		test "$report" = "$(printf 'calls: 0\nstatus: 0\nevents: 0')"
fi
check "the leader that found no lease (or the other's new one) stepped down at once" \
	test "$(cat "$E2E_TMP/a.log" "$E2E_TMP/b.log" | grep -c 'stepping down')" -ge 2

# --- the cloud answers again: the pool converges, within its bounds throughout ----
emu_post fault '{"clear": true}' >/dev/null
emu_post throttle '{"action": "RunInstances", "perSecond": null}' >/dev/null
check "pool converges to 3 once launches succeed" wait_for 60 converged 3
stats=$(emu_get "stats?tagKey=spotpool.jokerbai.com/pool&tagValue=default/fence&history=1")
check "never more than maximum 3 live (high-water mark $(jq .maxLive <<<"$stats"))" test "$(jq .maxLive <<<"$stats")" -le 3
low=$(jq --argjson t "$settled_at" '[(.history | map(select(.[0] <= $t)) | last | .[1]), (.history[] | select(.[0] > $t) | .[1])] | min' <<<"$stats")
check "never fewer than the 2 it had once settled (low-water mark $low)" test "$low" -ge 2
check "no secret in any log" bash -c "! grep -q '$EMU_SECRET_KEY' '$E2E_TMP'/*.log"
finish
