#!/usr/bin/env bash
# Churn (issue 17): POOLS Spotpools (default 300) created and deleted, twice, leave the
# controller's threads and private memory where they started, and nothing live in the
# cloud. make check runs 300; `make bench` (scripts/bench, scenario churn) runs it with
# POOLS=1000 for the figures of BENCHMARKS.md ("Churn"), its checks included.
#  - Cold baseline: the controller idle after a warm-up round of WARM pools of every kind
#    below (created, seen, deleted), so that what a first use allocates once (TLS
#    contexts, the inventory's janitor thread, metrics families) is not counted as churn.
#  - A churn: the pools, in 10 namespaces, by one `kubectl create` per namespace at once: most
#    on one Secret per namespace holding the controller's own SecretId (one shared
#    poller), some with their own Secret and SecretId, some with inline credentials of
#    their own, some on the controller's environment credentials; each own SecretId is a
#    poller that comes with its pool and goes with it (about 170). Every 50th has
#    minimum 1, so instances are launched and must be terminated on deletion; the rest
#    minimum 0 and a small maximum, which keeps the emulator fast. Every pool seen
#    (.status.observedGeneration written), then one DELETE of the collection per
#    namespace, every pool gone (finalizer released), no instance live, and the
#    controller idle: threads back, then memory polled until it is back (the main loop
#    trims malloc's heaps at each resync).
#  - Asserted: after each churn, threads and private memory within 10% of the cold
#    baseline (memory within five resync periods of the pools' deletion: about two are
#    needed, see churn()). 10% of the baseline is about 270 KiB: at 300 pools, what
#    leaves 0.9 KiB per pool fails it (what issue 17 fixed left 1.7 to 13 KiB per pool). What a churn used to leave was not a leak but small chunks allocated at
#    its high-water mark and still live, each pinning the page around it where
#    malloc_trim could not give it back: redaction entries and rate buckets of pools
#    and SecretIds gone, HTTP/2 header tables and option copies of idle clients, tables
#    shrunk in place (BENCHMARKS.md, "Churn"). Those go now, so memory comes back.
# Threads from /proc/PID/task; private memory is Pss_Anon from /proc/PID/smaps_rollup,
# the definition of test_pollers and BENCHMARKS.md (Private_Clean + Private_Dirty,
# printed next to it, also counts file pages that are private only while no other
# process maps the same library or binary). The figures in BENCHMARKS.md come from here.
source "$(dirname "$0")/lib.sh"

POOLS=${POOLS:-300}
WARM=${WARM:-40}
NAMESPACES=10
started=$SECONDS

# Own SecretIds: every 10th pool has its own Secret, every 20th (offset 5) inline
# credentials of its own, every 50th (offset 3) its own Secret and minimum 1.
own_id() { printf 'AKIDchurnE2E%06d00000000000000000' "$1"; }
own_key() { printf 'churnKeyMustNotLeak%06d' "$1"; }
own_secret() { (($1 % 10 == 0 || $1 % 50 == 3)); }
own_inline() { (($1 % 20 == 5)); }
creds=$E2E_TMP/credentials.json
for ((i = 0; i < POOLS + WARM; i++)); do
	if own_secret "$i" || own_inline "$i"; then
		printf '{"secretId":"%s","secretKey":"%s"}\n' "$(own_id "$i")" "$(own_key "$i")"
	fi
done | jq -s ".+[{secretId: \"$EMU_SECRET_ID\", secretKey: \"$EMU_SECRET_KEY\"}]" >"$creds"
start_emulator --quiet --credentials-file "$creds"
start_cluster
export TENCENTCLOUD_SECRET_ID=$EMU_SECRET_ID TENCENTCLOUD_SECRET_KEY=$EMU_SECRET_KEY
# A resync of 10 s: even 1,000 pools still pass about every 10 s while they exist.
RESYNC=10
start_controller ctl --resync "$RESYNC"

private() { awk '/^Private_(Clean|Dirty):/ {n += $2} END {print n}' "/proc/$CTL_PID/smaps_rollup"; }
# settled_memory: Pss_Anon at rest. First until two samples 2 s apart differ by less
# than 64 KiB (at most 20 s), then the least of the samples over one more resync period:
# a pass, a sweep, a listing or a watch renewal in flight holds a few buffers for a
# moment, and those are not what a churn leaves. The cold baseline is taken the same way.
settled_memory() {
	local a b i least
	a=$(pss_anon)
	for i in $(seq 10); do
		sleep 2
		b=$(pss_anon)
		((b - a < 64 && a - b < 64)) && break
		a=$b
	done
	least=$b
	for i in $(seq $((RESYNC / 2))); do
		sleep 2
		b=$(pss_anon)
		((b >= least)) || least=$b
	done
	echo "$least"
}

# pools FIRST COUNT NS: the manifest of those of pools FIRST .. FIRST+COUNT-1 in
# namespace churn-NS; secrets FIRST COUNT: their own Secrets (created once: every round
# uses the same ones).
credentials_of() { # I: a credentialsSecretRef, inline credentials, or none (environment)
	if own_secret "$1"; then
		echo "  credentialsSecretRef: {name: own-$1}"
	elif own_inline "$1"; then
		printf '  secretId: %s\n  secretKey: %s\n' "$(own_id "$1")" "$(own_key "$1")"
	elif (($1 % 10 != 7)); then
		echo "  credentialsSecretRef: {name: shared}"
	fi
}
pools() {
	local i min max
	for ((i = $1; i < $1 + $2; i++)); do
		((i % NAMESPACES == $3)) || continue
		min=0 max=$((i % 3))
		((i % 50 == 3)) && min=1 max=2
		pool_manifest "p$i" "churn-$((i % NAMESPACES))" "$min" "$max" "$(credentials_of "$i")"
		echo "---"
	done
}
secrets() {
	local i
	for ((i = $1; i < $1 + $2; i++)); do
		own_secret "$i" || continue
		printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: own-%s, namespace: churn-%s}\nstringData: {secretId: "%s", secretKey: "%s"}\n---\n' \
			"$i" "$((i % NAMESPACES))" "$(own_id "$i")" "$(own_key "$i")"
	done
}
# seen N: N pools, each with its current generation observed in its status.
seen() {
	[[ $(kubectl get sp -A -o json | jq '[.items[] | select(.status.observedGeneration == .metadata.generation)] | length') == "$1" ]]
}
none_left() { [[ -z $(kubectl get sp -A -o name 2>/dev/null) ]]; }
live() { emu_get "stats?tagKey=spotpool.jokerbai.com/pool" | jq .live; }
no_live() { [[ $(live) == 0 ]]; }
launched() { emu_get "stats?tagKey=spotpool.jokerbai.com/pool" | jq .launched; }
# round FIRST COUNT: creates the pools, waits until all are seen, deletes them all and
# waits until they are gone. Sets PEAK_THREADS and PEAK_PSS (sampled while they exist).
round() {
	local t0=$SECONDS n pid failed=0 pids=()
	# A kubectl per namespace at once: one kubectl sends its objects one after the other
	# (a minute for 1,000 beside other tests on two cores); the apiserver takes several.
	for ((n = 0; n < NAMESPACES; n++)); do
		# (kubectl refuses an empty file: a round smaller than NAMESPACES leaves some)
		{ pools "$1" "$2" "$n" >"$E2E_TMP/pools-$1-$n.yaml" && { [[ ! -s $E2E_TMP/pools-$1-$n.yaml ]] ||
			kubectl create -f "$E2E_TMP/pools-$1-$n.yaml" >/dev/null; }; } &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || failed=1
	done
	((failed == 0)) || { fail "kubectl create of $2 pools"; return; }
	echo "# $2 pools created in $((SECONDS - t0)) s"
	check "round of $2 pools: every pool seen by the controller" wait_for 120 seen "$2"
	echo "# $2 pools seen at $((SECONDS - t0)) s; $(live) instances live"
	PEAK_THREADS=$(threads) PEAK_PSS=$(pss_anon) PEAK_PRIVATE=$(private)
	# One DELETE of the collection per namespace (kubectl delete --all sends one per pool),
	# all at once as the creations.
	pids=()
	for ((n = 0; n < NAMESPACES; n++)); do
		kubectl delete --raw "/apis/devops.jokerbai.com/v1/namespaces/churn-$n/spotpools" >/dev/null &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || failed=1
	done
	((failed == 0)) || fail "DELETE of the $2 pools' collections"
	echo "# deletion sent at $((SECONDS - t0)) s"
	check "round of $2 pools: every pool gone (finalizers released)" wait_for 120 none_left
	check "round of $2 pools: no instance left live in the emulator" wait_for 10 no_live
	echo "# round of $2 pools took $((SECONDS - t0)) s; $(launched) instances launched so far"
}

for ((n = 0; n < NAMESPACES; n++)); do
	kubectl create namespace "churn-$n" >/dev/null
	printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: shared, namespace: churn-%s}\nstringData: {secretId: "%s", secretKey: "%s"}\n' \
		"$n" "$EMU_SECRET_ID" "$EMU_SECRET_KEY" | kubectl apply -f - >/dev/null
done
secrets 0 $((POOLS + WARM)) | kubectl create -f - >/dev/null

# The controller started itself again without glibc's per-thread malloc caches
# (src/main.c, restart_without_tcache), and kept its PID doing so.
check "the controller runs with glibc.malloc.tcache_count=0" \
	grep -qz '^GLIBC_TUNABLES=.*glibc.malloc.tcache_count=0' "/proc/$CTL_PID/environ"
check "its process name is still spotpool ($(cat "/proc/$CTL_PID/comm"))" test "$(cat "/proc/$CTL_PID/comm")" = spotpool

# --- the cold baseline: idle after a small warm-up -------------------------------
round "$POOLS" "$WARM"
sleep 3
COLD_THREADS=$(steady_threads) COLD_PSS=$(settled_memory)
echo "# cold baseline (idle after $WARM pools): $COLD_THREADS threads, Pss_Anon $COLD_PSS kB, Private $(private) kB"

# churn N: one round of POOLS pools, then the idle figures: PEAK_* and AFTER_*. Memory
# comes back at the second resync after the last calls (the main loop trims malloc's
# heaps at each resync, after dropping the rate buckets unused for 10 s: those of the
# last calls go at the second): it is polled (0.2 s) until it is within 10% of the cold
# baseline, for at most five resync periods, instead of a fixed wait; AFTER_PSS is the
# sample that was, or the last one.
churn() {
	local t0
	round 0 "$POOLS"
	t0=$SECONDS
	wait_for 30 threads_back
	AFTER_THREADS=$(steady_threads)
	check "churn $1: threads within 10% of the cold baseline (baseline $COLD_THREADS, peak $PEAK_THREADS, after $AFTER_THREADS)" \
		test $((AFTER_THREADS * 10)) -le $((COLD_THREADS * 11))
	check "churn $1: $POOLS pools had their pollers while they existed ($COLD_THREADS -> $PEAK_THREADS threads)" \
		test "$PEAK_THREADS" -gt $((COLD_THREADS + POOLS / 20))
	# Under AddressSanitizer (make check-asan sets SANITIZER_LOG_DIR) freed memory stays
	# in its quarantine (up to 256 MiB), so memory says nothing there; leaks are its own
	# report.
	if [[ -z ${SANITIZER_LOG_DIR:-} ]]; then
		wait_for $((5 * RESYNC)) memory_back
		check "churn $1: Pss_Anon within 10% of the cold baseline ($COLD_PSS -> peak $PEAK_PSS -> $AFTER_PSS kB, $((SECONDS - t0)) s after the pools were gone)" \
			test $((AFTER_PSS * 10)) -le $((COLD_PSS * 11))
	fi
	echo "# churn $1: peak $PEAK_THREADS threads, Pss_Anon $PEAK_PSS kB, Private $PEAK_PRIVATE kB;" \
		"after $AFTER_THREADS threads, Pss_Anon ${AFTER_PSS:-not measured} kB, Private $(private) kB"
}
threads_back() { (($(threads) * 10 <= COLD_THREADS * 11)); }
memory_back() {
	AFTER_PSS=$(pss_anon)
	((AFTER_PSS * 10 <= COLD_PSS * 11))
}

churn_start=$SECONDS
churn 1
FIRST_PSS=${AFTER_PSS:-not measured}
churn 2
echo "# Pss_Anon: cold $COLD_PSS kB, after the first churn $FIRST_PSS kB, after the second ${AFTER_PSS:-not measured} kB;" \
	"two churns $((SECONDS - churn_start)) s, whole test $((SECONDS - started)) s"
if [[ -n ${SANITIZER_LOG_DIR:-} ]]; then
	echo "# memory not checked under AddressSanitizer (its quarantine holds freed memory)"
fi
check "the pools of minimum 1 launched instances ($(launched))" test "$(launched)" -ge $((2 * POOLS / 50))
check "the controller is still running" kill -0 "$CTL_PID"
finish
