#!/usr/bin/env bash
# The systemd units (the controller's and the notice agent's) and installation:
# `systemd-analyze verify`, the offline security
# rating (2.0 or better), `make install` with DESTDIR, and credentials handed over
# the way LoadCredential= does ($CREDENTIALS_DIRECTORY).
source "$(dirname "$0")/lib.sh"

bindir=$(cd "$(dirname "$SPOTPOOL_BIN")" && pwd)
unit=$E2E_TMP/spotpool.service
sed -e "s|@BINDIR@|$bindir|g" -e "s|@SYSCONFDIR@|/etc|g" "$E2E_ROOT/systemd/spotpool.service.in" >"$unit"
systemd-analyze verify "$unit" >"$E2E_TMP/verify.out" 2>&1
rc=$?
check "systemd-analyze verify passes without warnings" test "$rc:$(grep -c . "$E2E_TMP/verify.out")" = 0:0
systemd-analyze security --offline=yes "$unit" >"$E2E_TMP/security.out" 2>&1
score=$(sed -n 's/.*Overall exposure level for spotpool.service: \([0-9.]*\).*/\1/p' "$E2E_TMP/security.out")
check "systemd-analyze security --offline=yes: exposure ${score:-?} (2.0 or better)" \
	python3 -c "import sys; sys.exit(0 if '$score' and float('$score') <= 2.0 else 1)"
check "Type=notify with a watchdog" bash -c "grep -qx 'Type=notify' '$unit' && grep -q '^WatchdogSec=' '$unit'"

# The notice agent's unit (docs/notice-agent.md#hosts-outside-kubernetes).
agent_unit=$E2E_TMP/spotpool-agent.service
sed -e "s|@BINDIR@|$bindir|g" -e "s|@SYSCONFDIR@|/etc|g" "$E2E_ROOT/systemd/spotpool-agent.service.in" >"$agent_unit"
systemd-analyze verify "$agent_unit" >"$E2E_TMP/verify-agent.out" 2>&1
rc=$?
check "spotpool-agent.service: systemd-analyze verify passes without warnings" test "$rc:$(grep -c . "$E2E_TMP/verify-agent.out")" = 0:0
systemd-analyze security --offline=yes "$agent_unit" >"$E2E_TMP/security-agent.out" 2>&1
score=$(sed -n 's/.*Overall exposure level for spotpool-agent.service: \([0-9.]*\).*/\1/p' "$E2E_TMP/security-agent.out")
check "spotpool-agent.service: security exposure ${score:-?} (2.0 or better)" \
	python3 -c "import sys; sys.exit(0 if '$score' and float('$score') <= 2.0 else 1)"

stage=$E2E_TMP/stage
make -s -C "$E2E_ROOT" install DESTDIR="$stage" BUILD="$(realpath --relative-to="$E2E_ROOT" "$bindir")" >"$E2E_TMP/install.out" 2>&1
check "make install DESTDIR=...: binary, unit, config, CRD" test -x "$stage/usr/local/bin/spotpool" -a \
	-f "$stage/usr/local/lib/systemd/system/spotpool.service" -a -f "$stage/etc/spotpool/spotpool.yaml" -a \
	-f "$stage/usr/local/share/spotpool/spotpool-crd.yaml"
check "installed unit has its paths filled in" bash -c "grep -q '^ExecStart=/usr/local/bin/spotpool run --config /etc/spotpool/spotpool.yaml' '$stage/usr/local/lib/systemd/system/spotpool.service' && ! grep -qE '@(BINDIR|SYSCONFDIR)@' '$stage/usr/local/lib/systemd/system/spotpool.service'"
check "installed agent unit has its paths filled in, and the SpotNotice CRD is installed" bash -c "grep -q '^ExecStart=/usr/local/bin/spotpool agent$' '$stage/usr/local/lib/systemd/system/spotpool-agent.service' &&
	grep -q '^LoadCredential=kubeconfig:/etc/spotpool/agent-kubeconfig$' '$stage/usr/local/lib/systemd/system/spotpool-agent.service' &&
	! grep -qE '@(BINDIR|SYSCONFDIR)@' '$stage/usr/local/lib/systemd/system/spotpool-agent.service' && test -f '$stage/usr/local/share/spotpool/spotnotice-crd.yaml'"
echo "workers: 7" >"$stage/etc/spotpool/spotpool.yaml"
make -s -C "$E2E_ROOT" install DESTDIR="$stage" BUILD="$(realpath --relative-to="$E2E_ROOT" "$bindir")" >/dev/null 2>&1
check "make install keeps an existing configuration" grep -qx "workers: 7" "$stage/etc/spotpool/spotpool.yaml"
check "the shipped configuration is valid and equals the defaults" bash -c \
	"KUBECONFIG=/dev/null '$SPOTPOOL_BIN' run --config '$E2E_ROOT/conf/spotpool.yaml' --kubeconfig '$E2E_ROOT/tests/e2e/fixtures/kubeconfig' --check-config | grep -q '^workers: 2  # $E2E_ROOT/conf/spotpool.yaml'"

# Credentials as LoadCredential= hands them over.
creddir=$E2E_TMP/credentials
mkdir -p "$creddir"
cp "$E2E_ROOT/tests/e2e/fixtures/kubeconfig" "$creddir/kubeconfig"
printf '{}' >"$creddir/tencentcloud"
env -u TENCENTCLOUD_SECRET_ID -u TENCENTCLOUD_SECRET_KEY CREDENTIALS_DIRECTORY=$creddir \
	"$SPOTPOOL_BIN" run --config /dev/null --check-config >"$E2E_TMP/out" 2>&1
check "kubeconfig taken from \$CREDENTIALS_DIRECTORY" grep -q "from $creddir/kubeconfig" "$E2E_TMP/out"
check "an empty tencentcloud credential ({}) means no default credentials, not an error" \
	grep -q "default credentials: none" "$E2E_TMP/out"
printf 'secretId: AKIDfromcredential\nsecretKey: KeyFromCredentialMustNotLeak\n' >"$creddir/tencentcloud"
CREDENTIALS_DIRECTORY=$creddir "$SPOTPOOL_BIN" run --config /dev/null --check-config >"$E2E_TMP/out" 2>&1
check "tencentcloud credential used as the default credentials" grep -q "default credentials: credentials file" "$E2E_TMP/out"
check "its key is not printed" bash -c "! grep -q KeyFromCredentialMustNotLeak '$E2E_TMP/out'"
printf 'secretId: x\nsecretKy: y\n' >"$creddir/tencentcloud"
CREDENTIALS_DIRECTORY=$creddir "$SPOTPOOL_BIN" run --config /dev/null --check-config >"$E2E_TMP/out" 2>&1
check "a malformed credential file is an error naming its line and key" grep -q "tencentcloud:2: unknown key \"secretKy\"" "$E2E_TMP/out"
finish
