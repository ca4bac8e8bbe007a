#!/usr/bin/env bash
# Instances are followed where they live (issue 27 item 3, D3; docs/migration.md), on a
# real kube-apiserver with the test playing the kubelet: a pool of 2 at size with Nodes.
#  - `kubectl patch` of spec.region (and availabilityZone) is refused by the CRD.
#  - With an older CRD that lacks the rule, the edit goes through: the instances are
#    still looked up in their own region, no Node is deleted, nothing is launched.
#  - The Secret's content swapped to credentials of another account (which see none of
#    the instances): still no Node deleted and nothing launched; Degraded AccountChanged.
#  - The pool deleted meanwhile stays (finalizer) with its instances tracked; the
#    credentials restored, the deletion terminates them in their own region: none leaks.
#  - A key rotated right after every recorded instance was reclaimed (the campaign's
#    cred_rotation): the account STS names is the same, so the pool refills (before the
#    account was asked, the fingerprint was of the SecretId: held with AccountChanged).
source "$(dirname "$0")/lib.sh"

start_emulator
start_cluster
start_controller ctl
OUT=$E2E_TMP/out

secret() { # ID KEY: the pool's Secret, created or its content replaced
	kubectl create secret generic creds --from-literal=secretId="$1" --from-literal=secretKey="$2" \
		--dry-run=client -o yaml | kubectl apply -f - >/dev/null
}
secret "$EMU_SECRET_ID" "$EMU_SECRET_KEY"
pool_manifest follow default 2 2 "  credentialsSecretRef: {name: creds}
  drainTimeout: 0s" | kubectl apply -f - >/dev/null
check "the pool reaches 2 instances" wait_for 60 at_size follow 2
mapfile -t ids < <(sp_field follow '.status.instances[].instanceId')
mapfile -t ips < <(sp_field follow '.status.instances[].privateIp')

kubelet_node n0 "${ids[0]}" "${ips[0]}" && kubelet_node n1 "${ids[1]}" "${ips[1]}"
check "Nodes n0, n1 for ${ids[*]}" kubectl get node n0 n1
check "status: both Nodes Ready" wait_for 20 bash -c "[[ \$(kubectl get sp follow -o jsonpath='{.status.readyNodes}') == 2 ]]"

# Nothing lost, nothing added: both Nodes, 2 live instances (both in ap-singapore), no
# launch since, no NodeDeleted event.
launches() { jq -s '[.[] | select(.action == "RunInstances")] | length' "$E2E_TMP/journal.jsonl"; }
runs=$(launches)
held() {
	kubectl get node n0 n1 >/dev/null 2>&1 &&
		[[ $(emu_live default/follow) == 2 && $(launches) == "$runs" &&
			$(emu_get "instances?region=ap-singapore" | jq '[.[] | select(.InstanceState == "RUNNING")] | length') == 2 &&
			$(kubectl get events --field-selector reason=NodeDeleted -o name | wc -l) == 0 ]]
}

# --- The CRD refuses the move -----------------------------------------------------
to_guangzhou='{"spec":{"region":"ap-guangzhou","availabilityZone":"ap-guangzhou-3"}}'
kubectl patch sp follow --type=merge -p "$to_guangzhou" >"$OUT" 2>&1
refused=$?
check "kubectl patch of spec.region is refused, naming the field and how to move a pool" \
	bash -c "[[ $refused != 0 ]] && grep -q 'spec.region: Invalid value.*region cannot be changed.*create a new pool.*docs/migration.md' '$OUT'"

# --- An older CRD without the rule: the edit goes through ---------------------------
python3 - "$E2E_ROOT/crds/spotpool.yaml" >"$E2E_TMP/old-crd.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
# Drop the transition rules (each "- rule:" item whose rule mentions oldSelf).
items = re.split(r"(?m)^(?=                - rule:)", text)
print("".join(i for i in items if "oldSelf" not in i.split("message")[0]), end="")
PY
check "an older CRD without the transition rules applies" kubectl apply -f "$E2E_TMP/old-crd.yaml"
check "with it, spec.region and availabilityZone move to ap-guangzhou" \
	wait_for 20 kubectl patch sp follow --type=merge -p "$to_guangzhou"
sleep 4  # a few passes (resync 2 s)
check "region edited: both Nodes stay, 2 instances still live in ap-singapore, nothing launched" held
check "region edited: the pool still counts its 2 instances" test "$(sp_field follow .status.size)" = 2
check "region edited: nothing in ap-guangzhou" test "$(emu_get 'instances?region=ap-guangzhou' | jq length)" = 0
check "log: the instances are looked up where they live" \
	grep -q "2 recorded instance(s) live in region ap-singapore, not the pool's ap-guangzhou" "$E2E_TMP/ctl.log"

# --- The Secret now holds another account's credentials ------------------------------
emu_post credentials '{"secretId":"AKIDotherAccount000000000000000000","secretKey":"otherAccountKey","account":"other"}' >/dev/null
secret AKIDotherAccount000000000000000000 otherAccountKey
degraded() { [[ $(sp_field follow '.status.conditions[] | select(.type == "Degraded") | .reason') == "$1" ]]; }
check "another account: Degraded AccountChanged" wait_for 20 degraded AccountChanged
check "the condition says what to do" bash -c \
	"kubectl get sp follow -o json | jq -r '.status.conditions[] | select(.type == \"Degraded\") | .message' |
		grep -q 'restored.*status.accountFingerprint is removed'"
check "another account: a Warning event AccountChanged" bash -c \
	"kubectl get events --field-selector reason=AccountChanged,type=Warning -o name | grep -q ."
sleep 2
check "another account: both Nodes stay, the 2 instances live, nothing launched" held
uin=$(cd "$E2E_ROOT/tests" && python3 -c 'import cvm_emulator as e; print(e.account_uin("main"))')
check "status.accountFingerprint is the account's, neither a SecretId nor the AccountId $uin" bash -c \
	"fp=\$(kubectl get sp follow -o jsonpath='{.status.accountFingerprint}'); [[ \$fp =~ ^acct-[0-9a-f]{16}\$ ]] &&
		! kubectl get sp follow -o json | grep -Eq '$EMU_SECRET_ID|$uin'"

# --- Deleted meanwhile: held, then cleaned up where the instances live -----------------
kubectl delete sp follow --wait=false >/dev/null
sleep 3
check "deleted under another account: the pool stays (finalizer), AccountChanged" \
	bash -c "kubectl get sp follow -o jsonpath='{.metadata.deletionTimestamp}' | grep -q . &&
		[[ \$(kubectl get sp follow -o json | jq -r '.status.conditions[] | select(.type == \"Degraded\") | .reason') == AccountChanged ]]"
check "deleted under another account: the 2 instances are still tracked and live" held
secret "$EMU_SECRET_ID" "$EMU_SECRET_KEY"
check "credentials restored: the pool is released" wait_for 30 bash -c "! kubectl get sp follow >/dev/null 2>&1"
check "credentials restored: both instances terminated in ap-singapore, none leaked" \
	test "$(emu_live default/follow)" = 0

# --- Every recorded instance reclaimed, then the key rotated (same account) ------------
pool_manifest rot default 1 1 "  credentialsSecretRef: {name: creds}" | kubectl apply -f - >/dev/null
check "pool rot reaches 1 instance" wait_for 60 at_size rot 1
old_id=$(sp_field rot '.status.instances[0].instanceId')
# The controller stopped, so that no pass sees the instance go before the key changes:
# the reclaim and the rotation land in the same gap between two passes.
stop_controller "$CTL_PID"
emu_post reclaim '{"tag":{"Key":"spotpool.jokerbai.com/pool","Value":"default/rot"},"count":1}' >/dev/null
rotated=AKIDspotpoolE2Erotated00000000000000
emu_post credentials "{\"secretId\":\"$rotated\",\"secretKey\":\"rotatedKeyE2E\"}" >/dev/null
secret "$rotated" rotatedKeyE2E
emu_post credentials "{\"secretId\":\"$EMU_SECRET_ID\",\"remove\":true}" >/dev/null
start_controller ctl
refilled() { at_size rot 1 && [[ $(sp_field rot '.status.instances[0].instanceId') != "$old_id" ]]; }
check "rotated after a total reclaim: the pool refills with the new key" wait_for 30 refilled
no_account_changed() {
	[[ $(sp_field rot '.status.conditions[] | select(.type == "Degraded") | .reason') != AccountChanged ]] &&
		! kubectl get events --field-selector reason=AccountChanged,involvedObject.name=rot -o name | grep -q .
}
check "rotated after a total reclaim: no AccountChanged (condition or event)" no_account_changed
check "the replacement was launched with the rotated key" bash -c \
	"jq -s -e '[.[] | select(.action == \"RunInstances\" and .secretId == \"$rotated\")] | length == 1' '$E2E_TMP/journal.jsonl' >/dev/null"
kubectl delete sp rot --wait=false >/dev/null
released() { ! kubectl get sp rot >/dev/null 2>&1 && [[ $(emu_live default/rot) == 0 ]]; }
check "pool rot deleted: released, nothing left" wait_for 30 released
finish
