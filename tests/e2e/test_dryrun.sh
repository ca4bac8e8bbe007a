#!/usr/bin/env bash
# spotpool dry-run and the CVM client against the signature-verifying emulator, over HTTP.
source "$(dirname "$0")/lib.sh"

start_emulator
export SPOTPOOL_CVM_ENDPOINT=$EMU_URL
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
OUT=$E2E_TMP/out
POOL_TAG=spotpool.jokerbai.com/pool

dry() { "$SPOTPOOL_BIN" dry-run "$@" >"$OUT" 2>&1; }
json() { jq -r "$1" "$OUT"; }
mutations() { emu_get journal | jq '[.[] | select((.action == "RunInstances" and (.dryRun | not)) or .action == "TerminateInstances")] | length'; }
no_secret_in() { ! grep -q -- "$EMU_SECRET_KEY" "$@"; }

# 1. The earlier operator's manifest, unchanged but for emulator credentials.
sed "s/secretId: xxx/secretId: $EMU_SECRET_ID/; s/secretKey: xxx/secretKey: $EMU_SECRET_KEY/" \
	"$E2E_ROOT/examples/earlier-operator-sample.yaml" >"$E2E_TMP/sample.yaml"
if dry -f "$E2E_TMP/sample.yaml" -o json && [[ $(json '.pools[0].launch') == 2 && $(json '.pools[0].observed') == 0 &&
	$(json '.pools[0].launchCheck.passed') == true && $(json '.pools[0].target') == 2 ]]; then
	pass "earlier-operator sample: plan launches 2, DryRun check passed"
else
	fail "earlier-operator sample plan" "$(cat "$OUT")"
fi
check "dry-run launched and terminated nothing" test "$(mutations)" = 0
check "the DryRun launch was sent with DryRun=true and spot options" \
	test "$(emu_get journal | jq '[.[] | select(.action == "RunInstances" and .dryRun == true)] | length')" -ge 1
check "secret key absent from output (inline credentials)" no_secret_in "$OUT"

# 1a. -v logs every cloud call on stderr, successful ones included: action, region,
# outcome and duration; the table or JSON on stdout is unchanged.
"$SPOTPOOL_BIN" dry-run -v -f "$E2E_TMP/sample.yaml" -o json >"$OUT" 2>"$E2E_TMP/verbose.err"
check "-v: exit 0, JSON on stdout as without -v" bash -c "[[ $? == 0 ]] && jq -e '.pools[0].launch == 2' '$OUT' >/dev/null"
for action in DescribeInstances RunInstances; do
	check "-v: the successful $action call logged (region, outcome, duration)" \
		grep -Eq "cvm $action region ap-[a-z]+: Success in [0-9]+ ms \(1 attempt\)" "$E2E_TMP/verbose.err"
done
check "-v: no secret in the call log" no_secret_in "$E2E_TMP/verbose.err"

# 1b. Every example in examples/ plans and passes the DryRun launch check (inline
# placeholder keys swapped for the emulator's; a credentialsSecretRef whose Secret is
# not among the files falls back on the environment).
for ex in "$E2E_ROOT"/examples/*.yaml; do
	sed "s/secretId: xxx/secretId: $EMU_SECRET_ID/; s/secretKey: xxx/secretKey: $EMU_SECRET_KEY/" "$ex" >"$E2E_TMP/example.yaml"
	# stderr apart: it carries the note about the Secret.
	"$SPOTPOOL_BIN" dry-run -f "$E2E_TMP/example.yaml" -o json >"$OUT" 2>"$E2E_TMP/err"
	rc=$?
	check "examples/$(basename "$ex"): exit $rc, every pool planned and its launch check passed" \
		bash -c "[[ $rc == 0 ]] && jq -e '(.pools | length) > 0 and all(.pools[]; .launchCheck.passed == true)' '$OUT' >/dev/null"
done

# 2. Foreign instances (untagged, other pools) are never counted.
emu_post instances '{"region":"ap-singapore","zone":"ap-singapore-2","instanceType":"GN7.2XLARGE32","count":5}' >/dev/null
emu_post instances "{\"region\":\"ap-singapore\",\"zone\":\"ap-singapore-2\",\"instanceType\":\"GN7.2XLARGE32\",\"count\":3,\"tags\":[{\"Key\":\"$POOL_TAG\",\"Value\":\"default/other-pool\"}]}" >/dev/null
emu_post instances "{\"region\":\"ap-singapore\",\"zone\":\"ap-singapore-2\",\"instanceType\":\"GN7.2XLARGE32\",\"count\":2,\"tags\":[{\"Key\":\"team\",\"Value\":\"default/spotpool-sample\"}]}" >/dev/null
pool_manifest mine default 1 3 >"$E2E_TMP/mine.yaml"
if dry -f "$E2E_TMP/mine.yaml" -o json && [[ $(json '.pools[0].observed') == 0 && $(json '.pools[0].launch') == 1 ]]; then
	pass "10 foreign instances in the account are not counted"
else
	fail "foreign instances counted" "$(cat "$OUT")"
fi

# 3. More than 100 owned instances are paged (Limit 100).
emu_post instances "{\"region\":\"ap-singapore\",\"zone\":\"ap-singapore-2\",\"instanceType\":\"GN7.2XLARGE32\",\"count\":230,\"tags\":[{\"Key\":\"$POOL_TAG\",\"Value\":\"default/big\"}]}" >/dev/null
pool_manifest big default 0 300 >"$E2E_TMP/big.yaml"
since=$(emu_get journal | jq 'map(.seq) | max')
if dry -f "$E2E_TMP/big.yaml" -o json && [[ $(json '.pools[0].observed') == 230 && $(json '.pools[0].instances | length') == 230 ]]; then
	pass "230 owned instances observed across pages"
else
	fail "paging" "$(head -c 2000 "$OUT")"
fi
pages=$(emu_get "journal?since=$since" | jq -c '[.[] | select(.action == "DescribeInstances") | [.offset, .limit]]')
check "DescribeInstances paged with Limit 100: $pages" test "$pages" = '[[0,100],[100,100],[200,100]]'

# 4. Above maximum: the plan terminates the newest, and dry-run terminates nothing.
pool_manifest big default 0 228 >"$E2E_TMP/big2.yaml"
if dry -f "$E2E_TMP/big2.yaml" -o json && [[ $(json '.pools[0].terminate | length') == 2 ]]; then
	pass "above maximum: 2 chosen for termination"
else
	fail "scale-down plan" "$(head -c 1000 "$OUT")"
fi
check "still nothing mutated" test "$(mutations)" = 0

# 5. A capacity error from the DryRun launch is reported (exit 3, code named).
emu_post stock '{"zone":"ap-singapore-2","instanceType":"GN7.2XLARGE32","count":0,"errorCode":"ResourcesSoldOut.SpecifiedInstanceType"}' >/dev/null
dry -f "$E2E_TMP/mine.yaml" -o json
rc=$?
if [[ $rc == 3 && $(json '.pools[0].launchCheck.passed') == false &&
	$(json '.pools[0].launchCheck.error.code') == ResourcesSoldOut.SpecifiedInstanceType &&
	$(json '.pools[0].launchCheck.error.class') == capacity ]]; then
	pass "sold-out zone reported as a capacity error, exit 3"
else
	fail "capacity error" "rc=$rc" "$(cat "$OUT")"
fi
dry -f "$E2E_TMP/mine.yaml"
check "table output says the launch check FAILED" grep -q "launch check FAILED: RunInstances: ResourcesSoldOut" "$OUT"
emu_post stock '{"zone":"ap-singapore-2","instanceType":"GN7.2XLARGE32","count":null}' >/dev/null

# 6. A bad signature is rejected by the emulator (it really checks).
TENCENTCLOUD_SECRET_KEY=wrong-key-$RANDOM dry -f "$E2E_TMP/mine.yaml" -o json
rc=$?
if [[ $rc == 3 && $(json '.pools[0].error.code') == AuthFailure.SignatureFailure && $(json '.pools[0].error.class') == auth ]]; then
	pass "wrong secret key: AuthFailure.SignatureFailure, exit 3"
else
	fail "bad signature accepted?" "rc=$rc" "$(cat "$OUT")"
fi
forged=$(curl -s -X POST "$EMU_URL/" -H 'Content-Type: application/json; charset=utf-8' -H 'X-TC-Action: DescribeInstances' \
	-H 'X-TC-Version: 2017-03-12' -H "X-TC-Timestamp: $(date +%s)" -H 'X-TC-Region: ap-singapore' \
	-H "Authorization: TC3-HMAC-SHA256 Credential=$EMU_SECRET_ID/$(date -u +%F)/cvm/tc3_request, SignedHeaders=content-type;host, Signature=$(printf '0%.0s' {1..64})" -d '{}')
check "forged signature rejected: $(jq -r .Response.Error.Code <<<"$forged")" test "$(jq -r .Response.Error.Code <<<"$forged")" = AuthFailure.SignatureFailure
TENCENTCLOUD_SECRET_ID=AKIDunknown dry -f "$E2E_TMP/mine.yaml" -o json
check "unknown secret id: AuthFailure.SecretIdNotFound" test "$(json '.pools[0].error.code')" = AuthFailure.SecretIdNotFound

# 7. Temporary credentials: the session token travels as X-TC-Token.
emu_post credentials '{"secretId":"AKIDtemporary0000000000000000000001","secretKey":"tempKeyMustNotLeak99","token":"sessionTokenMustNotLeak77"}' >/dev/null
TENCENTCLOUD_SECRET_ID=AKIDtemporary0000000000000000000001 TENCENTCLOUD_SECRET_KEY=tempKeyMustNotLeak99 \
	TENCENTCLOUD_SESSION_TOKEN=sessionTokenMustNotLeak77 dry -f "$E2E_TMP/mine.yaml" -o json
check "session token accepted" test "$(json '.pools[0].observed')" = 0
TENCENTCLOUD_SECRET_ID=AKIDtemporary0000000000000000000001 TENCENTCLOUD_SECRET_KEY=tempKeyMustNotLeak99 \
	dry -f "$E2E_TMP/mine.yaml" -o json
check "missing session token: AuthFailure.TokenFailure" test "$(json '.pools[0].error.code')" = AuthFailure.TokenFailure

# 8. Credentials from a Secret document referenced by credentialsSecretRef.
{
	cat <<YAML
apiVersion: v1
kind: Secret
metadata: {name: tc-creds, namespace: default}
data:
  secretId: $(printf %s "$EMU_SECRET_ID" | base64 -w0)
  secretKey: $(printf %s "$EMU_SECRET_KEY" | base64 -w0)
---
YAML
	pool_manifest mine default 1 3 "  credentialsSecretRef: {name: tc-creds}"
} >"$E2E_TMP/secretref.yaml"
env -u TENCENTCLOUD_SECRET_ID -u TENCENTCLOUD_SECRET_KEY "$SPOTPOOL_BIN" dry-run -f "$E2E_TMP/secretref.yaml" -o json >"$OUT" 2>&1
check "credentialsSecretRef resolved from a Secret in the files" test "$(json '.pools[0].credentials')" = "secret (from the given files)"

# 8b. A Secret that cannot be used is told precisely (exit 1, nothing called).
pool_manifest mine default 1 3 "  credentialsSecretRef: {name: tc-creds}" >"$E2E_TMP/ref.yaml"
secret_doc() { printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: tc-creds, namespace: default}\n%b' "$1"; }
id64=$(printf %s "$EMU_SECRET_ID" | base64 -w0) key64=$(printf %s "$EMU_SECRET_KEY" | base64 -w0)
before=$(emu_get journal | jq length)
nocreds() { env -u TENCENTCLOUD_SECRET_ID -u TENCENTCLOUD_SECRET_KEY "$SPOTPOOL_BIN" dry-run "$@" >"$OUT" 2>&1; }
secret_case() { # NAME SECRET-BODY WANT
	secret_doc "$2" >"$E2E_TMP/secret.yaml"
	nocreds -f "$E2E_TMP/ref.yaml" -f "$E2E_TMP/secret.yaml"
	local rc=$?
	if [[ $rc == 1 ]] && grep -qF -- "$3" "$OUT" && grep -qF "ref.yaml: document 1 (mine): spec.credentialsSecretRef: " "$OUT"; then
		pass "Secret $1: exit 1: $3"
	else
		fail "Secret $1" "rc=$rc" "$(cat "$OUT")"
	fi
}
nocreds -f "$E2E_TMP/ref.yaml"
rc=$?
check "Secret missing: exit 1, names default/tc-creds and says where dry-run looks" bash -c "[[ $rc == 1 ]] &&
	grep -qF 'spec.credentialsSecretRef: Secret default/tc-creds is not among the given files (dry-run reads Secrets only from -f files, never from a cluster)' '$OUT'"
secret_case "key absent" "data:\n  secretId: $id64\n" \
	"Secret default/tc-creds ($E2E_TMP/secret.yaml, document 1): key \"secretKey\" is absent (keys present: secretId)"
secret_case "key empty" "data:\n  secretId: $id64\n  secretKey: \"\"\n" \
	"Secret default/tc-creds ($E2E_TMP/secret.yaml, line 6): key \"secretKey\" is empty"
secret_case "not base64" "data:\n  secretId: \"not base64!\"\n  secretKey: $key64\n" \
	"Secret default/tc-creds ($E2E_TMP/secret.yaml, line 5): data.secretId: not valid base64"
secret_case "stringData key empty" "stringData:\n  secretId: \"\"\n  secretKey: x\n" 'key "secretId" is empty'
check "no secret value in those messages" no_secret_in "$OUT"
# Not readable: the file holding the Secret cannot be opened. As root it is run as nobody,
# which may reach neither the checkout nor $E2E_TMP (a clone in root's 0700 home, mktemp's
# 0700 directories): so the binary and both files are copied into a fresh 0755 directory
# under /tmp (not $TMPDIR, which may be private too), the Secret's file root's and 0600.
perm=$(mktemp -d /tmp/spotpool-e2e-perm.XXXXXX)
trap 'rm -rf "$perm"; cleanup' EXIT
cp "$SPOTPOOL_BIN" "$perm/spotpool" && cp "$E2E_TMP/ref.yaml" "$perm/" &&
	secret_doc "data:\n  secretId: $id64\n  secretKey: $key64\n" >"$perm/secret.yaml"
chmod 755 "$perm" "$perm/spotpool" && chmod 644 "$perm/ref.yaml" && chmod 600 "$perm/secret.yaml"
as_user=()
if [[ $(id -u) == 0 ]]; then as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups); else chmod 000 "$perm/secret.yaml"; fi
(cd "$perm" && "${as_user[@]}" env -u TENCENTCLOUD_SECRET_ID -u TENCENTCLOUD_SECRET_KEY "$perm/spotpool" dry-run \
	-f "$perm/ref.yaml" -f "$perm/secret.yaml") >"$OUT" 2>&1
rc=$?
check "Secret file not readable: exit 1, names the file and the reason" \
	bash -c "[[ $rc == 1 ]] && grep -qF '$perm/secret.yaml: Permission denied' '$OUT'"
rm -rf "$perm"
trap cleanup EXIT
check "no API call was made for any unusable Secret" test "$(emu_get journal | jq length)" = "$before"
# Not among the files, but credentials in the environment: used, and said so.
"$SPOTPOOL_BIN" dry-run -f "$E2E_TMP/ref.yaml" -o json >"$OUT" 2>"$E2E_TMP/err"
rc=$?
check "Secret not among the files, environment set: exit 0, uses the environment and says so" \
	bash -c "[[ $rc == 0 && \$(jq -r '.pools[0].credentials' '$OUT') == environment* ]] &&
		grep -qF 'note: default/mine: Secret default/tc-creds is not among the given files; using TENCENTCLOUD_SECRET_ID' '$E2E_TMP/err'"

# 9. Faults: throttling and 5xx are retried; persistent malformed replies are reported.
emu_post fault '{"action":"DescribeInstances","errorCode":"RequestLimitExceeded","times":1}' >/dev/null
emu_post fault '{"action":"DescribeInstances","httpStatus":503,"times":1}' >/dev/null
check "one throttle and one 503 are retried transparently" dry -f "$E2E_TMP/mine.yaml" -o json
emu_post fault '{"action":"DescribeInstances","malformed":true,"times":3}' >/dev/null
dry -f "$E2E_TMP/mine.yaml" -o json
rc=$?
check "three malformed replies: error reported, exit 3" test "$rc:$(json '.pools[0].error.message' | grep -c malformed)" = 3:1
emu_post throttle '{"action":"DescribeInstances","perSecond":0}' >/dev/null
dry -f "$E2E_TMP/mine.yaml" -o json
check "persistent throttling classified as throttled" test "$(json '.pools[0].error.class')" = throttled
emu_post throttle '{"action":"DescribeInstances","perSecond":null}' >/dev/null
emu_post fault '{"action":"DescribeInstances","latencyMs":3000,"times":3}' >/dev/null
start=$SECONDS
dry -f "$E2E_TMP/mine.yaml" -o json --timeout 1
check "a slow API times out (1 s timeout, 3 attempts) within 10 s" test $((SECONDS - start)) -lt 10 -a "$(json '.pools[0].error.class')" = transient
emu_post fault '{"clear":true}' >/dev/null

# 10. Bad input: clear error naming file, document and field; no API call at all.
before=$(emu_get journal | jq length)
for bad in 'minimum: 3|maximum: 1|spec.minimum: 3 is greater than spec.maximum 1' \
	'minimum: "abc"|maximum: 1|spec.minimum: must be an integer, got string "abc"' \
	'minimum: 1|maximum: 2\n  unknownField: 1|spec.unknownField: unknown field'; do
	IFS='|' read -r min max want <<<"$bad"
	printf 'apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata: {name: bad}\nspec:\n  region: ap-singapore\n  availabilityZone: ap-singapore-2\n  instanceType: GN7.2XLARGE32\n  imageId: img-1\n  %s\n  %b\n' \
		"$min" "$max" >"$E2E_TMP/bad.yaml"
	dry -f "$E2E_TMP/bad.yaml"
	rc=$?
	if [[ $rc == 1 ]] && grep -qF "$E2E_TMP/bad.yaml: document 1 (bad): $want (line " "$OUT"; then
		pass "rejected with exit 1: $want"
	else
		fail "bad manifest: $want" "rc=$rc" "$(cat "$OUT")"
	fi
done
printf 'spec: [unclosed\n' >"$E2E_TMP/garbage.yaml"
dry -f "$E2E_TMP/garbage.yaml"
rc=$?
check "garbage YAML: exit 1 ($rc), names the file and line" \
	bash -c "[[ $rc == 1 ]] && grep -q 'garbage.yaml: line 2: invalid YAML' '$OUT'"
dry -f /nonexistent.yaml
rc=$?
check "missing file: exit 1 ($rc) with the path" bash -c "[[ $rc == 1 ]] && grep -q '/nonexistent.yaml: No such file' '$OUT'"

# Every problem of every document, each with file, document, name, field and line.
{
	pool_manifest spotpool-a default 1 2 "  replicas: 5"
	echo ---
	pool_manifest spotpool-b default -1 abc "  bogusField: 1"
	echo ---
	pool_manifest spotpool-c default 1 3
} >"$E2E_TMP/multi.yaml"
dry -f "$E2E_TMP/multi.yaml" -f "$E2E_TMP/garbage.yaml"
rc=$?
m=$E2E_TMP/multi.yaml
for want in "$m: document 1 (spotpool-a): spec.replicas: 5 is outside [minimum 1, maximum 2] (line 13)" \
	"$m: document 2 (spotpool-b): spec.bogusField: unknown field (line 27)" \
	"$m: document 2 (spotpool-b): spec.minimum: must be between 0 and 1000, got -1 (line 25)" \
	"$m: document 2 (spotpool-b): spec.maximum: must be an integer, got string \"abc\" (line 26)" \
	"garbage.yaml: line 2: invalid YAML" "5 problem(s) found; nothing was called"; do
	check "all errors reported: $want" grep -qF -- "$want" "$OUT"
done
check "several bad documents: exit 1, the valid one is not dry-run either" \
	bash -c "[[ $rc == 1 ]] && ! grep -q spotpool-c '$OUT'"

# Input caps: 300,000 keys is rejected at once, naming the file, line and limit; a file
# just under the key cap is read (linear time: about 1 s on the 2-core machine, 5 s
# allowed on a loaded one: a read quadratic in the keys would take far longer); more than 4 MiB
# or 64 levels is rejected.
elapsed_ms() { local t0=$(date +%s%N); "$@"; local rc=$?; ELAPSED_MS=$((($(date +%s%N) - t0) / 1000000)); return $rc; }
keys_manifest() { # NAME N: a Spotpool (min > max, so no call) with N annotations in one flow mapping
	printf 'apiVersion: devops.jokerbai.com/v1\nkind: Spotpool\nmetadata:\n  name: %s\n  annotations: {' "$1"
	seq -s, -f 'k%.0f: v' 0 $(($2 - 1)) | tr -d '\n'
	printf '}\nspec:\n  region: ap-singapore\n  availabilityZone: ap-singapore-2\n  instanceType: GN7.2XLARGE32\n'
	printf '  imageId: img-1\n  minimum: 3\n  maximum: 1\n'
}
keys_manifest k300k 300000 >"$E2E_TMP/keys300k.yaml"
elapsed_ms dry -f "$E2E_TMP/keys300k.yaml"
rc=$?
if [[ $rc == 1 && $ELAPSED_MS -lt 5000 ]] &&
	grep -qF "keys300k.yaml: line 5: more than 100000 keys and list items (the limit per file)" "$OUT"; then
	pass "300,000 keys ($(stat -c %s "$E2E_TMP/keys300k.yaml") bytes): rejected in ${ELAPSED_MS} ms, exit 1, names file, line and limit"
else
	fail "300,000 keys" "rc=$rc, ${ELAPSED_MS} ms" "$(head -c 600 "$OUT")"
fi
keys_manifest k99k 99980 >"$E2E_TMP/keys99k.yaml"
elapsed_ms dry -f "$E2E_TMP/keys99k.yaml"
rc=$?
if [[ $rc == 1 && $ELAPSED_MS -lt 5000 ]] &&
	grep -qF "keys99k.yaml: document 1 (k99k): spec.minimum: 3 is greater than spec.maximum 1 (line 11)" "$OUT"; then
	pass "99,980 keys: read and validated in ${ELAPSED_MS} ms"
else
	fail "99,980 keys" "rc=$rc, ${ELAPSED_MS} ms" "$(head -c 600 "$OUT")"
fi
{ pool_manifest big-file default 1 2; for i in $(seq 1 $((4 * 1024 * 1024 / 64 + 1))); do
	printf '# %061d\n' "$i"; done; } >"$E2E_TMP/huge.yaml"
elapsed_ms dry -f "$E2E_TMP/huge.yaml"
rc=$?
check "a file over 4 MiB: rejected in ${ELAPSED_MS} ms naming the file and the limit" \
	bash -c "[[ $rc == 1 && $ELAPSED_MS -lt 5000 ]] && grep -qF 'huge.yaml: larger than 4 MiB (the limit per file)' '$OUT'"
python3 -c "print('? ' + 'k' * 1000000 + '\n: {' + ', '.join('a%d: 1' % i for i in range(99990)) + '}')" >"$E2E_TMP/longkey.yaml"
elapsed_ms dry -f "$E2E_TMP/longkey.yaml"
rc=$?
check "a 1 MB key above 99,990 keys: read in ${ELAPSED_MS} ms (paths are not copied per key)" \
	bash -c "[[ $rc == 1 && $ELAPSED_MS -lt 5000 ]] && grep -qF 'no Spotpool documents' '$OUT'"
python3 -c "print('a:\n  b: ' + '[' * 70 + ']' * 70)" >"$E2E_TMP/deep.yaml"
dry -f "$E2E_TMP/deep.yaml"
rc=$?
check "more than 64 levels of nesting: rejected naming the line" \
	bash -c "[[ $rc == 1 ]] && grep -qF 'deep.yaml: line 2: nesting deeper than 64 levels' '$OUT'"
check "no API call was made for any bad input" test "$(emu_get journal | jq length)" = "$before"

# 11. Standard input, several documents, usage errors.
cat "$E2E_TMP/mine.yaml" <(echo ---) "$E2E_TMP/big.yaml" | "$SPOTPOOL_BIN" dry-run -f - -o json >"$OUT" 2>&1
check "two documents from stdin" test "$(json '.pools | length')" = 2
"$SPOTPOOL_BIN" dry-run >"$OUT" 2>&1
check "no -f: usage error exit 2" test $? = 2
"$SPOTPOOL_BIN" dry-run -f x -o yaml >"$OUT" 2>&1
rc=$?
check "bad -o: usage error exit 2 ($rc) naming --output" \
	bash -c "[[ $rc == 2 ]] && grep -q -- '--output: must be table or json' '$OUT'"
check "spotpool --help exits 0" "$SPOTPOOL_BIN" --help
check "spotpool version" bash -c "'$SPOTPOOL_BIN' version | grep -q '^spotpool [0-9]'"

# 12. One planner: for the same manifest and emulator state, `spotpool dry-run` prints
# the action list `spotpool run --dry-run` logs as "plan:" lines on its first pass of the
# pool (pass_action_line's form). Below minimum (a launch check), above maximum (what a
# terminate would take), at size with another cluster's instance (not counted: nothing
# but the status).
start_cluster
CMP_CLUSTER=e2e-cmp
tagged() { # COUNT POOL [CLUSTER]
	local tags="{\"Key\":\"$POOL_TAG\",\"Value\":\"default/$2\"}"
	[[ -z ${3:-} ]] || tags+=",{\"Key\":\"spotpool.jokerbai.com/cluster\",\"Value\":\"$3\"}"
	emu_post instances "{\"region\":\"ap-singapore\",\"zone\":\"ap-singapore-2\",\"instanceType\":\"GN7.2XLARGE32\",\"count\":$1,\"tags\":[$tags]}" >/dev/null
}
tagged 3 cmp-above "$CMP_CLUSTER"
tagged 2 cmp-atsize "$CMP_CLUSTER"
tagged 1 cmp-atsize other-cluster
{
	pool_manifest cmp-below default 2 3
	echo ---
	pool_manifest cmp-above default 0 1
	echo ---
	pool_manifest cmp-atsize default 1 2
} >"$E2E_TMP/cmp.yaml"
"$SPOTPOOL_BIN" dry-run --cluster-name "$CMP_CLUSTER" -f "$E2E_TMP/cmp.yaml" -o json >"$E2E_TMP/cmp.json" 2>"$E2E_TMP/cmp.err"
check "dry-run of the three pools: exit 0" test $? = 0
kubectl apply -f "$E2E_TMP/cmp.yaml" >/dev/null
start_controller cmp --dry-run --cluster-name "$CMP_CLUSTER" --log-format json
# The first pass's list: the pool's "plan:" lines up to its first requeue.
first_plan() {
	jq -r --arg pool "$1" 'select(.action == "plan" and .pool == $pool) | .msg | sub("^[^:]*: plan: "; "")' \
		"$E2E_TMP/cmp.log" 2>/dev/null | awk '{ print } /^requeue / { exit }'
}
for pool in cmp-below cmp-above cmp-atsize; do
	wait_for 30 bash -c "$(declare -f first_plan); E2E_TMP='$E2E_TMP' first_plan $pool | grep -q '^requeue '"
	first_plan "$pool" >"$E2E_TMP/$pool.controller"
	jq -r --arg pool "$pool" '.pools[] | select(.name == $pool) | .actions[]' "$E2E_TMP/cmp.json" >"$E2E_TMP/$pool.cli"
	if [[ -s $E2E_TMP/$pool.cli ]] && diff "$E2E_TMP/$pool.cli" "$E2E_TMP/$pool.controller" >"$E2E_TMP/$pool.diff"; then
		pass "$pool: dry-run and run --dry-run plan the same $(wc -l <"$E2E_TMP/$pool.cli") action(s): $(paste -sd';' "$E2E_TMP/$pool.cli")"
	else
		fail "$pool: the two dry runs plan differently" "$(cat "$E2E_TMP/$pool.diff")"
	fi
done
check "below minimum: a launch check of 2" grep -qx 'check-launch count=2 ap-singapore-2/GN7.2XLARGE32' "$E2E_TMP/cmp-below.cli"
check "above maximum: 2 of the 3 would be terminated" grep -qE '^would-terminate scale-down ins-[^,]+,ins-[^,]+$' "$E2E_TMP/cmp-above.cli"
check "at size (another cluster's instance not counted): no launch, no terminate" \
	bash -c "! grep -qE 'launch|terminate' '$E2E_TMP/cmp-atsize.cli' && grep -qx 'write-status' '$E2E_TMP/cmp-atsize.cli'"
check "the table prints the same lines" bash -c "'$SPOTPOOL_BIN' dry-run --cluster-name $CMP_CLUSTER -f '$E2E_TMP/cmp.yaml' |
	grep -qx '  plan: check-launch count=2 ap-singapore-2/GN7.2XLARGE32'"
stop_controller "$CTL_PID"
check "neither dry run launched or terminated anything" test "$(mutations)" = 0

check "no secret in the emulator's log" no_secret_in "$E2E_TMP/emulator.log" "$E2E_TMP/journal.jsonl"
check "no temporary key or token anywhere" bash -c "! grep -rqE 'tempKeyMustNotLeak99|sessionTokenMustNotLeak77' '$E2E_TMP'"
finish
