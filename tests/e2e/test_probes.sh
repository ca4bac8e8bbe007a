#!/usr/bin/env bash
# Health probes stay answerable while slow clients hold connections (issue 19 item 9):
# 48 sockets from one address (127.0.0.1, standing for a pod) trickle a header byte
# every second, which restarts libmicrohttpd's inactivity timeout forever. Before the
# fix they took all 32 connections and /healthz timed out. Now one address holds at
# most 8 of 256, so the kubelet's probe, from another address (127.0.0.2 here, the
# node's IP in a cluster), answers at once.
source "$(dirname "$0")/lib.sh"

start_emulator
start_cluster
printf 'secretId: %s\nsecretKey: %s\n' "$EMU_SECRET_ID" "$EMU_SECRET_KEY" >"$E2E_TMP/creds.yaml"
chmod 600 "$E2E_TMP/creds.yaml"
port=$(free_port)
start_controller daemon --credentials-file "$E2E_TMP/creds.yaml" --listen "127.0.0.1:$port"

# probe SOURCE: /healthz from that source address within 2 s; prints the status code.
probe() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 --interface "$1" "http://127.0.0.1:$port/healthz"; }
check "/healthz answers before the slow clients" wait_for 30 bash -c "[[ \$(curl -s --max-time 2 http://127.0.0.1:$port/healthz) == ok ]]"

# The slow clients: each sends a request line, then one header byte a second. Prints
# how many sockets are still open after 3 s (the rest were refused or closed).
cat >"$E2E_TMP/trickle.py" <<'PY'
import socket, sys, time
port, n, seconds, out = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
socks = []
for _ in range(n):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nX-Slow: ")
    socks.append(s)
end, reported = time.time() + seconds, False
while time.time() < end:
    time.sleep(1)
    alive = []
    for s in socks:
        try:
            s.sendall(b"a")
            alive.append(s)
        except OSError:
            s.close()
    socks = alive
    if not reported and time.time() > end - seconds + 3:
        with open(out, "w") as f:
            f.write("%d\n" % len(socks))
        reported = True
PY
python3 "$E2E_TMP/trickle.py" "$port" 48 30 "$E2E_TMP/open" &
trickler=$!
E2E_PIDS+=("$trickler")
wait_for 10 test -s "$E2E_TMP/open"
open=$(cat "$E2E_TMP/open")
check "one address keeps at most 8 connections ($open of 48 open)" test "$open" -le 8
for i in 1 2 3; do
	t0=$(date +%s%N)
	code=$(probe 127.0.0.2)
	ms=$((($(date +%s%N) - t0) / 1000000))
	check "/healthz from another address answers 200 within 2 s while 48 sockets trickle (try $i: $code in $ms ms)" \
		test "$code" = 200
	sleep 1
done
kill "$trickler" 2>/dev/null
wait "$trickler" 2>/dev/null
check "the slow client's own address is served again once it lets go" wait_for 10 bash -c "[[ \$(curl -s --max-time 2 http://127.0.0.1:$port/healthz) == ok ]]"
finish
