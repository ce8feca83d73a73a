// Hostile input through the real pipeline (dp::processBurst): every class of
// malformed packet, on the router side and on the return path, ends in its own
// named drop counter, and nothing is sent that should not be. Each case names
// the one counter it expects; runCase() checks that exactly that counter moved
// (by one) and every other counter, drops included, stayed where it was.
//
// Sweeps cut packets at every byte so that every header boundary (Ethernet,
// 802.1Q, IPv4, IPv4 options, IPv6, each IPv6 extension header, TCP/UDP/ICMP,
// the Geneve base header and options, the inner packet of a reply) is crossed,
// and the uncut packet, which must go through, pins the other side.
// docs/hostile-input.md lists the classes and their counters.
#include <gtest/gtest.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

const char* name(Counter c) { return kCounterInfo[size_t(c)].name; }

// What a frame must end in: a drop_* counter, or one of the counters of a
// frame that is sent (encapsulated, returned, icmp_sent).
Verdict verdictFor(Counter want) {
  if (kCounterInfo[size_t(want)].is_drop) return Verdict::kDrop;
  return want == Counter::encapsulated ? Verdict::kAppliance : Verdict::kRouter;
}

// Every counter but the receive ones stays put, except `want` (+1). A frame
// that is sent may also move tx_bytes and create flow/fragment entries; so may
// one dropped as too big (the pipeline routes the flow before it knows the
// encapsulated size). A malformed frame creates nothing.
void expectOnlyMoved(const WorkerCounters& before, const WorkerCounters& after, Counter want) {
  bool sent = !kCounterInfo[size_t(want)].is_drop;
  bool routed = sent || want == Counter::drop_too_big;
  for (size_t i = 0; i < kNumCounters; ++i) {
    Counter c = Counter(i);
    if (c == Counter::rx_packets || c == Counter::rx_bytes) continue;
    if (sent && c == Counter::tx_bytes) continue;
    if (routed && (c == Counter::flows_created || c == Counter::fragment_entries_created))
      continue;
    EXPECT_EQ(after.v[i], before.v[i] + (c == want ? 1 : 0)) << "counter " << name(c);
  }
}

struct Case {
  std::string name;
  Bytes frame;
  uint16_t port = kPortA;
  Counter want = Counter::kCount;
};

Result runCase(Harness& h, const Case& c) {
  SCOPED_TRACE(c.name + " (want " + name(c.want) + ", " + std::to_string(c.frame.size()) +
               " bytes on port " + std::to_string(c.port) + ")");
  WorkerCounters before = h.counters();
  Result r = h.send(c.frame, c.port);
  EXPECT_EQ(r.verdict, verdictFor(c.want)) << describe(r);
  if (r.verdict == Verdict::kDrop) {
    EXPECT_EQ(r.drop, c.want) << describe(r);
  }
  expectOnlyMoved(before, h.counters(), c.want);
  return r;
}

void runAll(Harness& h, const std::vector<Case>& cases) {
  for (const Case& c : cases) runCase(h, c);
  expectCounterInvariant(h.counters(), "hostile table");
}

// The drop for a frame whose tail was cut off (the header lengths still
// describe the whole packet): by where the cut falls.
Counter cutFrameDrop(size_t len, size_t l3_off, bool v6, size_t ip_hdr_len) {
  if (len < 14 || len < l3_off) return Counter::drop_truncated_l2;
  if (len < l3_off + (v6 ? 40 : 20)) return Counter::drop_truncated_l3;
  if (!v6 && len < l3_off + ip_hdr_len) return Counter::drop_bad_ihl;
  return Counter::drop_bad_ip_length;
}

// Every cut of `frame` (0 .. size-1 bytes) plus the whole frame (`whole`).
void addCuts(std::vector<Case>& t, const std::string& what, const Bytes& frame, uint16_t port,
             size_t l3_off, bool v6, size_t ip_hdr_len, Counter whole) {
  for (size_t len = 0; len < frame.size(); ++len)
    t.push_back({what + " cut to " + std::to_string(len) + " bytes", slice(frame, 0, len), port,
                 cutFrameDrop(len, l3_off, v6, ip_hdr_len)});
  t.push_back({what + " whole", frame, port, whole});
}

// A TCP segment with `opt_words` words of NOP options (data offset 5 + opt_words).
Bytes tcpWithOptions(const IpAddr& s, const IpAddr& d, size_t opt_words) {
  Bytes b = tcp(s, d, 45000, 80, pattern(8));
  Bytes out = slice(b, 0, 20);
  out.insert(out.end(), opt_words * 4, 0x01);
  append(out, slice(b, 20, b.size() - 20));
  out[12] = uint8_t((5 + opt_words) << 4);
  return out;
}

// ---- Router side: truncation at every header boundary -----------------------

TEST(Hostile, FramesCutAtEveryByteGetTheCounterOfTheHeaderTheyEndIn) {
  Harness h;
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4, &c6 = n.client6, &s6 = n.server6;
  std::vector<Case> t;
  addCuts(t, "IPv4 TCP", ether(n.fromA(), kEthIpv4, ipv4(c4, s4, 6, tcp(c4, s4, 1, 2))), kPortA,
          14, false, 20, Counter::encapsulated);
  {
    V4 o;
    o.options = Bytes(12, 0x01);  // IHL 8: header ends 12 bytes after the fixed part
    addCuts(t, "IPv4 with options + UDP",
            ether(n.fromA(), kEthIpv4, ipv4(c4, s4, 17, udp(c4, s4, 3, 4, pattern(4)), o)), kPortA,
            14, false, 32, Counter::encapsulated);
  }
  addCuts(t, "802.1Q IPv4 ICMP echo",
          ether(n.fromVlan(7), kEthIpv4, ipv4(c4, s4, 1, icmp4Echo(true, 9, 1))), kPortVlan, 18,
          false, 20, Counter::encapsulated);
  {
    // One 802.1ad tag (TCI 8): the same offsets as 802.1Q.
    Bytes tagged;
    append16(tagged, 0x0008);
    append16(tagged, kEthIpv4);
    append(tagged, ipv4(c4, s4, 17, udp(c4, s4, 5, 6)));
    addCuts(t, "802.1ad IPv4 UDP", ether(n.fromA(), kEthQinQ, tagged), kPortA, 18, false, 20,
            Counter::encapsulated);
  }
  addCuts(t, "IPv6 TCP", ether(n.fromA(), kEthIpv6, ipv6(c6, s6, 6, tcp(c6, s6, 1, 2))), kPortA,
          14, true, 40, Counter::encapsulated);
  {
    Ext rh{43, {0, 0, 0, 0, 0, 0, 0}};  // routing header, type 0, segments left 0
    addCuts(t, "IPv6 with hop-by-hop, routing, destination options + UDP",
            ether(n.fromA(), kEthIpv6,
                  ipv6(c6, s6, 17, udp(c6, s6, 7, 8), {hopByHop(1), rh, destOpts(2)})),
            kPortA, 14, true, 40, Counter::encapsulated);
  }
  runAll(h, t);
}

// The IP length fields agree with the (short) packet: the transport header,
// the extension header chain or the option area itself is what is short.
TEST(Hostile, ShortDatagramsAreDroppedAtTheHeaderThatDoesNotFit) {
  Harness h;
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4, &c6 = n.client6, &s6 = n.server6;
  const L2 a = n.fromA();
  std::vector<Case> t;
  auto sweep = [&](const std::string& what, size_t full,
                   const std::function<Bytes(size_t)>& build,
                   const std::function<Counter(size_t)>& expect) {
    for (size_t k = 0; k <= full; ++k)
      t.push_back({what + " " + std::to_string(k) + " of " + std::to_string(full) + " bytes",
                   build(k), kPortA, expect(k)});
  };
  auto l4Cut = [&](const std::string& what, bool v6, uint8_t proto, const Bytes& seg,
                   size_t hdr, bool udp_len_checked) {
    sweep(what, seg.size(),
          [&, v6, proto, seg](size_t k) {
            Bytes s = slice(seg, 0, k);
            return v6 ? ether(a, kEthIpv6, ipv6(c6, s6, proto, s))
                      : ether(a, kEthIpv4, ipv4(c4, s4, proto, s));
          },
          [=](size_t k) {
            if (k < hdr) return Counter::drop_truncated_l4;
            if (udp_len_checked && k < seg.size()) return Counter::drop_bad_udp_length;
            return Counter::encapsulated;
          });
  };
  l4Cut("IPv4 TCP segment of", false, 6, tcp(c4, s4, 10, 11, pattern(6)), 20, false);
  l4Cut("IPv4 TCP with 12 bytes of options, segment of", false, 6, tcpWithOptions(c4, s4, 3), 32,
        false);
  l4Cut("IPv4 UDP datagram of", false, 17, udp(c4, s4, 12, 13, pattern(6)), 8, true);
  l4Cut("IPv4 ICMP echo of", false, 1, icmp4Echo(true, 14, 1, pattern(6)), 8, false);
  l4Cut("IPv6 TCP segment of", true, 6, tcp(c6, s6, 15, 16, pattern(6)), 20, false);
  l4Cut("IPv6 UDP datagram of", true, 17, udp(c6, s6, 17, 18, pattern(6)), 8, true);
  l4Cut("IPv6 ICMPv6 echo of", true, 58, icmp6Echo(c6, s6, true, 19, 1, pattern(6)), 8, false);

  // IPv4 options: IHL says 32 bytes, the total length ends inside the options.
  {
    V4 o;
    o.options = Bytes(12, 0x01);
    Bytes full = ipv4(c4, s4, 59, {}, o);
    sweep("IPv4 IHL 8 (all 32 header bytes present), total length 20 +", 12,
          [&](size_t k) {
            Bytes b = full;
            put16(b, 2, uint16_t(20 + k));
            return ether(a, kEthIpv4, b);
          },
          [](size_t k) { return k < 12 ? Counter::drop_bad_ip_length : Counter::encapsulated; });
  }

  // IPv6 extension header chain, payload length matching the cut: every
  // extension header type cut at every byte. Behind the chain: no next header.
  {
    Ext rh{43, {0, 0, 0, 0, 0, 0, 0}};
    Ext ah{51, {2, 0, 0, 0, 0, 0, 0x11, 0, 0, 0, 1, 0xAA, 0xBB, 0xCC, 0xDD}};  // 16 bytes
    std::vector<Ext> chain = {hopByHop(1), rh, fragmentExt(0, true, 0x5151), ah, destOpts(2)};
    Bytes pkt = ipv6(c6, s6, 59, {}, chain);
    Bytes payload = slice(pkt, 40, pkt.size() - 40);
    sweep("IPv6 hop-by-hop/routing/fragment/AH/dest-opts chain", payload.size(),
          [&, pkt](size_t k) {
            Bytes b = slice(pkt, 0, 40 + k);
            put16(b, 4, uint16_t(k));
            return ether(a, kEthIpv6, b);
          },
          [&](size_t k) {
            return k < payload.size() ? Counter::drop_ipv6_ext_header_chain
                                      : Counter::encapsulated;
          });
  }
  runAll(h, t);
}

// An ICMP error must quote at least the IP header and the 4 bytes of ports
// (8 for a quoted ICMP echo) of the packet it is about.
TEST(Hostile, IcmpErrorsQuotingTooLittleAreDropped) {
  Harness h;
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4, &c6 = n.client6, &s6 = n.server6;
  std::vector<Case> t;
  Bytes q4 = ipv4(c4, s4, 6, tcp(c4, s4, 20000, 80));
  for (size_t k = 0; k <= 24; ++k)
    t.push_back({"ICMP unreachable quoting " + std::to_string(k) + " bytes of IPv4/TCP",
                 ether(n.fromB(), kEthIpv4, ipv4(s4, c4, 1, icmp4(3, 3, 0, slice(q4, 0, k)))),
                 kPortB, k < 24 ? Counter::drop_icmp_error_truncated : Counter::encapsulated});
  Bytes e4 = ipv4(c4, s4, 1, icmp4Echo(true, 77, 1));
  for (size_t k = 20; k <= 28; ++k)
    t.push_back({"ICMP time exceeded quoting " + std::to_string(k) + " bytes of an echo",
                 ether(n.fromB(), kEthIpv4, ipv4(s4, c4, 1, icmp4(11, 0, 0, slice(e4, 0, k)))),
                 kPortB, k < 28 ? Counter::drop_icmp_error_truncated : Counter::encapsulated});
  Bytes q6 = ipv6(c6, s6, 17, udp(c6, s6, 20001, 53));
  for (size_t k = 0; k <= 44; ++k)
    t.push_back({"ICMPv6 unreachable quoting " + std::to_string(k) + " bytes of IPv6/UDP",
                 ether(n.fromB(), kEthIpv6,
                       ipv6(s6, c6, 58, icmp6(s6, c6, 1, 4, 0, slice(q6, 0, k)))),
                 kPortB, k < 44 ? Counter::drop_icmp_error_truncated : Counter::encapsulated});
  runAll(h, t);
}

// ---- Router side: lying length fields, IHL, extension header chains ---------

TEST(Hostile, LyingLengthFieldsAreDropped) {
  Harness h;
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4, &c6 = n.client6, &s6 = n.server6;
  const L2 a = n.fromA();
  std::vector<Case> t;
  auto add = [&](std::string what, Bytes f, Counter want) {
    t.push_back({std::move(what), std::move(f), kPortA, want});
  };
  const Bytes seg = tcp(c4, s4, 21000, 80, pattern(10));
  const Bytes dg = udp(c4, s4, 21001, 53, pattern(12));

  // IPv4 total length.
  for (int total : {int(20 + seg.size() + 1), 1500, 65535})
    add("IPv4 total length " + std::to_string(total) + " past a " +
            std::to_string(20 + seg.size()) + "-byte packet",
        ether(a, kEthIpv4, ipv4(c4, s4, 6, seg, V4{.total_len = total})),
        Counter::drop_bad_ip_length);
  for (int total : {0, 1, 19})
    add("IPv4 total length " + std::to_string(total) + " below the 20-byte header",
        ether(a, kEthIpv4, ipv4(c4, s4, 6, seg, V4{.total_len = total})),
        Counter::drop_bad_ip_length);
  add("IPv4 total length 27 below IHL 7 (28 bytes)",
      ether(a, kEthIpv4, ipv4(c4, s4, 6, seg, V4{.options = Bytes(8, 1), .total_len = 27})),
      Counter::drop_bad_ip_length);
  add("IPv4 total length equal to the header: no room for TCP",
      ether(a, kEthIpv4, ipv4(c4, s4, 6, seg, V4{.total_len = 20})), Counter::drop_truncated_l4);
  add("IPv4 total length shorter than the frame (trailer not forwarded)",
      ether(a, kEthIpv4, ipv4(c4, s4, 6, seg), 14 + 20 + seg.size() + 31), Counter::encapsulated);

  // IPv6 payload length.
  Bytes seg6 = tcp(c6, s6, 21002, 80, pattern(10));
  for (int pl : {int(seg6.size() + 1), 1460, 65535})
    add("IPv6 payload length " + std::to_string(pl) + " past the packet",
        ether(a, kEthIpv6, ipv6(c6, s6, 6, seg6, {}, V6{.payload_len = pl})),
        Counter::drop_bad_ip_length);
  add("IPv6 payload length 0 (jumbogram without support) under TCP",
      ether(a, kEthIpv6, ipv6(c6, s6, 6, seg6, {}, V6{.payload_len = 0})),
      Counter::drop_truncated_l4);
  add("IPv6 payload length 0 under a hop-by-hop header",
      ether(a, kEthIpv6, ipv6(c6, s6, 6, seg6, {hopByHop(1)}, V6{.payload_len = 0})),
      Counter::drop_ipv6_ext_header_chain);

  // UDP length: never below 8, never past the IP payload; shorter than the
  // payload is a surplus area (RFC 768 leaves it to the IP length), allowed.
  auto udpLen = [](Bytes d, uint16_t len) {
    put16(d, 4, len);
    return d;
  };
  for (uint16_t ul : {0, 1, 7})
    add("UDP length " + std::to_string(ul) + " below the header",
        ether(a, kEthIpv4, ipv4(c4, s4, 17, udpLen(dg, ul))), Counter::drop_bad_udp_length);
  for (uint16_t ul : {uint16_t(dg.size() + 1), uint16_t(1480), uint16_t(65535)})
    add("UDP length " + std::to_string(ul) + " past the " + std::to_string(dg.size()) +
            "-byte IP payload",
        ether(a, kEthIpv4, ipv4(c4, s4, 17, udpLen(dg, ul))), Counter::drop_bad_udp_length);
  add("UDP length covering the Ethernet trailer, not the IP payload",
      ether(a, kEthIpv4, ipv4(c4, s4, 17, udpLen(dg, uint16_t(dg.size() + 10))), 80),
      Counter::drop_bad_udp_length);
  add("UDP length 8 in front of 12 surplus bytes",
      ether(a, kEthIpv4, ipv4(c4, s4, 17, udpLen(dg, 8))), Counter::encapsulated);
  add("UDP length exact", ether(a, kEthIpv4, ipv4(c4, s4, 17, dg)), Counter::encapsulated);
  Bytes dg6 = udp(c6, s6, 21003, 53, pattern(12));
  add("IPv6 UDP length 0 (jumbogram form, unsupported)",
      ether(a, kEthIpv6, ipv6(c6, s6, 17, udpLen(dg6, 0))), Counter::drop_bad_udp_length);
  add("IPv6 UDP length one past the payload",
      ether(a, kEthIpv6, ipv6(c6, s6, 17, udpLen(dg6, uint16_t(dg6.size() + 1)))),
      Counter::drop_bad_udp_length);
  add("IPv6 UDP behind a destination-options header, length one past",
      ether(a, kEthIpv6, ipv6(c6, s6, 17, udpLen(dg6, uint16_t(dg6.size() + 1)), {destOpts(1)})),
      Counter::drop_bad_udp_length);
  {
    // A first fragment's UDP length covers the whole datagram: not a lie.
    Bytes whole = udp(c4, s4, 21004, 4789, pattern(64));
    std::vector<Bytes> fr = ipv4Fragments(c4, s4, 17, whole, 24, 0x4242);
    add("IPv4 first fragment, UDP length of the whole datagram", ether(a, kEthIpv4, fr[0]),
        Counter::encapsulated);
    add("IPv4 second fragment (no UDP header)", ether(a, kEthIpv4, fr[1]), Counter::encapsulated);
    std::vector<Bytes> fr6 = ipv6Fragments(c6, s6, 17, udp(c6, s6, 21005, 4789, pattern(64)), 24,
                                           0x4343);
    add("IPv6 first fragment, UDP length of the whole datagram", ether(a, kEthIpv6, fr6[0]),
        Counter::encapsulated);
  }
  runAll(h, t);
}

TEST(Hostile, IhlBelowFiveOrPastThePacketIsDropped) {
  Harness h;
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4;
  std::vector<Case> t;
  const Bytes seg = tcp(c4, s4, 22000, 80, pattern(40));
  for (int ihl = 0; ihl < 5; ++ihl)
    t.push_back({"IHL " + std::to_string(ihl),
                 ether(n.fromA(), kEthIpv4, ipv4(c4, s4, 6, seg, V4{.ihl_words = ihl})), kPortA,
                 Counter::drop_bad_ihl});
  for (int ihl = 5; ihl <= 15; ++ihl) {
    V4 o;
    o.options = Bytes(size_t(ihl - 5) * 4, 0x01);  // NOPs
    t.push_back({"IHL " + std::to_string(ihl) + " with its options",
                 ether(n.fromA(), kEthIpv4, ipv4(c4, s4, 6, seg, o)), kPortA,
                 Counter::encapsulated});
    if (ihl > 5) {
      // The same header length claimed by a packet that is only the fixed header.
      t.push_back({"IHL " + std::to_string(ihl) + " on a 20-byte packet",
                   ether(n.fromA(), kEthIpv4, ipv4(c4, s4, 59, {}, V4{.ihl_words = ihl})),
                   kPortA, Counter::drop_bad_ihl});
    }
  }
  runAll(h, t);
}

TEST(Hostile, Ipv6ExtensionHeaderChainsAreBounded) {
  Harness h;
  const Net& n = net();
  const IpAddr &c6 = n.client6, &s6 = n.server6;
  std::vector<Case> t;
  auto add = [&](std::string what, Bytes l3, Counter want) {
    t.push_back({std::move(what), ether(n.fromA(), kEthIpv6, l3), kPortA, want});
  };
  const Bytes dg = udp(c6, s6, 23000, 53, pattern(8));
  Ext rh{43, {0, 0, 0, 0, 0, 0, 0}};
  Ext ah{51, {2, 0, 0, 0, 0, 0, 0x22, 0, 0, 0, 1, 1, 2, 3, 4}};
  // Eight of every kind mixed (the limit) go through; one more does not.
  std::vector<Ext> mixed = {hopByHop(1), rh, destOpts(1), ah, destOpts(3), rh, ah, destOpts(1)};
  add("8 mixed extension headers", ipv6(c6, s6, 17, dg, mixed), Counter::encapsulated);
  std::vector<Ext> nine = mixed;
  nine.push_back(destOpts(1));
  add("9 mixed extension headers", ipv6(c6, s6, 17, dg, nine), Counter::drop_ipv6_ext_header_chain);
  // A "loop" cannot go backwards (every header moves the walk forward by at
  // least 8 bytes); a long repetition of the same header is what it looks like.
  add("100 destination-options headers",
      ipv6(c6, s6, 17, dg, std::vector<Ext>(100, destOpts(1))),
      Counter::drop_ipv6_ext_header_chain);
  add("60 routing headers", ipv6(c6, s6, 17, dg, std::vector<Ext>(60, rh)),
      Counter::drop_ipv6_ext_header_chain);
  add("9 AH headers", ipv6(c6, s6, 17, dg, std::vector<Ext>(9, ah)),
      Counter::drop_ipv6_ext_header_chain);
  {
    // Lengths that run past the packet: the largest each header can claim.
    Bytes p = ipv6(c6, s6, 17, dg, {hopByHop(1)});
    p[41] = 255;  // 2048 bytes
    add("hop-by-hop length 255", p, Counter::drop_ipv6_ext_header_chain);
    Bytes r = ipv6(c6, s6, 17, dg, {rh});
    r[41] = 255;
    add("routing header length 255", r, Counter::drop_ipv6_ext_header_chain);
    Bytes q = ipv6(c6, s6, 17, dg, {ah});
    q[41] = 255;  // (255 + 2) * 4 bytes
    add("AH length 255", q, Counter::drop_ipv6_ext_header_chain);
    Bytes d = ipv6(c6, s6, 17, dg, {hopByHop(1), destOpts(1)});
    d[49] = 3;  // the second header claims 32 bytes, 24 are left
    add("destination options one header past the end", d, Counter::drop_ipv6_ext_header_chain);
  }
  add("next header names a hop-by-hop header, nothing follows", ipv6(c6, s6, 0, {}),
      Counter::drop_ipv6_ext_header_chain);
  add("next header names a fragment header, 7 bytes follow", ipv6(c6, s6, 44, pattern(7)),
      Counter::drop_ipv6_ext_header_chain);
  runAll(h, t);
}

// ---- Tiny and jumbo frames ---------------------------------------------------

class HostileFormats : public ::testing::TestWithParam<ctl::GeneveFormat> {
 protected:
  HarnessOptions opts(uint32_t mtu = 1500) const {
    HarnessOptions o;
    o.format = GetParam();
    o.underlay_mtu = mtu;
    return o;
  }
};

// Runt frames (padded to 60 bytes): forwarded without the padding and returned
// byte-identical at L3 without it.
TEST_P(HostileFormats, RuntFramesStillWork) {
  Harness h(opts());
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4;
  std::vector<Frame> runts = {
      {n.fromA(), kEthIpv4, ipv4(c4, s4, 1, icmp4Echo(true, 0x3131, 1)), kPortA, 60},
      {n.fromA(), kEthIpv4, ipv4(c4, s4, 17, udp(c4, s4, 24000, 53, pattern(2))), kPortA, 60},
      {n.fromA(), kEthIpv4, ipv4(c4, s4, 6, tcp(c4, s4, 24001, 80)), kPortA, 60},
      {n.fromA(), kEthIpv4, ipv4(c4, s4, 253, {}), kPortA, 60},
      {n.fromVlan(9), kEthIpv4, ipv4(c4, s4, 17, udp(c4, s4, 24002, 53)), kPortVlan, 64},
  };
  for (const Frame& f : runts) {
    SCOPED_TRACE(hex(f.bytes()));
    ASSERT_EQ(f.bytes().size(), f.min_len) << "the test frame is padded";
    ASSERT_LT(f.unpadded().size(), f.min_len);
    Result r = runCase(h, {"runt", f.bytes(), f.port, Counter::encapsulated});
    ASSERT_EQ(r.verdict, Verdict::kAppliance);
    checkEncap(h, r.bytes, expectedInner(h, f), expectedProtocol(h, f));
    Result back = runCase(h, {"runt returned", reflect(r.bytes), kUnderlayPort, Counter::returned});
    EXPECT_EQ(back.bytes, f.returned()) << "no padding on the way back";
    EXPECT_EQ(back.port, f.port);
  }
}

// A UDP length shorter than the IP payload (the RFC 768 surplus area, used by
// UDP options) is legal: such a datagram is carried whole, and the Geneve
// packet around it must still have a valid UDP checksum.
TEST_P(HostileFormats, UdpWithSurplusAreaIsCarriedWithValidChecksums) {
  Harness h(opts());
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4, &c6 = n.client6, &s6 = n.server6;
  Bytes d4 = udp(c4, s4, 24100, 5353, pattern(4));  // checksum over its 12 bytes
  append(d4, pattern(12, 0x55));                    // surplus bytes after it
  Bytes d6 = udp(c6, s6, 24101, 5353, pattern(6));
  append(d6, pattern(10, 0x66));
  for (const Frame& f : {Frame{n.fromA(), kEthIpv4, ipv4(c4, s4, 17, d4), kPortA},
                         Frame{n.fromA(), kEthIpv6, ipv6(c6, s6, 17, d6), kPortA}}) {
    SCOPED_TRACE(hex(f.bytes()));
    Result r = runCase(h, {"UDP with surplus area", f.bytes(), f.port, Counter::encapsulated});
    ASSERT_EQ(r.verdict, Verdict::kAppliance);
    checkEncap(h, r.bytes, expectedInner(h, f), expectedProtocol(h, f));
  }
}

constexpr uint16_t kJumboRoom = 9728;  // 9216-byte MTU + L2 + slack

// A pool of mbufs big enough for one 9000+ byte frame each (the suite's pool
// has 4 KB buffers).
rte_mempool* jumboPool() {
  static rte_mempool* p = rte_pktmbuf_pool_create("dpt_jumbo", 15, 0, 0,
                                                  uint16_t(kJumboRoom + RTE_PKTMBUF_HEADROOM),
                                                  int(rte_socket_id()));
  return p;
}

Result sendJumbo(Harness& h, const Bytes& frame, uint16_t port, Counter want,
                 const std::string& what) {
  SCOPED_TRACE(what);
  rte_mbuf* m = rte_pktmbuf_alloc(jumboPool());
  if (!m) {
    ADD_FAILURE() << "jumbo pool exhausted";
    return {};
  }
  char* d = rte_pktmbuf_append(m, uint16_t(frame.size()));
  if (!d) {
    ADD_FAILURE() << frame.size() << " bytes do not fit a jumbo mbuf";
    rte_pktmbuf_free(m);
    return {};
  }
  std::memcpy(d, frame.data(), frame.size());
  m->port = port;
  WorkerCounters before = h.counters();
  Result r = h.sendMbuf(m);
  EXPECT_EQ(r.verdict, verdictFor(want)) << describe(r);
  if (r.verdict == Verdict::kDrop) {
    EXPECT_EQ(r.drop, want) << describe(r);
  }
  expectOnlyMoved(before, h.counters(), want);
  return r;
}

// The IPv4 "fragmentation needed" the gateway must send for `f` (DF set).
void expectFragNeeded(const Result& r, const Frame& f, uint32_t mtu) {
  ASSERT_EQ(r.verdict, Verdict::kRouter);
  EXPECT_EQ(r.port, f.port);
  ASSERT_GE(r.bytes.size(), 14u + 28u);
  EXPECT_EQ(get16(r.bytes, 12), kEthIpv4);
  EXPECT_EQ(r.bytes[14 + 9], 1) << "ICMP";
  EXPECT_EQ(slice(r.bytes, 14 + 16, 4), slice(f.l3, 12, 4)) << "to the packet's source";
  EXPECT_EQ(r.bytes[34], 3);
  EXPECT_EQ(r.bytes[35], 4);
  EXPECT_EQ(get16(r.bytes, 34 + 6), mtu) << "next-hop MTU";
  EXPECT_EQ(r.bytes.size(), 14u + 576u) << "quote limited to 576 bytes of error";
}

TEST_P(HostileFormats, JumboFramesFollowTheUnderlayMtu) {
  ASSERT_NE(jumboPool(), nullptr);
  const unsigned pool_free = rte_mempool_avail_count(jumboPool());
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4, &c6 = n.client6, &s6 = n.server6;
  const bool aws = GetParam() == ctl::GeneveFormat::kAws;
  auto tcp4 = [&](size_t l3_len, bool df, uint16_t sport) {
    V4 o;
    o.df = df;
    return ipv4(c4, s4, 6, tcp(c4, s4, sport, 80, pattern(l3_len - 40), kTcpAck), o);
  };
  {
    // Underlay MTU 1500: a 9000-byte frame cannot be wrapped.
    Harness h(opts(1500));
    const uint32_t inner_mtu = aws ? 1500 - 68 : 1500 - 36 - 14;
    Frame df{n.fromA(), kEthIpv4, tcp4(8986, true, 25000), kPortA};
    ASSERT_EQ(df.bytes().size(), 9000u);
    Result r = sendJumbo(h, df.bytes(), kPortA, Counter::icmp_sent, "9000-byte IPv4 DF frame");
    expectFragNeeded(r, df, inner_mtu);
    Frame nodf{n.fromA(), kEthIpv4, tcp4(8986, false, 25001), kPortA};
    sendJumbo(h, nodf.bytes(), kPortA, Counter::drop_too_big, "9000-byte IPv4 frame without DF");
    Frame v6{n.fromA(), kEthIpv6,
             ipv6(c6, s6, 6, tcp(c6, s6, 25002, 80, pattern(9100 - 60), kTcpAck)), kPortA};
    r = sendJumbo(h, v6.bytes(), kPortA, Counter::icmp_sent, "9114-byte IPv6 frame");
    ASSERT_EQ(r.verdict, Verdict::kRouter);
    EXPECT_EQ(get16(r.bytes, 12), kEthIpv6);
    EXPECT_EQ(r.bytes[14 + 6], 58) << "ICMPv6";
    EXPECT_EQ(r.bytes[54], 2) << "packet too big";
    EXPECT_EQ(get32(r.bytes, 58), inner_mtu);
    EXPECT_EQ(r.bytes.size(), 14u + 1280u);
  }
  {
    // Underlay MTU 9216: the largest jumbo that fits is wrapped and comes back
    // byte-identical; one byte more is refused.
    Harness h(opts(9216));
    const size_t fits = aws ? 9216 - 68 : 9216 - 36 - 14;
    Frame f{n.fromA(), kEthIpv4, tcp4(fits, true, 25003), kPortA};
    Result r = sendJumbo(h, f.bytes(), kPortA, Counter::encapsulated, "largest jumbo that fits");
    ASSERT_EQ(r.verdict, Verdict::kAppliance);
    checkEncap(h, r.bytes, expectedInner(h, f), expectedProtocol(h, f));
    EXPECT_EQ(get16(r.bytes, 16), 9216) << "outer IPv4 total length = the underlay MTU";
    Result back = sendJumbo(h, reflect(r.bytes), kUnderlayPort, Counter::returned,
                            "largest jumbo returned");
    EXPECT_EQ(back.bytes, f.returned());
    Frame big{n.fromA(), kEthIpv4, tcp4(fits + 1, true, 25004), kPortA};
    r = sendJumbo(h, big.bytes(), kPortA, Counter::icmp_sent, "one byte past the largest");
    expectFragNeeded(r, big, uint32_t(fits));
  }
  EXPECT_EQ(rte_mempool_avail_count(jumboPool()), pool_free) << "jumbo mbufs leaked";
}

// A chained mbuf (how a NIC delivers a jumbo frame into small buffers) is
// dropped whole, on either side, and every segment is freed (the harness
// checks the pool).
TEST_P(HostileFormats, MultiSegmentJumboFramesAreDropped) {
  Harness h(opts(9216));
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4;
  auto chain = [&](const Bytes& f, uint16_t port, size_t seg) {
    rte_mbuf* head = nullptr;
    for (size_t off = 0; off < f.size(); off += seg) {
      rte_mbuf* m = rte_pktmbuf_alloc(testPool());
      EXPECT_NE(m, nullptr);
      if (!m) break;
      size_t len = std::min(seg, f.size() - off);
      std::memcpy(rte_pktmbuf_append(m, uint16_t(len)), f.data() + off, len);
      if (!head) head = m;
      else EXPECT_EQ(rte_pktmbuf_chain(head, m), 0);
    }
    head->port = port;
    return head;
  };
  Frame f{n.fromA(), kEthIpv4,
          ipv4(c4, s4, 17, udp(c4, s4, 26000, 4789, pattern(9000 - 42))), kPortA};
  ASSERT_EQ(f.bytes().size(), 9000u);
  for (size_t seg : {size_t(4000), size_t(2048), size_t(1000)}) {
    SCOPED_TRACE("segments of " + std::to_string(seg));
    rte_mbuf* m = chain(f.bytes(), kPortA, seg);
    ASSERT_GT(m->nb_segs, 1);
    WorkerCounters before = h.counters();
    Result r = h.sendMbuf(m);
    EXPECT_EQ(r.verdict, Verdict::kDrop) << describe(r);
    EXPECT_EQ(r.drop, Counter::drop_multi_segment);
    expectOnlyMoved(before, h.counters(), Counter::drop_multi_segment);
  }
  // A jumbo reply from an appliance in two segments.
  Result sent = runCase(h, {"small flow", Frame{n.fromA(), kEthIpv4,
                                                 ipv4(c4, s4, 17, udp(c4, s4, 26001, 53)),
                                                 kPortA}.bytes(),
                            kPortA, Counter::encapsulated});
  ASSERT_EQ(sent.verdict, Verdict::kAppliance);
  rte_mbuf* m = chain(reflect(sent.bytes), kUnderlayPort, 40);
  WorkerCounters before = h.counters();
  Result r = h.sendMbuf(m);
  EXPECT_EQ(r.drop, Counter::drop_multi_segment) << describe(r);
  expectOnlyMoved(before, h.counters(), Counter::drop_multi_segment);
}

// ---- Return path -------------------------------------------------------------

class HostileReturn : public HostileFormats {
 protected:
  void SetUp() override {
    h_ = std::make_unique<Harness>(opts());
    const Net& n = net();
    flow_ = Frame{n.fromA(), kEthIpv4,
                  ipv4(n.client4, n.server4, 6,
                       tcp(n.client4, n.server4, 27000, 443, pattern(40), kTcpAck)),
                  kPortA};
    Result r = h_->send(flow_);
    ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    sent_ = r.bytes;
    enc_ = checkEncap(*h_, sent_, expectedInner(*h_, flow_), expectedProtocol(*h_, flow_));
  }
  GeneveHdr header() const {
    GeneveHdr g;
    g.protocol = get16(enc_.geneve_hdr, 2);
    g.vni = kVni;
    g.options = slice(enc_.geneve_hdr, 8, enc_.geneve_hdr.size() - 8);
    return g;
  }
  Bytes reply(const GeneveHdr& g) const { return reply(geneve(g), enc_.inner); }
  Bytes reply(const Bytes& geneve_hdr, const Bytes& inner) const {
    return fromAppliance(enc_.appliance, enc_.sport, geneve_hdr, inner);
  }
  // The inner packet as the appliance's format carries it.
  Bytes innerOf(const Bytes& l3) const {
    return h_->aws() ? l3 : ether(flow_.l2, kEthIpv4, l3);
  }
  Case back(std::string what, Bytes b, Counter want) const {
    return {std::move(what), std::move(b), kUnderlayPort, want};
  }
  // The reply itself still works after everything a test sent.
  void expectFlowIntact() {
    Result r = runCase(*h_, back("the genuine reply", reflect(sent_), Counter::returned));
    EXPECT_EQ(r.bytes, flow_.returned());
  }

  std::unique_ptr<Harness> h_;
  Frame flow_;
  Bytes sent_;
  Encap enc_;
};

TEST_P(HostileReturn, RepliesCutAtEveryByteAreDropped) {
  std::vector<Case> t;
  // The outer frame loses its tail: the outer IPv4 length lies.
  addCuts(t, "reply frame", reflect(sent_), kUnderlayPort, 14, false, 20, Counter::returned);
  // The outer lengths agree with the cut: Geneve header, options, inner packet.
  Bytes payload = enc_.geneve_hdr;
  append(payload, enc_.inner);
  for (size_t k = 0; k < payload.size(); ++k) {
    Counter want = k < enc_.geneve_hdr.size() ? Counter::drop_geneve_truncated
                                              : Counter::drop_return_inner_malformed;
    t.push_back(back("UDP payload cut to " + std::to_string(k) + " bytes",
                     reply(slice(payload, 0, k), {}), want));
  }
  runAll(*h_, t);
  expectFlowIntact();
}

TEST_P(HostileReturn, MalformedInnerPacketsAreDropped) {
  Harness& h = *h_;
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4, &c6 = n.client6, &s6 = n.server6;
  const Bytes seg = tcp(c4, s4, 27000, 443, pattern(40), kTcpAck);
  std::vector<Case> t;
  // `v6`: in the aws format the Geneve protocol type says IPv6 (so that the
  // packet fails on its own defect, not on the version).
  auto bad = [&](std::string what, Bytes inner, bool v6 = false) {
    GeneveHdr g = header();
    if (h.aws() && v6) g.protocol = kEthIpv6;
    t.push_back(back("inner " + what, reply(geneve(g), inner),
                     Counter::drop_return_inner_malformed));
  };
  auto inner6 = [&](const Bytes& l3) { return h.aws() ? l3 : ether(flow_.l2, kEthIpv6, l3); };
  // The flow's own addresses and ports, malformed at every transport byte.
  for (size_t k = 0; k < 20; ++k)
    bad("TCP segment of " + std::to_string(k) + " bytes",
        innerOf(ipv4(c4, s4, 6, slice(seg, 0, k))));
  for (int ihl : {0, 4})
    bad("IHL " + std::to_string(ihl), innerOf(ipv4(c4, s4, 6, seg, V4{.ihl_words = ihl})));
  bad("IHL 15 past the packet", innerOf(ipv4(c4, s4, 59, {}, V4{.ihl_words = 15})));
  bad("total length past the packet",
      innerOf(ipv4(c4, s4, 6, seg, V4{.total_len = int(20 + seg.size() + 1)})));
  bad("total length below the header", innerOf(ipv4(c4, s4, 6, seg, V4{.total_len = 19})));
  bad("UDP length past the payload", [&] {
    Bytes d = udp(c4, s4, 27000, 443, pattern(8));
    put16(d, 4, 17);
    return innerOf(ipv4(c4, s4, 17, d));
  }());
  {
    Bytes p = ipv6(c6, s6, 17, udp(c6, s6, 1, 2), {hopByHop(1)});
    p[41] = 9;
    bad("IPv6 extension headers past the packet", inner6(p), true);
    bad("IPv6 header of 39 bytes", inner6(slice(ipv6(c6, s6, 59, {}), 0, 39)), true);
    bad("IPv6 payload length past the packet",
        inner6(ipv6(c6, s6, 59, pattern(8), {}, V6{.payload_len = 9})), true);
  }
  bad("ICMP error quoting 10 bytes",
      innerOf(ipv4(s4, c4, 1, icmp4(3, 1, 0, slice(ipv4(c4, s4, 6, seg), 0, 10)))));
  if (!h.aws()) {
    // ethernet format: the inner Ethernet header itself.
    Bytes inner = enc_.inner;
    for (size_t k = 0; k < 14; ++k)
      bad("Ethernet header of " + std::to_string(k) + " bytes", slice(inner, 0, k));
    bad("ARP (never punted from inside Geneve)",
        slice(arpRequest(n.router_a, 0xC6336401, kUnderlayIp), 0, 42));
    bad("unknown ethertype", ether(flow_.l2, 0x88CC, pattern(46)));
    Bytes tag;
    append16(tag, 5);
    append16(tag, kEthIpv4);
    append(tag, flow_.l3);
    bad("two 802.1Q tags", ether({flow_.l2.dst, flow_.l2.src, 4}, kEthVlan, tag));
  } else {
    bad("IPv4 packet under protocol 0x86DD", enc_.inner, true);
  }
  runAll(h, t);
  expectFlowIntact();
}

TEST_P(HostileReturn, MalformedGeneveHeadersAreDropped) {
  Harness& h = *h_;
  std::vector<Case> t;
  auto withHdr = [&](std::string what, const GeneveHdr& g, Counter want) {
    t.push_back(back(std::move(what), reply(g), want));
  };
  for (uint8_t v = 1; v <= 3; ++v) {
    GeneveHdr g = header();
    g.version = v;
    withHdr("version " + std::to_string(v), g, Counter::drop_geneve_bad_version);
    g.oam = true;
    withHdr("version " + std::to_string(v) + " with the O bit", g,
            Counter::drop_geneve_bad_version);
  }
  {
    GeneveHdr g = header();
    g.oam = true;
    withHdr("O bit", g, Counter::drop_geneve_control);
    g.critical = true;
    append(g.options, geneveOption(0x0108, 0x90, {}));
    withHdr("O bit with an unknown critical option (payload never looked at)", g,
            Counter::drop_geneve_control);
  }
  // Opt Len past the end of the packet: every value that does not fit.
  const size_t udp_payload = enc_.geneve_hdr.size() + enc_.inner.size();
  for (int w = 63; 8 + 4 * size_t(w) > udp_payload; --w) {
    GeneveHdr g = header();
    g.opt_len_words = w;
    withHdr("Opt Len " + std::to_string(w) + " words", g, Counter::drop_geneve_truncated);
  }
  // An option whose data runs past the option area, by every length that does.
  for (uint8_t words = 3; words <= 31; ++words) {
    GeneveHdr g = header();
    append(g.options, geneveOption(0x0108, 0x07, pattern(8)));  // 2 words of data
    g.options[g.options.size() - 9] = words;
    withHdr("option claiming " + std::to_string(words) + " words, 2 left", g,
            Counter::drop_geneve_bad_option);
  }
  {
    GeneveHdr g = header();
    append(g.options, geneveOption(0xFFFF, 0x01, {}));
    g.options.back() = 1;  // one word of data claimed, the area ends here
    withHdr("last option header claiming data the area does not have", g,
            Counter::drop_geneve_bad_option);
  }
  // Length-0 options are legal (RFC 8926): skipped unless critical and unknown.
  {
    GeneveHdr g = header();
    for (int i = 0; i < 20; ++i) append(g.options, geneveOption(0xFFFF, uint8_t(i), {}));
    withHdr("20 unknown non-critical options of length 0", g, Counter::returned);
    GeneveHdr z = header();
    while (z.options.size() < 252) append(z.options, geneveOption(0, 0, {}));
    withHdr("Opt Len 63 of all-zero option headers", z, Counter::returned);
    GeneveHdr c = header();
    append(c.options, geneveOption(0xFFFF, 0x80, {}));
    withHdr("unknown critical option of length 0", c,
            Counter::drop_geneve_unknown_critical_option);
    GeneveHdr k = header();
    append(k.options, geneveOption(0x0108, 0x83, {}));
    withHdr("cookie type, critical, length 0 (not the cookie we know)", k,
            Counter::drop_geneve_unknown_critical_option);
  }
  if (h.aws()) {
    GeneveHdr g = header();
    g.options.resize(24);
    append(g.options, geneveOption(0x0108, 3, {}));
    withHdr("cookie option of length 0 instead of the cookie", g,
            Counter::drop_geneve_missing_cookie);
    GeneveHdr k = header();
    k.options[26] = 0x83;  // our cookie with the critical bit: known, accepted
    withHdr("the cookie option marked critical", k, Counter::returned);
  }
  // Unknown critical options of other shapes.
  for (auto [cls, type, len] : {std::tuple<uint16_t, uint8_t, size_t>{0x0108, 0x84, 4},
                                {0x0108, 0xFF, 124},
                                {0x0108, 0x81, 4},  // endpoint ID type, wrong length
                                {0x0000, 0x80, 8},
                                {0xFFFF, 0xC5, 0}}) {
    GeneveHdr g = header();
    g.critical = true;
    append(g.options, geneveOption(cls, type, pattern(len)));
    char buf[64];
    std::snprintf(buf, sizeof buf, "class 0x%04x type 0x%02x length %zu", cls, type, len);
    withHdr(std::string("unknown critical option ") + buf, g,
            Counter::drop_geneve_unknown_critical_option);
  }
  {
    GeneveHdr g = header();
    g.vni = 0;
    withHdr("VNI 0", g, Counter::drop_geneve_bad_vni);
  }
  // The outer UDP length lies.
  {
    Bytes b = reflect(sent_);
    put16(b, 38, uint16_t(get16(b, 38) + 1));
    t.push_back(back("outer UDP length one past the IP payload", b, Counter::drop_bad_udp_length));
    put16(b, 38, 7);
    t.push_back(back("outer UDP length 7", b, Counter::drop_bad_udp_length));
  }
  runAll(h, t);
  expectFlowIntact();
}

// Geneve to our underlay address from anything but a configured appliance.
// On a router-facing port no Geneve is accepted at all, from an appliance's
// address or not (issue 14 item 10: a router-side host spoofing an appliance).
TEST_P(HostileReturn, GeneveFromAddressesThatAreNotAppliancesIsDropped) {
  const Net& n = net();
  std::vector<Case> t;
  for (const char* from : {"10.0.0.99", "10.0.0.10", "10.0.0.14", "0.0.0.0", "255.255.255.255",
                           "198.51.100.10", "192.0.2.1"}) {
    t.push_back(back(std::string("from ") + from,
                     fromAppliance(ip(from), enc_.sport, enc_.geneve_hdr, enc_.inner),
                     Counter::drop_geneve_unknown_appliance));
    t.push_back({std::string("from ") + from + " on the router side",
                 geneveFrame(n.our_a, n.router_a, ip(from), n.underlay, enc_.sport,
                             enc_.geneve_hdr, enc_.inner),
                 kPortA, Counter::drop_geneve_on_router_port});
  }
  // The flow's own reply, spoofed from the router side: source address, port
  // and Geneve header (cookie included) exactly the appliance's.
  for (uint16_t port : {kPortA, kPortB}) {
    Bytes spoof = reflect(sent_);
    MacAddr ours = n.portMac(port);
    std::copy(ours.b.begin(), ours.b.end(), spoof.begin());
    t.push_back({"the genuine reply spoofed on router port " + std::to_string(port), spoof, port,
                 Counter::drop_geneve_on_router_port});
  }
  runAll(*h_, t);
  expectFlowIntact();
}

// The same in a one-arm setup (every port "both"): the address is all there
// is to go by, so only configured appliances are accepted.
TEST_P(HostileFormats, GeneveFromNonAppliancesIsDroppedOnSharedPorts) {
  HarnessOptions o = opts();
  for (uint16_t p = 0; p < 4; ++p) o.ports.push_back({p, PortRole::kBoth, std::nullopt});
  Harness h(o);
  const Net& n = net();
  std::vector<Case> t;
  for (const char* from : {"10.0.0.99", "198.51.100.10", "192.0.2.1"})
    t.push_back({std::string("from ") + from + " on the router side",
                 geneveFrame(n.our_a, n.router_a, ip(from), n.underlay, 50000, geneve({}),
                             ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, 1, 2))),
                 kPortA, Counter::drop_geneve_unknown_appliance});
  runAll(h, t);
}

// ---- Loop protection -----------------------------------------------------------

// (A router that sends a packet back sends it to our MAC: each frame is
// addressed to the port it arrives on. On the appliance-facing port nothing
// but returns is taken in, so the loop never gets that far there.)
TEST_P(HostileReturn, OurOwnGenevePacketsAreNeverEncapsulatedAgain) {
  const Net& n = net();
  std::vector<Case> t;
  auto toPort = [&](Bytes f, uint16_t port) {
    MacAddr m = n.portMac(port);
    std::copy(m.b.begin(), m.b.end(), f.begin());
    return f;
  };
  for (uint16_t port : {kPortA, kPortB})
    t.push_back({"our Geneve packet back on port " + std::to_string(port), toPort(sent_, port),
                 port, Counter::drop_loop_geneve});
  t.push_back({"our Geneve packet back on the appliance-facing port",
               toPort(sent_, kUnderlayPort), kUnderlayPort,
               Counter::drop_appliance_port_not_return});
  {
    Bytes tagged = slice(toPort(sent_, kPortVlan), 0, 12);
    append16(tagged, kEthVlan);
    append16(tagged, 0x0009);
    append(tagged, slice(sent_, 12, sent_.size() - 12));
    t.push_back({"our Geneve packet back with an 802.1Q tag", tagged, kPortVlan,
                 Counter::drop_loop_geneve});
  }
  t.push_back({"our Geneve packet back to the appliance's MAC (not ours)", sent_, kPortA,
               Counter::drop_not_our_mac});
  t.push_back({"Geneve from our address to a non-appliance",
               geneveFrame(n.our_a, n.router_a, n.underlay, n.server4, 50001, enc_.geneve_hdr,
                           enc_.inner),
               kPortA, Counter::drop_loop_geneve});
  t.push_back({"Geneve from our address to our address",
               geneveFrame(n.underlay_mac, n.underlay_mac, n.underlay, n.underlay, 50002,
                           enc_.geneve_hdr, enc_.inner),
               kUnderlayPort, Counter::drop_geneve_unknown_appliance});
  runAll(*h_, t);
  EXPECT_EQ(h_->get(Counter::encapsulated), 1u) << "only the flow's own packet was wrapped";
  expectFlowIntact();
}

// Geneve addressed to an appliance that is not ours to send (it does not come
// from our underlay address) must not be wrapped in Geneve again either; on
// the appliance-facing port it is not a return, so it is dropped by role.
TEST_P(HostileReturn, GeneveAddressedToAnApplianceIsNeverEncapsulated) {
  const Net& n = net();
  std::vector<Case> t;
  t.push_back({"Geneve from a client to an appliance, router side",
               geneveFrame(n.our_a, n.router_a, n.client4, enc_.appliance, 50003,
                           enc_.geneve_hdr, enc_.inner),
               kPortA, Counter::drop_loop_geneve});
  t.push_back({"Geneve from one appliance to another, underlay side",
               geneveFrame(n.underlay_mac, n.gateway_mac, n.appliances[0], n.appliances[1], 50004,
                           enc_.geneve_hdr, enc_.inner),
               kUnderlayPort, Counter::drop_appliance_port_not_return});
  runAll(*h_, t);
}

INSTANTIATE_TEST_SUITE_P(Formats, HostileFormats,
                         ::testing::Values(ctl::GeneveFormat::kAws, ctl::GeneveFormat::kEthernet),
                         [](const auto& info) { return std::string(ctl::toString(info.param)); });
INSTANTIATE_TEST_SUITE_P(Formats, HostileReturn,
                         ::testing::Values(ctl::GeneveFormat::kAws, ctl::GeneveFormat::kEthernet),
                         [](const auto& info) { return std::string(ctl::toString(info.param)); });

// ---- Cookies (aws format) --------------------------------------------------------

// A reply whose cookie belongs to another flow: of another appliance, or of
// another flow of the same appliance. Never returned.
TEST(HostileCookies, CookiesOfOtherFlowsAreRefused) {
  Harness h;
  const Net& n = net();
  struct Flow {
    Frame f;
    Encap e;
  };
  std::vector<Flow> flows;
  const Flow* first = nullptr;
  const Flow* same = nullptr;   // another flow on first's appliance
  const Flow* other = nullptr;  // a flow on another appliance
  flows.reserve(64);
  for (uint16_t sport = 28000; sport < 28064 && !(same && other); ++sport) {
    Frame f{n.fromA(), kEthIpv4,
            ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, sport, 443, {}, kTcpAck)),
            kPortA};
    Result r = h.send(f);
    ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    flows.push_back({f, checkEncap(h, r.bytes, expectedInner(h, f), expectedProtocol(h, f))});
    const Flow& fl = flows.back();
    if (!first) first = &fl;
    else if (!same && fl.e.appliance == first->e.appliance) same = &fl;
    else if (!other && fl.e.appliance != first->e.appliance) other = &fl;
  }
  ASSERT_TRUE(same && other) << "64 flows did not cover two appliances";
  ASSERT_NE(same->e.cookie, first->e.cookie);
  ASSERT_NE(other->e.cookie, first->e.cookie);

  auto hdrWith = [](const Encap& e, uint32_t cookie) {
    Bytes g = e.geneve_hdr;
    put32(g, 36, cookie);
    return g;
  };
  std::vector<Case> t;
  auto add = [&](std::string what, const IpAddr& from, const Bytes& g, const Bytes& inner,
                 Counter want) {
    t.push_back({std::move(what), fromAppliance(from, first->e.sport, g, inner), kUnderlayPort,
                 want});
  };
  add("our flow with the cookie of another flow of the same appliance", first->e.appliance,
      hdrWith(first->e, same->e.cookie), first->e.inner, Counter::drop_return_cookie_mismatch);
  add("our flow with the cookie of another appliance's flow", first->e.appliance,
      hdrWith(first->e, other->e.cookie), first->e.inner, Counter::drop_return_cookie_mismatch);
  add("another appliance's flow, with its cookie, sent by us", first->e.appliance,
      other->e.geneve_hdr, other->e.inner, Counter::drop_return_wrong_appliance);
  add("our flow, with our cookie, sent by the other appliance", other->e.appliance,
      first->e.geneve_hdr, first->e.inner, Counter::drop_return_wrong_appliance);
  add("our flow with its cookie + 1", first->e.appliance, hdrWith(first->e, first->e.cookie + 1),
      first->e.inner, Counter::drop_return_cookie_mismatch);
  add("our flow with cookie 0", first->e.appliance, hdrWith(first->e, 0), first->e.inner,
      Counter::drop_return_cookie_mismatch);
  runAll(h, t);
  // Each flow still returns with its own cookie from its own appliance.
  for (const Flow* fl : {first, same, other}) {
    Result r = runCase(h, {"genuine reply", fromAppliance(fl->e.appliance, fl->e.sport,
                                                           fl->e.geneve_hdr, fl->e.inner),
                           kUnderlayPort, Counter::returned});
    EXPECT_EQ(r.bytes, fl->f.returned());
  }
}

}  // namespace
}  // namespace gwlb::dptest
