# shellcheck shell=bash
# Helpers shared by scripts/k8s-up, k8s-down and k8s-restart-apiserver.
# Source it; it defines functions and does nothing by itself.
#
# State directory layout (DIR):
#   config               ports and binary dir, written by k8s-up (sourced here)
#   env                  KUBECONFIG=... / K8S_URL=... for scripts to source
#   kubeconfig           admin kubeconfig (system:masters client certificate)
#   scheduler.kubeconfig kube-scheduler's (user system:kube-scheduler)
#   pki/                 CA, serving cert, admin and scheduler client certs, SA key pair
#   etcd-data/           etcd data directory
#   etcd.log apiserver.log etcd.pid apiserver.pid
#   scheduler.log scheduler.pid (k8s-up --scheduler only)

k8s_log() { printf '%s: %s\n' "${K8S_PROG:-k8s}" "$*" >&2; }
k8s_die() { k8s_log "error: $*"; exit 1; }

# k8s_abs_dir DIR: print DIR as a canonical absolute path (DIR need not exist),
# so every script names the same directory the same way.
k8s_abs_dir() {
  realpath -m -- "$1"
}

# k8s_port_in_use PORT: true if something accepts TCP connections on 127.0.0.1:PORT.
k8s_port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# k8s_free_port [EXCLUDED...]: print a port that nothing listens on, below the
# Linux ephemeral range so outgoing connections do not collide with it.
k8s_free_port() {
  local port tries=0 ex taken
  while ((tries++ < 200)); do
    port=$((20000 + RANDOM % 12000))
    taken=0
    for ex in "$@"; do [[ $ex == "$port" ]] && taken=1; done
    ((taken)) && continue
    k8s_port_in_use "$port" || { printf '%s\n' "$port"; return 0; }
  done
  k8s_die "could not find a free TCP port"
}

# k8s_load_config DIR: source DIR/config (ports, binaries).
k8s_load_config() {
  [[ -r $1/config ]] || k8s_die "$1/config not found: was the cluster started with k8s-up $1?"
  # shellcheck source=/dev/null
  . "$1/config"
}

# k8s_pid_alive DIR NAME: true if DIR/NAME.pid names a live process of this cluster.
k8s_pid_alive() {
  local pidfile=$1/$2.pid pid
  [[ -r $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: our servers all have DIR in their arguments.
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$1/"
}

# k8s_stop DIR NAME [TIMEOUT]: TERM the process, KILL it after TIMEOUT s (default 15).
# Sets K8S_STOPPED=1 if there was a process to stop.
k8s_stop() {
  local dir=$1 name=$2 timeout=${3:-15} pid i
  if ! k8s_pid_alive "$dir" "$name"; then
    rm -f "$dir/$name.pid"
    return 0
  fi
  # shellcheck disable=SC2034 # read by the caller (k8s-down)
  K8S_STOPPED=1
  pid=$(<"$dir/$name.pid")
  k8s_log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < timeout * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    k8s_log "$name (pid $pid) still running after ${timeout}s; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -f "$dir/$name.pid"
}

# k8s_spawn DIR NAME BINARY ARGS...: start BINARY detached (own session, survives
# the calling shell), output appended to DIR/NAME.log, pid in DIR/NAME.pid.
k8s_spawn() {
  local dir=$1 name=$2 bin=$3
  shift 3
  printf '\n==== %s starting %s ====\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$name" >>"$dir/$name.log"
  # setsid(1) execs in place here (a background job of a script is not a
  # process-group leader), so $! is the server's own pid.
  setsid "$bin" "$@" >>"$dir/$name.log" 2>&1 </dev/null &
  printf '%s\n' "$!" >"$dir/$name.pid"
}

# k8s_fail_with_log DIR NAME MESSAGE: report MESSAGE with the tail of NAME's log, exit 1.
k8s_fail_with_log() {
  k8s_log "error: $3"
  k8s_log "last lines of $1/$2.log:"
  tail -n 30 "$1/$2.log" >&2 || true
  exit 1
}

# k8s_start_etcd DIR: start etcd (client and peer on 127.0.0.1) and wait for /health.
k8s_start_etcd() {
  local dir=$1 extra=()
  k8s_load_config "$dir"
  # etcd >= 3.5 only; fsync buys nothing for a throwaway test cluster.
  if "$ETCD_BIN" --help 2>&1 | grep -q -- --unsafe-no-fsync; then
    extra+=(--unsafe-no-fsync)
  fi
  k8s_spawn "$dir" etcd "$ETCD_BIN" \
    --name=spotpool \
    --data-dir="$dir/etcd-data" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="spotpool=http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster-state=new \
    --quota-backend-bytes=$((2 * 1024 * 1024 * 1024)) \
    --logger=zap \
    --log-level=warn \
    "${extra[@]}"
  # As long as the apiserver may take (K8S_READY_TIMEOUT): a loaded machine (two test
  # runs at once) starts etcd slowly too.
  local timeout=${K8S_READY_TIMEOUT:-60} start=$SECONDS
  while ((SECONDS - start < timeout)); do
    if curl -fsS --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'; then
      return 0
    fi
    k8s_pid_alive "$dir" etcd || k8s_fail_with_log "$dir" etcd "etcd exited during startup"
    sleep 0.1
  done
  k8s_fail_with_log "$dir" etcd "etcd not healthy on 127.0.0.1:$ETCD_PORT after $timeout s"
}

# k8s_start_apiserver DIR: start kube-apiserver with the cluster's flags and wait
# until /readyz answers ok (K8S_READY_TIMEOUT seconds, default 60).
k8s_start_apiserver() {
  local dir=$1 pki=$1/pki timeout=${K8S_READY_TIMEOUT:-60} start
  k8s_load_config "$dir"
  # Admission plugins that only make sense with kube-controller-manager running:
  # - ServiceAccount: pods would need the `default` SA that the SA controller
  #   creates per namespace. (TokenRequest, i.e. `kubectl create token`, does
  #   not need it.)
  # - TaintNodesByCondition: new Nodes would keep a not-ready taint forever
  #   (the node lifecycle controller removes it).
  # - StorageObjectInUseProtection: PVC/PV finalizers would never be removed.
  # --endpoint-reconciler-type=none: the `kubernetes` Service may not have a
  # loopback endpoint, and in-cluster clients cannot reach 127.0.0.1 anyway.
  # --shutdown-send-retry-after: on TERM, answer new requests with 429 +
  # Retry-After until in-flight ones drain, then GOAWAY open watches and exit
  # within 2 s. (The default waits up to --request-timeout, 60 s, for open
  # watch streams, which makes k8s-restart-apiserver slow.)
  k8s_spawn "$dir" apiserver "$K8S_BIN_DIR/kube-apiserver" \
    --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 \
    --secure-port="$K8S_PORT" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --tls-cert-file="$pki/apiserver.crt" \
    --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --authorization-mode=Node,RBAC \
    --service-account-issuer="https://127.0.0.1:$K8S_PORT" \
    --service-account-key-file="$pki/sa.pub" \
    --service-account-signing-key-file="$pki/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --endpoint-reconciler-type=none \
    --shutdown-send-retry-after=true \
    --disable-admission-plugins=ServiceAccount,TaintNodesByCondition,StorageObjectInUseProtection \
    --allow-privileged=true \
    --profiling=false \
    --v="${K8S_APISERVER_V:-1}" # from DIR/config: a restart keeps it
  start=$SECONDS
  until curl -fsS --max-time 2 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "https://127.0.0.1:$K8S_PORT/readyz" 2>/dev/null | grep -qx ok; do
    k8s_pid_alive "$dir" apiserver || k8s_fail_with_log "$dir" apiserver "kube-apiserver exited during startup"
    ((SECONDS - start < timeout)) ||
      k8s_fail_with_log "$dir" apiserver "kube-apiserver not ready on https://127.0.0.1:$K8S_PORT/readyz after ${timeout}s"
    sleep 0.2
  done
}

# k8s_start_scheduler DIR: start kube-scheduler against the cluster's apiserver and
# wait until its /readyz is ok (its informers synced). It authenticates as
# system:kube-scheduler, whose RBAC the apiserver bootstraps; no leader election
# (one scheduler). Its own port (127.0.0.1, self-signed) serves only the probes,
# which need no authentication: delegated authentication (kubeadm's
# --authentication-kubeconfig) would log an error every few seconds here, as this
# apiserver has no request-header CA.
k8s_start_scheduler() {
  local dir=$1 timeout=${K8S_READY_TIMEOUT:-60} start
  k8s_load_config "$dir"
  k8s_spawn "$dir" scheduler "$K8S_BIN_DIR/kube-scheduler" \
    --kubeconfig="$dir/scheduler.kubeconfig" \
    --leader-elect=false \
    --bind-address=127.0.0.1 \
    --secure-port="$K8S_SCHEDULER_PORT" \
    --profiling=false \
    --v="${K8S_APISERVER_V:-1}"
  start=$SECONDS
  until curl -fsSk --max-time 2 "https://127.0.0.1:$K8S_SCHEDULER_PORT/readyz" 2>/dev/null | grep -qx ok; do
    k8s_pid_alive "$dir" scheduler || k8s_fail_with_log "$dir" scheduler "kube-scheduler exited during startup"
    ((SECONDS - start < timeout)) ||
      k8s_fail_with_log "$dir" scheduler "kube-scheduler not ready on https://127.0.0.1:$K8S_SCHEDULER_PORT/readyz after ${timeout}s"
    sleep 0.2
  done
}
