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
	"agent --help|Usage: spotpool agent [OPTIONS]"
	"agent --kubeconfig $E2E_TMP/kubeconfig --node-name n1 --metadata-url http://127.0.0.1:$fake_port -h|Usage: spotpool agent [OPTIONS]"
	"help agent|Usage: spotpool agent [OPTIONS]"
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
	"dry-run -f x.yaml -o yaml|--output: must be table or json, got \"yaml\"|Usage: spotpool dry-run|spotpool dry-run --help"
	"dry-run -f x.yaml --timeout 0|--timeout: must be an integer from 1 to 300 (seconds), got \"0\"|Usage: spotpool dry-run|spotpool dry-run --help"
	"dry-run -f x.yaml --timeout 5x|--timeout: must be an integer from 1 to 300 (seconds), got \"5x\"|Usage: spotpool dry-run|spotpool dry-run --help"
	"dry-run -f x.yaml --timeout 99999999999999999999|got \"99999999999999999999\"|Usage: spotpool dry-run|spotpool dry-run --help"
	"run --cluster-name bad!name|--cluster-name: clusterName: must be 1 to 63 characters|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --listen nonsense|--listen: listenAddress: metrics listen address \"nonsense\"|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --workers 5x|--workers: workers: must be an integer from 1 to 64, got \"5x\"|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --resync 99999999999999999999|--resync: resyncSeconds: must be an integer from 1 to 86400, got \"99999999999999999999\"|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --sold-out-seconds 0|--sold-out-seconds: soldOutSeconds: must be an integer from 1 to 86400, got \"0\"|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --namespace Team_A|--namespace: namespaces: \"Team_A\" is not a namespace name (a DNS-1123 label|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run -n ok -n -bad-|--namespace: namespaces: \"-bad-\" is not a namespace name|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --lease-namespace a.b|--lease-namespace: leaderElection.leaseNamespace: must be a namespace name|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --endpoint cvm.example.com|--endpoint: cvmEndpoint: must be an http:// or https:// URL|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"run --listen nonsense --check-config|--listen: listenAddress|Usage: spotpool run [OPTIONS]|spotpool run --help"
	"agent --bogus|unrecognized option '--bogus'|Usage: spotpool agent [OPTIONS]|spotpool agent --help"
	"agent --interval 0|--interval: \"0\" is not a number of seconds from 0.1 to 60|Usage: spotpool agent [OPTIONS]|spotpool agent --help"
	"agent --interval 2s|--interval: \"2s\" is not a number of seconds|Usage: spotpool agent [OPTIONS]|spotpool agent --help"
	"agent --node-name Bad_Node|--node-name (or NODE_NAME): \"Bad_Node\" is not a Node name|Usage: spotpool agent [OPTIONS]|spotpool agent --help"
	"agent --namespace a.b|--namespace: \"a.b\" is not a namespace name|Usage: spotpool agent [OPTIONS]|spotpool agent --help"
	"agent --metadata-url metadata.tencentyun.com|--metadata-url: \"metadata.tencentyun.com\" is not an http:// or https:// URL|Usage: spotpool agent [OPTIONS]|spotpool agent --help"
	"agent stray|unexpected argument \"stray\"|Usage: spotpool agent [OPTIONS]|spotpool agent --help"
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

# --- --check-config validates what run validates ----------------------------------------
# The same bad input (here from the environment or the file: status 1) makes both exit
# with the same status and message, before anything is contacted: check-config never
# calls valid what run then refuses.
printf 'listenAddress: "nonsense"\n' >"$E2E_TMP/listen.yaml"
printf 'namespaces: [Team_A]\n' >"$E2E_TMP/ns.yaml"
mkdir -p "$E2E_TMP/conf.d"
: >"$E2E_TMP/empty.yaml"
printf -- '- workers: 2\n' >"$E2E_TMP/list.yaml"
printf 'worker: 3\n' >"$E2E_TMP/typo.yaml"
same_cases=(
	"SPOTPOOL_LISTEN_ADDRESS=nonsense||SPOTPOOL_LISTEN_ADDRESS: listenAddress: metrics listen address \"nonsense\""
	"SPOTPOOL_CLUSTER_NAME=bad!name||SPOTPOOL_CLUSTER_NAME: clusterName: must be 1 to 63 characters"
	"SPOTPOOL_NAMESPACES=ok,Not_OK||SPOTPOOL_NAMESPACES: namespaces: \"Not_OK\" is not a namespace name"
	"SPOTPOOL_RESYNC_SECONDS=5x||SPOTPOOL_RESYNC_SECONDS: resyncSeconds: must be an integer from 1 to 86400, got \"5x\""
	"X=1|--config $E2E_TMP/listen.yaml|listen.yaml:1: listenAddress: metrics listen address \"nonsense\""
	"X=1|--config $E2E_TMP/ns.yaml|ns.yaml:1: namespaces: \"Team_A\" is not a namespace name"
	"X=1|--config $E2E_TMP/conf.d|conf.d: is a directory, expected a YAML file"
	"X=1|--config $E2E_TMP/list.yaml|list.yaml: expected a mapping of configuration keys (workers: 2, ...; see spotpool.yaml(5)), got a list"
	"X=1|--config $E2E_TMP/typo.yaml|typo.yaml:1: unknown key \"worker\" (did you mean \"workers\"?)"
)
for case in "${same_cases[@]}"; do
	IFS='|' read -r var flags want <<<"$case"
	# shellcheck disable=SC2086 # flags are words
	env "$var" KUBECONFIG="$E2E_TMP/kubeconfig" timeout 5 "$SPOTPOOL_BIN" run $flags --check-config \
		>"$E2E_TMP/cc.out" 2>"$E2E_TMP/cc.err" </dev/null
	echo $? >"$E2E_TMP/cc.rc"
	# shellcheck disable=SC2086
	env "$var" KUBECONFIG="$E2E_TMP/kubeconfig" timeout 5 "$SPOTPOOL_BIN" run $flags \
		>"$E2E_TMP/rn.out" 2>"$E2E_TMP/rn.err" </dev/null
	echo $? >"$E2E_TMP/rn.rc"
	check "$var $flags: --check-config and run both exit 1 ($(rc_of cc), $(rc_of rn)) with \"$want\"" \
		bash -c "[[ \$(cat '$E2E_TMP/cc.rc') == 1 && \$(cat '$E2E_TMP/rn.rc') == 1 ]] &&
			grep -qF -- '$want' '$E2E_TMP/cc.err' && grep -qF -- '$want' '$E2E_TMP/rn.err' &&
			! grep -q 'configuration is valid' '$E2E_TMP/cc.out'"
done
check "bad settings never contacted the (fake) apiserver" bash -c "! test -s '$accept_log'"
sp_run cc run --config "$E2E_TMP/empty.yaml" --check-config
check "an empty --config file sets nothing: check-config goes on to the cluster (exit 3, $(rc_of cc))" \
	bash -c "[[ \$(cat '$E2E_TMP/cc.rc') == 3 ]] && grep -q 'configuration is valid, but the cluster connection FAILED' '$E2E_TMP/cc.out'"

# --- soldOutSeconds: --sold-out-seconds, with --sold-out-ttl kept as a deprecated alias ----
sp_run sold run --sold-out-seconds 42 --check-config
check "--sold-out-seconds sets soldOutSeconds" grep -qx 'soldOutSeconds: 42  # --sold-out-seconds' "$E2E_TMP/sold.out"
sp_run sold run --sold-out-ttl 43 --check-config
check "--sold-out-ttl still sets soldOutSeconds, with a deprecation warning" bash -c \
	"grep -qx 'soldOutSeconds: 43  # --sold-out-ttl' '$E2E_TMP/sold.out' && grep -q 'deprecated: use --sold-out-seconds' '$E2E_TMP/sold.err'"
sp_run cc run --listen "127.0.0.1:$fake_port" --check-config
check "--check-config warns when the listen address cannot be bound now (run would exit 1)" \
	grep -q "^# warning: metrics listen address \"127.0.0.1:$fake_port\": Address already in use" "$E2E_TMP/cc.out"
: >"$accept_log"

# --- dry-run: its synopsis lists every option; file problems name the file ----------------
sp_run help dry-run --help
for opt in '-f|--filename FILE' '-o|--output table|json' '--endpoint URL' '--timeout SECONDS' '-v|--verbose'; do
	check "dry-run synopsis lists $opt" bash -c "sed -n '1,2p' '$E2E_TMP/help.out' | grep -qF -- '$opt'"
done
for case in "$E2E_TMP/conf.d|conf.d: is a directory, expected a YAML file" \
	"$E2E_TMP/empty.yaml|empty.yaml: empty (no YAML document): expected Spotpool manifests" \
	"$E2E_TMP/list.yaml|list.yaml: document 1: expected a mapping (apiVersion, kind, metadata, spec), got a list"; do
	IFS='|' read -r file want <<<"$case"
	sp_run dr dry-run -f "$file"
	check "dry-run -f ${file##*/}: exit 1 ($(rc_of dr)), \"$want\"" bash -c \
		"[[ \$(cat '$E2E_TMP/dr.rc') == 1 ]] && grep -qF -- '$want' '$E2E_TMP/dr.err'"
done
printf 'apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata: {name: a}\nspce: {}\n' >"$E2E_TMP/spce.yaml"
sp_run dr dry-run -f "$E2E_TMP/spce.yaml"
check "dry-run: an unknown key suggests the nearest (spce -> spec)" grep -qF 'spce: unknown field (did you mean "spec"?) (line 4)' "$E2E_TMP/dr.err"

finish
