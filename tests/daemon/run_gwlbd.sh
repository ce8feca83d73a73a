#!/usr/bin/env bash
# gwlbd end to end over net_pcap: start the daemon with two workers on a
# two-queue pcap port, let it forward a generated capture, ask for stats
# (SIGUSR1), stop it (SIGTERM) and check what it wrote.
#   run_gwlbd.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 "$src/tools/gen_sample_pcap.py" "$work/a.pcap" --flows 100 --seed 7 >/dev/null
/usr/bin/python3 "$src/tools/gen_sample_pcap.py" "$work/b.pcap" --flows 100 --seed 8 >/dev/null
n_in=$(( $(tshark -r "$work/a.pcap" 2>/dev/null | wc -l) + $(tshark -r "$work/b.pcap" 2>/dev/null | wc -l) ))
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: firewalls
    geneve: { format: aws, endpoint_id: 7, attachment_id: 9 }
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 }, { address: 192.0.2.12 } ]
dataplane: { workers: 2, mbufs: 8192, flow_table_size: 65536 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "-m", "256", "--no-telemetry",
      "--lcores=0@(0-1),1@(0-1),2@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/a.pcap,rx_pcap=$work/b.pcap,tx_pcap=$work/out0.pcap,tx_pcap=$work/out1.pcap"]
YAML
"$gwlbd" --check-config "$work/gwlbd.yaml"

# A bad config is refused with the key path, exit 2, and nothing starts.
sed 's/192.0.2.11/192.0.2.300/' "$work/gwlbd.yaml" > "$work/bad.yaml"
set +e
"$gwlbd" --config "$work/bad.yaml" > "$work/bad.log" 2>&1; rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "FAIL: bad config exit $rc, want 2"; cat "$work/bad.log"; exit 1; }
grep -q 'server_groups\[0\].servers\[1\].address' "$work/bad.log" || { echo "FAIL: no key path"; cat "$work/bad.log"; exit 1; }
echo "bad config refused: $(grep -m1 address "$work/bad.log")"

# node.flow_hash_secret in a file others can read: refused, with what to change
# (and never the digits); the same file made private is accepted.
printf '00112233445566778899aabbccddeeff\n' > "$work/hash.key"
chmod 644 "$work/hash.key"
sed "s|^node: { |node: { flow_hash_secret: $work/hash.key, |" "$work/gwlbd.yaml" > "$work/keyed.yaml"
set +e
"$gwlbd" --check-config "$work/keyed.yaml" > "$work/keyed.log" 2>&1; rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "FAIL: readable secret file: exit $rc, want 2"; cat "$work/keyed.log"; exit 1; }
grep -q 'chmod 600' "$work/keyed.log" || { echo "FAIL: no hint"; cat "$work/keyed.log"; exit 1; }
! grep -q '00112233' "$work/keyed.log" || { echo "FAIL: secret printed"; exit 1; }
chmod 600 "$work/hash.key"
"$gwlbd" --check-config "$work/keyed.yaml" >/dev/null || { echo "FAIL: private secret file refused"; exit 1; }
echo "flow hash secret file: readable one refused, private one accepted"

"$gwlbd" --config "$work/gwlbd.yaml" > "$work/gwlbd.log" 2>&1 &
pid=$!
ok=0
for _ in $(seq 1 120); do
  sleep 0.25
  kill -0 "$pid" 2>/dev/null || break
  kill -USR1 "$pid" 2>/dev/null || true
  if grep -q "rx_packets=$n_in " "$work/gwlbd.log"; then ok=1; break; fi
done
# Reload (SIGHUP), then stats (SIGUSR1): both handled, the daemon lives on.
# Each is waited for in the log (polled, 30 s), not given a fixed time.
log_has() {  # log_has PATTERN MIN_COUNT: polls the log until PATTERN appears MIN_COUNT times
  for _ in $(seq 1 300); do
    [ "$(grep -c -- "$1" "$work/gwlbd.log")" -ge "$2" ] && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
kill -HUP "$pid"
log_has "SIGHUP: reloaded" 1 || { cat "$work/gwlbd.log"; echo "FAIL: SIGHUP did not reload"; exit 1; }
# The reload says what it changed: the same file, so nothing (issue 18 item 8).
grep -q "\[info\] SIGHUP: reloaded $work/gwlbd.yaml: no appliance changed$" "$work/gwlbd.log" ||
  { grep reloaded "$work/gwlbd.log"; echo "FAIL: the reload line does not say what changed"; exit 1; }
n_stats=$(grep -c "\] stats: " "$work/gwlbd.log")
kill -USR1 "$pid"
log_has "\] stats: " $((n_stats + 1)) || { cat "$work/gwlbd.log"; echo "FAIL: no stats line after SIGUSR1"; exit 1; }
kill -0 "$pid" || { cat "$work/gwlbd.log"; echo "FAIL: gwlbd died on SIGHUP/SIGUSR1"; exit 1; }
kill -TERM "$pid" 2>/dev/null || true
wait "$pid"; rc=$?
cat "$work/gwlbd.log"
[ "$rc" -eq 0 ] || { echo "FAIL: gwlbd exit $rc"; exit 1; }
[ "$ok" -eq 1 ] || { echo "FAIL: gwlbd did not receive all $n_in packets"; exit 1; }
grep -q "final: .*rx_packets=$n_in .*encapsulated=$n_in " "$work/gwlbd.log" || { echo "FAIL: final counters"; exit 1; }
grep -q "worker 1 on lcore" "$work/gwlbd.log" || { echo "FAIL: second worker missing"; exit 1; }

# Both output files were flushed on SIGTERM and hold only valid Geneve to our appliances.
/usr/bin/python3 - "$work" "$n_in" <<'PY'
import sys
from scapy.all import rdpcap, IP, UDP
work, n_in = sys.argv[1], int(sys.argv[2])
pk = list(rdpcap(f"{work}/out0.pcap")) + list(rdpcap(f"{work}/out1.pcap"))
assert len(pk) == n_in, f"{len(pk)} packets out, {n_in} in"
apps = {}
for p in pk:
    ip = p[IP]
    assert ip.src == "192.0.2.1" and ip.flags.DF and p[UDP].dport == 6081, p.summary()
    apps[ip.dst] = apps.get(ip.dst, 0) + 1
assert set(apps) == {"192.0.2.10", "192.0.2.11", "192.0.2.12"}, apps
print(f"gwlbd forwarded {len(pk)}/{n_in} packets over 2 workers to {apps}")
PY

# ARP on the underlay, with no gateway_mac: gwlbd answers who-has for its own
# address, asks for every appliance, and learns the appliances that answer.
/usr/bin/python3 - "$work/arp-in.pcap" <<'PY'
import sys
from scapy.all import ARP, Ether, IPv6, wrpcap
from scapy.layers.inet6 import ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr
ours, gw = "02:00:00:00:00:01", "192.0.2.1"
pk = [Ether(src="02:00:00:00:0a:01", dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc="02:00:00:00:0a:01", psrc="192.0.2.99", pdst=gw),
      Ether(src="02:00:00:00:00:10", dst=ours) / ARP(op=2, hwsrc="02:00:00:00:00:10", psrc="192.0.2.10", hwdst=ours, pdst=gw),
      Ether(src="02:00:00:00:00:11", dst=ours) / ARP(op=2, hwsrc="02:00:00:00:00:11", psrc="192.0.2.11", hwdst=ours, pdst=gw),
      # 192.0.2.10 replaced: a gratuitous ARP from its new MAC (broadcast).
      Ether(src="02:00:00:00:00:20", dst="ff:ff:ff:ff:ff:ff") / ARP(op=1, hwsrc="02:00:00:00:00:20", psrc="192.0.2.10", pdst="192.0.2.10"),
      # A router resolving the node's IPv6 address (solicited-node multicast).
      Ether(src="02:00:00:00:0a:01", dst="33:33:ff:00:00:01") / IPv6(src="fe80::a", dst="ff02::1:ff00:1", hlim=255)
      / ICMPv6ND_NS(tgt="2001:db8::1") / ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:0a:01"),
      # ... and for someone else's: not answered.
      Ether(src="02:00:00:00:0a:01", dst="33:33:ff:00:00:02") / IPv6(src="fe80::a", dst="ff02::1:ff00:2", hlim=255)
      / ICMPv6ND_NS(tgt="2001:db8::2")]
wrpcap(sys.argv[1], pk)
PY
cat > "$work/arp.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, ipv6_addresses: ["2001:db8::1"] }
server_groups:
  - name: firewalls
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 }, { address: 192.0.2.12 } ]
dataplane: { workers: 1, mbufs: 4096, flow_table_size: 4096 }
control: { socket: $work/arp.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "-m", "128", "--no-telemetry",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/arp-in.pcap,tx_pcap=$work/arp-out.pcap"]
YAML
"$gwlbd" --config "$work/arp.yaml" > "$work/arp.log" 2>&1 &
pid=$!
learned=0
for _ in $(seq 1 80); do
  sleep 0.25
  if [ "$(grep -c 'ARP: appliance' "$work/arp.log")" -ge 3 ]; then learned=1; break; fi
done
# One more ARP round for the appliance that never answers: wait until the
# transmitted capture holds a request for it (net_pcap writes each burst).
asked=0
for _ in $(seq 1 120); do
  if /usr/bin/python3 -c 'import sys
from scapy.all import ARP, rdpcap
sys.exit(0 if any(ARP in p and p[ARP].op == 1 and p[ARP].pdst == "192.0.2.12" for p in rdpcap(sys.argv[1])) else 1)' \
     "$work/arp-out.pcap" 2>/dev/null; then asked=1; break; fi
  sleep 0.25
done
kill -TERM "$pid"; wait "$pid"
[ "$asked" -eq 1 ] || echo "note: no ARP request for 192.0.2.12 seen in the capture before SIGTERM"
cat "$work/arp.log"
[ "$learned" -eq 1 ] || { echo "FAIL: appliances not learned by ARP"; exit 1; }
grep -q "awaiting ARP" "$work/arp.log"
# The gratuitous ARP moved 192.0.2.10 to its new MAC (and a new snapshot).
grep -q "ARP: appliance 192.0.2.10 is at 02:00:00:00:00:20" "$work/arp.log" \
  || { echo "FAIL: gratuitous ARP not learned"; exit 1; }
/usr/bin/python3 - "$work/arp-out.pcap" <<'PY'
import sys
from scapy.all import ARP, rdpcap
pk = [p for p in rdpcap(sys.argv[1]) if ARP in p]
replies = [p for p in pk if p[ARP].op == 2]
asks = {p[ARP].pdst for p in pk if p[ARP].op == 1}
assert len(replies) == 1, [p.summary() for p in pk]
r = replies[0]
assert r.dst == "02:00:00:00:0a:01" and r[ARP].hwsrc == "02:00:00:00:00:01" and r[ARP].psrc == "192.0.2.1" \
    and r[ARP].pdst == "192.0.2.99", r.show(dump=True)
assert "192.0.2.12" in asks, asks
print(f"ARP: answered who-has 192.0.2.1; asked for {sorted(asks)}")
from scapy.all import IPv6, Ether
from scapy.layers.inet6 import ICMPv6ND_NA, ICMPv6NDOptDstLLAddr
na = [p for p in rdpcap(sys.argv[1]) if ICMPv6ND_NA in p]
assert len(na) == 1, [p.summary() for p in na]
a = na[0]
assert a[Ether].dst == "02:00:00:00:0a:01" and a[Ether].src == "02:00:00:00:00:01", a.summary()
assert a[IPv6].src == "2001:db8::1" and a[IPv6].dst == "fe80::a" and a[IPv6].hlim == 255, a.show(dump=True)
assert a[ICMPv6ND_NA].tgt == "2001:db8::1" and a[ICMPv6ND_NA].S == 1 and a[ICMPv6ND_NA].O == 1 \
    and a[ICMPv6ND_NA].R == 0, a.show(dump=True)
assert a[ICMPv6NDOptDstLLAddr].lladdr == "02:00:00:00:00:01", a.show(dump=True)
c = a[ICMPv6ND_NA].cksum
b = a.copy()
del b[ICMPv6ND_NA].cksum
assert IPv6(bytes(b[IPv6]))[ICMPv6ND_NA].cksum == c, "bad ICMPv6 checksum"
print("ND: answered the neighbor solicitation for 2001:db8::1 only")
PY

# Under systemd (stdout is the journal's stream, named by JOURNAL_STREAM) every
# line starts with its syslog priority for journald: "<6>[info] ...".
log="$work/journal.log"
: > "$log"
stream="$(stat -c '%d:%i' "$log")"
JOURNAL_STREAM="$stream" "$gwlbd" --config "$work/gwlbd.yaml" > "$log" 2>&1 &
pid=$!
for _ in $(seq 1 120); do grep -q "gwlbd running" "$log" && break; kill -0 "$pid" || break; sleep 0.25; done
kill -TERM "$pid" 2>/dev/null || true
wait "$pid" || { cat "$log"; echo "FAIL: gwlbd under JOURNAL_STREAM"; exit 1; }
grep -q "^<6>\[info\] gwlbd running" "$log" || { head -5 "$log"; echo "FAIL: no journald priority prefix"; exit 1; }
! grep -v "^<[2-7]>\[" "$log" | grep -q "\[info\]" || { grep -v "^<[2-7]>\[" "$log" | head -3; echo "FAIL: a line without its priority"; exit 1; }
echo "journald: every line carries its syslog priority (<6>[info] ...)"
