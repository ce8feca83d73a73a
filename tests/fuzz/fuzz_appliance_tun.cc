// Fuzz target 15: gwlb-appliance's tun mode (tools/appliance_tun_flows.cc and
// the inner parser tools/appliance_packet.cc): what it learns from Geneve
// packets the gateway sends, and what it makes of packets the appliance's
// kernel writes out of the tun device.
// Input: records of [op, length, length bytes]. op bit 0 set: the bytes are a
// Geneve packet (header 8 + 4 x its option length, then an inner IP packet),
// learned from gateway (op >> 1) & 3 when both parse, as the appliance does;
// with op bit 3 set, 14 bytes of inner Ethernet header (ethernet format)
// follow the Geneve header and are kept with it; with op bit 4 set it is
// learned past the stream depth (--bypass-after-bytes): the header kept has
// gwlb's bypass option after its options when the option area has room;
// clear: the bytes are a packet from the tun, wrapped. The clock moves by
// op >> 4 seconds; op 0xff expires idle flows. Table: 8 flows, 20 s idle.
//  - Never reads past the input (ASan) and never throws.
//  - Against a std::map oracle of the same rules: a flow is learned unless
//    the table is full (table_full counts exactly those), and expires exactly
//    when idle > 20 s; the table never holds more than 8.
//  - A wrap succeeds exactly when the packet parses and its flow is known;
//    otherwise exactly one of from_tun_malformed / from_tun_unknown_flow
//    grows. A wrapped packet is the header its direction last arrived with
//    (the other direction's when this one was never seen) followed by the
//    packet's bytes unchanged, for the gateway that sent that header; the
//    other direction's inner Ethernet header has its two addresses swapped.
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "tests/fuzz/fuzz_check.h"
#include "tools/appliance_tun_flows.h"

using namespace gwlb::appliance;

namespace {

constexpr size_t kMax = 8;
constexpr double kIdle = 20;

struct Model {
  std::vector<uint8_t> hdr[2];
  uint8_t gateway[2] = {0, 0};
  size_t l2[2] = {0, 0};
  double last_seen = 0;
};

GatewayAddr gw(uint8_t i) {
  GatewayAddr g;
  g.addr[0] = 10, g.addr[3] = i;
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  TunFlowTable t(kMax, kIdle);
  TunCounters c;
  std::map<FlowKey, Model> oracle;
  double now = 0;
  std::vector<uint8_t> out;
  size_t i = 0;
  while (i + 2 <= size) {
    uint8_t op = data[i];
    size_t len = data[i + 1];
    i += 2;
    if (len > size - i) len = size - i;
    // A heap copy of exactly len bytes, so that ASan sees a read past them.
    std::vector<uint8_t> pkt(data + i, data + i + len);
    i += len;
    now += op >> 4;
    if (op == 0xff) {
      size_t gone = 0;
      for (auto it = oracle.begin(); it != oracle.end();) {
        if (now - it->second.last_seen > kIdle) it = oracle.erase(it), ++gone;
        else ++it;
      }
      FUZZ_CHECK(t.expire(now, c) == gone, "expire removed another number than %zu", gone);
      FUZZ_CHECK(t.size() == oracle.size(), "size %zu, oracle %zu", t.size(), oracle.size());
      continue;
    }
    if (op & 1) {
      if (pkt.size() < 8) continue;
      const size_t l2 = op & 8 ? 14 : 0;
      size_t hlen = 8 + size_t(pkt[0] & 0x3f) * 4 + l2;
      Inner in;
      if (hlen > pkt.size() || !parseIp(pkt.data() + hlen, pkt.size() - hlen, in)) continue;
      bool fwd = true;
      FlowKey k = flowKeyOf(in, &fwd);
      bool known = oracle.count(k) > 0;
      uint64_t full0 = c.table_full;
      const BypassAsk ask{0xFF01, uint32_t(op)};
      const bool bypass = op & 0x10;
      bool ok = t.learn(in, pkt.data(), hlen, gw((op >> 1) & 3), now, c, l2, bypass ? &ask : nullptr);
      FUZZ_CHECK(ok == (known || oracle.size() < kMax), "learn %d, known %d, %zu flows", ok, known, oracle.size());
      FUZZ_CHECK(c.table_full == full0 + (ok ? 0 : 1), "table_full counts refusals");
      if (ok) {
        Model& m = oracle[k];
        std::vector<uint8_t>& h = m.hdr[fwd ? 0 : 1];
        h.assign(pkt.data(), pkt.data() + hlen);
        const size_t opt_len = size_t(pkt[0] & 0x3f) * 4;
        if (bypass && opt_len + 8 <= 252) {
          const uint8_t o[8] = {0xFF, 0x01, 0x01, 0x01, 0, 0, 0, op};
          h.insert(h.begin() + long(8 + opt_len), o, o + 8);
          h[0] = uint8_t((pkt[0] & 0xC0) | ((opt_len + 8) / 4));
        }
        m.gateway[fwd ? 0 : 1] = (op >> 1) & 3;
        m.l2[fwd ? 0 : 1] = l2;
        m.last_seen = now;
      }
      FUZZ_CHECK(t.size() == oracle.size() && t.size() <= kMax, "size %zu, oracle %zu", t.size(), oracle.size());
      continue;
    }
    TunCounters c0 = c;
    const GatewayAddr* to = t.wrap(pkt.data(), pkt.size(), out, now, c);
    Inner in;
    bool parses = parseIp(pkt.data(), pkt.size(), in);
    if (!parses) {
      FUZZ_CHECK(!to && c.from_tun_malformed == c0.from_tun_malformed + 1, "an unparseable packet is malformed");
      continue;
    }
    bool fwd = true;
    auto it = oracle.find(flowKeyOf(in, &fwd));
    if (it == oracle.end()) {
      FUZZ_CHECK(!to && c.from_tun_unknown_flow == c0.from_tun_unknown_flow + 1, "an unknown flow is counted");
      continue;
    }
    FUZZ_CHECK(to != nullptr, "a known flow is wrapped");
    int d = it->second.hdr[fwd ? 0 : 1].empty() ? (fwd ? 1 : 0) : (fwd ? 0 : 1);
    std::vector<uint8_t> h = it->second.hdr[d];
    if (d != (fwd ? 0 : 1) && it->second.l2[d]) {
      uint8_t* e = h.data() + h.size() - it->second.l2[d];
      for (int b = 0; b < 6; ++b) std::swap(e[b], e[6 + b]);
    }
    FUZZ_CHECK(std::memcmp(to->addr.data(), gw(it->second.gateway[d]).addr.data(), 16) == 0,
               "to the gateway that sent that header");
    FUZZ_CHECK(out.size() == h.size() + pkt.size(), "wrapped length %zu", out.size());
    FUZZ_CHECK(std::memcmp(out.data(), h.data(), h.size()) == 0, "the direction's header");
    FUZZ_CHECK(std::memcmp(out.data() + h.size(), pkt.data(), pkt.size()) == 0, "the packet unchanged");
    it->second.last_seen = now;
  }
  return 0;
}
