#!/usr/bin/env python3
"""A bounded connection flood against a weft agent on loopback (issue 30), for bench/flood.sh.

Holds IDLE connections open that never send a byte, spread over SOURCES loopback addresses
(127.1.x.y, so that the agent's per-source cap alone does not turn them away), and opens RATE
new connections a second for SECONDS more, each held until the end. Stops by itself after
SECONDS and closes everything. Prints one JSON line: connections attempted, accepted by the
kernel, refused or failed (of the idle ones, checked at the end), and how many of the idle ones
the agent had closed by the end (it drops those that
do not identify themselves).

Usage: flood.py PORT IDLE RATE SECONDS [SOURCES]
"""

import collections
import errno
import json
import resource
import select
import socket
import sys
import time


def source(i, sources):
    n = i % sources
    return "127.1.%d.%d" % (n // 250, 1 + n % 250)


def main():
    port, idle, rate, seconds = (int(a) for a in sys.argv[1:5])
    sources = int(sys.argv[5]) if len(sys.argv) > 5 else 200
    if idle > 100_000 or rate > 10_000 or seconds > 120:
        sys.exit("flood.py: refusing more than 100,000 idle, 10,000 a second or 120 s")
    want = idle + 2 * rate + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    held, stats = [], {"attempted": 0, "connected": 0, "failed": 0}
    churn = collections.deque()  # (opened at, socket) of the flood's new connections

    def connect(i):
        stats["attempted"] += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((source(i, sources), 0))
            s.connect_ex(("127.0.0.1", port))
        except OSError:
            stats["failed"] += 1
            s.close()
            return None
        return s

    start = time.monotonic()
    for i in range(idle):
        s = connect(i)
        if s is not None:
            held.append(s)
    print("idle connections opened: %d in %.1f s" % (len(held), time.monotonic() - start),
          file=sys.stderr, flush=True)
    flood_start = time.monotonic()
    i = idle
    while time.monotonic() - flood_start < seconds:
        due = int((time.monotonic() - flood_start) * rate)
        now = time.monotonic()
        while i - idle < due:
            s = connect(i)
            if s is not None:
                churn.append((now, s))
            i += 1
        while churn and now - churn[0][0] > 1.0:
            churn.popleft()[1].close()
        time.sleep(0.001)
    for _, s in churn:
        s.close()
    # Which of the idle connections did the kernel complete, and which has the agent closed?
    closed = 0
    for s in held:
        err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err not in (0, errno.EISCONN):
            stats["failed"] += 1
            continue
        stats["connected"] += 1
        p = select.poll()
        p.register(s, select.POLLIN)
        if p.poll(0):
            try:
                if s.recv(1, socket.MSG_PEEK) == b"":
                    closed += 1
            except OSError:
                closed += 1
    stats["closed_by_agent"] = closed
    stats["seconds"] = round(time.monotonic() - start, 2)
    for s in held:
        s.close()
    print(json.dumps(stats), flush=True)


if __name__ == "__main__":
    main()
