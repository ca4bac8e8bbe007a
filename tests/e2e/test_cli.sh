#!/usr/bin/env bash
# The command line: every command's -h/--help prints its usage on stdout and exits 0
# having done nothing else (no apiserver contacted, no port opened); bad flags,
# missing arguments and unknown commands exit with the usage status, the reason,
# the usage line and a pointer to --help on stderr.
source "$(dirname "$0")/lib.sh"

usage_rc=2  # CLI_EUSAGE in include/cli.h; docs/configuration.md#exit-status

# --- A fake apiserver: a TCP listener that records every connection it accepts ------
accept_log=$E2E_TMP/accepted
python3 - "$E2E_TMP/fake.port" "$accept_log" <<'PY' &
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, addr = s.accept()
    with open(sys.argv[2], "a") as f:
        f.write("connection from %s:%d\n" % addr)
    c.close()
PY
E2E_PIDS+=($!)
wait_for 10 test -s "$E2E_TMP/fake.port" || { echo "fake apiserver did not start"; exit 1; }
fake_port=$(cat "$E2E_TMP/fake.port")
cat >"$E2E_TMP/kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: "https://127.0.0.1:$fake_port", insecure-skip-tls-verify: true}
users:
- name: fake
  user: {token: not-a-real-token}
contexts:
- name: fake
  context: {cluster: fake, user: fake, namespace: default}
current-context: fake
YAML
chmod 600 "$E2E_TMP/kubeconfig"
: >"$accept_log"
# Sanity: the listener does record connections.
curl -s --max-time 2 "http://127.0.0.1:$fake_port/" >/dev/null 2>&1
check "the fake apiserver records connections" wait_for 5 grep -q connection "$accept_log"
: >"$accept_log"

# sp_run NAME ARGS...: runs spotpool (killed after 5 s) with the fake cluster in the
# environment; stdout, stderr and the exit status in $E2E_TMP/NAME.{out,err,rc}.
sp_run() {
	local name=$1
	shift
	KUBECONFIG=$E2E_TMP/kubeconfig SPOTPOOL_CVM_ENDPOINT="http://127.0.0.1:$fake_port" \
		timeout 5 "$SPOTPOOL_BIN" "$@" >"$E2E_TMP/$name.out" 2>"$E2E_TMP/$name.err" </dev/null
	echo $? >"$E2E_TMP/$name.rc"
}
rc_of() { cat "$E2E_TMP/$1.rc"; }

# --- --help: usage on stdout, exit 0, nothing else ------------------------------------
metrics_port=$(free_port)
help_cases=(
	"run --help|Usage: spotpool run [OPTIONS]"
	"run -h|Usage: spotpool run [OPTIONS]"
	"run --kubeconfig $E2E_TMP/kubeconfig --listen 127.0.0.1:$metrics_port --help|Usage: spotpool run [OPTIONS]"
	"run --check-config --help|Usage: spotpool run [OPTIONS]"
	"dry-run --help|Usage: spotpool dry-run"
	"dry-run -h|Usage: spotpool dry-run"
	"dry-run -f /nonexistent.yaml --help|Usage: spotpool dry-run"
	"version --help|Usage: spotpool version"
	"help|Usage: spotpool COMMAND [OPTIONS]"
	"--help|Usage: spotpool COMMAND [OPTIONS]"
	"-h|Usage: spotpool COMMAND [OPTIONS]"
	"help run|Usage: spotpool run [OPTIONS]"
	"help dry-run|Usage: spotpool dry-run"
)
help_ok() { # WANT START: exit 0 within 2 s, WANT on stdout's first line, stderr empty
	[[ $(rc_of help) == 0 && $((SECONDS - $2)) -le 2 ]] && head -1 "$E2E_TMP/help.out" | grep -qF -- "$1" &&
		! test -s "$E2E_TMP/help.err"
}
for case in "${help_cases[@]}"; do
	args=${case%%|*} want=${case#*|}
	start=$SECONDS
	# shellcheck disable=SC2086 # the arguments are words
	sp_run help $args
	check "spotpool $args: exit 0 ($(rc_of help)) at once, usage on stdout, nothing on stderr" help_ok "$want" "$start"
done
check "--help never contacted the (fake) apiserver or the CVM endpoint" bash -c "! test -s '$accept_log'"
check "spotpool version prints the version" bash -c "'$SPOTPOOL_BIN' version | grep -qx 'spotpool [0-9][0-9.]*'"

# No socket at all: neither a connection nor a listener (when strace is there to see it).
if command -v strace >/dev/null; then
	# LeakSanitizer cannot run under ptrace: no leak check for this one run (check-asan).
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 KUBECONFIG=$E2E_TMP/kubeconfig timeout 5 strace -f -qq -e trace=connect,bind,listen -o "$E2E_TMP/strace.out" \
		"$SPOTPOOL_BIN" run --listen "127.0.0.1:$metrics_port" --help >/dev/null
	check "run --help: no connect, bind or listen on an IP socket (strace)" \
		bash -c "! grep -E 'AF_INET|listen\\(' '$E2E_TMP/strace.out'"
else
	echo "# strace not installed: socket calls of --help not traced"
fi

# --- Usage errors: exit $usage_rc, the reason, the usage line and --help on stderr -----
error_cases=(
	"run --bogus|unrecognized option '--bogus'|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --kubeconfig|option '--kubeconfig' requires an argument|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run -n|option requires an argument -- 'n'|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --dry-run=yes|option '--dry-run' doesn't allow an argument|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --lease x|option '--lease' is ambiguous|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run stray|unexpected argument \"stray\"|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --workers lots|--workers: workers: must be an integer from 1 to 64, got \"lots\"|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"dry-run --bogus -f x.yaml|unrecognized option '--bogus'|Usage: spotpool dry-run|spotpool dry-run --help"
	"dry-run|at least one -f FILE is required|Usage: spotpool dry-run|spotpool dry-run --help"
	"dry-run -f|option requires an argument -- 'f'|Usage: spotpool dry-run|spotpool dry-run --help"
	"dry-run -f x.yaml -o yaml|--output must be table or json|Usage: spotpool dry-run|spotpool dry-run --help"
	"dry-run -f x.yaml --timeout 0|--timeout must be 1..300 seconds|Usage: spotpool dry-run|spotpool dry-run --help"
	"version extra|unexpected argument \"extra\"|Usage: spotpool version|spotpool version --help"
	"bogus|unknown command \"bogus\"|Usage: spotpool COMMAND [OPTIONS]|spotpool --help"
	"help bogus|unknown command \"bogus\"|Usage: spotpool COMMAND [OPTIONS]|spotpool --help"
	"--bogus|unknown option \"--bogus\"|Usage: spotpool COMMAND [OPTIONS]|spotpool --help"
	"|missing command|Usage: spotpool COMMAND [OPTIONS]|spotpool --help"
)
usage_error_ok() { # REASON USAGE_LINE HELP_REF: the status, nothing on stdout, all three on stderr
	[[ $(rc_of err) == "$usage_rc" ]] && ! test -s "$E2E_TMP/err.out" &&
		grep -qF -- "$1" "$E2E_TMP/err.err" && grep -qF -- "$2" "$E2E_TMP/err.err" &&
		grep -qF -- "Try '$3'" "$E2E_TMP/err.err"
}
for case in "${error_cases[@]}"; do
	IFS='|' read -r args reason usage_line helpref <<<"$case"
	# shellcheck disable=SC2086
	sp_run err $args
	check "spotpool ${args:-(nothing)}: exit $usage_rc ($(rc_of err)), \"$reason\", usage line and --help on stderr" \
		usage_error_ok "$reason" "$usage_line" "$helpref"
done
# An empty namespace (--namespace "$NS" with NS unset) must not widen the watch to all
# namespaces: it is a usage error naming the flag (the list above cannot hold "").
for args in '--namespace|' '-n|' '--namespace|team-a|--namespace|'; do
	IFS='|' read -r -a argv <<<"$args|"
	sp_run err run "${argv[@]}"
	check "spotpool run ${argv[*]@Q}: exit $usage_rc ($(rc_of err)), the flag named on stderr" \
		usage_error_ok "--namespace: namespaces: must name a namespace" "Usage: spotpool run [OPTIONS]" \
		"spotpool run --help"
done
check "usage errors never contacted the (fake) apiserver" bash -c "! test -s '$accept_log'"

finish
