#!/usr/bin/env bash
# Shutdown while a CVM call hangs: SIGTERM ends the controller within seconds with
# status 0, the launch whose outcome is unknown stays recorded in status, and a
# restart resolves it by repeating the same ClientToken: one instance, never two. An
# idle controller stops at once.
source "$(dirname "$0")/lib.sh"
shopt -s extglob

start_emulator
start_cluster
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
POOL=halt

# The launch happens, but its reply is held for a minute. Its instance stays out of
# listings for 15 s, so the restarted controller cannot see it and must resolve the
# launch by repeating it (well inside the 60 s launch grace).
emu_post fault '{"action":"RunInstances","latencyMs":60000}' >/dev/null
emu_post fault '{"action":"RunInstances","invisibleSeconds":15}' >/dev/null
start_controller ctl
first=$CTL_PID
pool_manifest "$POOL" default 1 1 | kubectl apply -f - >/dev/null

# RunInstances calls (control entries such as "_fault" carry no requestId).
run_calls() { emu_get journal | jq -c '[.[] | select(.action == "RunInstances" and .requestId and (.dryRun | not))]'; }
launch_sent() { [[ $(run_calls | jq length) -ge 1 ]]; }
if ! wait_for 30 launch_sent; then
	fail "the controller never sent RunInstances" "$(tail -5 "$E2E_TMP/ctl.log")"
	finish
fi
token=$(run_calls | jq -r '.[0].clientToken')
sleep 0.5  # let the call settle into waiting for its reply

started=$(date +%s.%N)
kill -TERM "$first"
# Exited: gone, or a zombie waiting for `wait` (kill -0 would still succeed then).
exited() { [[ $(awk '{print $3}' "/proc/$first/stat" 2>/dev/null || echo gone) == @(Z|gone) ]]; }
wait_for 10 exited || kill -KILL "$first"
took=$(python3 -c "import time; print(round(time.time() - $started, 1))")
wait "$first"
status=$?
check "SIGTERM during a hanging RunInstances: exit status 0 (got $status)" test "$status" = 0
check "... within 5 s (took ${took}s)" python3 -c "import sys; sys.exit(not $took < 5)"
# Our own shutdown aborted the call: neither a refusal nor a warning (debug level only).
check "the aborted call is logged as no refusal or warning" bash -c \
	"! grep -E ' (warn|error) .*(RunInstances|CloudAPIError|refused)' '$E2E_TMP/ctl.log'"
check "the launch (outcome unknown) is still recorded with its ClientToken $token" \
	test "$(sp_field "$POOL" '.status.launch.clientToken')" = "$token"

start_controller ctl
converged() { [[ $(sp_field "$POOL" '.status.size') == 1 ]]; }
check "after a restart the pool converges to 1" wait_for 60 converged
check "exactly 1 live instance (emulator: $(emu_live default/$POOL))" test "$(emu_live default/$POOL)" = 1
check "never more than 1 live (high-water mark $(emu_max_live default/$POOL))" test "$(emu_max_live default/$POOL)" = 1
check "the restart repeated RunInstances with the same ClientToken" \
	jq -e --arg t "$token" 'length >= 2 and .[1].clientToken == $t and .[1].replay == true' <<<"$(run_calls)"
check "and never with another one" jq -e --arg t "$token" 'all(.[]; .clientToken == $t)' <<<"$(run_calls)"
# Idle (a watch open, every thread waiting): one stop request wakes every thread at
# once (src/stop.c); polled flags took about 0.4 s here.
sleep 1
started=$(date +%s%N)
stop_controller "$CTL_PID"
status=$?
took_ms=$((($(date +%s%N) - started) / 1000000))
check "second controller stops with status 0" test "$status" = 0
check "an idle controller stops within 300 ms of SIGTERM (took ${took_ms} ms)" test "$took_ms" -lt 300

finish
