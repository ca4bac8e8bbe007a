#!/usr/bin/env bash
# In-cluster mode for real: conf/kubernetes (and conf/kubernetes/agent, the notice
# agent's DaemonSet and RBAC) applies to a real apiserver, and
# `spotpool run` authenticates only with a TokenRequest token for the ServiceAccount
# spotpool-system/spotpool, mounted (with the cluster CA and namespace, in the
# kubelet's ..data symlink layout) at /var/run/secrets/kubernetes.io/serviceaccount
# in a private mount namespace, with no kubeconfig and no TENCENTCLOUD_* in its
# environment. A forged token gets 401 and the controller never becomes ready; the
# real token, rotated into the file, is picked up without a restart; a pool converges
# and the Lease is taken under the SA's RBAC. Removing one verb from the ClusterRole
# (patch on spotpools/status) makes the controller fail visibly with 403; restoring
# it lets the pool converge. No token or secret key ever appears in a log.
source "$(dirname "$0")/lib.sh"

unset TENCENTCLOUD_SECRET_ID TENCENTCLOUD_SECRET_KEY TENCENTCLOUD_SESSION_TOKEN
CONF=$E2E_ROOT/conf/kubernetes
SA_USER=system:serviceaccount:spotpool-system:spotpool
SA_DIR=$E2E_TMP/serviceaccount # bind-mounted at the standard path, read-only
RUN_DIR=$(readlink -f /var/run)
host_run_before=$(ls -A "$RUN_DIR")

start_emulator
start_cluster
K8S_URL=$(sed -n 's/^K8S_URL=//p' "$E2E_TMP/k8s/env")
K8S_CA_FILE=$(sed -n 's/^K8S_CA_FILE=//p' "$E2E_TMP/k8s/env")
K8S_PORT=${K8S_URL##*:}

# --- conf/kubernetes: server-side dry run of every manifest, then the real apply ---
# The SpotNotice CRD too, as conf/kubernetes/README.md installs it (the controller
# lists and watches SpotNotices under the ClusterRole).
kubectl apply -f "$E2E_ROOT/crds/spotnotice.yaml" >/dev/null
check "SpotNotice CRD established" \
	wait_for 30 kubectl wait --for condition=established --timeout=5s crd/spotnotices.devops.jokerbai.com
check "namespace.yaml applies" kubectl apply -f "$CONF/namespace.yaml"
kubectl apply -k "$CONF" --dry-run=server >"$E2E_TMP/dry-k.out" 2>&1
rc=$?
n=$(grep -c '(server dry run)' "$E2E_TMP/dry-k.out")
check "apply -k conf/kubernetes --dry-run=server accepts all 7 objects ($n)" test "$rc" = 0 -a "$n" = 7
for f in "$CONF"/*.yaml; do
	[[ $(basename "$f") == kustomization.yaml ]] && continue
	check "apply --dry-run=server -f $(basename "$f")" kubectl apply --dry-run=server -f "$f"
done
kubectl apply -k "$CONF" >"$E2E_TMP/apply-k.out" 2>&1
check "apply -k conf/kubernetes succeeds" test $? = 0
check "no Pod Security warning for the Deployment (namespace warns on restricted)" \
	bash -c "! grep -qi 'would violate PodSecurity' '$E2E_TMP/dry-k.out' '$E2E_TMP/apply-k.out'"
check "all 7 objects exist" test "$(kubectl get -k "$CONF" -o name 2>/dev/null | wc -l)" = 7

# --- conf/kubernetes/agent: the notice agent's DaemonSet and RBAC (docs/notice-agent.md) ---
kubectl apply -k "$CONF/agent" --dry-run=server >"$E2E_TMP/dry-agent.out" 2>&1
rc=$?
n=$(grep -c '(server dry run)' "$E2E_TMP/dry-agent.out")
check "apply -k conf/kubernetes/agent --dry-run=server accepts all 9 objects ($n)" test "$rc" = 0 -a "$n" = 9
kubectl apply -k "$CONF/agent" >"$E2E_TMP/apply-agent.out" 2>&1
check "apply -k conf/kubernetes/agent succeeds" test $? = 0
check "no Pod Security warning for the DaemonSet (restricted)" \
	bash -c "! grep -qi 'would violate PodSecurity' '$E2E_TMP/dry-agent.out' '$E2E_TMP/apply-agent.out'"
check "DaemonSet spotpool-agent runs spotpool agent as spotpool-agent, NODE_NAME from the downward API" bash -c \
	"kubectl get ds spotpool-agent -n spotpool-system -o json | jq -e '.spec.template.spec | .serviceAccountName == \"spotpool-agent\" and
	.containers[0].args[0] == \"agent\" and .containers[0].env[0].valueFrom.fieldRef.fieldPath == \"spec.nodeName\"' >/dev/null"
check "the agent may patch nodes/status and nothing else of Nodes; the controller may not" bash -c \
	"[[ \$(kubectl auth can-i patch nodes --subresource=status --as=system:serviceaccount:spotpool-system:spotpool-agent) == yes &&
	   \$(kubectl auth can-i patch nodes --as=system:serviceaccount:spotpool-system:spotpool-agent) == no &&
	   \$(kubectl auth can-i patch nodes --subresource=status --as=$SA_USER) == no ]]"

# --- RBAC as docs/install-kubernetes.md describes it ----------------------------
can() { kubectl auth can-i "$@" --as="$SA_USER" 2>/dev/null; }
rbac_ok=true
{
	for q in "list spotpools.devops.jokerbai.com -A" "watch spotpools.devops.jokerbai.com -A" \
		"patch spotpools.devops.jokerbai.com -n team-a" "patch spotpools.devops.jokerbai.com --subresource=status -n team-a" \
		"get secrets -n team-a" "create events -n team-a" "create leases.coordination.k8s.io -n spotpool-system" \
		"update leases.coordination.k8s.io/spotpool -n spotpool-system" "get namespaces/kube-system" \
		"list spotnotices.devops.jokerbai.com -A" "watch spotnotices.devops.jokerbai.com -A" "delete spotnotices.devops.jokerbai.com -n team-a"; do
		[[ $(can $q) == yes ]] || { rbac_ok=false; echo "denied: $q;"; }
	done
	for q in "list secrets -A" "create secrets -n team-a" "delete spotpools.devops.jokerbai.com -n team-a" \
		"update leases.coordination.k8s.io/spotpool -n default" "update leases.coordination.k8s.io/other -n spotpool-system" \
		"get namespaces/default" "list namespaces" "create spotnotices.devops.jokerbai.com -n team-a" \
		"patch spotnotices.devops.jokerbai.com -n team-a"; do
		[[ $(can $q) == no ]] || { rbac_ok=false; echo "allowed: $q;"; }
	done
} >"$E2E_TMP/rbac.out"
check "SA can do what the controller needs and not more (auth can-i) $(tr '\n' ' ' <"$E2E_TMP/rbac.out")" $rbac_ok

# --- A ServiceAccount token, and the volume the kubelet would mount ------------
TOKEN=$(kubectl create token spotpool -n spotpool-system --duration=1h 2>"$E2E_TMP/token.err")
check "kubectl create token spotpool -n spotpool-system --duration=1h" test -n "$TOKEN"
printf %s "$TOKEN" >"$E2E_TMP/token.real"
sub=$(python3 -c 'import base64,json,sys; p=sys.argv[1].split(".")[1]; print(json.loads(base64.urlsafe_b64decode(p+"="*(-len(p)%4)))["sub"])' "$TOKEN" 2>/dev/null)
check "token subject is $SA_USER ($sub)" test "$sub" = "$SA_USER"
# Same header and claims, forged signature: the apiserver must refuse it (401).
FORGED=${TOKEN%.*}.$(head -c 256 /dev/urandom | base64 -w0 | tr '+/' '-_' | tr -d '=')
printf %s "$FORGED" >"$E2E_TMP/token.forged"

# sa_write TOKEN_FILE: (re)writes SA_DIR like the kubelet's AtomicWriter: a new
# timestamped directory, then an atomic swap of the ..data symlink.
sa_write() {
	local ts=..$(date +%Y_%m_%d_%H_%M_%S.%N) f
	mkdir -p "$SA_DIR/$ts"
	cp "$1" "$SA_DIR/$ts/token"
	cp "$K8S_CA_FILE" "$SA_DIR/$ts/ca.crt"
	printf spotpool-system >"$SA_DIR/$ts/namespace"
	ln -sfn "$ts" "$SA_DIR/..data_tmp" && mv -T "$SA_DIR/..data_tmp" "$SA_DIR/..data"
	for f in token ca.crt namespace; do [[ -L $SA_DIR/$f ]] || ln -s "..data/$f" "$SA_DIR/$f"; done
}

# start_incluster NAME [ARGS...]: `spotpool run` in a private mount namespace where a
# tmpfs covers /run/secrets (or all of /run when the host has no /run/secrets: the host
# filesystem gets no new directory) and SA_DIR is bind-mounted read-only at the standard
# path. The environment is only PATH, HOME (empty), the KUBERNETES_SERVICE_* pair and
# the CVM endpoint (plus sanitizer options). Logs to $E2E_TMP/NAME.log; pid in CTL_PID
# (unshare, bash and env all exec, so it is spotpool's own pid).
start_incluster() {
	local name=$1 v keep=()
	shift
	for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do [[ -z ${!v:-} ]] || keep+=("$v=${!v}"); done
	mkdir -p "$E2E_TMP/home"
	unshare --mount --propagation private -- bash -c '
		set -e
		run=$(readlink -f /var/run)
		if [ -d "$run/secrets" ]; then top=$run/secrets; else top=$run; fi
		mount -n -t tmpfs -o mode=0755 tmpfs "$top"
		mkdir -p /var/run/secrets/kubernetes.io/serviceaccount
		mount -n --bind -o ro "$1" /var/run/secrets/kubernetes.io/serviceaccount
		shift
		exec "$@"' incluster "$SA_DIR" \
		env -i PATH="$PATH" HOME="$E2E_TMP/home" "${keep[@]}" \
		KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$K8S_PORT" SPOTPOOL_CVM_ENDPOINT="$EMU_URL" SPOTPOOL_STS_ENDPOINT="$EMU_URL" \
		"$SPOTPOOL_BIN" run --resync 2 --log-format plain "$@" >>"$E2E_TMP/$name.log" 2>&1 &
	CTL_PID=$!
	E2E_PIDS+=("$CTL_PID")
}

# Tencent Cloud credentials only in a Secret in the pool's namespace.
kubectl create namespace team-a >/dev/null
kubectl -n team-a create secret generic tc-creds --from-literal=secretId="$EMU_SECRET_ID" \
	--from-literal=secretKey="$EMU_SECRET_KEY" >/dev/null
pool_manifest p1 team-a 2 2 "  credentialsSecretRef: {name: tc-creds}" | kubectl apply -f - >/dev/null
converged() { # NAME SIZE: size, instance IDs, Ready, in team-a
	local j
	j=$(kubectl get sp "$1" -n team-a -o json 2>/dev/null) || return 1
	[[ $(jq '.status.size' <<<"$j") == "$2" &&
		$(jq '[.status.instances[]? | select(.instanceId != "" and .state == "RUNNING")] | length' <<<"$j") == "$2" &&
		$(jq -r '.status.conditions[]? | select(.type == "Ready") | .status' <<<"$j") == True ]]
}
holder() { kubectl get lease spotpool -n spotpool-system -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
readyz() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PORT/readyz"; }
leader_gauge() { curl -s --max-time 2 "http://127.0.0.1:$PORT/metrics" | awk '$1 == "spotpool_leader" {print $2}'; }

# --- First run: a forged token in the file --------------------------------------
sa_write "$E2E_TMP/token.forged"
PORT=$(free_port)
start_incluster a --leader-elect --lease-namespace spotpool-system --lease-name spotpool --listen "127.0.0.1:$PORT"
pid_a=$CTL_PID
# unshare and bash exec: wait until the pid is spotpool, then its mounts are in place.
check "controller pid $pid_a is spotpool itself" wait_for 5 bash -c "[[ \$(readlink /proc/$pid_a/exe) == *spotpool ]]"
check "it runs in its own mount namespace" test "$(readlink /proc/$pid_a/ns/mnt)" != "$(readlink /proc/$$/ns/mnt)"
# (Through /proc/PID/root, but via $RUN_DIR: an absolute symlink like /var/run -> /run
# would resolve in our own mount namespace.)
check "in its mount namespace the token file at /var/run/secrets/kubernetes.io/serviceaccount is ours" \
	cmp "/proc/$pid_a/root$RUN_DIR/secrets/kubernetes.io/serviceaccount/token" "$E2E_TMP/token.forged"
check "the host does not" test ! -e /var/run/secrets/kubernetes.io/serviceaccount/token
check "no KUBECONFIG, TENCENTCLOUD_* or SPOTPOOL_KUBECONFIG in its environment; HOME has no .kube" bash -c \
	"! tr '\0' '\n' </proc/$pid_a/environ | grep -qE '^(KUBECONFIG|TENCENTCLOUD_|SPOTPOOL_KUBECONFIG)' && test ! -e '$E2E_TMP/home/.kube'"
check "log: cluster source is in-cluster, https://127.0.0.1:$K8S_PORT" \
	wait_for 10 grep -qF "cluster https://127.0.0.1:$K8S_PORT (in-cluster)" "$E2E_TMP/a.log"
check "log: no default cloud credentials (pools must use a Secret)" grep -q 'no default Tencent Cloud credentials' "$E2E_TMP/a.log"
check "forged token: list gets HTTP 401 Unauthorized (logged)" \
	wait_for 10 bash -c "grep 'list spotpools' '$E2E_TMP/a.log' | grep -q 'HTTP 401: Unauthorized'"
check "forged token: leader election gets HTTP 401 too" \
	wait_for 10 bash -c "grep 'leader election' '$E2E_TMP/a.log' | grep -q 'HTTP 401'"
check "forged token: at least 3 list attempts, all refused" wait_for 10 bash -c "(( \$(grep -c 'list spotpools.*HTTP 401' '$E2E_TMP/a.log') >= 3 ))"
check "forged token: /readyz is 503, not ready" test "$(readyz)" = 503
check "forged token: never logged 'ready'" bash -c "! grep -q 'initial list complete, ready' '$E2E_TMP/a.log'"
check "forged token: no Lease spotpool created" bash -c "! kubectl get lease spotpool -n spotpool-system >/dev/null 2>&1"
check "forged token: spotpool_leader 0" test "$(leader_gauge)" = 0
check "forged token: pool p1 untouched (no status, no instances)" \
	test "$(sp_field p1 .status.size team-a)" = null -a "$(emu_live team-a/p1)" = 0

# --- The real token, rotated into the volume: picked up without a restart -------
sa_write "$E2E_TMP/token.real"
rotated_at=$SECONDS
check "after rotating the real token in, /readyz turns 200" wait_for 20 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$PORT/readyz) == 200 ]]"
echo "# ready $((SECONDS - rotated_at)) s after the rotation"
check "same process (no restart)" kill -0 "$pid_a"
check "Lease spotpool-system/spotpool held by this process (*_$pid_a)" wait_for 10 bash -c \
	"[[ \$(kubectl get lease spotpool -n spotpool-system -o jsonpath='{.spec.holderIdentity}') == *_$pid_a ]]"
check "spotpool_leader 1" wait_for 5 bash -c "[[ \$(curl -s http://127.0.0.1:$PORT/metrics | awk '\$1 == \"spotpool_leader\" {print \$2}') == 1 ]]"
if wait_for 40 converged p1 2; then
	pass "pool p1 converges with Secret credentials: size 2, 2 RUNNING instance IDs, Ready True"
else
	fail "pool p1 did not converge" "$(sp_json p1 -n team-a | jq -c .status)" "$(tail -20 "$E2E_TMP/a.log")"
fi
check "emulator holds exactly 2 live instances for team-a/p1" test "$(emu_live team-a/p1)" = 2
check "status instance IDs are the emulator's live ones" bash -c "diff <(kubectl get sp p1 -n team-a -o json | jq -r '.status.instances[].instanceId' | sort) \
	<(curl -s '$EMU_URL/_emulator/instances' | jq -r '.[] | select(.InstanceState==\"RUNNING\" and any(.Tags[]?; .Value==\"team-a/p1\")) | .InstanceId' | sort)"
check "finalizer added (patch on spotpools)" test "$(sp_field p1 '.metadata.finalizers | index("spotpool.jokerbai.com/finalizer")' team-a)" != null
check "Launched event recorded (create events)" bash -c "kubectl get events -n team-a -o json | jq -e '[.items[] | select(.reason==\"Launched\" and .involvedObject.name==\"p1\")] | length > 0' >/dev/null"
check "SpotNotices listed (and watched) in all namespaces under the ClusterRole" grep -q 'listed spotnotices in all namespaces ' "$E2E_TMP/a.log"
check "no 403 while the full RBAC is in place" bash -c "! grep -qE 'HTTP 403|forbidden|\(RBAC\)' '$E2E_TMP/a.log'"
stop_controller "$pid_a"
check "SIGTERM: exits 0" test $? = 0
check "lease released on exit" wait_for 5 bash -c "[[ -z \$(kubectl get lease spotpool -n spotpool-system -o jsonpath='{.spec.holderIdentity}') ]]"

# --- Remove one verb the controller needs: patch on spotpools/status ------------
idx=$(kubectl get clusterrole spotpool -o json | jq '.rules | map(.resources | index("spotpools/status") != null) | index(true)')
kubectl get clusterrole spotpool -o json | jq -c ".rules[$idx].verbs - [\"patch\"]" >"$E2E_TMP/verbs.json"
check "ClusterRole: remove patch from spotpools/status (rule $idx, verbs now $(cat "$E2E_TMP/verbs.json"))" \
	kubectl patch clusterrole spotpool --type=json -p "[{\"op\":\"replace\",\"path\":\"/rules/$idx/verbs\",\"value\":$(cat "$E2E_TMP/verbs.json")}]"
check "auth can-i patch spotpools/status: no" test "$(can patch spotpools.devops.jokerbai.com --subresource=status -n team-a)" = no
runs() { emu_get journal | jq '[.[] | select(.action=="RunInstances" and (.dryRun|not))] | length'; }
runs_before=$(runs)
# Same token (still valid: only the role changed). No --lease-namespace this time: it
# must come from the mounted namespace file (the SA cannot touch Leases in "default").
PORT=$(free_port)
start_incluster b --leader-elect --listen "127.0.0.1:$PORT"
pid_b=$CTL_PID
check "lease namespace from the namespace file: Lease spotpool-system/spotpool held by *_$pid_b" wait_for 15 bash -c \
	"[[ \$(kubectl get lease spotpool -n spotpool-system -o jsonpath='{.spec.holderIdentity}') == *_$pid_b ]]"
pool_manifest p2 team-a 1 1 "  credentialsSecretRef: {name: tc-creds}" | kubectl apply -f - >/dev/null
# Lines about p2 with the apiserver's 403, naming the SA, the verb and the subresource.
forbidden() { grep 'team-a/p2' "$E2E_TMP/b.log" | grep 'HTTP 403' | grep -F "User \"$SA_USER\" cannot patch resource \"spotpools/status\"" | grep -c forbidden; }
forbidden_at_least() { (($(forbidden) >= $1)); }
# One refused launch record per reconcile pass (the pass plans no launch after it).
refused_passes() { (($(grep 'team-a/p2: record-ledger .*: failed: PATCH' "$E2E_TMP/b.log" | grep 'action=ledger' | grep -c 'HTTP 403') >= $1)); }
check "log: HTTP 403 forbidden, $SA_USER cannot patch resource \"spotpools/status\"" wait_for 20 forbidden_at_least 1
check "log: the launch record is refused" refused_passes 1
check "a later pass (resync) is refused again" wait_for 10 refused_passes 2
check "p2 status never written (no .status.size)" test "$(sp_field p2 .status.size team-a)" = null
check "nothing launched for p2 (not recorded, so not launched)" test "$(emu_live team-a/p2)" = 0
check "emulator: no launch ever tagged team-a/p2" test "$(emu_get 'stats?tagKey=spotpool.jokerbai.com/pool&tagValue=team-a/p2' | jq .launched)" = 0
check "emulator journal: no RunInstances call since controller b started" test "$(runs)" = "$runs_before"
check "p1 keeps its 2 instances meanwhile" test "$(emu_live team-a/p1)" = 2
check "the refusal is visible on the object: Warning event StatusUpdateFailed naming the 403" bash -c \
	"kubectl get events -n team-a -o json | jq -e '[.items[] | select(.involvedObject.name==\"p2\" and .type==\"Warning\" and .reason==\"StatusUpdateFailed\" and (.message | test(\"403\")))] | length > 0' >/dev/null"

# --- Restore the ClusterRole: the same process now converges p2 -----------------
check "re-apply conf/kubernetes/clusterrole.yaml" kubectl apply -f "$CONF/clusterrole.yaml"
check "auth can-i patch spotpools/status: yes" test "$(can patch spotpools.devops.jokerbai.com --subresource=status -n team-a)" = yes
restored_at=$SECONDS
if wait_for 40 converged p2 1; then
	pass "p2 converges once the verb is back: size 1, instance ID, Ready True ($((SECONDS - restored_at)) s)"
else
	fail "p2 did not converge after restoring the ClusterRole" "$(sp_json p2 -n team-a | jq -c .status)" "$(tail -20 "$E2E_TMP/b.log")"
fi
check "emulator holds exactly 1 live instance for team-a/p2" test "$(emu_live team-a/p2)" = 1
check "same process (no restart) and still the leader" bash -c "kill -0 $pid_b && [[ \$(kubectl get lease spotpool -n spotpool-system -o jsonpath='{.spec.holderIdentity}') == *_$pid_b ]]"
stop_controller "$pid_b"
check "SIGTERM: exits 0" test $? = 0

# --- Secrets and the host --------------------------------------------------------
leak=$(grep -lF -e "$TOKEN" -e "$FORGED" -e "${TOKEN##*.}" -e "$EMU_SECRET_KEY" "$E2E_TMP"/a.log "$E2E_TMP"/b.log "$E2E_TMP"/emulator.log)
check "no SA token (real or forged, or its signature) and no secret key in any log ${leak}" test -z "$leak"
check "no secret key in any status or event" bash -c "! { kubectl get sp -A -o json; kubectl get events -A -o json; } | grep -qF '$EMU_SECRET_KEY'"
check "host $RUN_DIR unchanged (no secrets/ or mount/ left behind)" test "$(ls -A "$RUN_DIR")" = "$host_run_before"
finish
