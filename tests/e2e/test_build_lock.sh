#!/usr/bin/env bash
# scripts/k8s-build and scripts/helm-build run twice at once against the same empty
# cache (two first runs, e.g. two test suites): both succeed, exactly one builds while
# the other waits on the lock and then finds the binaries built, no temporary file is
# left, and the binaries work. Go's own module and build caches are warm (the suite's
# k8s-build, and helm-build run first here), so each build is a link of a few seconds
# instead of the minutes of a cold one.
source "$(dirname "$0")/lib.sh"

if ! { "$E2E_ROOT/scripts/k8s-build" && "$E2E_ROOT/scripts/helm-build"; } >/dev/null 2>"$E2E_TMP/warm.log"; then
	echo "warming Go's caches failed"
	cat "$E2E_TMP/warm.log"
	exit 1
fi
export SPOTPOOL_CACHE=$E2E_TMP/cache # fresh and empty

# twice SCRIPT: runs it twice at once; output in $E2E_TMP/SCRIPT.{1,2}.{out,err}.
twice() {
	local s=$1 p1 p2 rc1 rc2
	"$E2E_ROOT/scripts/$s" >"$E2E_TMP/$s.1.out" 2>"$E2E_TMP/$s.1.err" &
	p1=$!
	"$E2E_ROOT/scripts/$s" >"$E2E_TMP/$s.2.out" 2>"$E2E_TMP/$s.2.err" &
	p2=$!
	wait "$p1"
	rc1=$?
	wait "$p2"
	rc2=$?
	check "$s twice at once on an empty cache: both exit 0 ($rc1, $rc2)" test "$rc1:$rc2" = 0:0
	sed "s/^/# $s 1: /" "$E2E_TMP/$s.1.err"
	sed "s/^/# $s 2: /" "$E2E_TMP/$s.2.err"
	check "$s: both print the same bin dir in the cache" \
		bash -c "[[ \$(cat '$E2E_TMP/$s.1.out') == '$SPOTPOOL_CACHE'/*/bin && \$(cat '$E2E_TMP/$s.1.out') == \$(cat '$E2E_TMP/$s.2.out') ]]"
	# Without the lock both would build (and, with fixed temporary names, collide).
	check "$s: exactly one run built, the other found the binaries built" \
		test "$(grep -l ': built .* in [0-9]* s' "$E2E_TMP/$s".[12].err | wc -l):$(grep -l 'already built' "$E2E_TMP/$s".[12].err | wc -l)" = 1:1
}
no_leftovers() { # nothing but bin/, build dirs, binaries and lock files
	local left
	left=$(find "$SPOTPOOL_CACHE" -name '*.tmp*' -o -name '*.build.*')
	[[ -z $left ]] || { echo "left behind: $left"; return 1; }
}

twice k8s-build
bin=$(cat "$E2E_TMP/k8s-build.1.out")
check "kube-apiserver works: $("$bin/kube-apiserver" --version 2>&1)" bash -c "'$bin/kube-apiserver' --version | grep -q 'Kubernetes v1\.'"
check "etcd works: $("$bin/etcd" --version 2>&1 | head -1)" bash -c "'$bin/etcd' --version | grep -q 'etcd Version: 3\.'"
check "kube-scheduler works: $("$bin/kube-scheduler" --version 2>&1)" bash -c "'$bin/kube-scheduler' --version | grep -q 'Kubernetes v1\.'"
check "k8s-build left no temporary file" no_leftovers

# A cache from before the scheduler (kube-apiserver and etcd only) gets the scheduler
# added, the others left as they are (same files).
rm "$bin/kube-scheduler"
before=$(stat -c '%n %i %Y' "$bin/kube-apiserver" "$bin/etcd")
"$E2E_ROOT/scripts/k8s-build" >/dev/null 2>"$E2E_TMP/k8s-build.3.err"
rc=$?
sed "s/^/# k8s-build 3: /" "$E2E_TMP/k8s-build.3.err"
check "k8s-build on a cache without kube-scheduler (exit $rc) builds only it" \
	test "$rc:$(grep -o 'built [a-z-]* in' "$E2E_TMP/k8s-build.3.err" | tr '\n' ' ')" = "0:built kube-scheduler in "
check "kube-apiserver and etcd kept as they were" test "$before" = "$(stat -c '%n %i %Y' "$bin/kube-apiserver" "$bin/etcd")"
check "kube-scheduler added: $("$bin/kube-scheduler" --version 2>&1)" bash -c "'$bin/kube-scheduler' --version | grep -q 'Kubernetes v1\.'"

twice helm-build
bin=$(cat "$E2E_TMP/helm-build.1.out")
check "helm works: $("$bin/helm" version --short 2>&1)" bash -c "'$bin/helm' version --short | grep -q '^v3\.'"
check "helm-build left no temporary file" no_leftovers

# A forced rebuild replaces helm by a rename: a reader running it all along never
# finds it missing or half written.
HELM_BUILD_FORCE=1 "$E2E_ROOT/scripts/helm-build" >/dev/null 2>"$E2E_TMP/force.err" &
force=$!
reads=0 bad=0
while kill -0 "$force" 2>/dev/null; do
	"$bin/helm" version --short >/dev/null 2>&1 || bad=$((bad + 1))
	reads=$((reads + 1))
done
wait "$force"
rc=$?
check "forced helm rebuild (exit $rc): helm ran $reads times meanwhile, $bad failed" test "$rc:$bad" = 0:0

# A failed build leaves no scratch dir and releases the lock.
GO=false HELM_BUILD_FORCE=1 "$E2E_ROOT/scripts/helm-build" >/dev/null 2>"$E2E_TMP/fail.err"
rc=$?
check "a failing helm build exits non-zero ($rc)" test "$rc" != 0
check "a failing helm build leaves no temporary file" no_leftovers
lock=$(dirname "$bin").lock # the cache's helm-<version>.lock
check "a failing helm build releases its lock" bash -c "[[ -f '$lock' ]] && flock -n '$lock' true"
finish
