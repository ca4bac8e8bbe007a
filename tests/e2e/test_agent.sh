#!/usr/bin/env bash
# The spot notice agent (`spotpool agent`, docs/notice-agent.md) against a real
# apiserver and the emulator's instance metadata, authenticated only as the
# ServiceAccounts of conf/kubernetes/agent (TokenRequest tokens in kubeconfigs):
#   - on a Node (the test plays the kubelet's part and creates it): a noticed reclaim
#     (emulator, noticeSeconds) sets SpotTerminating=True with the deadline in the
#     message within 3 s of the announcement, touching no other condition and nothing
#     else of the Node, once per notice; a withdrawn notice sets it False, a moved
#     deadline is reported again; a Node that does not exist yet is retried with
#     backoff until it does; SIGTERM exits 0 at once; an agent restarted after the
#     notice was withdrawn while it was down sets the condition False (read back on
#     start with a patch that changes nothing: no write when there is nothing to undo);
#   - on a host that is not a Node: one SpotNotice per notice, still one after a
#     restart (create-only RBAC, AlreadyExists = reported);
#   - the RBAC is least: the agent may only patch nodes/status, the reporter only
#     create SpotNotices in its namespace; no token appears in a log;
#   - the ValidatingAdmissionPolicy of conf/kubernetes/agent, tried with the agent's own
#     token bound to a Pod on node A (as the DaemonSet's projected token is): setting
#     A's SpotTerminating condition is allowed; another Node's status, A's labels,
#     annotations, other conditions or addresses through nodes/status, and any write
#     with a token bound to no Node are refused, the message naming the policy.
source "$(dirname "$0")/lib.sh"

unset NODE_NAME
AGENT_CONF=$E2E_ROOT/conf/kubernetes/agent
NS=spotpool-system
start_emulator
start_cluster
K8S_URL=$(sed -n 's/^K8S_URL=//p' "$E2E_TMP/k8s/env")
K8S_CA_FILE=$(sed -n 's/^K8S_CA_FILE=//p' "$E2E_TMP/k8s/env")

kubectl apply -f "$E2E_ROOT/crds/spotnotice.yaml" >/dev/null
check "SpotNotice CRD established" \
	wait_for 30 kubectl wait --for condition=established --timeout=5s crd/spotnotices.devops.jokerbai.com
kubectl apply -f "$E2E_ROOT/conf/kubernetes/namespace.yaml" >/dev/null
check "kubectl apply -k conf/kubernetes/agent (DaemonSet, RBAC, notice reporter)" kubectl apply -k "$AGENT_CONF"

# --- Least privilege ------------------------------------------------------------------
AGENT_USER=system:serviceaccount:$NS:spotpool-agent
REPORTER_USER=system:serviceaccount:$NS:spotpool-notice-reporter
can() { kubectl auth can-i "$@" 2>/dev/null; }
rbac_ok=true
{
	for q in "patch nodes --subresource=status --as=$AGENT_USER" "create spotnotices.devops.jokerbai.com -n $NS --as=$REPORTER_USER"; do
		[[ $(can $q) == yes ]] || { rbac_ok=false; echo "denied: $q;"; }
	done
	for q in "patch nodes --as=$AGENT_USER" "get nodes --as=$AGENT_USER" "delete nodes --as=$AGENT_USER" \
		"update nodes --subresource=status --as=$AGENT_USER" "list pods -A --as=$AGENT_USER" \
		"create spotnotices.devops.jokerbai.com -n $NS --as=$AGENT_USER" \
		"get spotnotices.devops.jokerbai.com -n $NS --as=$REPORTER_USER" "list spotnotices.devops.jokerbai.com -n $NS --as=$REPORTER_USER" \
		"update spotnotices.devops.jokerbai.com -n $NS --as=$REPORTER_USER" "delete spotnotices.devops.jokerbai.com -n $NS --as=$REPORTER_USER" \
		"create spotnotices.devops.jokerbai.com -n default --as=$REPORTER_USER" "patch nodes --subresource=status --as=$REPORTER_USER" \
		"create events -n $NS --as=$REPORTER_USER"; do
		[[ $(can $q) == no ]] || { rbac_ok=false; echo "allowed: $q;"; }
	done
} >"$E2E_TMP/rbac.out"
check "agent: only patch nodes/status; reporter: only create SpotNotices in $NS $(tr '\n' ' ' <"$E2E_TMP/rbac.out")" $rbac_ok

# sa_kubeconfig SA [POD]: a kubeconfig $E2E_TMP/SA[-POD].kubeconfig holding a token of
# $NS/SA (context namespace $NS), bound to $NS/POD if given (as a pod's projected token
# is: it carries the pod's Node, which the agent's admission policy reads).
sa_kubeconfig() {
	local k=$E2E_TMP/$1${2:+-$2}.kubeconfig token
	token=$(kubectl create token "$1" -n "$NS" --duration=1h ${2:+--bound-object-kind Pod --bound-object-name "$2"}) || return 1
	echo "$token" >>"$E2E_TMP/tokens"
	kubectl config --kubeconfig="$k" set-cluster c --server="$K8S_URL" --certificate-authority="$K8S_CA_FILE" >/dev/null &&
		kubectl config --kubeconfig="$k" set-credentials sa --token="$token" >/dev/null &&
		kubectl config --kubeconfig="$k" set-context c --cluster=c --user=sa --namespace="$NS" >/dev/null &&
		kubectl config --kubeconfig="$k" use-context c >/dev/null && chmod 600 "$k"
}
# agent_pod NODE: the agent's Pod on NODE (spec.nodeName; no kubelet runs it; "restricted"
# as its namespace requires) and a kubeconfig with a token bound to it, $(agent_kc NODE).
agent_pod() {
	kubectl create -f - >/dev/null <<YAML || return 1
apiVersion: v1
kind: Pod
metadata: {name: agent-${1//./-}, namespace: $NS}
spec:
  nodeName: $1
  serviceAccountName: spotpool-agent
  securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
    - name: agent
      image: spotpool
      securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
YAML
	sa_kubeconfig spotpool-agent "agent-${1//./-}"
}
agent_kc() { echo "$E2E_TMP/spotpool-agent-agent-${1//./-}.kubeconfig"; }
check "kubeconfig with a token of $NS/spotpool-agent bound to no pod" sa_kubeconfig spotpool-agent
check "kubeconfig with a token of $NS/spotpool-notice-reporter" sa_kubeconfig spotpool-notice-reporter

# holds KIND NAME [NAMESPACE] JQ: the object exists and JQ is true of it (jq 1.6 -e
# succeeds on empty input, so kubectl's failure is checked first).
holds() {
	local j
	j=$(kubectl get "${@:1:$#-1}" -o json 2>/dev/null) && jq -e "${!#}" <<<"$j" >/dev/null
}
# new_instance: a RUNNING spot instance in the emulator; its id on stdout.
new_instance() { emu_post instances '{"region": "ap-singapore"}' | jq -r '.instanceIds[0]'; }
# announce ID SECONDS: the emulator announces ID's reclaim SECONDS from now; its answer
# is in $E2E_TMP/announce.json.
announce() { emu_post reclaim "{\"instanceIds\": [\"$1\"], \"noticeSeconds\": $2}" >"$E2E_TMP/announce.json"; }
# The deadline the last announcement promises, as the agent must report it (RFC 3339 UTC).
announced_deadline() { date -u -d "@$(jq '.reclaimAt | floor' "$E2E_TMP/announce.json")" +%Y-%m-%dT%H:%M:%SZ; }
# start_agent NAME KUBECONFIG INSTANCE [ARGS...]: `spotpool agent` on INSTANCE's metadata,
# logging to $E2E_TMP/NAME.log; its pid in AGENT_PID. NODE_NAME comes from the caller.
start_agent() {
	local name=$1 kc=$2 id=$3
	shift 3
	env -u KUBECONFIG "$SPOTPOOL_BIN" agent --kubeconfig "$kc" --metadata-url "$EMU_URL/metadata/$id/latest/meta-data" \
		--log-format plain "$@" >>"$E2E_TMP/$name.log" 2>&1 &
	AGENT_PID=$!
	E2E_PIDS+=("$AGENT_PID")
}
# stop_agent PID: SIGTERM; the exit status, and the milliseconds it took in STOP_MS.
stop_agent() {
	local t0 rc
	t0=$(date +%s%N)
	kill -TERM "$1"
	wait "$1"
	rc=$?
	STOP_MS=$((($(date +%s%N) - t0) / 1000000))
	return $rc
}

# --- A Node (the kubelet's part) ---------------------------------------------------------
ID=$(new_instance)
NODE=10.0.0.7
kubectl create -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $NODE
  labels: {spotpool.jokerbai.com/instance-id: $ID}
spec:
  providerID: qcloud:///900002/$ID
status:
  conditions:
    - {type: Ready, status: "True", reason: KubeletReady, message: kubelet is posting ready status,
       lastHeartbeatTime: "2026-01-01T00:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z"}
YAML
check "Node $NODE (instance $ID) created" kubectl get node "$NODE"
check "the agent's Pod on $NODE, a token bound to it" agent_pod "$NODE"
cond() { kubectl get node "$NODE" -o json | jq -c --arg t "${1:-SpotTerminating}" '.status.conditions[]? | select(.type == $t) | {status, reason, message}'; }

NODE_NAME=$NODE start_agent node "$(agent_kc "$NODE")" "$ID"
agent=$AGENT_PID
check "agent: reads the instance id from the metadata once" wait_for 10 grep -qF "this host is instance $ID" "$E2E_TMP/node.log"
sleep 2.5
check "no notice yet: no SpotTerminating condition, nothing written" test -z "$(cond)"
rv=$(kubectl get node "$NODE" -o jsonpath='{.metadata.resourceVersion}')

announce "$ID" 120
t0=$(date +%s%N)
deadline=$(announced_deadline)
want="{\"status\":\"True\",\"reason\":\"SpotInstanceTerminating\",\"message\":\"reclaim at $deadline\"}"
seen=false
while (($(date +%s%N) - t0 < 10000000000)); do
	[[ $(cond) == "$want" ]] && { seen=true; break; }
	sleep 0.1
done
latency_ms=$((($(date +%s%N) - t0) / 1000000))
echo "# notice -> Node condition in $latency_ms ms"
check "notice (reclaim in 120 s): SpotTerminating=True, reason SpotInstanceTerminating, 'reclaim at $deadline'" $seen
check "... within 3 s of the announcement ($latency_ms ms; polls every 2 s)" test "$latency_ms" -le 3000
check "the emulator's termination time (UTC+8) is the deadline" \
	test "$(jq -r .terminationTime "$E2E_TMP/announce.json")" = "$(TZ=Asia/Shanghai date -d "$deadline" '+%Y-%m-%d %H:%M:%S')"
check "the Ready condition is untouched (strategic merge by type)" \
	test "$(cond Ready)" = '{"status":"True","reason":"KubeletReady","message":"kubelet is posting ready status"}'
check "labels, spec and annotations untouched" holds node "$NODE" ".spec == {providerID: \"qcloud:///900002/$ID\"} and
	.metadata.labels[\"spotpool.jokerbai.com/instance-id\"] == \"$ID\" and (.metadata.annotations // {}) == {}"
rv_after=$(kubectl get node "$NODE" -o jsonpath='{.metadata.resourceVersion}')
sleep 5
check "once per notice: no write in the 5 s after (resourceVersion $rv -> $rv_after, stays)" \
	test "$(kubectl get node "$NODE" -o jsonpath='{.metadata.resourceVersion}')" = "$rv_after"
check "once per notice: one 'reported on Node' line" test "$(grep -c 'reported on Node' "$E2E_TMP/node.log")" = 1

emu_post notice "{\"instanceIds\": [\"$ID\"], \"cancel\": true}" >/dev/null
check "withdrawn notice: SpotTerminating=False, reason SpotNoticeWithdrawn, within 3 s" wait_for 3 holds node "$NODE" \
	'any(.status.conditions[]; .type == "SpotTerminating" and .status == "False" and .reason == "SpotNoticeWithdrawn")'
announce "$ID" 60
deadline2=$(announced_deadline)
check "announced again (reclaim in 60 s): True with the new deadline $deadline2" wait_for 3 holds node "$NODE" \
	"any(.status.conditions[]; .type == \"SpotTerminating\" and .status == \"True\" and .message == \"reclaim at $deadline2\")"
stop_agent "$agent"
check "SIGTERM: exit 0 ($?) within 1 s ($STOP_MS ms)" test $? = 0 -a "$STOP_MS" -le 1000
check "log: stopping" grep -q 'agent: stopping' "$E2E_TMP/node.log"

# --- Withdrawn while the agent was down: read back on start ---------------------------
emu_post notice "{\"instanceIds\": [\"$ID\"], \"cancel\": true}" >/dev/null
NODE_NAME=$NODE start_agent restart "$(agent_kc "$NODE")" "$ID"
check "restarted after the notice was withdrawn while it was down: SpotTerminating=False within 5 s" wait_for 5 \
	holds node "$NODE" 'any(.status.conditions[]; .type == "SpotTerminating" and .status == "False" and .reason == "SpotNoticeWithdrawn")'
stop_agent "$AGENT_PID"
check "SIGTERM: exit 0" test $? = 0
rv=$(kubectl get node "$NODE" -o jsonpath='{.metadata.resourceVersion}')
NODE_NAME=$NODE start_agent restart "$(agent_kc "$NODE")" "$ID"
sleep 3
check "restarted with nothing to withdraw: the read-back writes nothing (resourceVersion $rv stays)" \
	test "$(kubectl get node "$NODE" -o jsonpath='{.metadata.resourceVersion}')" = "$rv"
stop_agent "$AGENT_PID"
check "SIGTERM: exit 0" test $? = 0

# --- A Node that does not exist yet: retried with backoff -------------------------------
ID3=$(new_instance)
NODE3=10.0.0.9
agent_pod "$NODE3"
NODE_NAME=$NODE3 start_agent late "$(agent_kc "$NODE3")" "$ID3"
announce "$ID3" 120
deadline3=$(announced_deadline)
check "no Node $NODE3 yet: the patch fails (404) and is retried with backoff" \
	wait_for 10 bash -c "grep -q 'failed, retrying in 500 ms' '$E2E_TMP/late.log' && grep -q 'failed, retrying in 1000 ms' '$E2E_TMP/late.log'"
kubectl create -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata: {name: $NODE3}
YAML
check "once the Node exists, the condition is set (reclaim at $deadline3)" wait_for 15 holds node "$NODE3" \
	"any(.status.conditions[]?; .type == \"SpotTerminating\" and .status == \"True\" and .message == \"reclaim at $deadline3\")"
stop_agent "$AGENT_PID"
check "SIGTERM: exit 0" test $? = 0

# --- Its own Node only: the admission policy, with the agent's own tokens ----------------
# status_patch KUBECONFIG NODE TYPE BODY: PATCH nodes/NODE/status (strategic merge, or
# merge); the HTTP code, then the refusal's message if any, in $E2E_TMP/patch.out.
status_patch() {
	local token
	token=$(kubectl config view --kubeconfig "$1" --raw -o jsonpath='{.users[0].user.token}')
	curl -sS --cacert "$K8S_CA_FILE" -H "Authorization: Bearer $token" -X PATCH \
		-H "Content-Type: application/$3-patch+json" "$K8S_URL/api/v1/nodes/$2/status" -d "$4" \
		-o "$E2E_TMP/patch.json" -w '%{http_code}' >"$E2E_TMP/patch.out" &&
		jq -r '.message // empty' "$E2E_TMP/patch.json" >>"$E2E_TMP/patch.out"
}
# refused KUBECONFIG NODE TYPE BODY TEXT: the patch gets 403 with the policy's name and TEXT.
refused() {
	status_patch "${@:1:4}" && cat "$E2E_TMP/patch.out" && [[ $(head -c 3 "$E2E_TMP/patch.out") == 403 ]] &&
		grep -qF "ValidatingAdmissionPolicy 'spotpool-agent-own-node'" "$E2E_TMP/patch.out" && grep -qF "$5" "$E2E_TMP/patch.out"
}
KC_A=$(agent_kc "$NODE")
TERM_BODY='{"status":{"conditions":[{"type":"SpotTerminating","status":"False","reason":"SpotNoticeWithdrawn","message":"policy test"}]}}'
allowed() { status_patch "$@" && [[ $(head -c 3 "$E2E_TMP/patch.out") == 200 ]]; }
check "token bound to a Pod on $NODE: setting $NODE's SpotTerminating condition is allowed (200)" \
	allowed "$KC_A" "$NODE" strategic-merge "$TERM_BODY"
check "... another Node's ($NODE3) status: refused, 'may write only its own Node ($NODE), not $NODE3'" \
	refused "$KC_A" "$NODE3" strategic-merge "$TERM_BODY" "may write only its own Node ($NODE), not $NODE3"
echo "# refusal: $(tail -1 "$E2E_TMP/patch.out")"
check "... $NODE's labels through nodes/status: refused, 'may not change a Node's labels'" \
	refused "$KC_A" "$NODE" merge '{"metadata":{"labels":{"spotpool.jokerbai.com/instance-id":"ins-other"}}}' "may not change a Node's labels"
check "... $NODE's annotations through nodes/status: refused" \
	refused "$KC_A" "$NODE" merge '{"metadata":{"annotations":{"spotpool.jokerbai.com/drain-started":"2000-01-01T00:00:00Z"}}}' "may not change a Node's labels, annotations"
check "... $NODE's Ready condition: refused, 'nothing of a Node's status but its SpotTerminating condition'" \
	refused "$KC_A" "$NODE" strategic-merge '{"status":{"conditions":[{"type":"Ready","status":"False","reason":"x","message":"y"}]}}' \
	"may change nothing of a Node's status but its SpotTerminating condition"
check "... $NODE's InternalIP: refused" refused "$KC_A" "$NODE" merge \
	'{"status":{"addresses":[{"type":"InternalIP","address":"10.9.9.9"}]}}' "but its SpotTerminating condition"
check "a token bound to no Pod: even $NODE's SpotTerminating is refused, 'its token is bound to no Node'" \
	refused "$E2E_TMP/spotpool-agent.kubeconfig" "$NODE" strategic-merge "$TERM_BODY" "its token is bound to no Node"
check "$NODE's labels and the Ready condition are as they were" holds node "$NODE" \
	".metadata.labels[\"spotpool.jokerbai.com/instance-id\"] == \"$ID\" and (.metadata.annotations // {}) == {} and
	 any(.status.conditions[]; .type == \"Ready\" and .status == \"True\")"

# --- A host that is not a Node: a SpotNotice ----------------------------------------------
ID2=$(new_instance)
start_agent host "$E2E_TMP/spotpool-notice-reporter.kubeconfig" "$ID2"
check "without a Node name it reports SpotNotices in $NS (the kubeconfig's namespace)" \
	wait_for 10 grep -qF "reporting on SpotNotices in namespace $NS" "$E2E_TMP/host.log"
announce "$ID2" 90
deadline2=$(announced_deadline)
notice=$ID2-$(jq '.reclaimAt | floor' "$E2E_TMP/announce.json")
check "SpotNotice $NS/$notice within 3 s: instance $ID2, reclaim at $deadline2" wait_for 3 holds spotnotice "$notice" -n "$NS" \
	".spec.instanceId == \"$ID2\" and .spec.reclaimAt == \"$deadline2\" and .spec.host != null"
stop_agent "$AGENT_PID"
check "SIGTERM: exit 0" test $? = 0
start_agent host "$E2E_TMP/spotpool-notice-reporter.kubeconfig" "$ID2"
check "restarted: the same notice counts as reported (AlreadyExists, no error)" wait_for 10 bash -c \
	"[[ \$(grep -c 'reported on SpotNotice' '$E2E_TMP/host.log') == 2 ]] && ! grep -q 'failed, retrying' '$E2E_TMP/host.log'"
check "... still one SpotNotice" test "$(kubectl get spotnotices -n $NS -o name | wc -l)" = 1
stop_agent "$AGENT_PID"
check "SIGTERM: exit 0" test $? = 0
check "a SpotNotice cannot change once reported: the schema refuses a new spec, even from an admin" bash -c \
	"! kubectl patch spotnotice $notice -n $NS --type=merge -p '{\"spec\":{\"reclaimAt\":\"2030-01-01T00:00:00Z\"}}'"

# --- Logs --------------------------------------------------------------------------------
check "no 403 in any agent log" bash -c "! grep -qE 'HTTP 403|forbidden' '$E2E_TMP/node.log' '$E2E_TMP/restart.log' '$E2E_TMP/late.log' '$E2E_TMP/host.log'"
leak=$(grep -lF -f "$E2E_TMP/tokens" "$E2E_TMP"/node.log "$E2E_TMP"/restart.log "$E2E_TMP"/late.log "$E2E_TMP"/host.log)
check "no ServiceAccount token in any agent log $leak" test -z "$leak"
finish
