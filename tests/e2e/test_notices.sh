#!/usr/bin/env bash
# SpotNotices (docs/notice-agent.md): the reclaim notices that `spotpool agent` reports
# from hosts that are not Nodes, read by a controller that has no Nodes at all
# (--no-nodes) and watches some namespaces only (--namespace na, nb, nc, and its home
# namespace: --notices-namespace spotpool-system). The emulator announces a reclaim
# (noticeSeconds) on an instance's
# metadata; an agent without a Node name, polling it every 0.1 s, creates the
# SpotNotice. Cases side by side in one controller:
#   a  replicas 2, maximum 2, a second zone; notice 150 s ahead, reported in
#      spotpool-system (not the pool's namespace): the replacement's RunInstances within
#      2 s of the announcement (so of the SpotNotice's creation), in the other zone; the
#      doomed instance's status entry shows the notice's reclaimAt; it is terminated once
#      the replacement is RUNNING, well before the deadline; never more than maximum + 1
#      live; back at 2 RUNNING
#   b  maximumIncludesDoomed: true, notice 15 s ahead, reported in the pool's namespace:
#      its reclaimAt shows the 2 minutes a drain gets at least (docs/how-it-works.md#noticed-reclaims);
#      no RunInstances while the doomed instance lives; once it is gone (the emulator
#      reclaims at 15 s) the pool refills, never above maximum
#   c  a SpotNotice in a namespace the controller does not watch, one in default (its
#      kubeconfig context's namespace, trusted before --notices-namespace existed), and
#      one in another pool's namespace, for an instance of a watched pool: nothing
#      launched or terminated, no reclaimAt in status
#   d  a SpotNotice for an instance of no pool (and one for an unknown id): nothing
#      launched, the instance left alone
# (The deletion of notices 10 minutes past their deadline happens after a watch round,
# every 5 minutes: unit test test_notices has it.)
source "$(dirname "$0")/lib.sh"

PENDING=4 # pendingSeconds of launches after the pools are up: RUNNING 4 s after RunInstances
start_emulator
start_cluster
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
unset NODE_NAME
kubectl apply -f "$E2E_ROOT/crds/spotnotice.yaml" >/dev/null
check "SpotNotice CRD established" \
	wait_for 30 kubectl wait --for condition=established --timeout=5s crd/spotnotices.devops.jokerbai.com
for n in spotpool-system na nb nc nz; do kubectl create namespace "$n" >/dev/null; done

# pool NS MAX REPLICAS [EXTRA]: a pool named after its namespace.
pool() {
	pool_manifest "$1" "$1" 0 "$2" "  replicas: $3
${4:-}" | kubectl apply -f - >/dev/null
}
pool na 2 2 '  availabilityZones: [ap-singapore-3]'
pool nb 2 2 '  maximumIncludesDoomed: true'
pool nc 1 1
# The controller's home namespace, named: from a kubeconfig there is none otherwise.
start_controller ctl --no-nodes --namespace na --namespace nb --namespace nc --notices-namespace spotpool-system
for p in na nb nc; do
	check "$p: the pool reaches its size" wait_for 60 at_size "$p" "$(sp_field "$p" .spec.replicas "$p")" "$p"
done
emu_post config "{\"pendingSeconds\": $PENDING}" >/dev/null
ids() { sp_field "$1" '.status.instances[].instanceId' "$1" | sort; }
mapfile -t A < <(ids na)
mapfile -t B < <(ids nb)
C=$(ids nc)
DOOMED_A=${A[0]:-ins-missing} DOOMED_B=${B[0]:-ins-missing}

rfc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
# notice NS INSTANCE RECLAIM_EPOCH: a SpotNotice as the agent writes it (created here as
# the admin, with no reclaim behind it).
notice() {
	kubectl create -f - >/dev/null <<YAML
apiVersion: devops.jokerbai.com/v1
kind: SpotNotice
metadata: {name: $2-$3, namespace: $1}
spec:
  instanceId: $2
  reclaimAt: "$(rfc "$3")"
  reportedAt: "$(rfc "$(date +%s)")"
  host: test
YAML
}
# start_agent NAME INSTANCE NS: `spotpool agent` without a Node name on INSTANCE's
# metadata, reporting SpotNotices into NS.
start_agent() {
	"$SPOTPOOL_BIN" agent --metadata-url "$EMU_URL/metadata/$2/latest/meta-data" --namespace "$3" \
		--interval 0.1 --log-format plain >>"$E2E_TMP/agent-$1.log" 2>&1 &
	E2E_PIDS+=($!)
}
# The first successful RunInstances of a pool (its ClientToken prefix) after SINCE.
run_after() {
	emu_get journal | jq -r --arg t "$1" --argjson since "$2" \
		'[.[] | select(.action == "RunInstances" and (.dryRun | not) and (.error | not) and .time >= $since and (.clientToken // "" | startswith($t)))][0] // empty'
}
terminated_at() {
	emu_get journal | jq -r --arg id "$1" \
		'[.[] | select(.action == "TerminateInstances" and (.error | not) and (.instanceIds | index($id)))][0].time // empty'
}
live() { emu_get instances | jq -e --arg id "$1" '.[] | select(.InstanceId == $id and (.InstanceState | test("PENDING|RUNNING")))' >/dev/null; }
gone() { ! live "$1"; }
zone_of() { emu_get instances | jq -r --arg id "$1" '.[] | select(.InstanceId == $id) | .Placement.Zone'; }
# le A B [C]: A <= B (+ C), as decimals.
le() { python3 -c 'import sys; sys.exit(not float(sys.argv[1]) <= float(sys.argv[2]) + float(sys.argv[3]))' "$1" "$2" "${3:-0}"; }
reclaim_at_in_status() { sp_field "$1" ".status.instances[] | select(.instanceId == \"$2\") | .reclaimAt // empty" "$1"; }
has_notice() { kubectl get spotnotice "$2" -n "$1" -o json 2>/dev/null | jq -e "$3" >/dev/null; }
tok_a=$(token_prefix na na)
tok_b=$(token_prefix nb nb)
tok_c=$(token_prefix nc nc)
launched_before=$(emu_get stats | jq .launched)

# --- c, d: notices that must change nothing ---------------------------------------------
now=$(date +%s) t0=$(date +%s.%N)
UNOWNED=$(emu_post instances '{"region": "ap-singapore", "zone": "ap-singapore-2"}' | jq -r '.instanceIds[0]')
check "c: SpotNotice in nz (not watched) for nc's instance $C, 60 s ahead" notice nz "$C" $((now + 60))
check "c: SpotNotice in default (the kubeconfig context's namespace) for nc's instance $C, 55 s ahead" \
	notice default "$C" $((now + 55))
check "c: SpotNotice in nb (another pool's namespace) for nc's instance $C, 50 s ahead" notice nb "$C" $((now + 50))
check "d: SpotNotice in na for $UNOWNED (an instance of no pool), 30 s ahead" notice na "$UNOWNED" $((now + 30))
check "d: SpotNotice in na for ins-nosuch0 (no such instance), 30 s ahead" notice na ins-nosuch0 $((now + 30))

# --- a, b: noticed reclaims reported by the agent ----------------------------------------
ZONE_A=$(zone_of "$DOOMED_A") # read now: the instance may be gone by the time it is checked
start_agent a "$DOOMED_A" spotpool-system
start_agent b "$DOOMED_B" nb
agents_up() { grep -qF "this host is instance $DOOMED_A" "$E2E_TMP/agent-a.log" && grep -qF "this host is instance $DOOMED_B" "$E2E_TMP/agent-b.log"; }
check "agents: each reads its instance id from the metadata" wait_for 10 agents_up
t_a=$(date +%s.%N)
emu_post reclaim "{\"instanceIds\": [\"$DOOMED_A\"], \"noticeSeconds\": 150}" >"$E2E_TMP/announce-a.json"
t_b=$(date +%s.%N)
emu_post reclaim "{\"instanceIds\": [\"$DOOMED_B\"], \"noticeSeconds\": 15}" >"$E2E_TMP/announce-b.json"
deadline_a=$(jq '.reclaimAt | floor' "$E2E_TMP/announce-a.json")
deadline_b=$(jq '.reclaimAt | floor' "$E2E_TMP/announce-b.json")
NOTICE_A=$DOOMED_A-$deadline_a NOTICE_B=$DOOMED_B-$deadline_b
# The doomed instance's status entry, watched from now on in the background: a's is
# there only until its replacement runs (about 4 s), which the checks between could
# outlast on a loaded machine. Each notes the moment it saw reclaimAt.
# shows_reclaim_at NS ID LO HI: reclaimAt between LO and HI (epoch seconds).
shows_reclaim_at() {
	local at
	at=$(reclaim_at_in_status "$1" "$2")
	[[ -n $at ]] && at=$(date -u -d "$at" +%s) && ((at >= $3 && at <= $4))
}
watch_reclaim_at() { # NS ID LO HI FILE
	(for _ in $(seq 150); do
		if shows_reclaim_at "$1" "$2" "$3" "$4"; then date +%s.%N >"$5"; exit 0; fi
		sleep 0.2
	done) &
}
watch_reclaim_at na "$DOOMED_A" "$deadline_a" "$deadline_a" "$E2E_TMP/reclaim-at-a"
# b's 15 s is less than a drain gets: 2 minutes from when the controller saw the notice.
b_seen=${t_b%.*}
watch_reclaim_at nb "$DOOMED_B" "$((b_seen + 120))" "$((b_seen + 125))" "$E2E_TMP/reclaim-at-b"
check "a: SpotNotice spotpool-system/$NOTICE_A (instance $DOOMED_A, reclaim at $(rfc "$deadline_a")) within 3 s" wait_for 3 \
	has_notice spotpool-system "$NOTICE_A" ".spec.instanceId == \"$DOOMED_A\" and .spec.reclaimAt == \"$(rfc "$deadline_a")\""
check "b: SpotNotice nb/$NOTICE_B (instance $DOOMED_B, reclaim at $(rfc "$deadline_b")) within 3 s" wait_for 3 \
	has_notice nb "$NOTICE_B" ".spec.instanceId == \"$DOOMED_B\" and .spec.reclaimAt == \"$(rfc "$deadline_b")\""

# a: launched at once, on the other offering.
a_run() { [[ -n $(run_after "$tok_a" "$t_a") ]]; }
check "a: the replacement's RunInstances is journaled" wait_for 5 a_run
run_a=$(run_after "$tok_a" "$t_a")
[[ -n $run_a ]] || run_a='{}'
run_a_time=$(jq -r '.time // 1e12' <<<"$run_a")
created_a=$(kubectl get spotnotice "$NOTICE_A" -n spotpool-system -o jsonpath='{.metadata.creationTimestamp}' 2>/dev/null)
echo "# a: announcement -> RunInstances $(python3 -c "print(round($run_a_time - $t_a, 2))") s; SpotNotice created $created_a"
check "a: ... within 2 s of the announcement (so of the SpotNotice's creation)" le "$run_a_time" "$t_a" 2
check "a: ... one instance, in ap-singapore-3 (the doomed one is in $ZONE_A)" test \
	"$(jq -c '[.count, .zone]' <<<"$run_a") $ZONE_A" = '[1,"ap-singapore-3"] ap-singapore-2'
check "a: the doomed instance's status entry shows reclaimAt $(rfc "$deadline_a")" wait_for 5 test -s "$E2E_TMP/reclaim-at-a"
check "b: the doomed instance's status entry shows reclaimAt 2 minutes after the notice (not $(rfc "$deadline_b"))" wait_for 5 test -s "$E2E_TMP/reclaim-at-b"
a_terminated() { [[ -n $(terminated_at "$DOOMED_A") ]]; }
check "a: the doomed instance is terminated" wait_for 20 a_terminated
term_a=$(terminated_at "$DOOMED_A")
echo "# a: RunInstances -> doomed terminated $(python3 -c "print(round(${term_a:-0} - $run_a_time, 2))") s (RUNNING after $PENDING s)"
check "a: ... after the replacement is RUNNING ($PENDING s after its RunInstances)" le "$run_a_time" "${term_a:-0}" "-$PENDING"
check "a: ... and before the deadline" le "${term_a:-1e12}" "$deadline_a"
# refilled NS DOOMED: at 2 RUNNING without the doomed instance (a status written before
# it went still counts it).
refilled() { at_size "$1" 2 "$1" && [[ -z $(sp_field "$1" ".status.instances[] | select(.instanceId == \"$2\") | .instanceId" "$1") ]]; }
check "a: back at 2 RUNNING, the doomed instance not among them" wait_for 20 refilled na "$DOOMED_A"
check "a: never more than maximum + 1 live ($(emu_max_live na/na))" test "$(emu_max_live na/na)" -le 3
check "a: exactly 2 live in the emulator" test "$(emu_live na/na)" = 2

# b: nothing until the doomed instance is gone, then it refills.
check "b: the doomed instance is gone at its deadline (+3 s)" wait_for "$((deadline_b + 3 - $(date +%s)))" gone "$DOOMED_B"
gone_b=$(date +%s.%N)
b_run() { [[ -n $(run_after "$tok_b" "$t_b") ]]; }
check "b: then the refill's RunInstances is journaled" wait_for 10 b_run
check "b: back at 2 RUNNING, the doomed instance not among them" wait_for 30 refilled nb "$DOOMED_B"
run_b_time=$(run_after "$tok_b" "$t_b" | jq -r '.time')
run_b_time=${run_b_time:-0}
gone_b_journal=$(emu_get journal | jq -r --arg id "$DOOMED_B" '[.[] | select((.action == "_reclaimed" or (.action == "TerminateInstances" and (.error | not))) and (.instanceIds // [] | index($id)))][0].time // empty')
check "b: no RunInstances before its deadline ($deadline_b <= $run_b_time)" le "$deadline_b" "$run_b_time"
check "b: ... nor before the doomed instance went (${gone_b_journal:-none} <= $run_b_time)" le "${gone_b_journal:-1e12}" "$run_b_time"
check "b: never above maximum ($(emu_max_live nb/nb))" test "$(emu_max_live nb/nb)" -le 2
echo "# b: doomed gone (seen) -> refilled in $(python3 -c "print(round($(date +%s.%N) - $gone_b, 1))") s"

# --- c, d: checked after a and b ran -------------------------------------------------------
untouched() { live "$1" && [[ -z $(terminated_at "$1") ]]; }
check "c: nc's instance $C still live, never terminated" untouched "$C"
check "c: no RunInstances for nc since the notices" test -z "$(run_after "$tok_c" "$t0")"
check "c: nc's status shows no reclaimAt" test -z "$(reclaim_at_in_status nc "$C")"
check "c: nc at 1 RUNNING" at_size nc 1 nc
check "d: $UNOWNED (no pool) live, never terminated" untouched "$UNOWNED"
launched=$(($(emu_get stats | jq .launched) - launched_before))
check "c, d: the only launches since the notices are a's replacement and b's refill ($launched)" test "$launched" = 2
kept() { kubectl get spotnotice "$NOTICE_A" -n spotpool-system && kubectl get spotnotice "$NOTICE_B" -n nb; }
check "the notices of a and b are kept (deleted 10 minutes past their deadline)" kept

check "no 403 or failed notice request in the controller's log" bash -c "! grep -iE 'HTTP 403|forbidden|notice.*failed' '$E2E_TMP/ctl.log'"
finish
