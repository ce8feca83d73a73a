#!/usr/bin/env bash
# dpdk-dumpcap on a running gwlbd (issue 18 item 5, docs/observability.md
# "Capturing packets"): gwlbd on hugepages with a net_pcap port that replays a
# capture forever; dpdk-dumpcap attaches as a secondary process and must get
# what the port receives and sends (pcapng, a BPF filter, pcap with a short
# snapshot length), the control API must show the session while it runs, and
# 30 attach/detach cycles under traffic must leave gwlbd running (DPDK 22.11's
# own capture server crashed it in 1 detach of 5).
#   run_capture.sh GWLBD WORKDIR SRCROOT
# gwlbd's memory is placed at a fixed address (--base-virtaddr) that both
# processes leave free: under ASan DPDK's default address is ASan's shadow,
# DPDK then picks one near the shared libraries, and dpdk-dumpcap (ASLR) failed
# there in one CI run ("Cannot get a virtual area at requested address").
# Needs root: a secondary process attaches only to a primary on hugepages, so
# the test reserves 128 x 2 MiB pages, mounts a hugetlbfs of its own, and gives
# both back at the end. Without root, dpdk-dumpcap or the pages it skips
# (exit 77) and says why.
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to reserve hugepages (a secondary process cannot attach to gwlbd under --no-huge)"
command -v dpdk-dumpcap >/dev/null || skip "dpdk-dumpcap is not installed (Debian package dpdk)"

pages=/proc/sys/vm/nr_hugepages
old_pages=$(cat "$pages")
want=$((old_pages + 128))
prefix="gwlbcap$$"
# The port's arguments stay under 64 bytes: a secondary process probes the
# primary's virtual devices again from their argument string, which DPDK
# 22.11 hands it cut to 64 bytes (net_pcap then opens half a path). Hence one
# worker, one RX and one TX queue, and the input under a short path.
pcaps=$(mktemp -d /tmp/gc.XXXXXX)
gwlbd_pid=""
cleanup() {
  if [ -n "$gwlbd_pid" ]; then kill -KILL "$gwlbd_pid" 2>/dev/null || true; wait "$gwlbd_pid" 2>/dev/null || true; fi
  pkill -KILL -f "dpdk-dumpcap --file-prefix=$prefix" 2>/dev/null || true
  if mountpoint -q "$work/huge"; then rm -f "$work/huge"/* 2>/dev/null || true; umount "$work/huge" || true; fi
  echo "$old_pages" > "$pages" 2>/dev/null || true
  rm -rf "/var/run/dpdk/$prefix" "$pcaps"
}
trap cleanup EXIT
trap "exit 1" TERM INT  # a timeout (meson sends SIGTERM) still gives the pages back
echo "$want" > "$pages" 2>/dev/null || skip "cannot write $pages"
got=$(cat "$pages")
[ "$got" -ge "$want" ] || skip "the kernel gave $((got - old_pages)) of 128 hugepages (memory too fragmented?)"
mkdir -p "$work/huge"
mount -t hugetlbfs -o pagesize=2M none "$work/huge" || skip "cannot mount hugetlbfs"

/usr/bin/python3 "$src/tools/gen_sample_pcap.py" "$pcaps/a.pcap" --flows 80 --seed 11 >/dev/null
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe,
        idle_sleep_us: 20 }
server_groups:
  - name: fw
    geneve: { format: aws, endpoint_id: 7, attachment_id: 9 }
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 } ]
dataplane: { workers: 1, mbufs: 4096, flow_table_size: 8192 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-pci", "--file-prefix", "$prefix", "--huge-dir", "$work/huge", "--no-telemetry",
      "--base-virtaddr", "0x200000000000",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$pcaps/a.pcap,tx_pcap=/dev/null,infinite_rx=1"]
YAML
"$gwlbd" --check-config "$work/gwlbd.yaml" > "$work/check.log" 2>&1 ||
  { cat "$work/check.log"; echo "FAIL: --check-config refused the capture config"; exit 1; }
grep -q "packet capture statistics" "$work/check.log" ||
  { cat "$work/check.log"; echo "FAIL: the memory plan does not count the capture statistics"; exit 1; }

"$gwlbd" --config "$work/gwlbd.yaml" > "$work/gwlbd.log" 2>&1 &
gwlbd_pid=$!
for _ in $(seq 1 120); do
  grep -q "gwlbd running" "$work/gwlbd.log" && break
  kill -0 "$gwlbd_pid" 2>/dev/null || { cat "$work/gwlbd.log"; echo "FAIL: gwlbd died at start"; exit 1; }
  sleep 0.25
done
grep -q "packet capture: dpdk-dumpcap can attach (--file-prefix $prefix)" "$work/gwlbd.log" ||
  { cat "$work/gwlbd.log"; echo "FAIL: gwlbd does not offer packet capture"; exit 1; }

dumpcap() {  # dumpcap LOG ARGS...: one capture, at most 60 s
  local log="$1"; shift
  local rc=0
  timeout 60 dpdk-dumpcap --file-prefix="$prefix" -i net_pcap0 "$@" > "$log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || { cat "$log"; tail -20 "$work/gwlbd.log"; echo "FAIL: dpdk-dumpcap $* exited $rc"; exit 1; }
}

# 1. pcapng, both directions: what the port receives (the replayed frames)
# and what it sends (their Geneve encapsulation to the appliances).
dumpcap "$work/d1.log" -c 400 -w "$work/c1.pcapng"
# Its statistics come from the rte_pdump_stats memzone gwlbd keeps (drops
# there are the tool's ring or mempool running full at replay speed).
stats=$(sed -n "s|^Packets received/dropped on interface 'net_pcap0': \([0-9]*\)/\([0-9]*\) .*|\1 \2|p" "$work/d1.log")
read -r n_recv n_drop <<< "${stats:-0 0}"
[ "$n_recv" -ge 400 ] && [ "$n_drop" -le "$n_recv" ] ||
  { cat "$work/d1.log"; echo "FAIL: dumpcap's statistics read $n_recv received, $n_drop dropped"; exit 1; }
echo "dumpcap's statistics (gwlbd's memzone): $n_recv received, $n_drop dropped by the tool's ring"
/usr/bin/python3 - "$work" "$pcaps" <<'PY'
import sys
from scapy.all import rdpcap, raw, Ether, IP, IPv6, UDP
work, pcaps = sys.argv[1], sys.argv[2]
inputs = {raw(p) for p in rdpcap(f"{pcaps}/a.pcap")}
def ip_bytes(b):  # the IP datagram of a frame, without Ethernet padding
    e = Ether(b)
    if IP in e:
        return raw(e[IP])[:e[IP].len]
    if IPv6 in e:
        return raw(e[IPv6])[:40 + e[IPv6].plen]
    return None
inner = {ip_bytes(b) for b in inputs} - {None}
got = rdpcap(f"{work}/c1.pcapng")
assert len(got) >= 400, f"{len(got)} packets captured, asked for 400"
rx = tx = 0
for p in got:
    b = raw(p)
    if b in inputs:
        rx += 1
        continue
    e = Ether(b)
    assert IP in e and e[IP].src == "192.0.2.1" and UDP in e and e[UDP].dport == 6081, e.summary()
    assert e[IP].dst in ("192.0.2.10", "192.0.2.11"), e.summary()
    payload = bytes(e[UDP].payload)
    hlen = 8 + 4 * (payload[0] & 0x3F)
    assert payload[hlen:] in inner, "a Geneve packet whose inner packet was never received"
    tx += 1
assert rx > 0 and tx > 0, f"received {rx}, sent {tx}: want both directions"
print(f"dumpcap: {len(got)} packets, {rx} received (byte-identical to the input) and {tx} sent (their Geneve)")
PY

# 2. A capture filter (compiled by libpcap, run by gwlbd's workers as eBPF).
dumpcap "$work/d2.log" -c 100 -f "udp port 6081" -w "$work/c2.pcapng"
n_other=$(tshark -r "$work/c2.pcapng" -Y '!(udp.port == 6081)' 2>/dev/null | wc -l)
n_all=$(tshark -r "$work/c2.pcapng" 2>/dev/null | wc -l)
[ "$n_all" -ge 100 ] && [ "$n_other" -eq 0 ] ||
  { echo "FAIL: filtered capture: $n_all packets, $n_other not Geneve"; exit 1; }
echo "filter 'udp port 6081': $n_all packets, all Geneve"

# 3. pcap format (dpdk-pdump's plain copies) with a 64-byte snapshot length.
dumpcap "$work/d3.log" -c 100 -P -s 64 -w "$work/c3.pcap"
/usr/bin/python3 - "$work/c3.pcap" <<'PY'
import sys
from scapy.all import PcapReader
n = cut = 0
for p in PcapReader(sys.argv[1]):
    # Plain copies are cut before the tool sees them: it records the cut
    # length as the original one too.
    assert len(bytes(p)) <= 64, len(bytes(p))
    n += 1
    cut += len(bytes(p)) == 64
assert n >= 100 and cut > 0, (n, cut)
print(f"pcap, snaplen 64: {n} packets, {cut} of them cut to 64 bytes")
PY

# 4. The control API shows a capture while it runs: the RX and the TX queue.
timeout 60 dpdk-dumpcap --file-prefix="$prefix" -i net_pcap0 -a duration:4 -q -w "$work/c4.pcapng" \
  > "$work/d4.log" 2>&1 &
dc=$!
/usr/bin/python3 - "$work/gwlbd.sock" "$src" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[2] + "/tests/daemon")
from checklib import api_call
for _ in range(150):
    c = api_call(sys.argv[1], "status")["result"]["capture"]
    if len(c["sessions"]) == 2:
        break
    time.sleep(0.02)
else:
    raise SystemExit(f"FAIL: status never showed the capture: {c}")
assert c["available"] is True, c
dirs = sorted((s["direction"], s["queue"]) for s in c["sessions"])
assert dirs == [("rx", 0), ("tx", 0)], dirs
assert all(s["device"] == "net_pcap0" and s["format"] == "pcapng" for s in c["sessions"]), c
print(f"status while capturing: {len(c['sessions'])} sessions, {c['started']} started so far")
PY
wait "$dc" || { cat "$work/d4.log"; echo "FAIL: the timed capture failed"; exit 1; }

# 5. Attach and detach 30 times under traffic: gwlbd lives on.
for i in $(seq 1 30); do
  dumpcap "$work/loop.log" -q -c 50 -s 128 -w "$work/loop.pcapng"
  kill -0 "$gwlbd_pid" 2>/dev/null || { tail -30 "$work/gwlbd.log"; echo "FAIL: gwlbd died after detach $i"; exit 1; }
done
/usr/bin/python3 - "$work/gwlbd.sock" "$src" <<'PY'
import sys
sys.path.insert(0, sys.argv[2] + "/tests/daemon")
from checklib import api_call
c = api_call(sys.argv[1], "status")["result"]["capture"]
assert c["sessions"] == [], c
assert c["started"] == 34 and c["stopped"] == 34 and c["refused"] == 0, c
print(f"34 captures started and stopped, none refused, none left attached")
PY

# 6. A dpdk-dumpcap killed while it captures (issue 24 item 10) sends no stop:
# gwlbd sees that the process is gone and detaches its callbacks (before, the
# workers kept copying into a ring nobody read, and every later capture of
# the port was refused with EEXIST until gwlbd restarted).
# (Started without timeout(1): the kill must reach dpdk-dumpcap itself.)
dpdk-dumpcap --file-prefix="$prefix" -i net_pcap0 -q -w "$work/c6.pcapng" > "$work/d6.log" 2>&1 &
killed=$!
/usr/bin/python3 - "$work/gwlbd.sock" "$src" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[2] + "/tests/daemon")
from checklib import api_call
for _ in range(500):
    if len(api_call(sys.argv[1], "status")["result"]["capture"]["sessions"]) == 2:
        break
    time.sleep(0.02)
else:
    raise SystemExit("FAIL: the capture to be killed never showed")
PY
kill -KILL "$killed"
wait "$killed" 2>/dev/null || true
/usr/bin/python3 - "$work/gwlbd.sock" "$src" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[2] + "/tests/daemon")
from checklib import api_call
t0 = time.monotonic()
while time.monotonic() - t0 < 15:
    c = api_call(sys.argv[1], "status")["result"]["capture"]
    if not c["sessions"]:
        break
    time.sleep(0.1)
else:
    raise SystemExit(f"FAIL: 15 s after dpdk-dumpcap was killed its callbacks are still attached: {c}")
assert c.get("detached") == 2, c
print(f"killed dpdk-dumpcap: its 2 callbacks detached after {time.monotonic() - t0:.1f} s")
PY
grep -q "packet capture: the capture tool .* is gone: detached" "$work/gwlbd.log" ||
  { tail -20 "$work/gwlbd.log"; echo "FAIL: no log line for the detached capture"; exit 1; }
# The next capture of the same queues starts (it was refused with EEXIST).
dumpcap "$work/d7.log" -q -c 50 -w "$work/c7.pcapng"

# 7. 'capture.stop' (gwlbctl capture stop) detaches a capture by hand.
timeout 60 dpdk-dumpcap --file-prefix="$prefix" -i net_pcap0 -a duration:3 -q -w "$work/c8.pcapng" \
  > "$work/d8.log" 2>&1 &
dc=$!
/usr/bin/python3 - "$work/gwlbd.sock" "$src" <<'PY'
import sys, time
sys.path.insert(0, sys.argv[2] + "/tests/daemon")
from checklib import api_call
for _ in range(500):
    if len(api_call(sys.argv[1], "status")["result"]["capture"]["sessions"]) == 2:
        break
    time.sleep(0.02)
else:
    raise SystemExit("FAIL: the capture to be stopped never showed")
r = api_call(sys.argv[1], "capture.stop", device="net_pcap0")
assert r["ok"] and r["result"]["detached"] == 2, r
c = api_call(sys.argv[1], "status")["result"]["capture"]
assert c["sessions"] == [], c
r = api_call(sys.argv[1], "capture.stop")
assert r["ok"] and r["result"]["detached"] == 0, r
print("capture.stop detached the running capture's 2 callbacks")
PY
wait "$dc" || true  # the tool's own stop then finds nothing to stop
/usr/bin/python3 - "$work/gwlbd.sock" "$src" <<'PY'
import sys
sys.path.insert(0, sys.argv[2] + "/tests/daemon")
from checklib import api_call
c = api_call(sys.argv[1], "status")["result"]["capture"]
assert c["sessions"] == [], c
assert c["started"] == 37 and c["stopped"] == 35 and c["detached"] == 4, c
print(f"after the kill and the stop by hand: {c['started']} started, {c['stopped']} stopped by their tool, "
      f"{c['detached']} callbacks detached by gwlbd")
PY
kill -TERM "$gwlbd_pid"
rc=0; wait "$gwlbd_pid" || rc=$?
gwlbd_pid=""
[ "$rc" -eq 0 ] || { tail -30 "$work/gwlbd.log"; echo "FAIL: gwlbd exit $rc"; exit 1; }
n_started=$(grep -c "packet capture: started on port 0 (net_pcap0)" "$work/gwlbd.log")
n_stopped=$(grep -c "packet capture: stopped on port 0 (net_pcap0)" "$work/gwlbd.log")
[ "$n_started" -eq 37 ] && [ "$n_stopped" -eq 35 ] ||
  { echo "FAIL: log has $n_started starts and $n_stopped stops, want 37 and 35"; exit 1; }
echo "PASS: dpdk-dumpcap attached to gwlbd 37 times (one killed, one stopped by hand); gwlbd stopped cleanly"
