#include "tools/replay_io.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "common/checksum.h"
#include "common/flow_key.h"
#include "common/geneve.h"
#include "common/packet_parser.h"

namespace gwlb::replay {

bool readPcap(const std::string& path, uint16_t port, size_t max_frame, std::vector<Frame>& out,
              std::string& err, CaptureStats& cs) {
  char eb[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, eb);
  if (!p) return err = path + ": " + eb, false;
  if (pcap_datalink(p) != DLT_EN10MB) {
    pcap_close(p);
    return err = path + ": link type is not Ethernet", false;
  }
  pcap_pkthdr* h;
  const u_char* d;
  int rc;
  while ((rc = pcap_next_ex(p, &h, &d)) == 1) {
    if (h->caplen < h->len) ++cs.cut_by_capture;
    if (h->caplen > max_frame) {
      ++cs.too_large;
      cs.largest_skipped = std::max<size_t>(cs.largest_skipped, h->caplen);
      continue;
    }
    cs.largest = std::max<size_t>(cs.largest, h->caplen);
    Frame f;
    f.ts_ns = uint64_t(h->ts.tv_sec) * 1'000'000'000ULL + uint64_t(h->ts.tv_usec);
    f.port = port;
    f.bytes.assign(d, d + h->caplen);
    out.push_back(std::move(f));
  }
  pcap_close(p);
  if (rc == -1) return err = path + ": read error", false;
  return true;
}

bool PcapWriter::open(const std::string& path, std::string& err) {
  dead_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  dump_ = pcap_dump_open(dead_, path.c_str());
  if (!dump_) return err = path + ": " + pcap_geterr(dead_), false;
  return true;
}

void PcapWriter::write(const rte_mbuf* m, uint64_t ts_ns) {
  // Every segment: a mirror copy is its headers chained to the original's data.
  held_.push_back({ts_ns, held_bytes_.size(), m->pkt_len});
  for (const rte_mbuf* seg = m; seg; seg = seg->next) {
    const auto* p = rte_pktmbuf_mtod(seg, const uint8_t*);
    held_bytes_.insert(held_bytes_.end(), p, p + seg->data_len);
  }
  ++count_;
}

void PcapWriter::flush() {
  std::stable_sort(held_.begin(), held_.end(),
                   [](const Held& a, const Held& b) { return a.ts_ns < b.ts_ns; });
  for (const Held& f : held_) {
    pcap_pkthdr h{};
    h.ts.tv_sec = long(f.ts_ns / 1'000'000'000ULL);
    h.ts.tv_usec = long(f.ts_ns % 1'000'000'000ULL);
    h.caplen = h.len = f.len;
    pcap_dump(reinterpret_cast<u_char*>(dump_), &h, held_bytes_.data() + f.offset);
  }
  held_.clear();
  held_bytes_.clear();
}

void PcapWriter::close() {
  if (dump_) flush();
  if (dump_) pcap_dump_close(dump_);
  if (dead_) pcap_close(dead_);
  dump_ = nullptr;
  dead_ = nullptr;
}

bool outerDestination(const uint8_t* f, size_t len, IpAddr& out) {
  size_t l2 = 14;
  if (len >= 18 && rd16(f + 12) == 0x8100) l2 = 18;
  if (len < l2) return false;
  const uint16_t et = rd16(f + l2 - 2);
  if (et == kEtherTypeIpv4 && len >= l2 + 20) return out = IpAddr::v4(f + l2 + 16), true;
  if (et == kEtherTypeIpv6 && len >= l2 + 40) return out = IpAddr::v6(f + l2 + 24), true;
  return false;
}

void reflect(rte_mbuf* m) {
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  uint8_t tmp[16];
  std::memcpy(tmp, f, 6);
  std::memcpy(f, f + 6, 6);
  std::memcpy(f + 6, tmp, 6);
  // The pipeline writes no VLAN tag: the outer family is the EtherType.
  const bool v6 = m->data_len >= 14 + 40 && rd16(f + 12) == kEtherTypeIpv6;
  const size_t at = v6 ? 14 + 8 : 14 + 12, n = v6 ? 16 : 4;
  std::memcpy(tmp, f + at, n);
  std::memcpy(f + at, f + at + n, n);
  std::memcpy(f + at + n, tmp, n);
}

namespace {
// Where the Geneve header starts in what applyEncap writes: no VLAN, no IPv4
// options, no IPv6 extension headers.
size_t geneveAt(const uint8_t* f, size_t len) {
  return len >= 14 && rd16(f + 12) == kEtherTypeIpv6 ? 14 + 40 + 8 : 14 + 20 + 8;
}
}  // namespace

bool reflectedFlow(const rte_mbuf* m, std::string& key, size_t& inner_len) {
  const uint8_t* f = rte_pktmbuf_mtod(m, const uint8_t*);
  const size_t len = m->data_len;
  const size_t gen_at = geneveAt(f, len);
  if (len < gen_at + 8) return false;
  const size_t inner = gen_at + 8 + size_t(f[gen_at] & 0x3F) * 4;
  if (inner > len) return false;
  const uint16_t proto = rd16(f + gen_at + 2);
  ParsedPacket p;
  Counter why;
  ParseStatus st = proto == kEtherTypeTeb ? parseFrame(f + inner, len - inner, p, why)
                                          : parseL3(f + inner, len - inner, proto, p, why);
  if (st != ParseStatus::kOk) return false;
  KeyedPacket kp = makeFlowKey(p.tuple, StickinessMode::kFiveTuple, 0);
  key.assign(reinterpret_cast<const char*>(&kp.key), sizeof kp.key);
  inner_len = len - inner;
  return true;
}

bool addBypassToReflection(rte_mbuf* m, uint16_t option_class, uint32_t seconds) {
  const size_t gen_at = geneveAt(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
  if (m->data_len < gen_at + 8) return false;
  const uint8_t* f = rte_pktmbuf_mtod(m, const uint8_t*);
  const size_t opt_len = size_t(f[gen_at] & 0x3F) * 4;
  const size_t hdr = gen_at + 8 + opt_len;
  if (hdr > m->data_len || opt_len + 8 > kMaxGeneveOptionsLen) return false;
  uint8_t* n = reinterpret_cast<uint8_t*>(rte_pktmbuf_prepend(m, 8));
  if (!n) return false;
  std::memmove(n, n + 8, hdr);
  uint8_t* o = n + hdr;
  wr16(o, option_class);
  o[2] = kGwlbOptBypass;
  o[3] = 1;
  wr32(o + 4, seconds);
  n[gen_at] = uint8_t((n[gen_at] & 0xC0) | ((opt_len + 8) / 4));
  uint8_t* udp = n + gen_at - 8;
  const uint16_t udp_len = uint16_t(rd16(udp + 4) + 8);
  wr16(udp + 4, udp_len);
  wr16(udp + 6, 0);
  if (gen_at == 14 + 40 + 8) {
    // IPv6: payload length, and a UDP checksum (zero is not allowed over IPv6).
    wr16(n + 14 + 4, udp_len);
    uint32_t sum = csumAdd(0, n + 14 + 8, 32) + kProtoUdp + udp_len;
    const uint16_t c = csumFold(csumAdd(sum, udp, udp_len));
    wr16(udp + 6, c == 0 ? 0xFFFF : c);
  } else {
    wr16(n + 14 + 2, uint16_t(rd16(n + 14 + 2) + 8));  // IPv4 total length
    wr16(n + 14 + 10, 0);
    wr16(n + 14 + 10, inetChecksum(n + 14, 20));  // no UDP checksum (IPv4 allows it)
  }
  return true;
}

bool parseEcmpPolicy(const std::string& text, EcmpPolicy& out) {
  for (EcmpPolicy p : {EcmpPolicy::kL3, EcmpPolicy::kL4Linux, EcmpPolicy::kL4FirstWithPorts})
    if (text == toString(p)) return out = p, true;
  return false;
}

const char* toString(EcmpPolicy p) {
  switch (p) {
    case EcmpPolicy::kL3: return "l3";
    case EcmpPolicy::kL4Linux: return "l4-linux";
    case EcmpPolicy::kL4FirstWithPorts: return "l4-first-with-ports";
  }
  return "?";
}

unsigned ecmpNode(const Frame& f, unsigned n, EcmpPolicy policy) {
  if (n <= 1) return 0;
  ParsedPacket p;
  Counter why;
  if (parseFrame(f.bytes.data(), f.bytes.size(), p, why) != ParseStatus::kOk) return 0;
  // FNV-1a over the fields in packet order.
  uint64_t h = 0xCBF29CE484222325ULL;
  auto mix = [&h](const uint8_t* b, size_t len) {
    for (size_t i = 0; i < len; ++i) h = (h ^ b[i]) * 0x100000001B3ULL;
  };
  if (policy == EcmpPolicy::kL3) {
    // Linux looks into an ICMP error and hashes the header it quotes (which
    // starts 8 bytes into the ICMP message; the parser checked it is there).
    const bool inner = p.icmp_error;
    const L4Tuple& t = inner ? p.quoted : p.tuple;
    mix(t.src.b.data(), t.src.b.size());
    mix(t.dst.b.data(), t.dst.b.size());
    if (p.ip_version == 6) {
      const uint8_t* ip = f.bytes.data() + (inner ? size_t(p.l4_offset) + 8 : p.l3_offset);
      const uint8_t label_nh[4] = {uint8_t(ip[1] & 0x0F), ip[2], ip[3], ip[6]};
      mix(label_nh, sizeof label_nh);
    }
    return unsigned((h ^ (h >> 32)) % n);
  }
  const L4Tuple& t = p.tuple;
  bool ports = true;
  if (policy == EcmpPolicy::kL4Linux)
    ports = !p.is_fragment && t.proto != kProtoIcmp && t.proto != kProtoIcmpv6;
  const uint16_t sport = ports ? t.sport : 0, dport = ports ? t.dport : 0;
  mix(t.src.b.data(), t.src.b.size());
  mix(t.dst.b.data(), t.dst.b.size());
  const uint8_t rest[5] = {t.proto, uint8_t(sport >> 8), uint8_t(sport), uint8_t(dport >> 8),
                           uint8_t(dport)};
  mix(rest, sizeof rest);
  return unsigned((h ^ (h >> 32)) % n);
}

}  // namespace gwlb::replay
