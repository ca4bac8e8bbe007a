#!/usr/bin/env bash
# Two `spotpool run` processes with leader election on a Lease: only the leader
# mutates (the emulator's journal names the caller), a SIGKILLed leader is replaced
# within the lease duration, the pool converges and never exceeds maximum, and a
# SIGTERMed leader releases the lease at once.
source "$(dirname "$0")/lib.sh"

leader_setup spotpool-e2e 6 4 1
LEASE_SECONDS=6 RETRY_SECONDS=1
holder() { kubectl get lease spotpool-e2e -n default -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
pid_of_holder() { local h; h=$(holder); echo "${h##*_}"; }

port_a=$(free_port) port_b=$(free_port)
start_controller a --config "$cfg" --listen "127.0.0.1:$port_a"
pid_a=$CTL_PID
start_controller b --config "$cfg" --listen "127.0.0.1:$port_b"
pid_b=$CTL_PID
check "one of the two acquires the lease" wait_for 20 bash -c "[[ -n \$(kubectl get lease spotpool-e2e -n default -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) ]]"
leader=$(pid_of_holder)
if [[ $leader == "$pid_a" ]]; then standby=$pid_b standby_port=$port_b leader_port=$port_a; else standby=$pid_a standby_port=$port_a leader_port=$port_b; fi
check "the holder is one of our processes ($leader)" test "$leader" = "$pid_a" -o "$leader" = "$pid_b"
leader_gauge() { curl -s "http://127.0.0.1:$1/metrics" | awk '$1 == "spotpool_leader" {print $2}'; }
check "leader reports spotpool_leader 1" wait_for 5 bash -c "[[ \$(curl -s http://127.0.0.1:$leader_port/metrics | awk '\$1 == \"spotpool_leader\" {print \$2}') == 1 ]]"
check "standby reports spotpool_leader 0" test "$(leader_gauge "$standby_port")" = 0
check "standby is ready (standing by healthily)" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$standby_port/readyz")" = 200

pool_manifest ha default 2 2 | kubectl apply -f - >/dev/null
converged() { [[ $(sp_field ha '.status.size') == 2 && $(sp_field ha '.status.conditions[] | select(.type=="Ready") | .status') == True ]]; }
check "pool converges under the leader" wait_for 40 converged
# The caller's identity (host_pid) is in the User-Agent the emulator journals.
mutators() { emu_get journal | jq -r '[.[] | select((.action=="RunInstances" and (.dryRun|not)) or .action=="TerminateInstances") | .userAgent | capture("_(?<pid>[0-9]+)\\)").pid] | unique | join(",")'; }
check "only the leader ($leader) called RunInstances/TerminateInstances: $(mutators)" test "$(mutators)" = "$leader"

# --- SIGKILL the leader: the standby takes over within the lease duration -------
kill -KILL "$leader"
killed_at=$(date +%s.%N)
if wait_for $((LEASE_SECONDS * 3)) bash -c "[[ \$(kubectl get lease spotpool-e2e -n default -o jsonpath='{.spec.holderIdentity}') == *_$standby ]]"; then
	# From the standby's own log line, not from when kubectl saw it: under load a
	# kubectl round trip alone takes most of a second.
	if [[ $standby == "$pid_a" ]]; then standby_log=$E2E_TMP/a.log; else standby_log=$E2E_TMP/b.log; fi
	acquired=$(grep 'leader election: acquired lease' "$standby_log" | tail -1 | cut -d' ' -f1)
	took=$(python3 -c "import datetime, sys; t = datetime.datetime.fromisoformat(sys.argv[1].replace('Z', '+00:00')).timestamp(); print(round(t - $killed_at, 1))" "$acquired")
	limit=$((LEASE_SECONDS + 2 * RETRY_SECONDS))
	check "standby took over ${took}s after SIGKILL (lease ${LEASE_SECONDS}s + 2 retries = ${limit}s)" \
		python3 -c "import sys; sys.exit(0 if $took <= $limit else 1)"
else
	fail "standby never took over" "$(tail -5 "$E2E_TMP/a.log")" "$(tail -5 "$E2E_TMP/b.log")"
fi
check "new leader reports spotpool_leader 1" wait_for 5 bash -c "[[ \$(curl -s http://127.0.0.1:$standby_port/metrics | awk '\$1 == \"spotpool_leader\" {print \$2}') == 1 ]]"
victim=$(sp_field ha '.status.instances[0].instanceId')
emu_post reclaim "{\"instanceIds\":[\"$victim\"]}" >/dev/null
refilled() { converged && ! sp_field ha '.status.instances[].instanceId' | grep -qx "$victim"; }
check "the new leader refills a reclaimed instance" wait_for 40 refilled
check "never more than maximum 2 live (high-water mark $(emu_max_live default/ha))" test "$(emu_max_live default/ha)" -le 2
# One identity at a time: the sequence of mutating callers changes at most once.
switches=$(emu_get journal | jq '[.[] | select((.action=="RunInstances" and (.dryRun|not)) or .action=="TerminateInstances") | .userAgent] | [range(1; length) as $i | select(.[$i] != .[$i-1])] | length')
check "mutations came from one identity at a time ($switches switch)" test "$switches" -le 1

# --- SIGTERM the leader: it releases the lease and a new process takes it at once ---
stop_controller "$standby"
check "SIGTERMed leader exits 0" test $? = 0
check "lease released (holder empty)" wait_for 5 bash -c "[[ -z \$(kubectl get lease spotpool-e2e -n default -o jsonpath='{.spec.holderIdentity}') ]]"
start_controller c --config "$cfg" --listen ""
c_pid=$CTL_PID
start=$SECONDS
check "a new process acquires the released lease within 3 s" wait_for 3 bash -c "[[ \$(kubectl get lease spotpool-e2e -n default -o jsonpath='{.spec.holderIdentity}') == *_$c_pid ]]"
stop_controller "$c_pid"
check "no secret in any log" bash -c "! grep -q '$EMU_SECRET_KEY' '$E2E_TMP'/*.log"
finish
