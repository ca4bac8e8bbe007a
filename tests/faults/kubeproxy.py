"""An HTTPS proxy between one controller and the kube-apiserver, for the fault campaign.

What it does, and nothing more (Python 3.11 standard library only):

- It terminates TLS with the apiserver's own serving certificate (DIR/pki/apiserver.crt
  of scripts/k8s-up, so the controller's kubeconfig keeps the cluster CA) and sends each
  request on to the apiserver over a new TLS connection with the admin client
  certificate: the controller acts with the same identity as without the proxy. HTTP/1.1
  only (no ALPN, so libcurl does not try HTTP/2).
- Ordinary requests (GET, LIST, PUT, PATCH, POST, DELETE) pass through unchanged.
- Watch requests (`watch=1`/`watch=true`, or `/watch/` in the path) are streamed event by
  event (one JSON line each). Three faults apply to them only:
    delay(seconds, prefix="")
                     every event line (of the watches whose target starts with prefix)
                     is held that long before it is sent on, in order (a lagging watch:
                     the controller learns of changes late);
    cut()            every open watch stream is closed (the controller reconnects,
                     usually from the last resourceVersion it saw);
    replay(n)        the next n watch requests that name a resourceVersion are sent to the
                     apiserver with an older one this proxy saw on an earlier request for
                     the same path, so the apiserver sends again events the controller has
                     already seen (or 410 Gone if that version was compacted).
- fail(method, prefix, status) answers every request of that method whose target (path
  and query, as sent) starts with prefix with that HTTP status and a Kubernetes Status body, without sending it on
  (an apiserver or a webhook failing those calls); fail(None) ends it.
- fail_node_deletes(times, status) answers the next `times` DELETEs of a Node
  (/api/v1/nodes/NAME) itself with HTTP `status` (a Status object: 5xx, or 429 with
  Retry-After: 1), without sending them on: a Node deletion that fails.
- Every DELETE of a Node and every POST of a pod's eviction (.../pods/NAME/eviction) that
  passes is recorded in `observed` ({"t", "method", "path", "status", "uid"?}: t when the
  answer came, uid of the Node a DELETE answered with), so the campaign knows which Node
  incarnation the controller deleted and which pods it tried to evict.
- blackhole(True) cuts the controller off: from then on no byte goes either way on any
  connection (open ones included) and new connections are accepted but never answered,
  as when packets are dropped. blackhole(False) closes everything that was held, so the
  controller sees its connections fail and reconnects.

Counters (dict `counts`): requests, watches, events, eventsDelayed, cuts, streamsCut,
replays, blackholes, heldConnections, failed, nodeDeletesFailed.

Run as a script (`kubeproxy.py K8S_DIR KUBECONFIG_OUT CONTROL_FILE [TRACE]`, for the
end-to-end scripts) it proxies the apiserver of K8S_DIR's kubeconfig, writes the
controller's kubeconfig to KUBECONFIG_OUT, and applies what CONTROL_FILE says, read
every 0.2 s: `fail METHOD PREFIX STATUS`, `delay SECONDS PREFIX`, or empty for no fault.
"""

from __future__ import annotations

import http.client
import json
import os
import queue
import socket
import ssl
import threading
import time
import urllib.parse

HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "te", "upgrade",
       "expect"}


class KubeProxy:
    def __init__(self, k8s_dir: str, upstream_host: str, upstream_port: int, log=None, trace_path: str | None = None):
        pki = os.path.join(k8s_dir, "pki")
        self.server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_ctx.load_cert_chain(os.path.join(pki, "apiserver.crt"), os.path.join(pki, "apiserver.key"))
        self.client_ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.client_ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        self.upstream = (upstream_host, upstream_port)
        self.log = log or (lambda msg: None)
        self.trace_file = open(trace_path, "a", buffering=1) if trace_path else None
        self.lock = threading.Lock()
        self.delay_s = 0.0
        self.delay_prefix = ""
        self.cut_gen = 0
        self.replays_left = 0
        self.black = threading.Event()
        self.black_gen = 0
        self.closed = threading.Event()
        self.seen_rv: dict[str, str] = {}   # watch path -> first resourceVersion asked for
        self.socks: set = set()
        self.node_delete_failures: list[int] = []   # statuses to answer the next Node DELETEs with
        self.observed: list[dict] = []
        self.counts = dict(requests=0, watches=0, events=0, eventsDelayed=0, cuts=0, streamsCut=0, replays=0,
                           blackholes=0, heldConnections=0, failed=0, nodeDeletesFailed=0)
        self.failing: tuple[str, str, int] | None = None
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    # -- control ----------------------------------------------------------------------
    def delay(self, seconds: float, prefix: str = "") -> None:
        self.delay_s, self.delay_prefix = max(0.0, seconds), prefix
        self.trace(f"fault: watch events delayed {self.delay_s}s" + (f" ({prefix}*)" if prefix else ""))

    def cut(self) -> None:
        with self.lock:
            self.cut_gen += 1
            self.counts["cuts"] += 1
        self.trace("fault: open watch streams cut")

    def replay(self, n: int) -> None:
        with self.lock:
            self.replays_left = max(0, self.replays_left + n)
        self.trace(f"fault: {n} next watch reconnect(s) sent on from an older resourceVersion")

    def fail(self, method: str | None, prefix: str = "", status: int = 500) -> None:
        self.failing = (method, prefix, status) if method else None
        self.trace(f"fault: {method} {prefix}* answered {status}" if method else "fault: no request failed")

    def fail_node_deletes(self, times: int, status: int) -> None:
        with self.lock:
            self.node_delete_failures += [status] * times
        self.trace(f"fault: the next {times} Node deletion(s) answered {status}")

    def blackhole(self, on: bool) -> None:
        with self.lock:
            if on and not self.black.is_set():
                self.counts["blackholes"] += 1
                self.black.set()
            elif not on and self.black.is_set():
                self.black_gen += 1
                self.black.clear()
                socks = list(self.socks)
            else:
                return
        self.trace(f"fault: blackhole {'on' if on else 'off'}")
        if not on:
            for s in socks:  # everything held during the blackhole fails now
                self._close(s)

    def close(self) -> None:
        self.closed.set()
        if self.trace_file:
            self.trace_file.close()
        self._close(self.sock)
        with self.lock:
            socks = list(self.socks)
        for s in socks:
            self._close(s)

    def kubeconfig(self, k8s_dir: str) -> str:
        pki = os.path.join(k8s_dir, "pki")
        return (f"apiVersion: v1\nkind: Config\nclusters:\n- name: proxied\n  cluster:\n"
                f"    server: https://127.0.0.1:{self.port}\n    certificate-authority: {pki}/ca.crt\n"
                f"users:\n- name: admin\n  user:\n    client-certificate: {pki}/admin.crt\n"
                f"    client-key: {pki}/admin.key\ncontexts:\n- name: proxied\n  context:\n"
                f"    cluster: proxied\n    user: admin\ncurrent-context: proxied\n")

    # -- plumbing ----------------------------------------------------------------------
    @staticmethod
    def _close(s) -> None:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            s.close()
        except OSError:
            pass

    def trace(self, msg: str) -> None:
        """One line per request, stream end and fault in the trace file (if any)."""
        if self.trace_file:
            try:
                self.trace_file.write(f"{time.strftime('%H:%M:%S')}.{int(time.time() * 1000) % 1000:03d} {msg}\n")
            except ValueError:
                pass

    def _count(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counts[key] += n

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _hold(self, gen: int) -> None:
        """Blackholed: wait, saying nothing, until the blackhole ends (then the caller closes)."""
        self._count("heldConnections")
        while self.black.is_set() and self.black_gen == gen and not self.closed.is_set():
            time.sleep(0.2)

    def _serve(self, raw: socket.socket) -> None:
        conn = reader = None
        with self.lock:
            self.socks.add(raw)
        try:
            if self.black.is_set():
                return self._hold(self.black_gen)
            raw.settimeout(30)
            # wrap_socket detaches raw: from here on only conn closes the connection.
            conn = self.server_ctx.wrap_socket(raw, server_side=True)
            with self.lock:
                self.socks.discard(raw)
                self.socks.add(conn)
            conn.settimeout(None)
            reader = conn.makefile("rb")
            while not self.closed.is_set():
                if not self._one(conn, reader):
                    break
        except (OSError, ssl.SSLError, http.client.HTTPException, ValueError):
            pass
        finally:
            with self.lock:
                self.socks.discard(raw)
                self.socks.discard(conn)
            if reader:
                try:
                    reader.close()
                except OSError:
                    pass
            self._close(conn or raw)

    def _one(self, conn, reader) -> bool:
        line = reader.readline(65536)
        if not line:
            return False
        gen = self.black_gen
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers = []
        while True:
            h = reader.readline(65536)
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            headers.append((name.strip(), value.strip()))
        lower = {k.lower(): v for k, v in headers}
        if self.black.is_set():
            self._hold(gen)
            return False
        if lower.get("expect", "").lower() == "100-continue":
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        if "content-length" in lower:
            body = reader.read(int(lower["content-length"]))
        elif lower.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(reader.readline().split(b";")[0], 16)
                if size == 0:
                    reader.readline()
                    break
                body += reader.read(size)
                reader.readline()
        else:
            body = None
        self._count("requests")
        url = urllib.parse.urlsplit(target)
        failing = self.failing
        if failing and method == failing[0] and target.startswith(failing[1]):
            self._count("failed")
            self.trace(f"{method} {target} -> {failing[2]} (injected)")
            data = (b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by kubeproxy",'
                    b'"code":%d}' % failing[2])
            conn.sendall(b"HTTP/1.1 %d Injected\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (failing[2], len(data), data))
            return lower.get("connection", "").lower() != "close"
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        watching = query.get("watch", [""])[0] in ("1", "true") or "/watch/" in url.path
        node_delete = method == "DELETE" and url.path.startswith("/api/v1/nodes/")
        if node_delete and self._node_delete_failure(conn, url.path):
            return lower.get("connection", "").lower() != "close"
        if watching:
            self._count("watches")
            target = self._maybe_replay(url, query, target)
        up = http.client.HTTPSConnection(*self.upstream, context=self.client_ctx, timeout=None if watching else 60)
        try:
            up.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for k, v in headers:
                if k.lower() not in HOP:
                    up.putheader(k, v)
            if body is not None:
                up.putheader("Content-Length", str(len(body)))
            up.endheaders(body)
            resp = up.getresponse()
            self.trace(f"{method} {target} -> {resp.status}")
            if self.black.is_set():
                self._hold(gen)
                return False
            if watching and resp.status == 200:
                self._stream(conn, resp, gen, target)
                return False
            data = resp.read()
            if node_delete or (method == "POST" and url.path.endswith("/eviction")):
                self._observe(method, url.path, resp.status, data if node_delete else b"")
            out = [f"HTTP/1.1 {resp.status} {resp.reason}\r\n"]
            out += [f"{k}: {v}\r\n" for k, v in resp.getheaders() if k.lower() not in HOP]
            out.append(f"Content-Length: {len(data)}\r\n\r\n")
            if self.black.is_set():
                self._hold(gen)
                return False
            conn.sendall("".join(out).encode("latin-1") + data)
            return lower.get("connection", "").lower() != "close"
        finally:
            up.close()

    def _node_delete_failure(self, conn, path: str) -> bool:
        """Answers a Node DELETE with an injected failure when one is pending."""
        with self.lock:
            if not self.node_delete_failures:
                return False
            status = self.node_delete_failures.pop(0)
            self.counts["nodeDeletesFailed"] += 1
        reason = {429: "Too Many Requests", 500: "Internal Server Error"}.get(status, "Service Unavailable")
        body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status,
                           "reason": "TooManyRequests" if status == 429 else "InternalError",
                           "message": "injected by the fault campaign"}).encode()
        extra = "Retry-After: 1\r\n" if status == 429 else ""
        conn.sendall(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n{extra}"
                     f"Content-Length: {len(body)}\r\n\r\n".encode("latin-1") + body)
        self.trace(f"DELETE {path} -> {status} (injected)")
        self._observe("DELETE", path, status, b"", injected=True)
        return True

    def _observe(self, method: str, path: str, status: int, body: bytes, injected: bool = False) -> None:
        entry = {"t": time.time(), "method": method, "path": path, "status": status}
        if injected:
            entry["injected"] = True
        if body:
            try:
                entry["uid"] = json.loads(body)["metadata"]["uid"]
            except (ValueError, KeyError, TypeError):
                pass
        with self.lock:
            self.observed.append(entry)

    def _maybe_replay(self, url, query, target: str) -> str:
        rv = query.get("resourceVersion", [""])[0]
        with self.lock:
            first = self.seen_rv.setdefault(url.path, rv) if rv not in ("", "0") else None
            if first and first != rv and self.replays_left > 0:
                self.replays_left -= 1
                self.counts["replays"] += 1
                query["resourceVersion"] = [first]
                self.trace(f"replay: watch {url.path} sent on from resourceVersion {first} instead of {rv}")
                return url.path + "?" + urllib.parse.urlencode(query, doseq=True)
        return target

    def _stream(self, conn, resp, gen: int, target: str) -> None:
        """A watch: event lines from the apiserver, each sent on after the delay in force
        when it arrived; ends when either side ends, on cut() and on blackhole."""
        head = [f"HTTP/1.1 {resp.status} {resp.reason}\r\n"]
        head += [f"{k}: {v}\r\n" for k, v in resp.getheaders() if k.lower() not in HOP]
        head.append("Transfer-Encoding: chunked\r\n\r\n")
        conn.sendall("".join(head).encode("latin-1"))
        lines: queue.Queue = queue.Queue()

        def held() -> float:
            return self.delay_s if target.startswith(self.delay_prefix) else 0.0

        def pump():
            # read1, not readline: HTTPResponse.readline fails (fp is None) once the last
            # chunk has closed the response, and a pump that dies without saying so would
            # leave the controller's watch open and silent for ever.
            pending = b""
            try:
                while True:
                    data = resp.read1(65536)
                    if not data:
                        break
                    pending += data
                    *complete, pending = pending.split(b"\n")
                    now = time.monotonic()
                    for line in complete:
                        lines.put((now + held(), line + b"\n"))
            except Exception:  # noqa: BLE001 - the stream is over whatever broke it
                pass
            finally:
                if pending:
                    lines.put((time.monotonic() + held(), pending))
                lines.put((0.0, None))

        threading.Thread(target=pump, daemon=True).start()
        cut_gen = self.cut_gen
        last_due = 0.0

        def interrupted() -> bool:
            """Ends the stream (True) on cut() or blackhole."""
            if self.cut_gen != cut_gen:
                self._count("streamsCut")
                self.trace("watch stream cut")
                return True
            if self.black.is_set():
                self._hold(gen)
                return True
            return False

        while not interrupted():
            try:
                due, line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                conn.sendall(b"0\r\n\r\n")
                self.trace("watch stream ended by the apiserver")
                return
            due = max(due, last_due)
            last_due = due
            delayed = due - time.monotonic() > 0.05
            while time.monotonic() < due:
                if self.cut_gen != cut_gen or self.black.is_set():
                    break
                time.sleep(min(0.1, max(0.0, due - time.monotonic())))
            if interrupted():
                return
            self._count("events")
            if delayed:
                self._count("eventsDelayed")
            conn.sendall(b"%x\r\n%s\r\n" % (len(line), line))


def main(argv: list[str]) -> None:
    k8s_dir, kubeconfig_out, control = argv[1], argv[2], argv[3]
    with open(os.path.join(k8s_dir, "kubeconfig")) as f:
        server = next(line.split("server:", 1)[1].strip() for line in f if "server:" in line)
    up = urllib.parse.urlsplit(server)
    proxy = KubeProxy(k8s_dir, up.hostname, up.port, trace_path=argv[4] if len(argv) > 4 else None)
    with open(kubeconfig_out + ".tmp", "w") as f:
        f.write(proxy.kubeconfig(k8s_dir))
    os.replace(kubeconfig_out + ".tmp", kubeconfig_out)
    last = None
    while True:
        try:
            with open(control) as f:
                want = f.read().split()
        except FileNotFoundError:
            want = []
        if want != last:
            last = want
            proxy.fail(want[1], want[2], int(want[3])) if want[:1] == ["fail"] else proxy.fail(None)
            proxy.delay(float(want[1]), want[2]) if want[:1] == ["delay"] else proxy.delay(0)
        time.sleep(0.2)


if __name__ == "__main__":
    import sys
    main(sys.argv)
