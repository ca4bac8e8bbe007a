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
	[[ -n ${E2E_KEEP:-} ]] || rm -rf "$E2E_TMP"
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
# check NAME COMMAND...: passes when the command succeeds.
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name" "command failed: $*"; fi
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
