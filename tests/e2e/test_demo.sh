#!/usr/bin/env bash
# scripts/demo (make demo), run three times in a row in one state directory: each run
# reaches the demo pool's size, the second starts clean (new etcd state, new emulator
# and port), the third keeps the state (KEEP=1). Stopping it, by Ctrl-C to its process
# group or by SIGTERM to the script alone, leaves none of its processes behind. A clean
# start and stop logs no error or warning (the first screen a new user sees); a lost
# apiserver watch still does.
source "$(dirname "$0")/lib.sh"

demo_dir=$E2E_TMP/demo
demo_cleanup() {
	[[ -z ${DEMO_PID:-} ]] || kill -TERM "$DEMO_PID" 2>/dev/null
	"$E2E_ROOT/scripts/k8s-down" "$demo_dir/k8s" >/dev/null 2>&1
}
trap 'demo_cleanup; cleanup' EXIT

# run_demo NAME [ARGS...]: starts scripts/demo in its own session (as a terminal would
# run it: its own process group); output in $E2E_TMP/NAME.out, pid in DEMO_PID.
run_demo() {
	local name=$1
	shift
	SPOTPOOL_DEMO_DIR=$demo_dir SPOTPOOL_BIN=$SPOTPOOL_BIN setsid "$E2E_ROOT/scripts/demo" "$@" \
		>"$E2E_TMP/$name.out" 2>&1 </dev/null &
	DEMO_PID=$!
}
demo_kubeconfig() { sed -n 's/^ *export KUBECONFIG=//p' "$E2E_TMP/$1.out" | head -1; }
demo_size() { kubectl --kubeconfig "$(demo_kubeconfig "$1")" get sp demo -o jsonpath='{.status.size}' 2>/dev/null; }
at_size() { [[ -n $(demo_kubeconfig "$1") && $(demo_size "$1") == 2 ]]; }
# reaches_size NAME LABEL [SUFFIX]: the check, and the demo's own output when it fails.
reaches_size() {
	check "$2: the demo pool reaches size 2${3:-}" wait_for 120 at_size "$1"
	at_size "$1" || sed 's/^/# demo: /' "$E2E_TMP/$1.out" | tail -n 25
}
demo_uid() { kubectl --kubeconfig "$(demo_kubeconfig "$1")" get sp demo -o jsonpath='{.metadata.uid}'; }
# Every pid the demo started (from its pids file), plus the script itself.
demo_pids() { awk '{print $2}' "$demo_dir/pids"; echo "$DEMO_PID"; }
alive() {
	local pid left=()
	for pid in "$@"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
	((${#left[@]} == 0)) || { ps -o pid,args -p "$(IFS=,; echo "${left[*]}")"; return 1; }
}
# Any process whose arguments or environment name the demo's state directory.
strays() {
	local p found=0
	for p in /proc/[0-9]*; do
		[[ ${p#/proc/} == "$$" || ${p#/proc/} == "$BASHPID" ]] && continue
		if tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qF -- "$demo_dir/" ||
			tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qxF -- "KUBECONFIG=$demo_dir/k8s/kubeconfig"; then
			echo "left: ${p#/proc/} $(tr '\0' ' ' <"$p/cmdline")"
			found=1
		fi
	done
	((found == 0))
}

# Lines of a demo's output that are errors or warnings: the controller's (level field)
# and any tool's ("error: ...", "Warning: ...").
complaints() { grep -E -i '^[0-9T:.-]+Z (error|warn) |^(error|warning)\b' "$E2E_TMP/$1.out"; }
quiet() { ! complaints "$1"; }

# stop_demo NAME HOW: HOW is INT (Ctrl-C: the whole process group) or TERM (the script).
stop_demo() {
	local name=$1 how=$2 pids rc
	pids=$(demo_pids)
	if [[ $how == INT ]]; then kill -INT -- "-$DEMO_PID"; else kill -TERM "$DEMO_PID"; fi
	wait_for 40 bash -c "! kill -0 $DEMO_PID 2>/dev/null"
	wait "$DEMO_PID"
	rc=$?
	DEMO_PID=''
	# Ctrl-C reaches the controller too, which exits 0; the script then ends with its status.
	check "$name: SIG$how ends the demo (exit $rc)" \
		bash -c "[[ $how == INT && ($rc == 0 || $rc == 130) || $how == TERM && $rc == 143 ]]"
	# shellcheck disable=SC2086 # a list of pids
	check "$name: none of the processes it started is left (etcd, apiserver, emulator, controller, script: $(echo $pids))" \
		wait_for 10 alive $pids
	check "$name: no process names its state directory" strays
}

# --- run 1: a fresh demo; Ctrl-C --------------------------------------------------------
run_demo first
reaches_size first "first run"
uid1=$(demo_uid first)
port1=$(cat "$demo_dir/emulator.port")
check "first run: the pids file lists etcd, apiserver, emulator and controller" \
	test "$(awk '{print $1}' "$demo_dir/pids" | sort | tr '\n' ' ')" = "apiserver controller emulator etcd "
stop_demo first INT
check "first run: no error or warning from start to Ctrl-C" quiet first

# --- run 2: starts clean; SIGTERM -------------------------------------------------------
echo "stale" >"$demo_dir/emulator.port.stale"
run_demo second
reaches_size second "second run"
uid2=$(demo_uid second)
check "second run: a fresh cluster state (new pool uid: $uid1 -> $uid2)" test -n "$uid2" -a "$uid1" != "$uid2"
check "second run: a fresh state directory" test ! -e "$demo_dir/emulator.port.stale"
check "second run: its own emulator port ($port1 -> $(cat "$demo_dir/emulator.port"))" \
	bash -c "grep -qF \"http://127.0.0.1:\$(cat '$demo_dir/emulator.port')/_emulator/reclaim\" '$E2E_TMP/second.out'"
# Only one demo per state directory.
SPOTPOOL_DEMO_DIR=$demo_dir SPOTPOOL_BIN=$SPOTPOOL_BIN "$E2E_ROOT/scripts/demo" >"$E2E_TMP/concurrent.out" 2>&1 </dev/null
rc=$?
check "a second demo on the same state directory is refused (exit $rc) and leaves the first alone" \
	bash -c "[[ $rc == 1 ]] && grep -q 'another demo is running' '$E2E_TMP/concurrent.out' && kill -0 $DEMO_PID && [[ \$(kubectl --kubeconfig '$(demo_kubeconfig second)' get sp demo -o jsonpath='{.metadata.uid}') == '$uid2' ]]"
stop_demo second TERM
check "second run: no error or warning from start to SIGTERM" quiet second

# --- run 3: KEEP=1 keeps the cluster state ------------------------------------------------
KEEP=1 run_demo third
reaches_size third "KEEP=1" " again"
check "KEEP=1: the same cluster state (pool uid kept: $uid2)" test "$(demo_uid third)" = "$uid2"
# A watch really lost is still a warning: the apiserver killed under the demo (Ctrl-C
# then stops the rest all the same).
kill -KILL "$(cat "$demo_dir/k8s/apiserver.pid")"
check "KEEP=1: the apiserver killed, the lost watches are warnings" \
	wait_for 10 grep -qE '^[0-9T:.-]+Z warn  watch (spotpools|nodes|spotnotices) \(.*\) ended: ' "$E2E_TMP/third.out"
stop_demo third INT

finish
