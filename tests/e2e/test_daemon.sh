#!/usr/bin/env bash
# The daemon: configuration precedence and errors, the systemd notification protocol
# on a real NOTIFY_SOCKET (READY, STATUS, WATCHDOG cadence, STOPPING), /metrics in
# Prometheus text format with counters that move, /healthz and /readyz.
source "$(dirname "$0")/lib.sh"

# --- Configuration: errors name the key and line; flags > environment > file ----
cfg=$E2E_TMP/spotpool.yaml
printf 'workers: 4\nleaderElection:\n  enabled: true\n  leaseNmae: x\n' >"$cfg"
"$SPOTPOOL_BIN" run --config "$cfg" --check-config >"$E2E_TMP/out" 2>&1
check "unknown nested key: exit 1 naming file, line and key" \
	bash -c "[[ $? == 1 ]] && grep -qF '$cfg:4: unknown key \"leaderElection.leaseNmae\"' '$E2E_TMP/out'"
printf 'resyncSeconds: 0\n' >"$cfg"
"$SPOTPOOL_BIN" run --config "$cfg" --check-config >"$E2E_TMP/out" 2>&1
check "out-of-range value names file:line and key" grep -qF "$cfg:1: resyncSeconds: must be an integer from 1 to 86400" "$E2E_TMP/out"
printf 'logLevel: loud\n' >"$cfg"
"$SPOTPOOL_BIN" run --config "$cfg" --check-config >"$E2E_TMP/out" 2>&1
check "bad enum names the key" grep -qF "$cfg:1: logLevel: must be error, warn, info or debug" "$E2E_TMP/out"
SPOTPOOL_WORKERS=lots "$SPOTPOOL_BIN" run --check-config >"$E2E_TMP/out" 2>&1
rc=$?
check "bad environment value: exit 1 ($rc) naming the variable (a bad --workers is a usage error, exit 2: test_cli)" \
	bash -c "[[ $rc == 1 ]] && grep -qF 'SPOTPOOL_WORKERS: workers: must be an integer' '$E2E_TMP/out'"
printf 'leaderElection:\n  enabled: true\n  leaseDurationSeconds: 5\n  renewDeadlineSeconds: 8\n' >"$cfg"
"$SPOTPOOL_BIN" run --config "$cfg" --check-config >"$E2E_TMP/out" 2>&1
check "inconsistent lease timings rejected" grep -q "renewDeadlineSeconds (8) < leaseDurationSeconds (5)" "$E2E_TMP/out"

# --- --check-config checks the cluster connection: unreachable --------------------------
"$SPOTPOOL_BIN" run --config /dev/null --kubeconfig "$E2E_ROOT/tests/e2e/fixtures/kubeconfig" --check-config \
	>"$E2E_TMP/out" 2>&1
rc=$?
check "--check-config, apiserver unreachable: exit 3 ($rc)" test "$rc" = 3
check "--check-config, apiserver unreachable: FAILED with the reason" \
	grep -q "^# cluster connection: FAILED: GET https://127.0.0.1:1/version: .*connect" "$E2E_TMP/out"
check "--check-config, apiserver unreachable: the configuration itself is still reported valid" \
	grep -q "^# configuration is valid, but the cluster connection FAILED" "$E2E_TMP/out"

start_emulator
start_cluster
printf 'workers: 4\nresyncSeconds: 20\nnamespaces: [a, b]\n' >"$cfg"
SPOTPOOL_RESYNC_SECONDS=7 SPOTPOOL_WORKERS=3 TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY \
	"$SPOTPOOL_BIN" run --config "$cfg" --workers 5 --check-config >"$E2E_TMP/out" 2>&1
check "--check-config exits 0 for a valid configuration" grep -q "# configuration is valid" "$E2E_TMP/out"
check "flag beats environment: workers 5 from --workers" grep -q '^workers: 5  # --workers' "$E2E_TMP/out"
check "environment beats file: resync 7 from SPOTPOOL_RESYNC_SECONDS" grep -q '^resyncSeconds: 7  # SPOTPOOL_RESYNC_SECONDS' "$E2E_TMP/out"
check "file beats default: namespaces from the file, with its line" grep -qF "namespaces: [\"a\", \"b\"]  # $cfg:3" "$E2E_TMP/out"
check "--check-config redacts the secret key" bash -c "! grep -q '$EMU_SECRET_KEY' '$E2E_TMP/out' && grep -q 'secretKey \\[redacted\\]' '$E2E_TMP/out'"
printf 'secretId: %s\nsecretKey: %s\n' "$EMU_SECRET_ID" "$EMU_SECRET_KEY" >"$E2E_TMP/creds.yaml"
chmod 600 "$E2E_TMP/creds.yaml"

# --- --check-config: the cluster connection with a real apiserver; file modes ------------
check "--check-config: cluster connection OK, with the apiserver's version and the Spotpool API" \
	grep -q "^# cluster connection: OK (Kubernetes v1\.[0-9]*\.[0-9]*.*, devops.jokerbai.com/v1 served)" "$E2E_TMP/out"
server=$(kubectl config view -o jsonpath='{.clusters[0].cluster.server}')
cat >"$E2E_TMP/badtoken.kubeconfig" <<YAML
apiVersion: v1
kind: Config
current-context: bad
contexts:
- name: bad
  context: {cluster: local, user: bad}
clusters:
- name: local
  cluster: {server: "$server", certificate-authority: "$E2E_TMP/k8s/pki/ca.crt"}
users:
- name: bad
  user: {token: this-token-is-not-known-to-the-apiserver}
YAML
chmod 600 "$E2E_TMP/badtoken.kubeconfig"
"$SPOTPOOL_BIN" run --config /dev/null --kubeconfig "$E2E_TMP/badtoken.kubeconfig" --check-config >"$E2E_TMP/out" 2>&1
rc=$?
check "--check-config, credentials rejected by the apiserver: exit 3 ($rc) and FAILED naming HTTP 401" \
	bash -c "[[ $rc == 3 ]] && grep -q '^# cluster connection: FAILED: GET .*/version: HTTP 401' '$E2E_TMP/out'"
chmod 644 "$E2E_TMP/creds.yaml"
"$SPOTPOOL_BIN" run --config /dev/null --credentials-file "$E2E_TMP/creds.yaml" --check-config >"$E2E_TMP/out" 2>&1
rc=$?
check "--check-config, credentials file mode 0644: a warning naming the file and the fix (exit $rc)" \
	grep -qxF "# warning: credentials file $E2E_TMP/creds.yaml is readable by group or others (mode 0644); restrict it: chmod 600 $E2E_TMP/creds.yaml" "$E2E_TMP/out"
check "--check-config, credentials file mode 0644: still valid (a warning, exit 0)" test "$rc" = 0
chmod 600 "$E2E_TMP/creds.yaml"
"$SPOTPOOL_BIN" run --config /dev/null --credentials-file "$E2E_TMP/creds.yaml" --check-config >"$E2E_TMP/out" 2>&1
check "--check-config, credentials file mode 0600: no warning" bash -c "! grep -q '^# warning' '$E2E_TMP/out'"

# --- systemd notification protocol on a real datagram socket ------------------
sock=$E2E_TMP/notify.sock
python3 "$E2E_ROOT/tests/tools/notify_listener.py" "$sock" "$E2E_TMP/notify.jsonl" &
E2E_PIDS+=($!)
wait_for 5 test -S "$sock" || fail "notify listener did not start"
port=$(free_port)
NOTIFY_SOCKET=$sock WATCHDOG_USEC=1000000 start_controller daemon --credentials-file "$E2E_TMP/creds.yaml" \
	--listen "127.0.0.1:$port"
daemon=$CTL_PID
notified() { grep -q "\"$1\"" "$E2E_TMP/notify.jsonl" 2>/dev/null; }
check "READY=1 after the first successful list" wait_for 20 notified READY
check "STATUS= reports pools and instances" wait_for 10 bash -c "grep -q 'pool(s), .* live instance(s)' '$E2E_TMP/notify.jsonl'"
sleep 3
gaps=$(jq -s '[.[] | select(.fields.WATCHDOG == "1") | .t] | [range(1; length) as $i | .[$i] - .[$i-1]] | .[2:]' "$E2E_TMP/notify.jsonl")
check "WATCHDOG=1 every ~0.5 s for WatchdogSec=1 s (gaps: $(jq -c 'map(.*100|round/100)' <<<"$gaps"))" \
	jq -e 'length >= 4 and all(.[]; . > 0.3 and . < 0.8)' <<<"$gaps"

# --- Health and metrics ------------------------------------------------------------
http() { curl -s -o "$E2E_TMP/body" -w '%{http_code}' "http://127.0.0.1:$port$1"; }
check "/healthz answers 200 ok" test "$(http /healthz):$(cat "$E2E_TMP/body")" = "200:ok"
check "/readyz answers 200 once synced" test "$(http /readyz)" = 200
check "unknown path: 404" test "$(http /nope)" = 404
scrape() { curl -sf "http://127.0.0.1:$port/metrics" | python3 "$E2E_ROOT/tests/tools/promcheck.py" >"$E2E_TMP/metrics"; }
check "/metrics parses as Prometheus text format" scrape
metric() { awk -v m="$1" '$1 == m {print $2}' "$E2E_TMP/metrics"; }
check "build info exported" grep -q '^spotpool_build_info{version="' "$E2E_TMP/metrics"
for family in process_cpu_seconds_total process_resident_memory_bytes process_virtual_memory_bytes \
	process_open_fds process_max_fds process_start_time_seconds; do
	check "$family exported" bash -c "v=\$(awk '\$1 == \"$family\" {print \$2}' '$E2E_TMP/metrics') && [[ -n \$v ]] &&
		python3 -c 'import sys; sys.exit(not float(sys.argv[1]) >= (0 if sys.argv[2] == \"process_cpu_seconds_total\" else 1))' \$v $family"
done
check "process_start_time_seconds is this daemon's start (within 120 s of now)" bash -c \
	"python3 -c 'import sys, time; sys.exit(not abs(time.time() - float(sys.argv[1])) < 120)' \$(awk '\$1 == \"process_start_time_seconds\" {print \$2}' '$E2E_TMP/metrics')"

pool_manifest m1 default 2 3 | kubectl apply -f - >/dev/null
converged() { [[ $(sp_field m1 '.status.size') == 2 && $(sp_field m1 '.status.conditions[] | select(.type=="Ready") | .status') == True ]]; }
check "pool converges under the daemon" wait_for 40 converged
check "STATUS= counts the pool's live instances" wait_for 10 bash -c "grep -q 'STATUS\": \"1 pool(s), 2 live instance(s), active' '$E2E_TMP/notify.jsonl'"
kubectl scale sp/m1 --replicas=2 >/dev/null
check "status.selector set for the /scale subresource" test "$(kubectl get --raw /apis/devops.jokerbai.com/v1/namespaces/default/spotpools/m1/scale | jq -r .status.selector)" = "spotpool.jokerbai.com/pool-name=m1"
scrape
check "launched counter moved to 2" test "$(metric 'spotpool_instances_launched_total{namespace="default",pool="m1"}')" = 2
check "successful launch requests counted" test "$(metric 'spotpool_launch_requests_total{namespace="default",pool="m1",outcome="success"}')" -ge 1
check "current gauge 2" test "$(metric 'spotpool_pool_current{namespace="default",pool="m1"}')" = 2
check "desired gauge 2" test "$(metric 'spotpool_pool_desired{namespace="default",pool="m1"}')" = 2
check "CVM requests counted by action and code" test "$(metric 'spotpool_cvm_requests_total{action="RunInstances",code="Success"}')" -ge 1
check "CVM latency histogram has observations" test "$(metric 'spotpool_cvm_request_duration_seconds_count{action="DescribeInstances"}')" -ge 1
check "reconcile duration histogram has observations" test "$(metric spotpool_reconcile_duration_seconds_count)" -ge 1
check "leader gauge 1 without leader election" test "$(metric spotpool_leader)" = 1
check "work queue latency histogram has observations" test "$(metric spotpool_workqueue_queue_duration_seconds_count)" -ge 1
check "apiserver requests counted (status patches)" test "$(metric 'spotpool_kube_requests_total{verb="PATCH",resource="spotpools/status",code="200"}')" -ge 1

victim=$(sp_field m1 '.status.instances[0].instanceId')
emu_post reclaim "{\"instanceIds\":[\"$victim\"]}" >/dev/null
reclaim_seen() { scrape && [[ $(metric 'spotpool_instances_reclaimed_total{namespace="default",pool="m1"}') == 1 ]]; }
check "reclaims counter moved to 1" wait_for 30 reclaim_seen
refilled() { scrape && [[ $(metric 'spotpool_instances_launched_total{namespace="default",pool="m1"}') == 3 ]]; }
check "launches counter moved to 3 after the refill" wait_for 30 refilled
emu_post fault '{"action":"DescribeInstances","errorCode":"InternalError","times":3}' >/dev/null
errors_seen() { scrape && [[ $(metric 'spotpool_cvm_requests_total{action="DescribeInstances",code="InternalError"}') -ge 1 ]]; }
check "CVM error codes counted" wait_for 20 errors_seen

# --- SIGTERM: STOPPING=1 and a clean exit well within TimeoutStopSec --------------
start=$SECONDS
stop_controller "$daemon"
rc=$?
check "SIGTERM: exit status 0" test "$rc" = 0
check "SIGTERM: stopped within 10 s ($((SECONDS - start)) s)" test $((SECONDS - start)) -lt 10
check "STOPPING=1 sent" notified STOPPING
check "no secret in the daemon log" bash -c "! grep -q '$EMU_SECRET_KEY' '$E2E_TMP/daemon.log'"

# --- JSON log lines -----------------------------------------------------------------
start_controller jsonlog --log-format json --listen "" --credentials-file "$E2E_TMP/creds.yaml"
# A pool that cannot launch (sold out) and one that does: records of both carry fields.
emu_post stock '{"zone":"ap-singapore-5","instanceType":"*","count":0,"errorCode":"ResourcesSoldOut.SpecifiedInstanceType"}' >/dev/null
pool_manifest j1 default 1 1 | kubectl apply -f - >/dev/null
pool_manifest j2 default 1 1 | sed 's/ap-singapore-2/ap-singapore-5/' | kubectl apply -f - >/dev/null
fielded() { # JQ filter over the JSON log records
	jq -e -s "[.[] | select($1)] | length > 0" "$E2E_TMP/jsonlog.log" >/dev/null 2>&1
}
check "JSON log: a launch record carries namespace, pool, action and duration_ms" wait_for 30 fielded \
	'.namespace == "default" and .pool == "j1" and .action == "RunInstances" and (.duration_ms | type) == "number"'
check "JSON log: a failure record carries pool, action and the Tencent error_code" wait_for 30 fielded \
	'.pool == "j2" and .action == "RunInstances" and .error_code == "ResourcesSoldOut.SpecifiedInstanceType" and .level == "warn"'
stop_controller "$CTL_PID"
check "--log-format json writes one JSON object per line" \
	bash -c "jq -e -s 'length >= 1 and all(.[]; has(\"time\") and has(\"level\") and has(\"msg\"))' '$E2E_TMP/jsonlog.log' >/dev/null"
finish
