#!/usr/bin/python3
"""Writes the seed corpus of the fuzz targets to tests/fuzz/corpus/<target>/.

Deterministic (no randomness): running it again rewrites the same files, so
the committed corpus is reproducible; --check compares instead of writing.
Frames are built with scapy; Geneve headers, config texts, control API
requests and HTTP responses are written out here. Each target gets valid
inputs of every kind the parser accepts plus the malformed classes it must
drop (truncations, lying lengths, bad versions, option edge cases, ...), so
the fuzzers start next to every branch.

usage: gen_corpus.py [--out DIR] [--check]
"""
import argparse
import os
import struct
import sys

from scapy.all import (AH, ICMP, IP, SCTP, TCP, UDP, ARP, Dot1AD, Dot1Q, Ether, ICMPv6EchoRequest,
                       ICMPv6PacketTooBig, ICMPv6DestUnreach, ICMPv6TimeExceeded, IPv6, Raw,
                       IPOption_RR, fragment, raw)
from scapy.layers.inet6 import (IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,
                                IPv6ExtHdrRouting, fragment6)

GW = "02:00:00:00:00:01"
RT = "02:00:00:00:0a:01"
C4, S4 = "198.51.100.7", "203.0.113.9"
C6, S6 = "2001:db8:1::7", "2001:db8:2::9"


def eth(vlan=None, qinq=False):
    e = Ether(src=RT, dst=GW)
    if qinq:
        return e / Dot1AD(vlan=10) / Dot1Q(vlan=vlan or 20)
    return e / Dot1Q(vlan=vlan) if vlan else e


def b(p):
    return bytes(raw(p))


# ---------------------------------------------------------------- frames
def frames():
    f = {}
    pay = Raw(b"x" * 64)
    f["v4_tcp_syn"] = eth() / IP(src=C4, dst=S4, flags="DF") / TCP(sport=40000, dport=443, flags="S")
    f["v4_tcp_opts_data"] = (eth() / IP(src=C4, dst=S4) /
                             TCP(sport=40001, dport=80, flags="PA",
                                 options=[("MSS", 1460), ("SAckOK", b""), ("NOP", None), ("WScale", 7)]) /
                             Raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
    f["v4_udp_dns"] = eth() / IP(src=C4, dst=S4) / UDP(sport=53000, dport=53) / Raw(b"q" * 30)
    f["v4_udp_padded"] = eth() / IP(src=C4, dst=S4) / UDP(sport=1, dport=2) / Raw(b"ab") / Raw(b"\0" * 16)
    f["v4_icmp_echo"] = eth() / IP(src=C4, dst=S4) / ICMP(type=8, id=77, seq=1) / pay
    f["v4_icmp_unreach_udp"] = (eth() / IP(src=S4, dst=C4) / ICMP(type=3, code=3) /
                                IP(src=C4, dst=S4) / UDP(sport=53000, dport=53) / Raw(b"q" * 8))
    f["v4_icmp_timeexc_tcp"] = (eth(vlan=100) / IP(src="192.0.2.99", dst=C4) / ICMP(type=11) /
                                IP(src=C4, dst=S4) / TCP(sport=40000, dport=443))
    f["v4_icmp_unreach_short_quote"] = (eth() / IP(src=S4, dst=C4) / ICMP(type=3, code=1) /
                                        Raw(b(IP(src=C4, dst=S4) / UDP(sport=1, dport=2))[:24]))
    f["v4_ip_options"] = eth() / IP(src=C4, dst=S4, options=[IPOption_RR()]) / UDP(sport=5, dport=6) / pay
    f["v4_gre_noports"] = eth() / IP(src=C4, dst=S4, proto=47) / Raw(b"\0\0\x08\0" + b"y" * 20)
    f["v4_sctp"] = eth() / IP(src=C4, dst=S4) / SCTP(sport=3868, dport=3868)
    f["vlan_v4_tcp"] = eth(vlan=100) / IP(src=C4, dst=S4) / TCP(sport=1234, dport=22, flags="A")
    f["qinq_v4_udp"] = eth(vlan=20, qinq=True) / IP(src=C4, dst=S4) / UDP(sport=9, dport=9)
    f["arp_request"] = Ether(src=RT, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=C4, pdst="192.0.2.1")
    f["vlan_arp"] = eth(vlan=7) / ARP(psrc=C4, pdst="192.0.2.1")
    f["lldp_unsupported"] = Ether(src=RT, dst=GW, type=0x88CC) / Raw(b"\x02\x07\x04" + b"z" * 20)
    f["v4_geneve_outer"] = (eth() / IP(src="192.0.2.10", dst="192.0.2.1", flags="DF") /
                            UDP(sport=50000, dport=6081) / Raw(geneve_aws(b(IP(src=C4, dst=S4) / TCP()))))
    # Geneve over an IPv6 underlay, aws and ethernet formats (flow label and
    # traffic class as the gateway writes them).
    f["v6_geneve_outer"] = (eth() / IPv6(src="2001:db8:f::11", dst="2001:db8:f::1", tc=0xb8, fl=0x12345) /
                            UDP(sport=50000, dport=6081) / Raw(geneve_aws(b(IP(src=C4, dst=S4) / TCP()))))
    f["v6_geneve_outer_eth"] = (eth() / IPv6(src="2001:db8:f::11", dst="2001:db8:f::1") /
                                UDP(sport=50001, dport=6081) /
                                Raw(geneve(0x6558) + b(Ether(src=RT, dst=GW) / IPv6(src=C6, dst=S6) / UDP())))
    # VXLAN over an IPv6 underlay, both of Azure's tunnels, as an appliance
    # returns it (the kernel's VXLAN device: checksum computed, no label); and
    # (below) an outer IPv6 header whose payload length runs past the frame.
    vx6 = lambda port, vni, inner: (eth() / IPv6(src="2001:db8:f::11", dst="2001:db8:f::1") /
                                    UDP(sport=50002, dport=port) /
                                    Raw(struct.pack("!B3sI", 0x08, b"\0\0\0", vni << 8) + inner))
    f["v6_vxlan_outer_external"] = vx6(10801, 801, b(Ether(src=RT, dst=GW) / IP(src=C4, dst=S4) / TCP(flags="S")))
    f["v6_vxlan_outer_internal"] = vx6(10800, 800, b(Ether(src=RT, dst=GW) / IPv6(src=S6, dst=C6) / UDP()))
    frags = fragment(IP(src=C4, dst=S4, id=4242) / UDP(sport=7000, dport=7001) / Raw(b"f" * 600), fragsize=256)
    f["v4_frag_first"] = eth() / frags[0]
    f["v4_frag_later"] = eth() / frags[1]
    f["v6_tcp_syn"] = eth() / IPv6(src=C6, dst=S6) / TCP(sport=40000, dport=443, flags="S")
    f["v6_udp"] = eth(vlan=200) / IPv6(src=C6, dst=S6) / UDP(sport=5353, dport=5353) / pay
    f["v6_icmp_echo"] = eth() / IPv6(src=C6, dst=S6) / ICMPv6EchoRequest(id=9, seq=3)
    f["v6_too_big_tcp"] = (eth() / IPv6(src=S6, dst=C6) / ICMPv6PacketTooBig(mtu=1280) /
                           IPv6(src=C6, dst=S6) / TCP(sport=40000, dport=443))
    f["v6_unreach_udp"] = (eth() / IPv6(src=S6, dst=C6) / ICMPv6DestUnreach() /
                           IPv6(src=C6, dst=S6) / UDP(sport=1000, dport=2000))
    f["v6_timeexc_exthdr"] = (eth() / IPv6(src="2001:db8::1", dst=C6) / ICMPv6TimeExceeded() /
                              IPv6(src=C6, dst=S6) / IPv6ExtHdrHopByHop() / UDP(sport=3, dport=4))
    f["v6_hbh_dest_tcp"] = (eth() / IPv6(src=C6, dst=S6) / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() /
                            TCP(sport=1, dport=2))
    f["v6_routing_udp"] = (eth() / IPv6(src=C6, dst=S6) / IPv6ExtHdrRouting(addresses=["2001:db8::5"]) /
                           UDP(sport=8, dport=9))
    f["v6_ah_tcp"] = eth() / IPv6(src=C6, dst=S6, nh=51) / Raw(b"\x06\x04\0\0" + b"\0" * 20) / TCP()
    f6 = fragment6(IPv6(src=C6, dst=S6) / IPv6ExtHdrFragment(id=0xabcdef) / UDP(sport=11, dport=12) /
                   Raw(b"g" * 700), 400)
    f["v6_frag_first"] = eth() / f6[0]
    f["v6_frag_later"] = eth() / f6[1]
    f["v6_jumbo_9000"] = eth() / IPv6(src=C6, dst=S6) / UDP(sport=1, dport=2) / Raw(b"j" * 8900)
    out = {k: b(v) for k, v in f.items()}
    # Malformed classes (hand-made from the valid ones).
    syn = out["v4_tcp_syn"]
    out["trunc_l2"] = syn[:13]
    out["trunc_vlan"] = out["vlan_v4_tcp"][:16]
    out["trunc_l3"] = syn[:14 + 19]
    out["trunc_tcp"] = syn[:14 + 20 + 10]
    out["v4_ihl_4"] = syn[:14] + bytes([0x44]) + syn[15:]
    out["v4_total_len_lies"] = syn[:16] + struct.pack("!H", 1500) + syn[18:]
    # An IPv6 appliance's returns near the worker's IPv6 shortcut: UDP shorter
    # than the payload (a surplus area), UDP claiming more than the payload,
    # a hop-by-hop header before UDP and a fragmented outer (the general
    # parser's), and TCP whose data offset runs past the segment.
    g6 = out["v6_geneve_outer"]
    out["v6_geneve_outer_udp_surplus"] = g6[:58] + struct.pack("!H", len(g6) - 54 - 8) + g6[60:]
    out["v6_geneve_outer_udp_len_lies"] = g6[:58] + struct.pack("!H", len(g6) - 54 + 8) + g6[60:]
    out["v6_geneve_outer_hbh"] = b(eth() / IPv6(src="2001:db8:f::11", dst="2001:db8:f::1") /
                                   IPv6ExtHdrHopByHop() / UDP(sport=50000, dport=6081) /
                                   Raw(geneve_aws(b(IP(src=C4, dst=S4) / TCP()))))
    out["v6_geneve_outer_frag"] = b(eth() / fragment6(
        IPv6(src="2001:db8:f::11", dst="2001:db8:f::1") / IPv6ExtHdrFragment(id=0x1234) /
        UDP(sport=50000, dport=6081) / Raw(geneve_aws(b(IP(src=C4, dst=S4) / TCP() / Raw(b"p" * 600)))),
        400)[0])
    t6 = out["v6_tcp_syn"]
    out["v6_tcp_doff_past_end"] = t6[:66] + bytes([0xF0 | (t6[66] & 0x0F)]) + t6[67:]
    vx6 = out["v6_vxlan_outer_internal"]
    out["v6_vxlan_outer_plen_lies"] = vx6[:18] + struct.pack("!H", 1400) + vx6[20:]
    out["v4_bad_version"] = syn[:14] + bytes([0x65]) + syn[15:]
    v6 = out["v6_tcp_syn"]
    out["v6_plen_lies"] = v6[:18] + struct.pack("!H", 4000) + v6[20:]
    out["v6_ext_loop"] = b(eth() / IPv6(src=C6, dst=S6, nh=0) /
                           Raw(b"".join(bytes([0, 0]) + b"\0" * 6 for _ in range(10))))
    out["nested_vlan"] = b(Ether(src=RT, dst=GW) / Dot1Q(vlan=1) / Dot1Q(vlan=2) / IP() / UDP())
    out["empty"] = b""
    return out


# ---------------------------------------------------------------- geneve
def gopt(cls, typ, data):
    assert len(data) % 4 == 0
    return struct.pack("!HBB", cls, typ, len(data) // 4) + data


def geneve(proto, opts=b"", ver=0, o=False, c=False, vni=0x123456, optlen=None):
    ol = len(opts) // 4 if optlen is None else optlen
    return (struct.pack("!BBH", (ver << 6) | (ol & 0x3F), (0x80 if o else 0) | (0x40 if c else 0), proto) +
            struct.pack("!I", vni << 8) + opts)


def aws_opts(cookie=0xdeadbeef, eid=0x0123456789abcdef, aid=1):
    return (gopt(0x0108, 1, struct.pack("!Q", eid)) + gopt(0x0108, 2, struct.pack("!Q", aid)) +
            gopt(0x0108, 3, struct.pack("!I", cookie)))


def nsi_opts(cookie=0xdeadbeef, network=0x123456, endpoint=0x01234567, profile=42, egress=False):
    return (gopt(0x0132, 1, struct.pack("!I", network << 4 | int(egress))) +
            gopt(0x0132, 3, struct.pack("!Q", profile)) + gopt(0x0132, 2, struct.pack("!II", endpoint, cookie)))


def geneve_aws(inner, proto=0x0800):
    return geneve(proto, aws_opts()) + inner


def genev():
    g = {}
    v4 = b(IP(src=C4, dst=S4) / TCP(sport=40000, dport=443, flags="S"))
    v4u = b(IP(src=C4, dst=S4) / UDP(sport=53000, dport=53) / Raw(b"q" * 20))
    v6 = b(IPv6(src=C6, dst=S6) / UDP(sport=1, dport=2) / Raw(b"p" * 16))
    v4icmp = b(IP(src=S4, dst=C4) / ICMP(type=3, code=4) / IP(src=C4, dst=S4) / TCP(sport=1, dport=2))
    ethf = b(Ether(src=RT, dst=GW) / IP(src=C4, dst=S4) / TCP(sport=40000, dport=443))
    ethv = b(Ether(src=RT, dst=GW) / Dot1Q(vlan=100) / IPv6(src=C6, dst=S6) / TCP(sport=5, dport=6))
    g["aws_v4_tcp"] = geneve_aws(v4)
    g["aws_v4_udp"] = geneve_aws(v4u)
    g["aws_v6_udp"] = geneve_aws(v6, 0x86DD)
    g["aws_v4_icmp_error"] = geneve_aws(v4icmp)
    g["aws_v4_frag"] = geneve_aws(b(fragment(IP(src=C4, dst=S4) / UDP() / Raw(b"f" * 300), 128)[1]))
    g["aws_opts_reordered"] = geneve(0x0800, gopt(0x0108, 3, b"\x01\x02\x03\x04") +
                                     gopt(0x0108, 1, b"\0" * 8)) + v4
    g["aws_unknown_noncritical"] = geneve(0x0800, gopt(0x0199, 0x05, b"\0" * 4) + aws_opts()) + v4
    g["aws_unknown_critical"] = geneve(0x0800, aws_opts() + gopt(0x0199, 0x85, b"\0" * 4), c=True) + v4
    g["aws_critical_known"] = geneve(0x0800, gopt(0x0108, 0x83, b"\0\0\0\x07")) + v4
    g["aws_cookie_wrong_len"] = geneve(0x0800, gopt(0x0108, 3, b"\0" * 8)) + v4
    g["aws_no_cookie"] = geneve(0x0800, gopt(0x0108, 1, b"\0" * 8)) + v4
    g["aws_padding"] = geneve_aws(v4u + b"\0" * 12)
    g["aws_inner_truncated"] = geneve_aws(v4[:30])
    g["eth_v4_tcp"] = geneve(0x6558) + ethf
    g["eth_vlan_v6"] = geneve(0x6558) + ethv
    g["eth_arp_inner"] = geneve(0x6558) + b(Ether(src=RT, dst=GW) / ARP())
    g["oam_control"] = geneve(0x6558, o=True) + b"\0" * 16
    g["version_1"] = geneve(0x0800, aws_opts(), ver=1) + v4
    g["optlen_past_end"] = geneve(0x0800, b"", optlen=20) + b"\0" * 16
    g["option_past_options"] = geneve(0x0800, struct.pack("!HBB", 0x0108, 3, 4) + b"\0" * 4, optlen=2) + v4
    g["option_len0"] = geneve(0x0800, gopt(0x0108, 3, b"")) + v4
    g["option_header_split"] = geneve(0x0800, b"\x01\x08\x03\x01" + b"\0" * 4 + b"\x01\x08", optlen=3) + v4
    g["max_options"] = geneve(0x0800, aws_opts() + gopt(0x0200, 1, b"\0" * 124) + gopt(0x0200, 2, b"\0" * 92)) + v4
    g["bad_protocol"] = geneve(0x88CC, aws_opts()) + v4
    # gwlb's bypass option (class 0xFF01, type 1, 4 bytes of seconds) from an appliance.
    g["aws_bypass_life"] = geneve(0x0800, aws_opts() + gopt(0xFF01, 1, struct.pack("!I", 0))) + v4
    g["aws_bypass_timed"] = geneve(0x0800, gopt(0xFF01, 1, struct.pack("!I", 30)) + aws_opts()) + v4
    g["eth_bypass"] = geneve(0x6558, gopt(0xFF01, 1, struct.pack("!I", 600))) + ethf
    g["bypass_wrong_len"] = geneve(0x0800, aws_opts() + gopt(0xFF01, 1, b"\0" * 8)) + v4
    g["bypass_len0"] = geneve(0x6558, gopt(0xFF01, 1, b"")) + ethf
    g["bypass_critical"] = geneve(0x0800, aws_opts() + gopt(0xFF01, 0x81, b"\0\0\0\x05"), c=True) + v4
    g["bypass_other_type_critical"] = geneve(0x0800, aws_opts() + gopt(0xFF01, 0x84, b"\0" * 4), c=True) + v4
    # The nsi format (Google Cloud's class 0x0132: network ID with its D bit,
    # profile ID, endpoint ID whose low half is gwlb's flow cookie), as gwlb
    # writes it, reordered, with a bypass request, and malformed.
    g["nsi_v4_tcp"] = geneve(0x0800, nsi_opts()) + v4
    g["nsi_v6_egress"] = geneve(0x86DD, nsi_opts(egress=True), vni=0) + v6
    g["nsi_reordered_bypass"] = geneve(0x0800, gopt(0xFF01, 1, struct.pack("!I", 20)) +
                                       gopt(0x0132, 2, struct.pack("!II", 7, 0xc0ffee)) +
                                       gopt(0x0132, 1, struct.pack("!I", 0x77 << 4 | 1))) + v4
    g["nsi_endpoint_wrong_len"] = geneve(0x0800, gopt(0x0132, 2, b"\0" * 4) + gopt(0x0132, 3, b"\0" * 8)) + v4
    g["nsi_network_critical_long"] = geneve(0x0800, gopt(0x0132, 0x81, b"\0" * 8), c=True) + v4
    g["truncated_7"] = geneve(0x0800)[:7]
    g["empty"] = b""
    return g


# ---------------------------------------------------------------- icmp
def icmpc():
    out = {}

    def put(name, frame, mtu=1400, extra=64):
        out[name] = struct.pack("!HB", mtu, extra) + b(frame)

    big = Raw(b"B" * 1460)
    put("v4_df_tcp", eth() / IP(src=C4, dst=S4, flags="DF") / TCP(sport=40000, dport=443, flags="A") / big)
    put("v4_df_udp_vlan", eth(vlan=100) / IP(src=C4, dst=S4, flags="DF") / UDP(sport=1, dport=2) / big, 1300)
    put("v4_df_ip_options", eth() / IP(src=C4, dst=S4, flags="DF", options=[IPOption_RR()]) /
        UDP(sport=1, dport=2) / big, 576, 0)
    put("v4_no_df", eth() / IP(src=C4, dst=S4) / UDP(sport=1, dport=2) / big)
    put("v4_df_small_room", eth() / IP(src=C4, dst=S4, flags="DF") / TCP() / Raw(b"s" * 10), 68, 0)
    put("v4_df_icmp_echo", eth() / IP(src=C4, dst=S4, flags="DF") / ICMP(id=5) / big, 0)
    put("v4_icmp_error_refused", eth() / IP(src=S4, dst=C4, flags="DF") / ICMP(type=3, code=4) /
        IP(src=C4, dst=S4) / TCP(sport=1, dport=2))
    put("v4_icmp_error_quoted_udp", eth() / IP(src=S4, dst=C4) / ICMP(type=3, code=3) /
        IP(src=C4, dst=S4) / UDP(sport=53000, dport=53))
    frags = fragment(IP(src=C4, dst=S4, id=9, flags="DF") / UDP(sport=1, dport=2) / Raw(b"f" * 2000), 1000)
    put("v4_frag_first", eth() / frags[0])
    put("v4_frag_later", eth() / frags[1])
    put("v6_tcp", eth() / IPv6(src=C6, dst=S6) / TCP(sport=40000, dport=443) / big, 1280, 255)
    put("v6_udp_vlan_small_room", eth(vlan=5) / IPv6(src=C6, dst=S6) / UDP() / Raw(b"u" * 30), 1280, 0)
    put("v6_exthdr_tcp", eth() / IPv6(src=C6, dst=S6) / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() /
        TCP() / big, 1280)
    f6 = fragment6(IPv6(src=C6, dst=S6) / IPv6ExtHdrFragment(id=7) / UDP() / Raw(b"g" * 3000), 1400)
    put("v6_frag_first", eth() / f6[0], 1280)
    put("v6_frag_later", eth() / f6[1], 1280)
    put("v6_too_big_refused", eth() / IPv6(src=S6, dst=C6) / ICMPv6PacketTooBig(mtu=1280) /
        IPv6(src=C6, dst=S6) / TCP())
    put("v6_echo_mtu_max", eth() / IPv6(src=C6, dst=S6) / ICMPv6EchoRequest() / big, 65535)
    out["short"] = b"\x05\xdc"
    return out


# ---------------------------------------------------------------- config
def configs():
    node = ("node:\n  underlay_ip: 192.0.2.1\n  underlay_mac: 02:00:00:00:00:01\n"
            "  gateway_mac: 02:00:00:00:00:fe\n")
    grp = ("server_groups:\n  - name: fw\n    servers:\n      - { address: 192.0.2.10 }\n"
           "      - { address: 192.0.2.11, weight: 50, mac: 02:00:00:00:00:aa }\n")
    c = {}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for ex in ("gwlbd.yaml", "regions.yaml", "replay.yaml"):
        p = os.path.join(root, "examples", ex)
        if os.path.exists(p):
            c["example_" + ex.replace(".yaml", "")] = open(p).read()
    c["minimal"] = node + grp
    c["ipv6_underlay"] = (node + "  underlay_ipv6: 2001:db8:f::1\n" +
                          "server_groups:\n  - name: v6\n    health_check: { enabled: false }\n"
                          "    servers:\n      - { address: '2001:db8:f::11' }\n"
                          "      - { address: 192.0.2.10 }\n")
    c["vxlan_ipv6_underlay"] = (node + "  underlay_ipv6: 2001:db8:f::1\n" +
                                "server_groups:\n  - name: nva\n    encapsulation: vxlan\n"
                                "    health_check: { enabled: false }\n"
                                "    servers:\n      - { address: '2001:db8:f::11' }\n"
                                "      - { address: '2001:db8:f::12' }\n")
    c["flow_style"] = ("{node: {underlay_ip: 192.0.2.1, underlay_mac: '02:00:00:00:00:01'}, "
                       "server_groups: [{name: a, servers: [{address: 192.0.2.9}]}]}\n")
    c["all_group_keys"] = node + (
        "server_groups:\n  - name: fw-1\n    stickiness: 3-tuple\n"
        "    geneve: { format: ethernet, vni: 0xffffff }\n    maglev_table_size: 251\n"
        "    tcp_idle_timeout: 60s\n    other_idle_timeout: 6000s\n"
        "    when_all_unhealthy: drop\n    failover_mode: no_rebalance\n"
        "    connection_draining: { enabled: true, timeout: 1s }\n"
        "    health_check:\n      protocol: https\n      port: 8443\n      path: /healthz\n"
        "      domain: fw.example\n      http_codes: [http_2xx, 301-302]\n      interval: 10ms\n"
        "      timeout: 60s\n      healthy_threshold: 2\n      unhealthy_threshold: 10\n"
        "      interface: mgmt0\n      source: 192.0.2.1\n      verify: true\n"
        "      ca_file: /etc/ssl/certs/ca.pem\n      keep_alive: true\n"
        "      jitter: false\n"
        "    servers: [ { address: 10.0.0.1, weight: 0 }, { address: 10.0.0.2, weight: 10000 } ]\n"
        "dataplane: { workers: 64, burst: 256, flow_table_size: 1024, mbufs: 1024,"
        " rx_queue_size: 64, tx_queue_size: 16384 }\n"
        "control: { socket: /run/gwlbd/x.sock, socket_mode: \"0600\" }\n"
        "metrics: { listen: \"[::1]:9100\" }\nlog_level: debug\neal: [--no-huge, --no-pci]\n")
    c["regions_two"] = node + (
        "server_groups:\n  - { name: a, servers: [{address: 10.0.0.1}] }\n"
        "  - { name: b, servers: [{address: 10.0.1.1}] }\n"
        "health_aggregation_policies: [ { name: p, min_healthy_percent: 100, min_healthy_count: 0 } ]\n"
        "health_sources: [ { name: sa, server_group: a, policy: p }, { name: sb, server_group: b } ]\n"
        "composite_health_checks: [ { name: ca, sources: [sa, sb], destination: l, dry_run: true } ]\n"
        "listeners: [ { name: l, server_groups: [a, b], failback_hold: 3600s,"
        " when_all_unhealthy: drop } ]\n"
        "health_endpoint: { listen: 127.0.0.1:8081 }\n")
    c["fleet_sync"] = node + grp + (
        "fleet:\n  node_name: gw-1\n  secret: 00112233445566778899aabbccddeeff\n"
        "  sync_listen: \"0.0.0.0:7946\"\n"
        "  peers: [\"10.0.0.1:7946\", \"10.0.0.2:7946\", \"[2001:db8::3]:7946\"]\n"
        "  warm_start_timeout: 10s\n  warm_start_connect_timeout: 500ms\n"
        "  warm_start_idle_timeout: 3s\n"
        "  bird: { socket: /run/bird/bird.ctl, protocols: [gwlb_routes] }\n  grace_period: 5s\n")
    # Issue 27: traffic classes, every match field and action, and their bad values.
    two = ("server_groups:\n  - { name: a, servers: [{address: 10.0.0.1}] }\n"
           "  - { name: b, servers: [{address: 10.0.1.1}] }\n"
           "listeners: [ { name: la, server_groups: [a] }, { name: lb, server_groups: [b] } ]\n")
    c["classes"] = node + two + (
        "traffic_classes:\n"
        "  - name: tenant-a\n    match: { vlans: [100, 200, 0], ingress_ports: [0, 0x1] }\n"
        "    listener: la\n"
        "  - name: backups\n"
        "    match: { prefixes: [10.9.0.0/16, \"2001:db8::/32\", 0.0.0.0/0], protocols: [tcp, udp, icmp,"
        " icmpv6, sctp, 47], l4_ports: [873, 1000-2000, \"0-65535\"] }\n"
        "    action: bypass\n"
        "  - { name: quarantine, match: { vlans: [999] }, action: drop }\n"
        "  - { name: rest, listener: lb }\n")
    c["classes_bad"] = node + two + (
        "traffic_classes:\n"
        "  - { name: a, match: { vlans: [4095, -1, x, 5, 5], ingress_ports: [65536] }, listener: nope }\n"
        "  - { name: a, match: { prefixes: [10.9.0.1/16, 10.0.0.0, 1.2.3.0/40, \"::1/129\", x/8],"
        " protocols: [TCP, gre, 256], l4_ports: [2000-1000, 70000, 1000-, -5] }, action: pass }\n"
        "  - { name: b, action: bypass, listener: la, listner: la, match: [1] }\n"
        "  - { match: {}, action: drop }\n")
    c["classes_implicit"] = node + grp + (
        "traffic_classes: [ { name: web, match: { l4_ports: [80, 443] } }, { name: all, listener: default } ]\n")
    c["anchors_aliases"] = node + (
        "x-servers: &s [ { address: 10.0.0.1 } ]\nserver_groups:\n  - { name: a, servers: *s }\n")
    c["merge_key"] = node + ("base: &b { name: a }\nserver_groups:\n  - <<: *b\n"
                             "    servers: [ { address: 10.0.0.1 } ]\n")
    c["bad_types"] = node.replace("192.0.2.1", "[1, 2]") + grp.replace("weight: 50", "weight: fifty")
    c["bad_ranges"] = node + grp + ("dataplane: { workers: 0, burst: 100000, flow_table_size: -1,"
                                    " mbufs: 99999999999999999999 }\n")
    c["unknown_key_typo"] = node + grp + "dataplan: { workers: 2 }\n"
    c["duplicate_server"] = node + ("server_groups:\n  - name: a\n    servers: [ {address: 10.0.0.1},"
                                    " {address: 10.0.0.1} ]\n")
    c["duplicate_key"] = node + grp + "log_level: info\nlog_level: warn\n"
    c["family_mixup"] = node.replace("192.0.2.1", "2001:db8::1") + grp.replace("192.0.2.10", "::1")
    c["two_documents"] = node + grp + "---\n" + node
    c["tags_binary"] = node + grp + "eal: !!binary aGVsbG8=\n"
    c["deep_nesting"] = node + grp + "eal: " + "[" * 200 + "]" * 200 + "\n"
    c["durations"] = node + grp.replace("    servers:", "    tcp_idle_timeout: 1h\n    servers:")
    c["hex_octal"] = node + grp + "control: { socket_mode: 0777 }\n" + "node2: 0x\n"
    c["syntax_error"] = node + "server_groups: [ { name: a\n"
    c["tab_indent"] = "node:\n\tunderlay_ip: 1.2.3.4\n"
    c["empty"] = ""
    c["null_doc"] = "~\n"
    c["scalar_root"] = "just a string\n"
    return {k: v.encode() for k, v in c.items()}


# ---------------------------------------------------------------- api
def api():
    a = {}
    a["status"] = '{"id":1,"method":"status"}\n'
    a["every_method"] = "".join(
        '{"id":%d,"method":"%s","params":%s}\n' % (i, m, p) for i, (m, p) in enumerate([
            ("servers", '{"group":"fw"}'), ("groups", "{}"), ("stats", "{}"), ("reload", "{}"),
            ("flows", '{"server":"192.0.2.10","group":"fw","src":"10.0.0.0/8","dst":"2001:db8::/32",'
                      '"proto":"tcp","port":443,"limit":10,"cursor":"4294967295","count":false}'),
            ("explain", '{"src":"1.2.3.4","dst":"5.6.7.8","proto":"17","sport":1,"dport":65535}'),
            ("server.add", '{"group":"fw","address":"192.0.2.20","weight":10000,"mac":"02:00:00:00:00:aa"}'),
            ("server.remove", '{"address":"192.0.2.20"}'), ("server.set", '{"address":"192.0.2.20","weight":0}'),
            ("server.drain", '{"address":"192.0.2.20","timeout_s":3600}'),
            ("server.undrain", '{"address":"192.0.2.20"}'), ("health", '{"address":"192.0.2.10"}'),
            ("destinations", '{"name":"web"}')]))
    a["bad_params"] = "".join(l + "\n" for l in [
        '{"method":"flows","params":{"limit":0}}', '{"method":"flows","params":{"port":-1}}',
        '{"method":"flows","params":{"port":1.5}}', '{"method":"flows","params":{"src":"10.0.0.0/33"}}',
        '{"method":"flows","params":{"src":"10.0.0.0/"}}', '{"method":"flows","params":{"proto":"256"}}',
        '{"method":"flows","params":{"cursor":"99999999999"}}', '{"method":"flows","params":{"count":"yes"}}',
        '{"method":"explain","params":{"src":"1.2.3.4","dst":"::1","proto":"tcp"}}',
        '{"method":"explain","params":{"src":"1.2.3.4"}}', '{"method":"server.add","params":{"group":1}}',
        '{"method":"server.set","params":{"address":"x","weight":1}}',
        '{"method":"status","params":{"x":1}}', '{"method":"nope"}', '{"method":1}',
        '{"id":null,"method":"status","extra":true}', '{"id":[1,{"a":"b"}],"method":"status","params":[]}'])
    a["wrong_types"] = "".join(l + "\n" for l in [
        '{"method":"servers","params":{"group":1}}', '{"method":"destinations","params":{"name":{}}}',
        '{"method":"flows","params":{"server":4}}', '{"method":"flows","params":{"src":[1]}}',
        '{"method":"flows","params":{"proto":6}}', '{"method":"flows","params":{"cursor":7}}',
        '{"method":"flows","params":{"group":true}}', '{"method":"flows","params":{"limit":"5"}}',
        '{"method":"explain","params":{"src":1,"dst":"1.2.3.4","proto":"tcp"}}',
        '{"method":"explain","params":{"src":"1.2.3.4","dst":"1.2.3.5","proto":17}}',
        '{"method":"server.add","params":{"group":1,"address":"1.2.3.4"}}',
        '{"method":"server.add","params":{"group":"fw","address":"1.2.3.4","mac":2}}',
        '{"method":"server.set","params":{"address":"1.2.3.4","weight":null}}',
        '{"method":"server.drain","params":{"address":"1.2.3.4","timeout_s":"1"}}',
        '{"method":"health","params":{"address":null}}'])
    # Traffic classes (issue 27): `classes`, and explain's ingress port and VLAN.
    a["classes_explain"] = "".join(l + "\n" for l in [
        '{"id":1,"method":"classes","params":{}}', '{"method":"classes","params":{"name":"web"}}',
        '{"method":"explain","params":{"src":"10.9.1.1","dst":"10.0.0.1","proto":"tcp","sport":873,'
        '"dport":40000,"port":1,"vlan":100}}',
        '{"method":"explain","params":{"src":"2001:db8::1","dst":"2001:db8::2","proto":"udp","vlan":0}}',
        '{"method":"explain","params":{"src":"1.2.3.4","dst":"1.2.3.5","proto":"tcp","vlan":4096}}',
        '{"method":"explain","params":{"src":"1.2.3.4","dst":"1.2.3.5","proto":"tcp","port":65536}}',
        '{"method":"explain","params":{"src":"1.2.3.4","dst":"1.2.3.5","proto":"tcp","port":"1"}}',
        '{"method":"explain","params":{"src":"1.2.3.4","dst":"1.2.3.5","proto":"tcp","vlan":-1}}',
        '{"method":"explain","params":{"src":"1.2.3.4","dst":"1.2.3.5","proto":"gre","vlan":1}}'])
    a["not_json"] = "hello\n{\n[1,2,3]\n\"str\"\n{\"method\":\"status\"\r\n\r\n"
    a["unicode"] = '{"id":"\\u00e9\\ud83d\\ude00","method":"servers","params":{"group":"\\u0000fw"}}\n'
    a["lone_surrogate"] = '{"id":"\\ud800","method":"status"}\n'
    a["deep_33"] = '{"method":"status","params":' + '{"a":' * 32 + "1" + "}" * 33 + "\n"
    a["deep_in_string"] = '{"method":"status","id":"' + "[" * 100 + '"}\n'
    a["big_numbers"] = ('{"id":1e400,"method":"flows","params":{"limit":18446744073709551616,'
                        '"port":-9223372036854775809}}\n')
    a["crlf_lines"] = '{"method":"groups"}\r\n{"method":"stats"}\r\r\n'
    a["no_final_newline"] = '{"method":"status","id":7}'
    a["invalid_utf8"] = b'{"method":"servers","params":{"group":"\xff\xfe"}}\n'
    return {k: (v if isinstance(v, bytes) else v.encode()) for k, v in a.items()}


# ---------------------------------------------------------------- http
def http():
    h = {}
    h["ok_200"] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    h["503"] = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\n\r\n"
    h["http10_301"] = "HTTP/1.0 301 Moved Permanently\r\nLocation: /x\r\n\r\n"
    h["continue_then_200"] = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"
    h["early_hints_then_204"] = "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
    h["switching_101"] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"
    h["lone_lf"] = "HTTP/1.1 200 OK\nServer: x\n\n"
    h["no_reason"] = "HTTP/1.1 404\r\n\r\n"
    h["obs_fold"] = "HTTP/1.1 200 OK\r\nX-Long: a\r\n  continued\r\n\r\n"
    h["obs_text"] = "HTTP/1.1 200 \xe9t\xe9\r\nX: \xff\r\n\r\n"
    h["bare_cr"] = "HTTP/1.1 200 OK\rX: y\r\n\r\n"
    h["no_colon"] = "HTTP/1.1 200 OK\r\nBroken header\r\n\r\n"
    h["empty_name"] = "HTTP/1.1 200 OK\r\n: v\r\n\r\n"
    h["ws_first"] = "HTTP/1.1 200 OK\r\n folded-first\r\n\r\n"
    h["status_600"] = "HTTP/1.1 600 Nope\r\n\r\n"
    h["status_099"] = "HTTP/1.1 099 Nope\r\n\r\n"
    h["http2"] = "HTTP/2 200\r\n\r\n"
    h["http19"] = "HTTP/1.9 200 OK\r\n\r\n"
    h["garbage"] = "SSH-2.0-OpenSSH_9.2\r\n"
    h["partial"] = "HTTP/1.1 200 OK\r\nContent-Ty"
    h["partial_cr"] = "HTTP/1.1 200 OK\r\nX: y\r"
    h["control_in_value"] = "HTTP/1.1 200 OK\r\nX: a\x01b\r\n\r\n"
    h["nul_in_name"] = "HTTP/1.1 200 OK\r\nX\x00Y: z\r\n\r\n"
    h["big_head"] = "HTTP/1.1 200 OK\r\n" + "".join("X-H%d: %s\r\n" % (i, "v" * 60) for i in range(110)) + "\r\n"
    h["empty"] = ""
    # keep_alive: where the response ends (ResponseFramer).
    h["ka_framed"] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    h["ka_framed_lf"] = "HTTP/1.1 200\ncontent-length:  0 \n\n"
    h["ka_204"] = "HTTP/1.1 204 No Content\r\n\r\n"
    h["ka_chunked"] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
    h["ka_close_token"] = "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n"
    h["ka_two_lengths"] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 02\r\n\r\nok"
    h["ka_bad_length"] = "HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\nok"
    h["ka_extra"] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n"
    h["ka_big_body"] = "HTTP/1.1 200 OK\r\nContent-Length: 70000\r\n\r\n"
    h["ka_body_short"] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"
    return {k: v.encode("latin-1") for k, v in h.items()}


# ---------------------------------------------------------------- http_request
def http_request():
    """First byte: bit 0 = the metrics listener (else the health endpoint),
    bits 1..7 = chunk size - 1; then what the client sends."""
    def h(chunk, text, metrics=False):
        return bytes([((chunk - 1) << 1) | (1 if metrics else 0)]) + text
    r = {}
    r["health_inspect"] = h(1, b"GET /destinations/inspect HTTP/1.1\r\nHost: gw\r\n\r\n")
    r["health_edge_503"] = h(7, b"GET /destinations/edge HTTP/1.1\r\n\r\n")
    r["health_all"] = h(128, b"GET /destinations HTTP/1.1\r\nAccept: */*\r\n\r\n")
    r["health_unknown"] = h(3, b"GET /destinations/nope?x=1 HTTP/1.1\r\n\r\n")
    r["health_invalid_utf8"] = h(16, b"GET /destinations/\xff HTTP/1.1\r\n\r\n")
    r["health_surrogate"] = h(16, b"GET /destinations/\xed\xa0\x80 HTTP/1.1\r\n\r\n")
    r["health_head"] = h(2, b"HEAD /destinations/inspect HTTP/1.1\r\n\r\n")
    r["health_other_path"] = h(5, b"GET / HTTP/1.1\r\n\r\n")
    r["metrics"] = h(1, b"GET /metrics HTTP/1.1\r\nHost: gw\r\n\r\n", True)
    r["metrics_head"] = h(9, b"HEAD /metrics HTTP/1.0\r\n\r\n", True)
    r["metrics_query"] = h(4, b"GET /metrics?\xff=\xfe#frag HTTP/1.1\r\n\r\n", True)
    r["metrics_lone_lf"] = h(2, b"GET /metrics HTTP/1.1\nHost: gw\n\n", True)
    r["metrics_no_blank_line"] = h(64, b"GET /metrics HTTP/1.0\r\n", True)
    r["metrics_no_line_end"] = h(64, b"GET /metrics", True)
    r["post"] = h(8, b"POST /metrics HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", True)
    r["no_target"] = h(8, b"GET\r\n\r\n")
    r["empty_line"] = h(1, b"\r\n\r\n", True)
    r["absolute_form"] = h(8, b"GET http://gw/metrics HTTP/1.1\r\n\r\n", True)
    r["double_space"] = h(8, b"GET  /destinations/inspect HTTP/1.1\r\n\r\n")
    r["nul_in_path"] = h(8, b"GET /destinations/in\x00spect HTTP/1.1\r\n\r\n")
    r["cr_in_path"] = h(8, b"GET /destinations/inspect\rX HTTP/1.1\r\n\r\n")
    r["big_header"] = h(128, b"GET /metrics HTTP/1.1\r\nX-Junk: " + b"y" * 9000 + b"\r\n\r\n", True)
    r["head_at_limit"] = h(128, b"GET /metrics HTTP/1.1\r\nX: " + b"y" * (8192 - 31) + b"\r\n\r\n", True)
    r["slowloris_partial"] = h(1, b"GET /destinations/inspect HTTP/1.1\r\nX-a: b\r\nX-c")
    r["binary"] = h(32, bytes(range(256)))
    return r

# ---------------------------------------------------------------- neigh
def neigh():
    """ARP and IPv6 neighbor discovery as they reach the punt path (fuzz_neigh.cc)."""
    from scapy.layers.inet6 import (ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6ND_RA, ICMPv6NDOptDstLLAddr,
                                    ICMPv6NDOptSrcLLAddr)
    ours6 = "2001:db8:ff::1"
    sn = "ff02::1:ff00:1"
    snmac = "33:33:ff:00:00:01"
    f = {}
    f["arp_who_has_us"] = Ether(src=RT, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=C4, pdst="192.0.2.1")
    f["arp_reply_from_appliance"] = (Ether(src="02:00:00:00:00:10", dst=GW) /
                                     ARP(op=2, hwsrc="02:00:00:00:00:10", psrc="192.0.2.10",
                                         hwdst=GW, pdst="192.0.2.1"))
    f["arp_gratuitous"] = (Ether(src="02:00:00:00:00:10", dst="ff:ff:ff:ff:ff:ff") /
                           ARP(op=1, hwsrc="02:00:00:00:00:10", psrc="192.0.2.10", pdst="192.0.2.10"))
    f["arp_vlan"] = eth(vlan=7) / ARP(psrc=C4, pdst="192.0.2.1")
    f["arp_other_host"] = Ether(src=RT, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=C4, pdst="198.51.100.8")
    f["ns_multicast"] = (Ether(src=RT, dst=snmac) / IPv6(src="fe80::a", dst=sn, hlim=255) /
                         ICMPv6ND_NS(tgt=ours6) / ICMPv6NDOptSrcLLAddr(lladdr=RT))
    f["ns_unicast_probe"] = Ether(src=RT, dst=GW) / IPv6(src="fe80::a", dst=ours6, hlim=255) / ICMPv6ND_NS(tgt=ours6)
    f["ns_vlan"] = (eth(vlan=9) / IPv6(src="fe80::a", dst=sn, hlim=255) /
                    ICMPv6ND_NS(tgt=ours6) / ICMPv6NDOptSrcLLAddr(lladdr=RT))
    f["ns_dad"] = Ether(src=RT, dst=snmac) / IPv6(src="::", dst=sn, hlim=255) / ICMPv6ND_NS(tgt=ours6)
    f["ns_other_target"] = (Ether(src=RT, dst="33:33:ff:00:00:02") /
                            IPv6(src="fe80::a", dst="ff02::1:ff00:2", hlim=255) / ICMPv6ND_NS(tgt="2001:db8:ff::2"))
    f["ns_hlim_64"] = Ether(src=RT, dst=snmac) / IPv6(src="fe80::a", dst=sn, hlim=64) / ICMPv6ND_NS(tgt=ours6)
    f["ns_zero_len_option"] = (Ether(src=RT, dst=snmac) / IPv6(src="fe80::a", dst=sn, hlim=255) /
                               ICMPv6ND_NS(tgt=ours6) / Raw(b"\x01\x00" + b"\0" * 6))
    f["na"] = (Ether(src=RT, dst=GW) / IPv6(src="fe80::a", dst="fe80::1", hlim=255) /
               ICMPv6ND_NA(tgt="fe80::a", R=1, S=1) / ICMPv6NDOptDstLLAddr(lladdr=RT))
    # Advertisements from the IPv6 appliance (2001:db8:ff::a), as resolution
    # and refresh of its neighbour entry sees them, and the ones to refuse.
    app6, app_mac = "2001:db8:ff::a", "02:00:00:00:00:10"
    f["na_solicited_from_appliance"] = (Ether(src=app_mac, dst=GW) / IPv6(src=app6, dst=ours6, hlim=255) /
                                        ICMPv6ND_NA(tgt=app6, R=0, S=1, O=1) / ICMPv6NDOptDstLLAddr(lladdr=app_mac))
    f["na_unsolicited_all_nodes"] = (Ether(src=app_mac, dst="33:33:00:00:00:01") /
                                     IPv6(src=app6, dst="ff02::1", hlim=255) /
                                     ICMPv6ND_NA(tgt=app6, R=0, S=0, O=1) / ICMPv6NDOptDstLLAddr(lladdr=app_mac))
    f["na_solicited_to_multicast"] = (Ether(src=app_mac, dst="33:33:00:00:00:01") /
                                      IPv6(src=app6, dst="ff02::1", hlim=255) /
                                      ICMPv6ND_NA(tgt=app6, S=1) / ICMPv6NDOptDstLLAddr(lladdr=app_mac))
    f["na_no_lladdr"] = (Ether(src=app_mac, dst=GW) / IPv6(src=app6, dst=ours6, hlim=255) /
                         ICMPv6ND_NA(tgt=app6, S=1, O=0))
    f["na_vlan"] = (eth(vlan=5) / IPv6(src=app6, dst=ours6, hlim=255) /
                    ICMPv6ND_NA(tgt=app6, S=1, O=1) / ICMPv6NDOptDstLLAddr(lladdr=app_mac))
    f["na_other_target"] = (Ether(src=app_mac, dst="33:33:00:00:00:01") /
                            IPv6(src="2001:db8:ff::b", dst="ff02::1", hlim=255) /
                            ICMPv6ND_NA(tgt="2001:db8:ff::b", O=1) / ICMPv6NDOptDstLLAddr(lladdr=app_mac))
    f["na_hlim_64"] = (Ether(src=app_mac, dst=GW) / IPv6(src=app6, dst=ours6, hlim=64) /
                       ICMPv6ND_NA(tgt=app6, S=1, O=1) / ICMPv6NDOptDstLLAddr(lladdr=app_mac))
    f["na_zero_len_option"] = (Ether(src=app_mac, dst=GW) / IPv6(src=app6, dst=ours6, hlim=255) /
                               ICMPv6ND_NA(tgt=app6, S=1) / Raw(b"\x02\x00" + b"\0" * 6))
    f["na_multicast_target"] = (Ether(src=app_mac, dst=GW) / IPv6(src=app6, dst=ours6, hlim=255) /
                                ICMPv6ND_NA(tgt="ff02::1", S=1) / ICMPv6NDOptDstLLAddr(lladdr=app_mac))
    f["na_option_past_end"] = (Ether(src=app_mac, dst=GW) / IPv6(src=app6, dst=ours6, hlim=255, plen=32) /
                               ICMPv6ND_NA(tgt=app6, S=1) / Raw(b"\x02\x02" + b"\0" * 6))
    f["ra"] = Ether(src=RT, dst="33:33:00:00:00:01") / IPv6(src="fe80::a", dst="ff02::1", hlim=255) / ICMPv6ND_RA()
    f["ns_truncated"] = Raw(b(f["ns_multicast"])[:70])
    # First byte: extra buffer room for the advertisement, in 4-byte units.
    out = {k: b"\x10" + b(v) for k, v in f.items()}
    out["ns_multicast_no_room"] = b"\x00" + b(f["ns_multicast"])
    out["ns_unicast_probe_short_room"] = b"\x00" + b(f["ns_unicast_probe"])
    return out

# ---------------------------------------------------------------- sync
SYNC_SECRET = bytes.fromhex("00112233445566778899aabbccddeeff")  # fuzz_sync.cc's key


def sync_msg(typ, records=(), body=b"", node=0x1122, epoch=7, seq=1, time_ms=1700000000000,
             nonce=0, count=None, magic=0x53464C47, version=1, sign=True, secret=SYNC_SECRET):
    """One flow sync message as common/sync_codec.h lays it out."""
    import hashlib
    import hmac
    recs = b"".join(records)
    n = len(records) if count is None else count
    msg = struct.pack("<IBBHQQQQQ", magic, version, typ, n, node, epoch, seq, time_ms, nonce) + recs + body
    key = hmac.new(secret, b"gwlb flow sync v1", hashlib.sha256).digest()
    mac = hmac.new(key, msg, hashlib.sha256).digest()[:16] if sign else b"\0" * 16
    return msg + mac


def sync_rec(a=b"\x0a\0\0\x07", bb=b"\xc0\0\x02\x09", pa=40000, pb=443, proto=6, family=4,
             listener=0, kkind=0, flow_hash=0x12345678, appliance=0x0a000001, cookie=0xdeadbeef,
             prev=0, prev_cookie=0, moves=0, reason=0, first_dir=0, kind=1, idle=1000, age=5000,
             res1=0, res2=0):
    key = a.ljust(16, b"\0") + bb.ljust(16, b"\0") + struct.pack("<HHBBBB", pa, pb, proto, family,
                                                                 listener, kkind)
    return key + struct.pack("<IIIIIHBBBBIIH", flow_hash, appliance, cookie, prev, prev_cookie,
                             moves, reason, first_dir, kind, res1, idle, age, res2)


def sync():
    """Flow sync datagrams and warm-start frames (fuzz_sync.cc)."""
    out = {}
    v6 = sync_rec(a=bytes.fromhex("20010db8000100000000000000000007"),
                  bb=bytes.fromhex("20010db8000200000000000000000009"), family=6, proto=17)
    out["records_one"] = sync_msg(1, [sync_rec()])
    out["records_full"] = sync_msg(1, [sync_rec(pa=40000 + i, kind=1 + i % 4) for i in range(17)])
    out["records_empty"] = sync_msg(1, [])
    out["records_v6_moved"] = sync_msg(1, [v6, sync_rec(kind=2, prev=0x0a000002, prev_cookie=7, moves=1,
                                                       reason=1)])
    out["transfer_nonce"] = sync_msg(3, [sync_rec(kind=4)] * 3, nonce=0xfeedface)
    # Wide records (kRecords6 / kTransfer6): 76 bytes, then the appliance's and
    # the previous appliance's IPv6 addresses; one family names each.
    a6 = bytes.fromhex("20010db8000f00000000000000000011")
    p6 = bytes.fromhex("20010db8000f00000000000000000012")
    none6 = b"\0" * 16
    out["records6_mixed"] = sync_msg(7, [sync_rec(appliance=0) + a6 + none6,
                                         sync_rec(kind=2, prev=0x0a000002, prev_cookie=7, moves=1) + none6 + none6,
                                         sync_rec(appliance=0, kind=2, moves=1, prev_cookie=9) + a6 + p6])
    out["records6_full"] = sync_msg(7, [sync_rec(pa=40000 + i, appliance=0) + a6 + none6 for i in range(11)])
    out["transfer6"] = sync_msg(8, [sync_rec(kind=4, appliance=0) + p6 + none6] * 2, nonce=0xfeedface)
    out["records6_both_families"] = sync_msg(7, [sync_rec() + a6 + none6])
    out["records6_no_appliance"] = sync_msg(7, [sync_rec(appliance=0) + none6 + none6])
    out["records6_count_12"] = sync_msg(7, [sync_rec(appliance=0) + a6 + none6] * 12)
    out["warm_request"] = sync_msg(2, nonce=0x0102030405060708)
    out["warm_end"] = sync_msg(4, body=struct.pack("<Q", 123456), nonce=9)
    out["bad_mac"] = sync_msg(1, [sync_rec()], sign=False)
    out["other_secret"] = sync_msg(1, [sync_rec()], secret=b"\x01" * 16)
    out["bad_magic"] = sync_msg(1, [sync_rec()], magic=0x12345678)
    out["bad_version"] = sync_msg(1, [sync_rec()], version=2)
    out["bad_type"] = sync_msg(9, [sync_rec()])
    out["count_lies"] = sync_msg(1, [sync_rec()], count=2)
    out["count_18"] = sync_msg(1, [sync_rec()] * 18)
    out["request_with_count"] = sync_msg(2, count=1)
    out["fragment_key"] = sync_msg(1, [sync_rec(kkind=1)])
    out["family_5"] = sync_msg(1, [sync_rec(family=5)])
    out["v4_key_junk"] = sync_msg(1, [sync_rec(a=b"\x0a\0\0\x07" + b"\x01")])
    out["kind_0"] = sync_msg(1, [sync_rec(kind=0)])
    out["reserved_set"] = sync_msg(1, [sync_rec(res1=1), sync_rec(res2=1)])
    out["no_appliance"] = sync_msg(1, [sync_rec(appliance=0)])
    out["seq_0"] = sync_msg(1, [sync_rec()], seq=0)
    out["health_view"] = sync_msg(5, body=b"".join(struct.pack("<IBBBB", 0x0a00000b + i, i % 6, i % 2, 0, 0)
                                                 for i in range(3)), count=3)
    out["health_bad_state"] = sync_msg(5, body=struct.pack("<IBBBB", 0x0a00000b, 9, 1, 0, 0), count=1)
    # A health view saying the sender takes config digests (nonce bit 0), and
    # the digests (type 6): 12-byte entries of section id, 3 reserved, digest.
    out["health_view_features"] = sync_msg(5, body=struct.pack("<IBBBB", 0x0a00000b, 1, 1, 0, 0),
                                           count=1, nonce=1)
    digest = lambda sec, d, res=0: struct.pack("<BBHQ", sec, res, 0, d)
    out["config_digest"] = sync_msg(6, body=b"".join(digest(i, 0x1111111111111111 * i) for i in range(1, 9)),
                                    count=8)
    out["config_digest_newer_section"] = sync_msg(6, body=digest(1, 5) + digest(200, 7), count=2)
    out["config_digest_section_0"] = sync_msg(6, body=digest(0, 5), count=1)
    out["config_digest_reserved"] = sync_msg(6, body=digest(3, 5, res=1), count=1)
    out["config_digest_33"] = sync_msg(6, body=digest(1, 5) * 33, count=33)
    out["truncated_header"] = sync_msg(1, [sync_rec()])[:40]
    out["truncated_record"] = sync_msg(1, [sync_rec()])[:100]
    # Sent as the fuzz target's own node ("gw-fuzz", epoch 7: a peers entry
    # that reaches the node itself) and as another node under its name.
    out["from_self_records"] = sync_msg(1, [sync_rec()], node=node_id("gw-fuzz"), epoch=7)
    out["from_self_request"] = sync_msg(2, node=node_id("gw-fuzz"), epoch=7, nonce=0x0102030405060708)
    out["same_name_transfer"] = sync_msg(3, [sync_rec(kind=4)], node=node_id("gw-fuzz"), epoch=8, nonce=5)
    return out


def node_id(name):
    """64-bit FNV-1a of a node name: the header's node id (common/sync_codec.h)."""
    h = 0xcbf29ce484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001b3) & (2**64 - 1)
    return h


# ---------------------------------------------------------------- bird
def bird():
    """What BIRD 2's control socket sends (fuzz_bird.cc): byte 0 the chunk size - 1."""
    show = (b"2002-Name       Proto      Table      State  Since         Info\n"
            b"1002-gwlb_routes Static     master4    down   17:56:15.662  \n0000 \n")
    show_all = (b"2002-Name       Proto      Table      State  Since         Info\n"
                b"1002-gwlb_routes Static     master4    up     17:56:23.061  \n"
                b"1006-  Channel ipv4\n     State:          UP\n     Table:          master4\n \n0000 \n")
    out = {
        "greeting": b"\x00" + b"0001 BIRD 2.0.12 ready.\n",
        "show_down": b"\x06" + show,
        "show_all": b"\x03" + show_all,
        "enabled": b"\xff" + b"0011-gwlb_routes: enabled\n0000 \n",
        "already": b"\x01" + b"0010-gwlb_routes: already enabled\n0000 \n",
        "disabled": b"\x02" + b"0009-gwlb_routes: disabled\n0000 \n0008-gwlb_routes: already disabled\n0000 \n",
        "syntax_error": b"\x10" + b"9001 syntax error, unexpected CF_SYM_UNDEFINED\n",
        "async": b"\x04" + b"+reconfigured\n0001 BIRD 2.0.12 ready.\n",
        "bare_code": b"\x00" + b"1002-x Static t up\n0000\n",
        "crlf": b"\x05" + b"0001 BIRD ready.\r\n",
        "garbage": b"\x07" + b"HTTP/1.1 200 OK\r\n\r\n",
        "orphan_continuation": b"\x00" + b" text\n",
        "unterminated": b"\x08" + b"1002-gwlb_routes Static master4 up",
    }
    return out


def eal_memory():
    """gwlbd's EAL arguments and sizes (fuzz_eal_memory.cc): 8 bytes of sizes, then
    arguments separated by newlines."""
    def sizes(workers, mbufs, mtu, flows):
        m = max(0, (mbufs - 1024) >> 8)
        t = max(0, (mtu - 576))
        f = max(0, (flows - 1024) >> 3)
        return bytes([workers - 1, m >> 8 & 255, m & 255, t >> 8, t & 255, f >> 16 & 255, f >> 8 & 255, f & 255])
    def args(*a):
        return "\n".join(a).encode()
    shipped = args("--lcores=0@(0-1),1@(0-1),2@(0-1)", "--no-huge", "--no-pci", "-m", "1024",
                   "--vdev", "net_pcap0,rx_pcap=/tmp/gwlb-in.pcap,tx_pcap=/tmp/gwlb-out0.pcap")
    return {
        "shipped_example": sizes(2, 65535, 9000, 4194304) + shipped,
        "no_huge_default": sizes(1, 16384, 1500, 1048576) + args("--no-huge", "--no-pci"),
        "too_small": sizes(4, 262144, 9000, 1048576) + args("--no-huge", "-m", "64"),
        "m_joined": sizes(1, 4096, 1500, 65536) + args("--no-huge", "-m512", "-a", "0000:3b:00.0"),
        "hugepages": sizes(8, 65535, 1500, 10485760) + args("-l", "0-8", "-a", "0000:3b:00.0",
                                                            "--allow=0000:3b:00.1"),
        "socket_mem": sizes(2, 16384, 1500, 1048576) + args("--socket-mem", "1024,1024", "--legacy-mem"),
        "socket_mem_no_huge": sizes(1, 8192, 1500, 1048576) + args("--no-huge", "--socket-mem=64"),
        "both": sizes(1, 8192, 1500, 1048576) + args("-m", "64", "--socket-mem", "64"),
        "bad_numbers": sizes(1, 8192, 1500, 1048576) + args("-m", "lots", "--socket-mem", "1,,x"),
        "huge_number": sizes(64, 16777216, 9216, 134217728) + args("--no-huge", "-m", "999999999"),
        "dangling": sizes(1, 1024, 576, 1024) + args("--no-huge", "-m"),
    }


def capture():
    """What dpdk-dumpcap / dpdk-pdump send in their "mp_pdump" message (fuzz_capture.cc):
    the 112-byte request record (version, operation, flags, device, queue, ring,
    mempool, filter, snapshot length); and, read as the peer address EAL hands
    the action, a secondary process's socket path (mp_socket_<pid>_<tsc>)."""
    def req(ver, op, flags, dev, queue, ring=0, mp=0, prm=0, snaplen=0):
        d = dev.encode()[:64].ljust(64, b"\0")
        return (struct.pack("<HHI", ver, op, flags) + d + struct.pack("<H6x", queue) +
                struct.pack("<QQQI4x", ring, mp, prm, snaplen))
    ring, mp, prm = 0x1003c0000, 0x1003e0000, 0x100400000
    return {
        "dumpcap_start": req(2, 2, 3, "net_pcap0", 0xffff, ring, mp, 0, 2176),
        "dumpcap_filtered": req(2, 2, 3, "0000:3b:00.0", 0xffff, ring, mp, prm, 262144),
        "dumpcap_stop": req(2, 1, 3, "net_pcap0", 0xffff),
        "pdump_rx_queue": req(1, 2, 1, "net_ring_a", 1, ring, mp, 0, 0),
        "pdump_stop_tx": req(1, 1, 2, "net_ring_a", 1),
        "bad_version": req(3, 2, 3, "net_pcap0", 0xffff, ring, mp),
        "bad_op": req(2, 3, 3, "net_pcap0", 0xffff),
        "bad_flags": req(2, 2, 4, "net_pcap0", 0xffff, ring, mp),
        "no_ring": req(2, 2, 1, "net_pcap0", 0, 0, mp),
        "unterminated": req(2, 1, 1, "x" * 64, 0),
        "empty_device": req(2, 1, 1, "", 0),
        "short": req(2, 2, 3, "net_pcap0", 0xffff, ring, mp)[:100],
        "peer_socket": b"/var/run/dpdk/gwlb/mp_socket_41237_1b2c3d4e5f60\0",
        "peer_no_pid": b"/var/run/dpdk/gwlb/mp_socket\0",
    }


def appliance_tun():
    """gwlb-appliance's tun mode (fuzz_appliance_tun.cc): records of [op, length,
    bytes]; op bit 0: a Geneve packet learned (from gateway (op >> 1) & 3; bit 3: an
    inner Ethernet header follows Geneve's), else a packet from the tun wrapped;
    op >> 4: seconds that pass first; 0xff: expire."""
    def rec(op, data):
        return bytes([op, len(data)]) + data

    def gen(cookie):  # the aws format's header, 32 bytes of options
        opts = (struct.pack("!HBB", 0x0108, 1, 2) + struct.pack("!Q", 7) + struct.pack("!HBB", 0x0108, 2, 2) +
                struct.pack("!Q", 9) + struct.pack("!HBB", 0x0108, 3, 1) + struct.pack("!I", cookie))
        return bytes([8, 0, 0x08, 0x00, 0, 0, 77, 0]) + opts

    def tcp(src, sport, dst, dport, payload=b""):
        return b(IP(src=src, dst=dst, ttl=64) / TCP(sport=sport, dport=dport, flags="A") / Raw(payload))

    def udp6(src, sport, dst, dport):
        return b(IPv6(src=src, dst=dst) / UDP(sport=sport, dport=dport) / Raw(b"q" * 12))

    fwd, back = tcp(C4, 40000, S4, 7000, b"hello"), tcp(S4, 7000, C4, 40000, b"world")
    q6, a6 = udp6(C6, 5353, S6, 53), udp6(S6, 53, C6, 5353)
    fill = b"".join(rec(0x01, gen(i) + tcp(C4, 41000 + i, S4, 80)) for i in range(9))
    return {
        "learn_then_both_ways": rec(0x01, gen(0xc0ffee) + fwd) + rec(0x10, back) + rec(0x10, fwd),
        "each_direction_its_header": rec(0x01, gen(1) + fwd) + rec(0x13, gen(2) + back) + rec(0, back) + rec(0, fwd),
        "ipv6": rec(0x05, gen(3) + q6) + rec(0x10, a6),
        "unknown_and_malformed": rec(0x10, fwd) + rec(0x10, fwd[:22]) + rec(0x10, b"\x45" + fwd[1:]) + rec(0, b""),
        "table_full": fill + rec(0x10, tcp(S4, 80, C4, 41008)) + rec(0x10, tcp(S4, 80, C4, 41000)),
        "expire": rec(0x01, gen(4) + fwd) + rec(0xf0, b"") + rec(0x50, fwd) + rec(0xf0, b"") + rec(0xff, b"") +
                  rec(0xf0, b"") + rec(0xf0, b"") + rec(0xff, b"") + rec(0, fwd),
        "ethernet_turned_round": rec(0x09, bytes([0, 0, 0x65, 0x58, 0, 0, 77, 0]) + b(eth())[:14] + fwd) +
                                 rec(0x10, back) + rec(0x10, fwd),
        "bad_geneve": rec(0x01, bytes([0x3f, 0, 8, 0]) + fwd) + rec(0x01, gen(5)[:7]) + rec(0x01, gen(5) + fwd[:30]),
    }


def appliance_options():
    """gwlb's Geneve options as gwlb-appliance reads them (fuzz_appliance_options.cc):
    byte 0: the protocol (0 IPv4, 1 IPv6, 2 ethernet, 3 unknown), byte 1: the
    options' length, then the options and the inner packet."""
    aws = (struct.pack("!HBB", 0x0108, 1, 2) + struct.pack("!Q", 7) + struct.pack("!HBB", 0x0108, 2, 2) +
           struct.pack("!Q", 9) + struct.pack("!HBB", 0x0108, 3, 1) + struct.pack("!I", 0xc0ffee))
    mirror = struct.pack("!HBBBBH", 0xFF01, 2, 1, 1, 0, 5)
    tag = struct.pack("!HBBBBBBI", 0xFF01, 3, 2, 0, 0, 0, 0, 4242)
    pkt = b(IP(src=C4, dst=S4, ttl=64) / TCP(sport=40000, dport=80, flags="S"))
    frame = b(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src=C4, dst=S4) / UDP(sport=1, dport=2))

    def rec(proto, opts, inner):
        return bytes([proto, len(opts)]) + opts + inner

    return {
        "aws_mirror": rec(0, aws + mirror, pkt),
        "aws_tag": rec(0, aws + tag, pkt),
        "ethernet_mirror_tag": rec(2, mirror + tag, frame),
        "mirror_bad_length": rec(0, struct.pack("!HBB", 0xFF01, 2, 2) + b"\0" * 8, pkt),
        "tag_critical": rec(1, struct.pack("!HBBBBBBI", 0xFF01, 0x83, 2, 1, 0, 0, 0, 7), b""),
        "option_past_end": rec(3, struct.pack("!HBB", 0xFF01, 3, 31) + b"\0" * 8, b""),
        "other_class": rec(0, struct.pack("!HBB", 0x0132, 2, 1) + b"\1\2\3\4", pkt),
    }


def prefix_list():
    """Prefix files of traffic classes (fuzz_prefix_list.cc): byte 0 picks the most
    prefixes allowed (0: 1024, 1: 1, 2: 3, 3: 16), then the file."""
    good = (b"# blocklist, generated\n10.0.0.0/8\n192.0.2.0/24   # docs\n\n198.51.100.7\n"
            b"2001:db8::/32\n2001:db8:1::1\n0.0.0.0/0\n::/0\n")
    return {
        "good": b"\0" + good,
        "crlf_tabs": b"\0" + b"\t10.1.0.0/16\r\n  # c\r\n\r\n10.2.0.0/16\t\r\n",
        "no_final_newline": b"\0" + b"10.0.0.0/8\n10.1.2.3",
        "too_many": b"\1" + b"10.0.0.0/8\n10.1.0.0/16\n",
        "three_of_three": b"\2" + b"10.0.0.0/8\n11.0.0.0/8\n12.0.0.0/8\n",
        "bad_lengths": b"\3" + b"10.0.0.0/33\n2001:db8::/129\n10.0.0.0/\n10.0.0.0/0x8\n10.0.0.0/-1\n10.0.0.0/0008\n",
        "host_bits": b"\3" + b"10.0.0.1/8\n2001:db8::1/32\n",
        "repeats": b"\3" + b"10.0.0.0/8\n10.0.0.0/8\n10.0.0.1\n10.0.0.1/32\n",
        "two_per_line": b"\3" + b"10.0.0.0/8 11.0.0.0/8\n10.0.0.0/8,11.0.0.0/8\n",
        "not_prefixes": b"\3" + b"tenant/8\n010.0.0.1\n1.2.3\n::ffff:10.0.0.1/128\n" + b"a" * 80 + b"\n",
        "binary": b"\3" + b"10.0.0.0/8\0\n\xff\xfe/8\n\x1b[31m\n",
        "many_errors": b"\0" + b"x\n" * 30,
        "only_comments": b"\0" + b"#\n# 10.0.0.0/8\n   \n\t\n",
        "empty": b"\0",
    }


def vxlan():
    """2 bytes of UDP destination port, then the VXLAN header and inner frame."""
    def vx(port, vni, inner, flags=0x08):
        return struct.pack("!HB3sI", port, flags, b"\0\0\0", vni << 8) + inner
    v4 = b(Ether(src=RT, dst=GW) / IP(src=C4, dst=S4) / TCP(sport=43000, dport=443, flags="S"))
    v6 = b(Ether(src=RT, dst=GW) / IPv6(src=C6, dst=S6) / UDP(sport=5353, dport=53) / Raw(b"q" * 20))
    return {
        "internal_v4_tcp": vx(10800, 800, v4),
        "external_v4_tcp": vx(10801, 801, v4),
        "internal_v6_udp": vx(10800, 800, v6),
        # The ports of Azure's tunnels carrying an inner frame of the largest
        # size an IPv6 underlay leaves at MTU 1500 (1430 bytes of inner IP).
        "external_v4_mtu_over_ipv6": vx(10801, 801, b(Ether(src=RT, dst=GW) / IP(src=C4, dst=S4) /
                                                      TCP(sport=43000, dport=443) / Raw(b"m" * 1390))),
        "vlan_inner": vx(10801, 801, b(eth(vlan=42) / IP(src=C4, dst=S4) / UDP())),
        "port_vni_crossed": vx(10800, 801, v4),
        "unknown_vni": vx(10801, 0xFFFFFF, v4),
        "no_i_flag": vx(10800, 800, v4, flags=0x00),
        "all_flags": vx(10800, 800, v4, flags=0xFF),
        "header_only": vx(10800, 800, b""),
        "inner_truncated": vx(10800, 800, v4[:20]),
        "short_header": struct.pack("!H", 10800) + b"\x08\0\0",
        "empty": struct.pack("!H", 10800),
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(here, "corpus"))
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing")
    args = ap.parse_args()
    sets = {"frame": frames(), "geneve": genev(), "icmp": icmpc(), "config": configs(),
            "api": api(), "http": http(), "http_request": http_request(), "neigh": neigh(),
            "sync": sync(), "bird": bird(), "eal_memory": eal_memory(),
            "capture": capture(), "appliance_tun": appliance_tun(), "prefix_list": prefix_list(),
            "appliance_options": appliance_options(), "vxlan": vxlan()}
    bad = 0
    total = 0
    for target, files in sets.items():
        d = os.path.join(args.out, target)
        os.makedirs(d, exist_ok=True)
        have = set(os.listdir(d))
        for name, data in files.items():
            path = os.path.join(d, name)
            total += len(data)
            if args.check:
                if not os.path.exists(path) or open(path, "rb").read() != data:
                    print("differs: %s" % path)
                    bad += 1
            else:
                with open(path, "wb") as f:
                    f.write(data)
        for extra in sorted(have - set(files)):
            if args.check:
                print("not generated: %s" % os.path.join(d, extra))
                bad += 1
            else:
                os.remove(os.path.join(d, extra))
        print("%-7s %3d files" % (target, len(files)))
    print("total %d bytes" % total)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
