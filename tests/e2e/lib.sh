# Shared helpers for end-to-end tests: a TAP-like reporter ("ok - name",
# "not ok - name"), the CVM emulator, and cleanup of everything started.
# Sourced by tests/e2e/test_*.sh; each script ends with `finish`.
set -uo pipefail

E2E_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SPOTPOOL_BIN=${SPOTPOOL_BIN:-$E2E_ROOT/build/spotpool}
E2E_TMP=$(mktemp -d "${TMPDIR:-/tmp}/spotpool-e2e.XXXXXX")
E2E_PASSED=0
E2E_FAILED=0
E2E_PIDS=()

cleanup() {
	local pid
	for pid in "${E2E_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${E2E_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	stop_cluster
	# A failed suite keeps its files (logs of the clusters and processes it started).
	if [[ -n ${E2E_KEEP:-} ]] || ((E2E_FAILED > 0)); then
		echo "# files kept in $E2E_TMP"
	else
		rm -rf "$E2E_TMP"
	fi
}
trap cleanup EXIT

pass() { echo "ok - $1"; E2E_PASSED=$((E2E_PASSED + 1)); }
fail() {
	echo "not ok - $1"
	shift
	local line
	for line in "$@"; do echo "# $line"; done
	E2E_FAILED=$((E2E_FAILED + 1))
}
# check NAME COMMAND...: passes when the command succeeds; its output is shown on failure.
check() {
	local name=$1
	shift
	if "$@" >"$E2E_TMP/check.out" 2>&1; then
		pass "$name"
	else
		fail "$name" "command failed: $*" "$(tail -5 "$E2E_TMP/check.out")"
	fi
}
finish() {
	echo "# $(basename "$0"): $E2E_PASSED passed, $E2E_FAILED failed"
	((E2E_FAILED == 0))
	exit $?
}

# wait_for SECONDS COMMAND...: polls until the command succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.2
	done
}

# Emulator credentials used by every test (fake, local only).
EMU_SECRET_ID=AKIDspotpoolE2Etest0000000000000000
EMU_SECRET_KEY=e2eSecretKeyThatMustNeverBeLogged42

start_emulator() {
	local portfile=$E2E_TMP/emulator.port
	python3 "$E2E_ROOT/tests/cvm_emulator.py" --port 0 --port-file "$portfile" \
		--secret-id "$EMU_SECRET_ID" --secret-key "$EMU_SECRET_KEY" \
		--pending-seconds "${EMU_PENDING_SECONDS:-1}" --terminating-seconds 1 \
		--journal "$E2E_TMP/journal.jsonl" "$@" >"$E2E_TMP/emulator.log" 2>&1 &
	E2E_PIDS+=($!)
	wait_for 10 test -s "$portfile" || { echo "emulator did not start"; cat "$E2E_TMP/emulator.log"; exit 1; }
	EMU_URL="http://127.0.0.1:$(cat "$portfile")"
	export EMU_URL
}

emu_get() { curl -sf "$EMU_URL/_emulator/$1"; }
# emu_private_ip ID: the private IP the emulator gave instance ID (what a kubelet on it
# reports as its Node's InternalIP).
emu_private_ip() { emu_get instances | jq -r --arg id "$1" '.[] | select(.InstanceId == $id) | .PrivateIpAddresses[0]'; }
emu_post() { curl -sf -X POST -H 'Content-Type: application/json' -d "$2" "$EMU_URL/_emulator/$1"; }

# Writes a Spotpool manifest: pool_manifest NAME NAMESPACE MIN MAX [EXTRA_SPEC_YAML]
pool_manifest() {
	cat <<YAML
apiVersion: devops.jokerbai.com/v1
kind: Spotpool
metadata:
  name: $1
  namespace: $2
spec:
  region: ap-singapore
  availabilityZone: ap-singapore-2
  instanceType: GN7.2XLARGE32
  imageId: img-e2e
  minimum: $3
  maximum: $4
${5:-}
YAML
}

# A real control plane (etcd + kube-apiserver) for this script, with the CRD applied.
# start_cluster --scheduler adds a real kube-scheduler (scripts/k8s-up --scheduler):
# pods are bound to Nodes the test registers (gpu_node) or marked Unschedulable.
start_cluster() {
	"$E2E_ROOT/scripts/k8s-up" "$@" "$E2E_TMP/k8s" >"$E2E_TMP/k8s-up.log" 2>&1 ||
		{ echo "k8s-up failed"; cat "$E2E_TMP/k8s-up.log"; exit 1; }
	export KUBECONFIG=$E2E_TMP/k8s/kubeconfig
	E2E_CLUSTER=1
	# kubectl wait errors out (instead of waiting) while the new CRD has no status yet.
	kubectl apply -f "$E2E_ROOT/crds/spotpool.yaml" >/dev/null &&
		wait_for 30 kubectl wait --for condition=established --timeout=5s crd/spotpools.devops.jokerbai.com \
			>/dev/null 2>&1 ||
		{ echo "CRD did not become established"; exit 1; }
}
stop_cluster() {
	[[ -n ${E2E_CLUSTER:-} ]] && "$E2E_ROOT/scripts/k8s-down" "$E2E_TMP/k8s" >/dev/null 2>&1
	E2E_CLUSTER=
}

# leader_setup LEASE DURATION RENEW RETRY: the emulator and a cluster, the emulator's
# credentials in the environment, and $cfg: a config file for leader election on the
# Lease default/LEASE with those timings (seconds).
leader_setup() {
	start_emulator
	start_cluster
	export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
	cfg=$E2E_TMP/leader.yaml
	printf 'leaderElection:\n  enabled: true\n  leaseName: %s\n  leaseNamespace: default\n  leaseDurationSeconds: %s\n  renewDeadlineSeconds: %s\n  retryPeriodSeconds: %s\n' \
		"$@" >"$cfg"
}

# start_controller NAME [ARGS...]: runs `spotpool run` in the background, logging to
# $E2E_TMP/NAME.log; its pid is in CTL_PID. No metrics listener unless ARGS has
# --listen (a later flag wins): tests never take the fixed default port.
start_controller() {
	local name=$1
	shift
	SPOTPOOL_CVM_ENDPOINT=$EMU_URL SPOTPOOL_STS_ENDPOINT=$EMU_URL "$SPOTPOOL_BIN" run --resync 2 --log-format plain --listen "" "$@" \
		>>"$E2E_TMP/$name.log" 2>&1 &
	CTL_PID=$!
	E2E_PIDS+=("$CTL_PID")
}
# stop_controller PID: SIGTERM, then returns the process's exit status.
stop_controller() {
	kill -TERM "$1" 2>/dev/null
	wait "$1"
}

# The controller's threads (/proc/PID/task) and private memory (Pss_Anon of
# /proc/PID/smaps_rollup, kB: the definition of BENCHMARKS.md), for CTL_PID.
threads() { ls "/proc/$CTL_PID/task" 2>/dev/null | wc -l; }
pss_anon() { awk '/^Pss_Anon:/ {print $2}' "/proc/$CTL_PID/smaps_rollup"; }
# The lowest of a few samples: a libcurl resolver thread may come and go.
steady_threads() {
	local n m i
	n=$(threads)
	for i in 1 2 3 4 5; do
		sleep 0.4
		m=$(threads)
		((m < n)) && n=$m
	done
	echo "$n"
}

sp_json() { kubectl get sp "$@" -o json; }
# at_size NAME SIZE [NS]: .status.size and the RUNNING instances in status are SIZE, and Ready.
at_size() {
	local j
	j=$(kubectl get sp "$1" -n "${3:-default}" -o json 2>/dev/null) || return 1
	[[ $(jq '.status.size' <<<"$j") == "$2" &&
		$(jq '[.status.instances[] | select(.state == "RUNNING")] | length' <<<"$j") == "$2" &&
		$(jq -r '.status.conditions[] | select(.type == "Ready") | .status' <<<"$j") == True ]]
}
sp_field() { kubectl get sp "$1" -n "${3:-default}" -o json | jq -r "$2"; }
# Owned live instances the emulator holds for a pool ("ns/name").
emu_live() { emu_get "stats?tagKey=spotpool.jokerbai.com/pool&tagValue=$1" | jq .live; }
emu_max_live() { emu_get "stats?tagKey=spotpool.jokerbai.com/pool&tagValue=$1" | jq .maxLive; }

# The ClientToken prefix of a pool's launches (see pass_client_token): token_prefix NAME [NS]
token_prefix() {
	local uid
	uid=$(kubectl get sp "$1" -n "${2:-default}" -o jsonpath='{.metadata.uid}')
	python3 -c 'import hashlib,sys; print("spotpool-" + hashlib.sha256(sys.argv[1].encode()).hexdigest()[:32] + "-")' "$uid/${2:-default}/$1"
}

# register_node NAME PROVIDER_ID LABEL_ID IP [LABELS [TAINTS [RESOURCES]]]: a Node as a
# kubelet registers it (providerID and the spotpool instance-id label when given, more
# LABELS (JSON object), spec.taints (TAINTS, JSON array), InternalIP), then Ready, with
# RESOURCES (JSON object of quantities) as both capacity and allocatable if given.
register_node() {
	local node status
	node=$(jq -nc --arg name "$1" --arg pid "$2" --arg id "$3" --argjson labels "${5:-{\}}" --argjson taints "${6:-[]}" \
		'{apiVersion: "v1", kind: "Node",
		  metadata: {name: $name, labels: ($labels + if $id == "" then {} else {"spotpool.jokerbai.com/instance-id": $id} end)},
		  spec: ((if $pid == "" then {} else {providerID: $pid} end) + (if $taints == [] then {} else {taints: $taints} end))}') &&
		kubectl create -f - <<<"$node" >/dev/null || return 1
	status=$(jq -nc --arg name "$1" --arg ip "$4" --arg now "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --argjson res "${7:-null}" \
		'{status: ({addresses: [{type: "InternalIP", address: $ip}, {type: "Hostname", address: $name}],
		  conditions: [{type: "Ready", status: "True", reason: "KubeletReady", message: "test",
		    lastHeartbeatTime: $now, lastTransitionTime: $now}]}
		  + if $res == null then {} else {capacity: $res, allocatable: $res} end)}')
	kubectl patch node "$1" --subresource=status --type=merge -p "$status" >/dev/null
}

# kubelet_node NAME INSTANCE IP: the Node of that instance, by providerID.
kubelet_node() { register_node "$1" "qcloud:///900002/$2" "" "$3"; }
# gpu_node NAME INSTANCE IP GPUS [LABELS [TAINTS]]: a Node of a GN7.2XLARGE32 (the
# instance type of pool_manifest: 8 CPUs, 32 GiB) with GPUS nvidia.com/gpu allocatable
# (none if 0), for the kube-scheduler of start_cluster --scheduler to bind pods to;
# by providerID unless INSTANCE is empty.
gpu_node() {
	local res
	res=$(jq -nc --argjson gpus "$4" '{cpu: "8", memory: "32Gi", pods: "110"}
		+ if $gpus == 0 then {} else {"nvidia.com/gpu": ($gpus | tostring)} end')
	register_node "$1" "${2:+qcloud:///900002/$2}" "" "$3" "${5:-{\}}" "${6:-[]}" "$res"
}

# gpu_pod NS NAME GPUS [SPEC]: an unbound pod (left to the scheduler) asking for GPUS
# nvidia.com/gpu (nothing if 0), SPEC (JSON object) merged into its spec.
gpu_pod() {
	jq -nc --arg ns "$1" --arg name "$2" --argjson gpus "$3" --argjson spec "${4:-{\}}" \
		'{apiVersion: "v1", kind: "Pod", metadata: {name: $name, namespace: $ns},
		  spec: ({containers: [{name: "c", image: "registry.k8s.io/pause:3.10",
		    resources: (if $gpus == 0 then {} else {limits: {"nvidia.com/gpu": ($gpus | tostring)}} end)}]} + $spec)}' |
		kubectl create -f - >/dev/null
}
# pod_unschedulable NS NAME [TEXT]: the scheduler marked the pod PodScheduled=False,
# reason Unschedulable, with TEXT in its message if given.
pod_unschedulable() {
	kubectl get pod "$2" -n "$1" -o json 2>/dev/null | jq -e --arg text "${3:-}" \
		'any(.status.conditions[]?; .type == "PodScheduled" and .status == "False"
		  and .reason == "Unschedulable" and (.message | contains($text)))' >/dev/null
}
# pod_bound NS NAME NODE: the pod is bound to NODE (spec.nodeName).
pod_bound() { [[ $(kubectl get pod "$2" -n "$1" -o jsonpath='{.spec.nodeName}' 2>/dev/null) == "$3" ]]; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
