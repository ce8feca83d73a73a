#!/usr/bin/python3
"""The soak's hostile input (scripts/soak.sh, docs/hostile-input.md has every
class and its counter). Bursts as fast as Python writes them:

  soak_hostile.py frames --side router|appliance --iface IF --src-mac M --dst-mac M
                  --src-ip A --dst-ip A --count N [--seed S]
      malformed and unwanted frames on a packet socket, one class after another
      round-robin: on the router side (run in the router's namespace, IF its veth
      to the gateway) broken L2/L3/L4 headers, QinQ, multicast, other hosts'
      MACs, Geneve on the router port; on the appliance side (an appliance's
      namespace) broken and foreign Geneve: truncated, wrong version, control,
      bad options, wrong VNI and protocol, no cookie, malformed inner packet,
      returns of flows that do not exist, spoofed appliance addresses, plain IP
  soak_hostile.py api --socket PATH --connections N --requests M
      the control socket: N connections at once (over gwlbd's 32: `busy`),
      garbage, a 70 KB line, deep JSON, unknown methods, then M requests as
      fast as they are answered
  soak_hostile.py sync --target IP:PORT --datagrams N [--seed S]
  soak_hostile.py sync ... --spoof PEER_IP
      junk to a gateway's fleet sync port (UDP): random bytes, truncated and
      unsigned records, from this host (an unknown sender) and, with --spoof,
      every other one from a peer's address (malformed or failed authentication)
Prints one JSON line: what was sent, per class.
"""
import argparse
import json
import random
import socket
import struct
import sys
import time


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def ip4(s):
    return socket.inet_aton(s)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    t = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while t >> 16:
        t = (t & 0xFFFF) + (t >> 16)
    return ~t & 0xFFFF


def ipv4(src, dst, proto, payload, ident=1, frag=0, total=None, ihl=5, version=4):
    h = struct.pack("!BBHHHBBH4s4s", (version << 4) | ihl, 0, total if total is not None else 20 + len(payload),
                    ident, frag, 64, proto, 0, src, dst)
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def udp(sport, dport, payload, length=None):
    return struct.pack("!HHHH", sport, dport, length if length is not None else 8 + len(payload), 0) + payload


def eth(dst, src, etype, payload):
    return dst + src + struct.pack("!H", etype) + payload


def geneve(vni=77, proto=0x0800, opts=b"", version=0, oam=False, inner=b""):
    b0 = (version << 6) | (len(opts) // 4)
    b1 = 0x80 if oam else 0
    return struct.pack("!BBH", b0, b1, proto) + struct.pack("!I", vni << 8) + opts + inner


COOKIE_OPT = struct.pack("!HBB", 0x0108, 0x03, 0x01) + b"\x12\x34\x56\x78"


def router_frames(a, rng):
    """name -> frame builder (router side: frames toward gwlbd's router port).
    Not here: frames shorter than an Ethernet header (the kernel refuses to
    send them) and IPv4 fragments (net_af_packet's socket defragments: what
    gwlbd gets is the kernel's, not ours)."""
    d, s = mac(a.dst_mac), mac(a.src_mac)
    src, dst = ip4("10.77.1.2"), ip4("10.77.2.2")
    under = ip4(a.dst_ip)

    def rnd_ip():
        return bytes([10, 99, rng.randrange(256), rng.randrange(1, 255)])
    return {
        "unsupported_ethertype": lambda: eth(d, s, 0x88B5, bytes(46)),
        "nested_vlan": lambda: eth(d, s, 0x88A8, struct.pack("!HHHH", 10, 0x8100, 20, 0x0800) + bytes(40)),
        "truncated_l3": lambda: eth(d, s, 0x0800, bytes([0x45]) + bytes(rng.randrange(0, 18))),
        "bad_ip_version": lambda: eth(d, s, 0x0800, ipv4(rnd_ip(), dst, 17, udp(1, 2, bytes(20)), version=6)),
        "bad_ihl": lambda: eth(d, s, 0x0800, ipv4(rnd_ip(), dst, 17, udp(1, 2, bytes(20)), ihl=rng.randrange(0, 5))),
        "bad_ip_length": lambda: eth(d, s, 0x0800, ipv4(rnd_ip(), dst, 17, udp(1, 2, bytes(20)), total=1400)),
        "truncated_l4": lambda: eth(d, s, 0x0800, ipv4(rnd_ip(), dst, 6, bytes(rng.randrange(0, 19)))),
        "bad_udp_length": lambda: eth(d, s, 0x0800, ipv4(rnd_ip(), dst, 17, udp(1, 2, bytes(20), length=4))),
        "ipv6_ext_header_chain": lambda: eth(d, s, 0x86DD, struct.pack("!IHBB", 6 << 28, 8, 0, 64) + bytes(32)
                                             + bytes([0, 200]) + bytes(6)),
        "geneve_on_router_port": lambda: eth(d, s, 0x0800, ipv4(src, under, 17, udp(6081, 6081, geneve(opts=COOKIE_OPT)))),
        "not_our_mac": lambda: eth(bytes([2, 0x55, rng.randrange(256), 0, 0, 1]), s, 0x0800,
                                   ipv4(src, dst, 17, udp(1, 2, bytes(20)))),
        "l2_multicast": lambda: eth(bytes([1, 0, 0x5E, 0, 0, 5]), s, 0x0800, ipv4(src, ip4("224.0.0.5"), 89, bytes(40))),
        "l2_broadcast": lambda: eth(b"\xff" * 6, s, 0x0800, ipv4(src, ip4("255.255.255.255"), 17, udp(68, 67, bytes(240)))),
    }


def appliance_frames(a, rng):
    """name -> frame builder (appliance side: frames toward gwlbd's appliance port)."""
    d, s = mac(a.dst_mac), mac(a.src_mac)
    me, under = ip4(a.src_ip), ip4(a.dst_ip)

    def inner():  # a well-formed inner packet of a flow nobody has
        return ipv4(bytes([10, 99, rng.randrange(256), rng.randrange(1, 255)]), ip4("10.77.2.2"), 17,
                    udp(rng.randrange(1024, 65535), 9, bytes(16)))

    def g(payload, src=me):
        return eth(d, s, 0x0800, ipv4(src, under, 17, udp(6081, 6081, payload)))
    return {
        "geneve_truncated": lambda: g(bytes(rng.randrange(0, 8))),
        "geneve_bad_version": lambda: g(geneve(version=1, opts=COOKIE_OPT, inner=inner())),
        "geneve_control": lambda: g(geneve(oam=True, opts=COOKIE_OPT, inner=inner())),
        "geneve_bad_option": lambda: g(geneve(opts=struct.pack("!HBB", 0x0108, 0x03, 0x1F) + bytes(4), inner=inner())),
        "geneve_unknown_critical_option": lambda: g(geneve(opts=struct.pack("!HBB", 0x0199, 0x85, 0x01) + bytes(4)
                                                           + COOKIE_OPT, inner=inner())),
        "geneve_bad_vni": lambda: g(geneve(vni=99, opts=COOKIE_OPT, inner=inner())),
        "geneve_bad_protocol": lambda: g(geneve(proto=0x1234, opts=COOKIE_OPT, inner=inner())),
        "geneve_missing_cookie": lambda: g(geneve(inner=inner())),
        "return_inner_malformed": lambda: g(geneve(opts=COOKIE_OPT, inner=bytes([0x45]) + bytes(10))),
        "return_no_flow": lambda: g(geneve(opts=COOKIE_OPT, inner=inner())),
        "geneve_unknown_appliance": lambda: g(geneve(opts=COOKIE_OPT, inner=inner()),
                                              src=bytes([10, 77, 9, rng.randrange(100, 200)])),
        "not_for_us": lambda: eth(d, s, 0x0800, ipv4(me, under, 6, bytes(20))),
        "appliance_port_not_return": lambda: eth(d, s, 0x0800, ipv4(me, ip4("10.77.2.2"), 17, udp(1, 2, bytes(20)))),
    }


def frames(a):
    rng = random.Random(a.seed)
    classes = (router_frames if a.side == "router" else appliance_frames)(a, rng)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    sock.bind((a.iface, 0))
    sent, errors = {k: 0 for k in classes}, 0
    names = list(classes)
    t0 = time.time()
    for i in range(a.count):
        name = names[i % len(names)]
        try:
            sock.send(classes[name]())
            sent[name] += 1
        except OSError:
            errors += 1  # the kernel refuses some (a frame shorter than its header)
    print(json.dumps({"side": a.side, "sent": sum(sent.values()), "send_errors": errors,
                      "seconds": round(time.time() - t0, 3), "classes": sent}))


def api(a):
    def conn():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        s.connect(a.socket)
        return s
    out = {"connections": 0, "busy": 0, "refused": 0, "garbage_answered": 0, "requests": 0, "request_errors": 0}
    held = []
    for _ in range(a.connections):
        try:
            held.append(conn())
            out["connections"] += 1
        except OSError:
            out["refused"] += 1
    junk = [b"not json\n", b"{\"id\": 1}\n", b"[" * 40 + b"]" * 40 + b"\n",
            b"{\"id\": 2, \"method\": \"no.such\"}\n", b"{\"id\": 3, \"method\": \"reload\", \"params\": {\"path\": \"/etc/passwd\"}}\n",
            b"\xff\xfe\n", b"{\"id\": 4, \"method\": \"flows\", \"params\": {\"limit\": -1}}\n"]
    for i, s in enumerate(held):
        try:
            s.sendall(junk[i % len(junk)] if i % 8 else b"x" * 70000)
        except OSError:
            pass
    for s in held:
        try:
            r = s.recv(4096)
            if b"busy" in r:
                out["busy"] += 1
            elif r:
                out["garbage_answered"] += 1
        except OSError:
            pass
        s.close()
    try:
        s = conn()
        f = s.makefile("rb")
        t0 = time.time()
        for i in range(a.requests):
            s.sendall(json.dumps({"id": i, "method": ["status", "servers", "stats", "fleet_sync"][i % 4]}).encode() + b"\n")
            line = f.readline()
            out["requests"] += 1
            if b'"ok":true' not in line.replace(b" ", b""):
                out["request_errors"] += 1
        out["requests_per_s"] = round(out["requests"] / max(time.time() - t0, 1e-6))
        s.close()
    except OSError as e:
        out["error"] = str(e)
    print(json.dumps(out))


def sync(a):
    rng = random.Random(a.seed)
    host, port = a.target.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW) if a.spoof else None
    kinds = {"random": 0, "short": 0, "header_like": 0}
    spoofed = 0
    for i in range(a.datagrams):
        k = ("random", "short", "header_like")[i % 3]
        if k == "random":
            d = rng.randbytes(rng.randrange(1, 1400))
        elif k == "short":
            d = rng.randbytes(rng.randrange(1, 16))
        else:  # a well-formed records message (common/sync_codec.h) whose MAC is wrong
            n = rng.randrange(1, 18)
            d = struct.pack("<IBBHQQQQQ", 0x53464C47, 1, 1, n, rng.getrandbits(64), rng.getrandbits(64),
                            rng.getrandbits(32), int(time.time() * 1000), 0) + rng.randbytes(76 * n + 16)
        try:
            if raw and i % 2:  # from a peer's address: gets past the sender check, not the MAC
                pkt = ipv4(ip4(a.spoof), ip4(host), 17, udp(int(port), int(port), d), ident=i & 0xFFFF)
                raw.sendto(pkt, (host, 0))
                spoofed += 1
            else:
                s.sendto(d, (host, int(port)))
            kinds[k] += 1
        except OSError:
            pass
    print(json.dumps({"sent": sum(kinds.values()), "spoofed": spoofed, "kinds": kinds}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("frames")
    f.add_argument("--side", choices=["router", "appliance"], required=True)
    for k in ("iface", "src-mac", "dst-mac", "src-ip", "dst-ip"):
        f.add_argument("--" + k, required=True)
    f.add_argument("--count", type=int, default=1000)
    f.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("api")
    p.add_argument("--socket", required=True)
    p.add_argument("--connections", type=int, default=40)
    p.add_argument("--requests", type=int, default=1000)
    y = sub.add_parser("sync")
    y.add_argument("--target", required=True)
    y.add_argument("--datagrams", type=int, default=200)
    y.add_argument("--seed", type=int, default=1)
    y.add_argument("--spoof", help="send every other datagram from this address (a peer's)")
    a = ap.parse_args()
    {"frames": frames, "api": api, "sync": sync}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
