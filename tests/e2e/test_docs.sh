#!/usr/bin/env bash
# The documentation agrees with the one settings table (src/cfg.c, printed by the hidden
# `spotpool --print-settings-table`): every key, flag and environment variable is in
# spotpool(8), every key in spotpool.yaml(5), every key with its variable and flag in
# conf/spotpool.yaml, every flag in `run --help`; the generated lists of the man pages
# are what `make man` writes; the pages render without warnings and `make install`
# puts them where man finds them; the unit file says what SIGTERM does; the pool example
# carries the bootstrap example as its userData, and the autoscaling example the same
# bootstrap applying its nodeTemplate.
source "$(dirname "$0")/lib.sh"

cd "$E2E_ROOT" || exit 1
table=$E2E_TMP/settings.tsv
check "the settings table prints" bash -c "'$SPOTPOOL_BIN' --print-settings-table tsv >'$table' && test \$(wc -l <'$table') -ge 20"
"$SPOTPOOL_BIN" run --help >"$E2E_TMP/help.txt"

# roff as the generator writes it: '-' is \-.
roff() { printf '%s' "${1//-/\\-}"; }
missing_man8=() missing_man5=() missing_conf=() missing_help=()
while IFS=$'\t' read -r key env flag _arg _default _range _help; do
	grep -qxF ".B $key" man/spotpool.8 || missing_man8+=("key $key")
	[[ $env == - ]] || grep -qF "\\fB$env\\fR" man/spotpool.8 || missing_man8+=("variable $env")
	[[ $flag == - ]] || grep -qF "\\fB$(roff "--$flag")\\fR" man/spotpool.8 || missing_man8+=("flag --$flag")
	grep -qxF ".B $key" man/spotpool.yaml.5 || missing_man5+=("key $key")
	# conf/spotpool.yaml: "key:" at the top, or "section:" and then "  leaf:".
	if [[ $key == *.* ]]; then
		awk -v s="${key%%.*}:" -v l="  ${key#*.}:" '$0 ~ "^" s { in_s = 1; next } /^[^ #]/ { in_s = 0 }
			in_s && index($0, l) == 1 { found = 1 } END { exit !found }' conf/spotpool.yaml ||
			missing_conf+=("key $key")
	else
		grep -q "^$key:" conf/spotpool.yaml || missing_conf+=("key $key")
	fi
	[[ $env == - ]] || grep -qE "Environment: $env([^A-Z_]|$)" conf/spotpool.yaml || missing_conf+=("variable $env")
	[[ $flag == - ]] || grep -qE "Flag: (-n/)?--$flag([^a-z-]|$)" conf/spotpool.yaml || missing_conf+=("flag --$flag")
	[[ $flag == - ]] || grep -qE -- "--$flag([^a-z-]|$)" "$E2E_TMP/help.txt" || missing_help+=("flag --$flag")
done <"$table"
check "spotpool(8) names every key, variable and flag${missing_man8:+ (missing: ${missing_man8[*]})}" test ${#missing_man8[@]} = 0
check "spotpool.yaml(5) names every key${missing_man5:+ (missing: ${missing_man5[*]})}" test ${#missing_man5[@]} = 0
check "conf/spotpool.yaml has every key, variable and flag${missing_conf:+ (missing: ${missing_conf[*]})}" test ${#missing_conf[@]} = 0
check "run --help lists every flag${missing_help:+ (missing: ${missing_help[*]})}" test ${#missing_help[@]} = 0
check "the man pages' settings lists are what make man writes from src/cfg.c" \
	scripts/gen-man --check "$SPOTPOOL_BIN" man/spotpool.8 man/spotpool.yaml.5

# conf/spotpool.yaml is a valid configuration (it fails on the kubeconfig, after it).
"$SPOTPOOL_BIN" run --config conf/spotpool.yaml --kubeconfig "$E2E_TMP/none" --check-config >/dev/null 2>"$E2E_TMP/conf.err"
check "conf/spotpool.yaml loads: the error is the missing kubeconfig" grep -q "$E2E_TMP/none" "$E2E_TMP/conf.err"

if command -v groff >/dev/null; then
	for page in man/spotpool.8 man/spotpool.yaml.5; do
		check "$page renders without warnings (groff -ww -man -z)" \
			bash -c "out=\$(groff -ww -man -z '$page' 2>&1) && test -z \"\$out\""
	done
else
	echo "# groff not installed (make deps installs groff-base): rendering not checked"
fi

# make install puts the pages where man looks (MANDIR = PREFIX/share/man).
build=$(dirname "$SPOTPOOL_BIN")
stage=$E2E_TMP/stage
check "make install stages the man pages under PREFIX/share/man" bash -c \
	"make -s install DESTDIR='$stage' PREFIX=/usr BUILD='$build' -o '$SPOTPOOL_BIN' >/dev/null &&
	 test -s '$stage/usr/share/man/man8/spotpool.8' && test -s '$stage/usr/share/man/man5/spotpool.yaml.5'"
if command -v man >/dev/null; then
	check "man finds spotpool(8) and spotpool.yaml(5) once installed" bash -c \
		"MANPATH='$stage/usr/share/man' man -w 8 spotpool | grep -q man8/spotpool.8 &&
		 MANPATH='$stage/usr/share/man' man -w 5 spotpool.yaml | grep -q man5/spotpool.yaml.5"
fi

# The unit file says what the code does on SIGTERM (src/run.c: on_stop_signal aborts
# in-flight HTTP transfers).
check "systemd unit: SIGTERM aborts in-flight cloud calls, as src/run.c does" bash -c \
	"grep -q 'aborts its in-flight' systemd/spotpool.service.in && ! grep -qi 'finishes in-flight' systemd/spotpool.service.in &&
	 grep -q 'http_abort_all' src/run.c"

# The bootstrap example as the pool example carries it: the same script, within the
# 16 KB that userData takes, and valid sh.
user_data=$(awk '/^  userData:/ {print $2}' examples/nodes-pool.yaml)
check "examples/nodes-pool.yaml carries examples/bootstrap/kubeadm-join.sh as its userData" \
	bash -c "base64 -d <<<'$user_data' | cmp -s - examples/bootstrap/kubeadm-join.sh"
check "the bootstrap fits userData (${#user_data} of 16384 bytes) and parses as sh" \
	bash -c "test ${#user_data} -le 16384 && sh -n examples/bootstrap/kubeadm-join.sh"

# The autoscaling example's bootstrap applies its nodeTemplate: its userData is the
# bootstrap with NODE_LABELS/NODE_TAINTS as `spotpool dry-run` prints the template, and
# that bootstrap (curl and kubeadm stubbed) registers the Node with those labels and taints.
flags=$(SPOTPOOL_CVM_ENDPOINT=http://127.0.0.1:9 TENCENTCLOUD_SECRET_ID=AKIDdocs TENCENTCLOUD_SECRET_KEY=docsKey \
	"$SPOTPOOL_BIN" dry-run -f examples/pool-autoscaling.yaml --timeout 1 -o json 2>/dev/null |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["pools"][0]["nodeTemplate"]["kubeletFlags"])')
labels=$(sed -n 's/^--node-labels=\([^ ]*\).*/\1/p' <<<"$flags")
taints=$(sed -n 's/.*--register-with-taints=\([^ ]*\)$/\1/p' <<<"$flags")
check "dry-run prints examples/pool-autoscaling.yaml's template as kubelet flags ($flags)" \
	test "$labels" = gpu-pool=a10 -a "$taints" = nvidia.com/gpu=true:NoSchedule
sed "s|^NODE_LABELS=\"\"$|NODE_LABELS=\"$labels\"|; s|^NODE_TAINTS=\"\"$|NODE_TAINTS=\"$taints\"|" \
	examples/bootstrap/kubeadm-join.sh >"$E2E_TMP/join.sh"
user_data=$(awk '/^  userData:/ {print $2}' examples/pool-autoscaling.yaml)
check "examples/pool-autoscaling.yaml carries the bootstrap with the template dry-run prints" \
	bash -c "base64 -d <<<'$user_data' | cmp -s - '$E2E_TMP/join.sh'"
mkdir -p "$E2E_TMP/stubs"
printf '#!/bin/sh\ncase "$*" in *instance-id*) echo ins-0docs001;; *local-ipv4*) echo 10.0.0.7;; esac\n' >"$E2E_TMP/stubs/curl"
printf '#!/bin/sh\necho "kubeadm $*" >"%s"\n' "$E2E_TMP/kubeadm.args" >"$E2E_TMP/stubs/kubeadm"
chmod +x "$E2E_TMP/stubs/curl" "$E2E_TMP/stubs/kubeadm"
run_join() { # SCRIPT CONFIG
	PATH="$E2E_TMP/stubs:$PATH" JOIN_CONFIG=$2 sh "$1" &&
		grep -qxF "kubeadm join --config $2" "$E2E_TMP/kubeadm.args"
}
check "the bootstrap with a template joins, its kubelet given the labels and taints" bash -c \
	"$(declare -f run_join); E2E_TMP='$E2E_TMP'; run_join '$E2E_TMP/join.sh' '$E2E_TMP/a.yaml' &&
	 grep -qxF '    node-labels: \"spotpool.jokerbai.com/instance-id=ins-0docs001,gpu-pool=a10\"' '$E2E_TMP/a.yaml' &&
	 grep -qxF '    register-with-taints: \"nvidia.com/gpu=true:NoSchedule\"' '$E2E_TMP/a.yaml'"
check "the bootstrap without a template sets only the instance-id label and no taint" bash -c \
	"$(declare -f run_join); E2E_TMP='$E2E_TMP'; run_join examples/bootstrap/kubeadm-join.sh '$E2E_TMP/b.yaml' &&
	 grep -qxF '    node-labels: \"spotpool.jokerbai.com/instance-id=ins-0docs001\"' '$E2E_TMP/b.yaml' &&
	 ! grep -q register-with-taints '$E2E_TMP/b.yaml'"
finish
