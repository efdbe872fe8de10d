#!/usr/bin/env bash
# Reproduces, at full scale, the two emulator abuse figures of issue 8 that
# the test suite (tests/abuse.rs) only checks at small scale:
#
#   1. 1,100 clients trickling request heads one byte a second, reconnecting
#      when cut off, against a server limited to 1,024 open files: how many
#      connections the server holds, and whether a normal request gets
#      through, and how fast.
#   2. 60 clients each sending a 176-byte peek of 100 messages of 127,900
#      control characters (77 MB of JSON per answer) and never reading: the
#      server's resident memory, and a normal request's latency.
#
# It prints one line per measurement; nothing is asserted. It takes about
# two minutes, and needs python3 (standard library only) and Linux (/proc).
#
# Usage:
#   scripts/abuse-full-scale.sh               # builds cfq (release) first
#   scripts/abuse-full-scale.sh path/to/cfq   # any cfq, an older one included
#
# Environment: PORT (default 18787), SLOW_CLIENTS (1100), UNREAD_PEEKS (60),
# TRICKLE_SECONDS (30).
set -euo pipefail

cd "$(dirname "$0")/.."
CFQ=${1:-}
if [ -z "$CFQ" ]; then
    cargo build --release --package cfq
    CFQ=${CARGO_TARGET_DIR:-target}/release/cfq
fi
PORT=${PORT:-18787}
LOG=$(mktemp)

# The original run had 1,024 file descriptors for the server.
(ulimit -n 1024 && exec "$CFQ" emulator --listen "127.0.0.1:$PORT" --token abuse) >"$LOG" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 1 50); do
    grep -q "listening" "$LOG" 2>/dev/null && break
    sleep 0.1
done

python3 - "$SERVER" "$PORT" <<'PYTHON'
import json, os, resource, select, socket, sys, time

SERVER, PORT = int(sys.argv[1]), int(sys.argv[2])
SLOW = int(os.environ.get("SLOW_CLIENTS", "1100"))
PEEKS = int(os.environ.get("UNREAD_PEEKS", "60"))
TRICKLE = float(os.environ.get("TRICKLE_SECONDS", "30"))
ACCOUNT = "0123456789abcdef0123456789abcdef"
BASE = f"/client/v4/accounts/{ACCOUNT}/queues"

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))

def rss_mb():
    with open(f"/proc/{SERVER}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0

def fds():
    """File descriptors the server process has open (sockets included)."""
    try:
        return len(os.listdir(f"/proc/{SERVER}/fd"))
    except OSError:
        return -1

def held():
    """Established connections whose local end is the server's port: those
    the server accepted, and those waiting in its listen backlog."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if int(fields[1].split(":")[1], 16) == PORT and fields[3] == "01":
                        count += 1
        except FileNotFoundError:
            pass
    return count

def request(path, body, timeout=60.0):
    """One request on a fresh connection: (status, seconds) or (error, seconds)."""
    start = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
        data = json.dumps(body).encode()
        s.sendall((f"POST {BASE}/{path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer abuse\r\n"
                   f"content-type: application/json\r\ncontent-length: {len(data)}\r\n"
                   "connection: close\r\n\r\n").encode() + data)
        answer = b""
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            answer += chunk
        s.close()
        return answer.split(b" ", 2)[1].decode(), time.time() - start
    except Exception as error:
        return type(error).__name__, time.time() - start

def report(what, **figures):
    print(what.ljust(34), " ".join(f"{k}={v}" for k, v in figures.items()), flush=True)

report("start", rss_mb=round(rss_mb(), 1), held=held(), server_fds=fds())

# 1. Slow clients.
HEAD = f"POST {BASE}/slow/messages/pull HTTP/1.1\r\n".encode()
def slow_client():
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect(("127.0.0.1", PORT))
    except BlockingIOError:
        pass
    return [s, 0]

clients = [slow_client() for _ in range(SLOW)]
most_held, most_fds, reconnects = 0, 0, 0
start, next_probe, probes = time.time(), time.time() + 5, []
while time.time() - start < TRICKLE:
    for c in clients:
        s, sent = c
        try:
            if sent < len(HEAD):
                s.send(HEAD[sent:sent + 1])
                c[1] += 1
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            s.close()
            c[:] = slow_client()
            reconnects += 1
    most_held = max(most_held, held())
    most_fds = max(most_fds, fds())
    if time.time() >= next_probe:
        status, seconds = request("slow/messages/pull", {})
        probes.append(seconds)
        report("slow clients: normal request", status=status, seconds=round(seconds, 3),
               held=held(), server_fds=fds(), rss_mb=round(rss_mb(), 1))
        next_probe = time.time() + 5
    time.sleep(1.0)
report("slow clients: totals", most_held=most_held, most_server_fds=most_fds,
       reconnects=reconnects,
       slowest_normal_s=round(max(probes or [0]), 3), rss_mb=round(rss_mb(), 1))
for s, _ in clients:
    s.close()
time.sleep(2)

# 2. Peeks no one reads.
body = "\x01" * 127_900
for _ in range(100):
    status, _ = request("big/messages", {"body": body, "content_type": "text"})
    if status != "200":
        report("push failed", status=status)
        sys.exit(1)
report("100 large messages pushed", rss_mb=round(rss_mb(), 1))
peek = json.dumps({"batch_size": 100}).encode()
raw = (f"POST {BASE}/big/messages/peek HTTP/1.1\r\nhost: x\r\nauthorization: Bearer abuse\r\n"
       f"content-length: {len(peek)}\r\n\r\n").encode() + peek
readers = []
for _ in range(PEEKS):
    s = socket.create_connection(("127.0.0.1", PORT))
    s.sendall(raw)
    readers.append(s)
report("unread peeks sent", bytes_each=len(raw), count=PEEKS)
peak = 0.0
for second in range(40):
    time.sleep(1)
    peak = max(peak, rss_mb())
    if second in (5, 15, 35):
        status, seconds = request("other/messages/pull", {})
        report(f"unread peeks after {second + 1}s", rss_mb=round(rss_mb(), 1),
               peak_rss_mb=round(peak, 1), held=held(), normal_status=status,
               normal_s=round(seconds, 3))
for s in readers:
    s.close()
report("end", rss_mb=round(rss_mb(), 1), held=held())
PYTHON
