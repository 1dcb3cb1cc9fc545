#!/usr/bin/env python3
"""exec-compare.py BIN_A BIN_B ...: harness builds side by side on `exec true` over stdio MCP.

ROUNDS (default 8) rounds of CALLS (default 20) calls per binary, the binaries taking turns round by
round after 5 untimed calls each; each binary serves its own empty git workspace under /var/tmp
(workspace-write). FIRST=N first spawns N fresh servers per binary, taking turns, and times spawn to
the answer of tools/list, then the first and the second exec. Prints, per binary, the wall median
(p10, p90) and the server's CPU per call (utime+stime of the server and of the children it waited
for, over the timed calls). Run it as the user who runs harness (setpriv --reuid=... for an ordinary
user). Used for docs/benchmarks.md's "Exec: what a command's view costs the server"."""
import json, subprocess, sys, time, os, statistics, tempfile, shutil
bins = sys.argv[1:]
ROUNDS = int(os.environ.get("ROUNDS", 8)); CALLS = int(os.environ.get("CALLS", 20)); FIRST = int(os.environ.get("FIRST", 0))
HZ = os.sysconf("SC_CLK_TCK")
env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
class S:
    def __init__(self, b, ws):
        self.p = subprocess.Popen([b, "serve", "--workspace", ws, "--mode", "workspace-write", "--log-level", "warn"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.i = 0
    def rpc(self, m, pa, notify=False):
        msg = {"jsonrpc": "2.0", "method": m, "params": pa}
        if not notify: self.i += 1; msg["id"] = self.i
        self.p.stdin.write((json.dumps(msg) + "\n").encode()); self.p.stdin.flush()
        if notify: return
        while True:
            l = self.p.stdout.readline()
            if not l: raise SystemExit("server closed")
            r = json.loads(l)
            if r.get("id") == self.i: return r
    def init(self):
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}})
        self.rpc("notifications/initialized", {}, True)
        self.rpc("tools/list", {})
    def call(self):
        t = time.perf_counter()
        r = self.rpc("tools/call", {"name": "exec", "arguments": {"command": "true"}})
        assert "exit code 0" in json.dumps(r), r
        return (time.perf_counter() - t) * 1000
    def cpu(self):
        f = open("/proc/%d/stat" % self.p.pid).read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in f[11:15]) * 1000 / HZ
    def close(self):
        self.p.stdin.close(); self.p.wait()
base = tempfile.mkdtemp(dir="/var/tmp", prefix="cmp-")
os.chmod(base, 0o755)
def ws(k):
    d = os.path.join(base, "ws%d" % k); os.mkdir(d)
    subprocess.run(["git", "init", "-q", d], check=True)
    return d
try:
    wss = [ws(k) for k in range(len(bins))]
    if FIRST:
        firsts = [[] for _ in bins]; lists = [[] for _ in bins]; seconds = [[] for _ in bins]
        for r in range(FIRST):
            for k, b in enumerate(bins):
                t0 = time.perf_counter(); s = S(b, wss[k]); s.init(); t1 = time.perf_counter()
                lists[k].append((t1 - t0) * 1000); firsts[k].append(s.call()); seconds[k].append(s.call()); s.close()
        for k, b in enumerate(bins):
            print("%-28s spawn->tools/list %.1f ms, first exec %.1f ms, second %.1f ms (medians of %d)" % (b, statistics.median(lists[k]), statistics.median(firsts[k]), statistics.median(seconds[k]), FIRST))
    ss = [S(b, wss[k]) for k, b in enumerate(bins)]
    for s in ss: s.init()
    for s in ss:
        for _ in range(5): s.call()
    walls = [[] for _ in bins]; cpus = [0.0 for _ in bins]
    for r in range(ROUNDS):
        for k, s in enumerate(ss):
            c0 = s.cpu()
            for _ in range(CALLS): walls[k].append(s.call())
            cpus[k] += s.cpu() - c0
    for k, b in enumerate(bins):
        print("%-28s wall median %.2f ms p10 %.2f p90 %.2f; server CPU %.2f ms/call (%d calls)" % (b, statistics.median(walls[k]), statistics.quantiles(walls[k], n=10)[0], statistics.quantiles(walls[k], n=10)[-1], cpus[k] / (ROUNDS * CALLS), ROUNDS * CALLS))
    for s in ss: s.close()
finally:
    shutil.rmtree(base, ignore_errors=True)
