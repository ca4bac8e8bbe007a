"""A systemd NOTIFY_SOCKET stand-in: binds an AF_UNIX datagram socket and writes
each received message as one JSON line {"t": seconds_since_start, "fields": {...}}.

    python3 notify_listener.py SOCKET_PATH OUTPUT_FILE
"""
import json
import os
import signal
import socket
import sys
import time


def main():
    path, out_path = sys.argv[1], sys.argv[2]
    if os.path.exists(path):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    start = time.monotonic()
    with open(out_path, "a", buffering=1) as out:
        while True:
            data = sock.recv(65536).decode("utf-8", "replace")
            fields = dict(line.split("=", 1) for line in data.splitlines() if "=" in line)
            out.write(json.dumps({"t": round(time.monotonic() - start, 3), "fields": fields}) + "\n")


if __name__ == "__main__":
    main()
