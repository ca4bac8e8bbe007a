#!/usr/bin/env bash
# The fault campaign in short: the emulator's fault machinery (tag-index lag and drops,
# id lookups, kill hooks), then a fixed set of seeded fault schedules
# (tests/faults/campaign.py, shortened fault phases) against one real apiserver, one
# `ok`/`not ok` line per seed. The full campaign is `make faults`.
source "$(dirname "$0")/lib.sh"

# Fixed seeds, between them: deletion of a pool mid-launch (7), leader election with
# SIGSTOP of the leader (10, 32), kill hooks before/after RunInstances and after
# TerminateInstances (7, 10, 32, 48), tag-index lag and drops during the faults and
# during deletion, lost replies, invisible launches, 5xx, spec edits, reclaims; and the
# kinds of issue 19: credential rotation (7, 19, 32), Lease deletion (10, 19), a restart
# mid-launch with part of the launch hidden past the grace (10, 19), the leader cut off
# from the apiserver during a slow cloud call (10), a lagging watch and long names (19);
# and of issue 18: a spot notice written again with a moved deadline, as a second
# SpotNotice of a host that is not a Node (7); and of issue 27: far and past deadlines
# (7, 10, 48), an account change (19).
SEEDS=${FAULT_SEEDS:-7,10,19,32,48}
DURATION=${FAULT_DURATION:-12:18}
WITHOUT=${FAULT_WITHOUT-}

if python3 "$E2E_ROOT/tests/faults/test_emulator_faults.py" >"$E2E_TMP/emu-faults.log" 2>&1; then
	pass "emulator: tag-index lag/drops, id lookups, kill hooks ($(tail -3 "$E2E_TMP/emu-faults.log" | grep -o 'Ran [0-9]* tests'))"
else
	fail "emulator fault unit tests" "$(grep -E '^(FAIL|ERROR|AssertionError)' "$E2E_TMP/emu-faults.log" | head -10)"
fi

python3 "$E2E_ROOT/tests/faults/campaign.py" --seeds "$SEEDS" --jobs "${FAULT_JOBS:-4}" \
	--duration "$DURATION" ${WITHOUT:+--without "$WITHOUT"} --bin "$SPOTPOOL_BIN" --workdir "$E2E_TMP/faults" \
	>"$E2E_TMP/faults.out" 2>&1
rc=$?
IFS=, read -ra seeds <<<"$SEEDS"
for seed in "${seeds[@]}"; do
	line=$(grep -m1 "^seed $seed: " "$E2E_TMP/faults.out")
	if [[ $line == "seed $seed: ok "* ]]; then
		pass "fault schedule ${line%% pools=*}"
	elif [[ -n $line ]]; then
		# This seed's violation lines and their evidence (indented under them).
		mapfile -t details < <(awk -v s="seed $seed violates" 'index($0, s) {p = 1; print; next}
			/^  (seed [0-9]+ violates|replay)/ {p = 0} p && /^    / {print}' "$E2E_TMP/faults.out" | head -30)
		fail "fault schedule ${line%% pools=*}" "${line#* pools=}" "${details[@]}" \
			"replay: make faults SEED=$seed DURATION=$DURATION${WITHOUT:+ WITHOUT=$WITHOUT}"
	else
		fail "fault schedule seed $seed did not report" "$(tail -20 "$E2E_TMP/faults.out")"
	fi
done
grep -q "^faults: " "$E2E_TMP/faults.out" || fail "campaign driver exited $rc without a summary" "$(tail -20 "$E2E_TMP/faults.out")"
echo "# $(grep '^faults: .*schedules' "$E2E_TMP/faults.out")"
finish
