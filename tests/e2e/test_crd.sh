#!/usr/bin/env bash
# The CRD on its own, against a real kube-apiserver and no controller: the columns of
# `kubectl get sp` (and -o wide), the bounds in the CEL messages, and the CRD and
# `spotpool dry-run` agreeing on what is valid and on the field they name.
source "$(dirname "$0")/lib.sh"

start_cluster
OUT=$E2E_TMP/out

# --- kubectl get sp: columns and values -----------------------------------------
pool_manifest crd-a default 1 3 "  replicas: 2" | kubectl apply -f - >"$OUT" 2>&1
check "a pool applies without a controller" kubectl get sp crd-a
kubectl get sp crd-a >"$OUT" 2>&1
check "kubectl get sp header: NAME MINIMUM MAXIMUM REPLICAS SIZE READY REASON AGE" \
	grep -qE '^NAME +MINIMUM +MAXIMUM +REPLICAS +SIZE +READY +REASON +AGE$' "$OUT"
check "kubectl get sp hides ZONE and TYPE" bash -c "! grep -qE 'ZONE|TYPE|ap-singapore-2' '$OUT'"
check "kubectl get sp row before any status: crd-a 1 3 2" grep -qE '^crd-a +1 +3 +2 ' "$OUT"

# What a controller would write; no controller runs here, so it stays.
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kubectl patch sp crd-a --subresource=status --type=merge -p "{\"status\":{\"size\":1,\"readyNodes\":1,\"conditions\":[
	{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"CapacityUnavailable\",\"message\":\"sold out\",\"lastTransitionTime\":\"$now\"},
	{\"type\":\"Degraded\",\"status\":\"True\",\"reason\":\"CapacityUnavailable\",\"message\":\"sold out\",\"lastTransitionTime\":\"$now\"}]}}" \
	>"$OUT" 2>&1 || fail "status patch" "$(cat "$OUT")"
kubectl get sp >"$OUT" 2>&1
check "kubectl get sp row: size 1, Ready False, reason CapacityUnavailable" \
	grep -qE '^crd-a +1 +3 +2 +1 +False +CapacityUnavailable +[0-9]+[smh]$' "$OUT"
kubectl get sp -o wide >"$OUT" 2>&1
check "kubectl get sp -o wide header adds ZONE TYPE READYNODES after AGE" \
	grep -qE '^NAME +MINIMUM +MAXIMUM +REPLICAS +SIZE +READY +REASON +AGE +ZONE +TYPE +READYNODES$' "$OUT"
check "kubectl get sp -o wide row: zone and instance type of the first preference, Ready nodes" \
	grep -qE '^crd-a +1 +3 +2 +1 +False +CapacityUnavailable +[0-9]+[smh] +ap-singapore-2 +GN7\.2XLARGE32 +1$' "$OUT"
check "kubectl scale still drives spec.replicas" \
	bash -c "kubectl scale sp crd-a --replicas=3 >/dev/null && test \"\$(kubectl get sp crd-a -o jsonpath='{.spec.replicas}')\" = 3"
echo "# kubectl get sp -o wide:" && sed 's/^/#   /' <(kubectl get sp -o wide)

# --- CEL messages name both bounds with their values ------------------------------
apply_fails() { # WANT MANIFEST-ARGS...
	local want=$1
	shift
	pool_manifest "$@" | kubectl apply -f - >"$OUT" 2>&1
	if [[ $? != 0 ]] && grep -qF "$want" "$OUT"; then
		pass "apiserver: $want"
	else
		fail "apiserver did not say: $want" "$(cat "$OUT")"
	fi
}
apply_fails "spec.replicas: Invalid value: \"object\": replicas 5 is outside [minimum 1, maximum 2]" \
	crd-b default 1 2 "  replicas: 5"
apply_fails "spec.minimum: Invalid value: \"object\": minimum 3 is greater than maximum 1" crd-c default 3 1
apply_fails "replicas 1000 is outside [minimum 0, maximum 10]" crd-d default 0 10 "  replicas: 1000"

# --- Region and account cannot change (transition rules; docs/migration.md) -------
patch_fails() { # WANT POOL PATCH
	kubectl patch sp "$2" --type=merge -p "$3" >"$OUT" 2>&1
	if [[ $? != 0 ]] && grep -qF "$1" "$OUT" && grep -qF 'docs/migration.md' "$OUT"; then
		pass "apiserver refuses $3: $1"
	else
		fail "apiserver did not refuse $3 with: $1" "$(cat "$OUT")"
	fi
}
patch_ok() { # POOL PATCH
	kubectl patch sp "$1" --type=merge -p "$2" >"$OUT" 2>&1 && pass "apiserver accepts $2" ||
		fail "apiserver refuses $2" "$(cat "$OUT")"
}
patch_fails "spec.region: Invalid value: \"object\": region cannot be changed" crd-a \
	'{"spec":{"region":"ap-guangzhou","availabilityZone":"ap-guangzhou-3"}}'
patch_ok crd-a '{"spec":{"availabilityZones":["ap-singapore-3"]}}'
patch_ok crd-a '{"spec":{"credentialsSecretRef":{"name":"creds-a"}}}'
patch_ok crd-a '{"spec":{"credentialsSecretRef":{"name":"creds-a"}}}'
patch_fails "spec.credentialsSecretRef: Invalid value: \"object\": credentialsSecretRef cannot be changed" crd-a \
	'{"spec":{"credentialsSecretRef":{"name":"creds-b"}}}'
patch_fails "credentialsSecretRef cannot be changed or removed" crd-a '{"spec":{"credentialsSecretRef":null}}'
patch_fails "credentialsSecretRef cannot be changed or removed" crd-a \
	'{"spec":{"credentialsSecretRef":null,"secretId":"AKIDother","secretKey":"k"}}'
pool_manifest crd-i default 1 3 | sed 's/^spec:$/spec:\n  secretId: AKIDinline\n  secretKey: inlineKey/' |
	kubectl apply -f - >"$OUT" 2>&1 || fail "a pool with inline keys applies" "$(cat "$OUT")"
patch_ok crd-i '{"spec":{"secretKey":"rotatedKey"}}'
patch_fails "spec.secretId: Invalid value: \"object\": secretId cannot be changed" crd-i \
	'{"spec":{"secretId":"AKIDother"}}'
patch_fails "secretId cannot be changed or removed" crd-i '{"spec":{"secretId":null,"secretKey":null}}'
# The documented move of inline keys into a Secret (docs/migration.md): the controller
# checks that the Secret holds the same account (AccountChanged otherwise).
patch_ok crd-i '{"spec":{"credentialsSecretRef":{"name":"creds-i"},"secretId":null,"secretKey":null}}'

# --- Every example in examples/ is accepted by the apiserver as written -----------
for ex in "$E2E_ROOT"/examples/*.yaml; do
	kubectl apply --dry-run=server -f "$ex" >"$OUT" 2>&1 &&
		pass "apiserver accepts examples/$(basename "$ex") (--dry-run=server)" ||
		fail "apiserver rejects examples/$(basename "$ex")" "$(cat "$OUT")"
done

# --- The CRD and the C validation agree -------------------------------------------
# Each case is applied with `kubectl apply --dry-run=server` and read by `spotpool
# dry-run`; both accept it, or both reject it naming the same field.
export TENCENTCLOUD_SECRET_ID=AKIDcrossCheck TENCENTCLOUD_SECRET_KEY=crossCheckKey
cases=(
	'ok|1|3|'
	'ok|0|0|'
	'ok|1|3|  replicas: 3'
	'spec.replicas|1|2|  replicas: 5'
	'spec.replicas|1|2|  replicas: 0'
	'spec.minimum|3|1|'
	'spec.minimum|-1|3|'
	'spec.maximum|0|1001|'
	'spec.replicas|0|3|  replicas: 1001'
	'spec.securityGroupIds|1|3|  securityGroupIds: [sg-1, sg-2, sg-3, sg-4, sg-5, sg-6]'
	'spec.tags|1|3|  tags: {a: "1", b: "2", c: "3", d: "4", e: "5", f: "6", g: "7", h: "8", i: "9", j: "10", k: "11", l: "12", m: "13", n: "14", o: "15", p: "16", q: "17", r: "18", s: "19", t: "20", u: "21"}'
	'spec.internetMaxBandwidthOut|1|3|  internetMaxBandwidthOut: 201'
	'spec.systemDisk.diskSize|1|3|  systemDisk: {diskSize: 10}'
	'spec.maxPrice|1|3|  maxPrice: "1.5x"'
	# Offerings: further types and zones, and the allocation strategy.
	'ok|1|3|  instanceTypes: [GN7.5XLARGE80, S5.LARGE8]'
	'ok|1|3|  availabilityZones: [ap-singapore-3, ap-singapore-4]'
	'ok|1|3|  allocationStrategy: spread'
	'ok|1|3|  availabilityZones: [ap-singapore-1, ap-singapore-3, ap-singapore-4, ap-singapore-5, ap-singapore-6, ap-singapore-7, ap-singapore-8, ap-singapore-9, ap-singapore-10, ap-singapore-11]'
	'spec.availabilityZones|1|3|  availabilityZones: [ap-singapore-3, ap-guangzhou-3]'
	'spec.availabilityZones|1|3|  availabilityZones: [ap-singapore-]'
	'spec.availabilityZones|1|3|  availabilityZones: [ap-singapore-3, ap-singapore-3]'
	'spec.availabilityZones|1|3|  availabilityZones: [ap-singapore-2]'
	'spec.availabilityZones|1|3|  availabilityZones: [ap-singapore-1, ap-singapore-3, ap-singapore-4, ap-singapore-5, ap-singapore-6, ap-singapore-7, ap-singapore-8, ap-singapore-9, ap-singapore-10, ap-singapore-11, ap-singapore-12]'
	'spec.availabilityZones|1|3|  availabilityZones: ap-singapore-3'
	'spec.instanceTypes|1|3|  instanceTypes: [S5.LARGE8, S5.LARGE8]'
	'spec.instanceTypes|1|3|  instanceTypes: [GN7.2XLARGE32]'
	'spec.instanceTypes|1|3|  instanceTypes: ["GN7 LARGE"]'
	'spec.instanceTypes|1|3|  instanceTypes: [A, B, C, D, E, F, G, H, I, J, K]'
	'spec.allocationStrategy|1|3|  allocationStrategy: balanced'
	# Draining: drainTimeout within 0s..24h, maximumIncludesDoomed a boolean.
	'ok|1|3|  drainTimeout: 10m'
	'ok|1|3|  drainTimeout: 1h30m'
	'ok|1|3|  drainTimeout: 0s'
	'ok|1|3|  drainTimeout: 1440m'
	'ok|1|3|  maximumIncludesDoomed: true'
	'spec.drainTimeout|1|3|  drainTimeout: 25h'
	'spec.drainTimeout|1|3|  drainTimeout: 86401s'
	'spec.drainTimeout|1|3|  drainTimeout: "10"'
	'spec.drainTimeout|1|3|  drainTimeout: 1.5h'
	'spec.drainTimeout|1|3|  drainTimeout: 100000s'
	'spec.drainTimeout|1|3|  drainTimeout: 600'
	'spec.maximumIncludesDoomed|1|3|  maximumIncludesDoomed: "yes"'
	# Demand (issue 28): autoscaling's timers and the node template's labels and taints.
	'ok|0|3|  autoscaling: {pendingPods: true}'
	'ok|0|3|  autoscaling: {}'
	'ok|0|3|  autoscaling: {scaleDownUnneededTime: 0s, nodeRegistrationTimeout: 1s}'
	'ok|0|3|  autoscaling: {scaleDownUnneededTime: 24h, nodeRegistrationTimeout: 1h30m}'
	'ok|0|3|  nodeTemplate: {labels: {gpu-pool: a10, example.com/team: ml, e: ""}, taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}, {key: nvidia.com/gpu, effect: NoExecute}, {key: spot, effect: PreferNoSchedule}]}'
	'spec.autoscaling.pendingPods|0|3|  autoscaling: {pendingPods: "yes"}'
	'spec.autoscaling.scaleDownUnneededTime|0|3|  autoscaling: {scaleDownUnneededTime: 25h}'
	'spec.autoscaling.scaleDownUnneededTime|0|3|  autoscaling: {scaleDownUnneededTime: "10"}'
	'spec.autoscaling.nodeRegistrationTimeout|0|3|  autoscaling: {nodeRegistrationTimeout: 0s}'
	'spec.autoscaling.nodeRegistrationTimeout|0|3|  autoscaling: {nodeRegistrationTimeout: 1.5m}'
	'spec.nodeTemplate.labels|0|3|  nodeTemplate: {labels: {-a: v}}'
	'spec.nodeTemplate.labels|0|3|  nodeTemplate: {labels: {Example.com/a: v}}'
	'spec.nodeTemplate.labels|0|3|  nodeTemplate: {labels: {a/b/c: v}}'
	'spec.nodeTemplate.labels|0|3|  nodeTemplate: {labels: {a: "b c"}}'
	'spec.nodeTemplate.labels|0|3|  nodeTemplate: {labels: {a: 1}}'
	'spec.nodeTemplate.taints|0|3|  nodeTemplate: {taints: {key: a}}'
	'spec.nodeTemplate.taints[0].key|0|3|  nodeTemplate: {taints: [{effect: NoSchedule}]}'
	'spec.nodeTemplate.taints[0].key|0|3|  nodeTemplate: {taints: [{key: "b c", effect: NoSchedule}]}'
	'spec.nodeTemplate.taints[0].value|0|3|  nodeTemplate: {taints: [{key: a, value: x/y, effect: NoSchedule}]}'
	'spec.nodeTemplate.taints[0].effect|0|3|  nodeTemplate: {taints: [{key: a}]}'
	'spec.nodeTemplate.taints[2].effect|0|3|  nodeTemplate: {taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoSchedule}, {key: c, effect: Sometimes}]}'
	'spec.nodeTemplate.taints[1]|0|3|  nodeTemplate: {taints: [{key: a, value: "1", effect: NoSchedule}, {key: a, value: "2", effect: NoSchedule}]}'
)
# The bounds: 64 labels and 32 taints are the most.
entries() { # N FORMAT
	seq "$1" | xargs printf "$2" | paste -sd, | sed 's/,/, /g'
}
cases+=(
	"ok|0|3|  nodeTemplate: {labels: {$(entries 64 'l%d: v\n')}, taints: [$(entries 32 '{key: k%d, effect: NoSchedule}\n')]}"
	"spec.nodeTemplate.labels|0|3|  nodeTemplate: {labels: {$(entries 65 'l%d: v\n')}}"
	"spec.nodeTemplate.taints|0|3|  nodeTemplate: {taints: [$(entries 33 '{key: k%d, effect: NoSchedule}\n')]}"
)
agree=0
for c in "${cases[@]}"; do
	IFS='|' read -r field min max extra <<<"$c"
	pool_manifest crd-x default "$min" "$max" "$extra" >"$E2E_TMP/x.yaml"
	kubectl apply --dry-run=server -f "$E2E_TMP/x.yaml" >"$E2E_TMP/api.out" 2>&1
	api=$?
	SPOTPOOL_CVM_ENDPOINT=http://127.0.0.1:9 timeout 20 "$SPOTPOOL_BIN" dry-run -f "$E2E_TMP/x.yaml" --timeout 1 \
		>"$E2E_TMP/c.out" 2>&1
	rc=$?
	if [[ $field == ok ]]; then
		# Valid: the apiserver accepts it and dry-run goes on to the (unreachable) cloud.
		[[ $api == 0 && $rc != 1 ]] && agree=$((agree + 1)) ||
			fail "both accept: $extra (min $min, max $max)" "apiserver rc=$api: $(cat "$E2E_TMP/api.out")" "dry-run rc=$rc: $(cat "$E2E_TMP/c.out")"
	else
		[[ $api != 0 && $rc == 1 ]] && grep -qF "$field" "$E2E_TMP/api.out" && grep -qF "): $field" "$E2E_TMP/c.out" &&
			agree=$((agree + 1)) ||
			fail "both reject naming $field: $extra (min $min, max $max)" "apiserver rc=$api: $(cat "$E2E_TMP/api.out")" "dry-run rc=$rc: $(cat "$E2E_TMP/c.out")"
	fi
done
check "CRD and dry-run agree on all ${#cases[@]} cases ($agree agreed)" test "$agree" = "${#cases[@]}"
finish
