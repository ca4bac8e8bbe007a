#!/usr/bin/env bash
# Names as long as Kubernetes allows (issue 19, defect 1): a 253-character pool in a
# 63-character namespace (owner 317 characters: past Tencent's 255 for a tag value) and
# a 198-character pool in "default" (owner 206: it fits, but a 160-byte field once read
# it as no owner, and the pool launched about every 2 s without end, then leaked all it
# launched on deletion). Each reaches its size, launches exactly that many, keeps it, and
# leaves nothing live after deletion. Real kube-apiserver, the project's CVM emulator.
source "$(dirname "$0")/lib.sh"

start_emulator
start_cluster
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
start_controller ctl --launch-grace 6

LONG_NS=$(printf 'n%.0s' {1..62})x
LONG_NAME=$(printf 'a%.0s' {1..120}).$(printf 'b%.0s' {1..131})z
MID_NAME=$(printf 'm%.0s' {1..198})
# The owner tag as documented (pool_owner_tag), computed independently of the C code.
owner_tag() {
	python3 - "$1/$2" <<'PY'
import hashlib, sys
o = sys.argv[1]
print(o if len(o) <= 255 else o[:222] + "#" + hashlib.sha256(o.encode()).hexdigest()[:32])
PY
}
stat() { # NS NAME FIELD
	local v
	v=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$(owner_tag "$1" "$2")")
	emu_get "stats?tagKey=spotpool.jokerbai.com/pool&tagValue=$v" | jq ".$3"
}
gone() { ! kubectl get sp "$2" -n "$1" >/dev/null 2>&1; }

check "a 253-character name is a valid Spotpool name (${#LONG_NAME})" test "${#LONG_NAME}" = 253
kubectl create namespace "$LONG_NS" >/dev/null
pool_manifest "$LONG_NAME" "$LONG_NS" 2 2 "  replicas: 2" | kubectl apply -f - >/dev/null
pool_manifest "$MID_NAME" default 2 2 | kubectl apply -f - >/dev/null

for pool in "$LONG_NS $LONG_NAME" "default $MID_NAME"; do
	read -r ns name <<<"$pool"
	label="${#ns}/${#name} characters"
	check "$label: reaches 2" wait_for 60 at_size "$name" 2 "$ns"
done
sleep 8  # several passes (resync 2 s) past the launch grace (6 s)
for pool in "$LONG_NS $LONG_NAME" "default $MID_NAME"; do
	read -r ns name <<<"$pool"
	label="${#ns}/${#name} characters"
	check "$label: exactly 2 launched ($(stat "$ns" "$name" launched))" test "$(stat "$ns" "$name" launched)" = 2
	check "$label: never more than 2 live ($(stat "$ns" "$name" maxLive))" test "$(stat "$ns" "$name" maxLive)" -le 2
	ids=$(sp_field "$name" '[.status.instances[].instanceId] | length' "$ns")
	check "$label: status lists its 2 instances ($ids)" test "$ids" = 2
done

tag=$(owner_tag "$LONG_NS" "$LONG_NAME")
check "the 317-character owner is tagged in 255 characters (${#tag})" test "${#tag}" = 255
tagged=$(emu_get instances | jq --arg t "$tag" '[.[] | select(any(.Tags[]?; .Key == "spotpool.jokerbai.com/pool" and .Value == $t))] | length')
check "the emulator holds 2 instances with that tag ($tagged)" test "$tagged" = 2
selector=$(sp_field "$LONG_NAME" .status.selector "$LONG_NS")
value=${selector#*=}
check "the /scale selector is a valid label value (${#value} characters)" \
	bash -c '[[ ${#1} -le 63 && $1 =~ ^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$ ]]' _ "$value"
check "kubectl reads /scale of the long pool" \
	kubectl get --raw "/apis/devops.jokerbai.com/v1/namespaces/$LONG_NS/spotpools/$LONG_NAME/scale"

for pool in "$LONG_NS $LONG_NAME" "default $MID_NAME"; do
	read -r ns name <<<"$pool"
	label="${#ns}/${#name} characters"
	kubectl delete sp "$name" -n "$ns" --wait=false >/dev/null
	check "$label: deletion completes" wait_for 60 gone "$ns" "$name"
	check "$label: nothing left live ($(stat "$ns" "$name" live))" test "$(stat "$ns" "$name" live)" = 0
done
finish
