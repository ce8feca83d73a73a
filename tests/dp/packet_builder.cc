#include "tests/dp/packet_builder.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace gwlb::dptest {

MacAddr mac(const char* text) {
  auto m = MacAddr::parse(text);
  if (!m) {
    std::fprintf(stderr, "bad MAC in test: %s\n", text);
    std::abort();
  }
  return *m;
}

IpAddr ip(const char* text) {
  auto a = IpAddr::parse(text);
  if (!a) {
    std::fprintf(stderr, "bad address in test: %s\n", text);
    std::abort();
  }
  return *a;
}

uint16_t get16(const Bytes& b, size_t off) { return uint16_t((b.at(off) << 8) | b.at(off + 1)); }
uint32_t get32(const Bytes& b, size_t off) {
  return (uint32_t(get16(b, off)) << 16) | get16(b, off + 2);
}
uint64_t get64(const Bytes& b, size_t off) {
  return (uint64_t(get32(b, off)) << 32) | get32(b, off + 4);
}
void put16(Bytes& b, size_t off, uint16_t v) {
  b.at(off) = uint8_t(v >> 8);
  b.at(off + 1) = uint8_t(v);
}
void put32(Bytes& b, size_t off, uint32_t v) {
  put16(b, off, uint16_t(v >> 16));
  put16(b, off + 2, uint16_t(v));
}
void append16(Bytes& b, uint16_t v) {
  b.push_back(uint8_t(v >> 8));
  b.push_back(uint8_t(v));
}
void append32(Bytes& b, uint32_t v) {
  append16(b, uint16_t(v >> 16));
  append16(b, uint16_t(v));
}
void append64(Bytes& b, uint64_t v) {
  append32(b, uint32_t(v >> 32));
  append32(b, uint32_t(v));
}
void append(Bytes& b, const Bytes& tail) { b.insert(b.end(), tail.begin(), tail.end()); }
Bytes slice(const Bytes& b, size_t off, size_t len) {
  if (off > b.size()) return {};
  len = std::min(len, b.size() - off);
  return Bytes(b.begin() + long(off), b.begin() + long(off + len));
}
Bytes pattern(size_t n, uint8_t seed) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(seed + i * 7 + (i >> 8));
  return b;
}

uint32_t sum16(const uint8_t* p, size_t n, uint32_t acc) {
  uint64_t s = acc;
  for (size_t i = 0; i + 1 < n; i += 2) s += uint32_t(p[i]) << 8 | p[i + 1];
  if (n & 1) s += uint32_t(p[n - 1]) << 8;
  while (s >> 32) s = (s & 0xFFFFFFFFu) + (s >> 32);
  return uint32_t(s);
}
uint16_t fold(uint32_t acc) {
  uint64_t s = acc;
  while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
  return uint16_t(~s & 0xFFFF);
}
uint32_t pseudoSum(const IpAddr& src, const IpAddr& dst, uint8_t proto, size_t len) {
  size_t alen = src.isV4() ? 4 : 16;
  uint32_t s = sum16(src.b.data(), alen);
  s = sum16(dst.b.data(), alen, s);
  Bytes tail;
  if (src.isV4()) {
    tail = {0, proto};
    append16(tail, uint16_t(len));
  } else {
    append32(tail, uint32_t(len));
    append32(tail, proto);
  }
  return sum16(tail.data(), tail.size(), s);
}
bool checksumOk(const uint8_t* p, size_t n, uint32_t acc) { return fold(sum16(p, n, acc)) == 0; }

namespace {
uint16_t l4Checksum(const IpAddr& src, const IpAddr& dst, uint8_t proto, const Bytes& seg) {
  return fold(sum16(seg.data(), seg.size(), pseudoSum(src, dst, proto, seg.size())));
}
}  // namespace

Bytes tcp(const IpAddr& src, const IpAddr& dst, uint16_t sport, uint16_t dport,
          const Bytes& payload, uint8_t flags, uint32_t seq, uint32_t ack) {
  Bytes b;
  append16(b, sport);
  append16(b, dport);
  append32(b, seq);
  append32(b, (flags & kTcpAck) ? ack : 0);
  b.push_back(5 << 4);
  b.push_back(flags);
  append16(b, 65535);
  append16(b, 0);  // checksum
  append16(b, 0);  // urgent
  append(b, payload);
  put16(b, 16, l4Checksum(src, dst, 6, b));
  return b;
}

Bytes udp(const IpAddr& src, const IpAddr& dst, uint16_t sport, uint16_t dport,
          const Bytes& payload) {
  Bytes b;
  append16(b, sport);
  append16(b, dport);
  append16(b, uint16_t(8 + payload.size()));
  append16(b, 0);
  append(b, payload);
  uint16_t c = l4Checksum(src, dst, 17, b);
  put16(b, 6, c == 0 ? 0xFFFF : c);
  return b;
}

Bytes icmp4(uint8_t type, uint8_t code, uint32_t rest, const Bytes& body) {
  Bytes b = {type, code, 0, 0};
  append32(b, rest);
  append(b, body);
  put16(b, 2, fold(sum16(b.data(), b.size())));
  return b;
}

Bytes icmp4Echo(bool request, uint16_t id, uint16_t seq, const Bytes& payload) {
  return icmp4(request ? 8 : 0, 0, (uint32_t(id) << 16) | seq, payload);
}

Bytes icmp6(const IpAddr& src, const IpAddr& dst, uint8_t type, uint8_t code, uint32_t rest,
            const Bytes& body) {
  Bytes b = {type, code, 0, 0};
  append32(b, rest);
  append(b, body);
  put16(b, 2, l4Checksum(src, dst, 58, b));
  return b;
}

Bytes icmp6Echo(const IpAddr& src, const IpAddr& dst, bool request, uint16_t id, uint16_t seq,
                const Bytes& payload) {
  return icmp6(src, dst, request ? 128 : 129, 0, (uint32_t(id) << 16) | seq, payload);
}

Bytes ipv4(const IpAddr& src, const IpAddr& dst, uint8_t proto, const Bytes& payload,
           const V4& o) {
  Bytes opts = o.options;
  while (opts.size() % 4) opts.push_back(0);  // EOL padding
  size_t hlen = 20 + opts.size();
  Bytes b;
  b.push_back(uint8_t(0x40 | (o.ihl_words >= 0 ? o.ihl_words : int(hlen / 4))));
  b.push_back(o.tos);
  append16(b, uint16_t(o.total_len >= 0 ? o.total_len : int(hlen + payload.size())));
  append16(b, o.id);
  append16(b, uint16_t((o.df ? 0x4000 : 0) | (o.mf ? 0x2000 : 0) | (o.frag_offset / 8)));
  b.push_back(o.ttl);
  b.push_back(proto);
  append16(b, 0);
  b.insert(b.end(), src.b.begin(), src.b.begin() + 4);
  b.insert(b.end(), dst.b.begin(), dst.b.begin() + 4);
  append(b, opts);
  put16(b, 10, fold(sum16(b.data(), hlen)));
  append(b, payload);
  return b;
}

std::vector<Bytes> ipv4Fragments(const IpAddr& src, const IpAddr& dst, uint8_t proto,
                                 const Bytes& segment, size_t first_len, uint16_t id) {
  V4 a;
  a.id = id;
  a.df = false;
  a.mf = true;
  V4 b = a;
  b.mf = false;
  b.frag_offset = uint16_t(first_len);
  return {ipv4(src, dst, proto, slice(segment, 0, first_len), a),
          ipv4(src, dst, proto, slice(segment, first_len, segment.size()), b)};
}

namespace {
Ext optionsHeader(uint8_t type, size_t units) {
  Ext e{type, {}};
  e.body.push_back(uint8_t(units - 1));
  size_t pad = units * 8 - 2;  // PadN covering the whole option area
  e.body.push_back(1);
  e.body.push_back(uint8_t(pad - 2));
  e.body.resize(units * 8 - 1, 0);
  return e;
}
}  // namespace

Ext hopByHop(size_t units) { return optionsHeader(0, units); }
Ext destOpts(size_t units) { return optionsHeader(60, units); }
Ext fragmentExt(uint16_t offset_bytes, bool more, uint32_t id) {
  Ext e{44, {0}};
  append16(e.body, uint16_t((offset_bytes / 8) << 3 | (more ? 1 : 0)));
  append32(e.body, id);
  return e;
}

Bytes ipv6(const IpAddr& src, const IpAddr& dst, uint8_t proto, const Bytes& payload,
           const std::vector<Ext>& ext, const V6& o) {
  Bytes chain;
  for (size_t i = 0; i < ext.size(); ++i) {
    chain.push_back(i + 1 < ext.size() ? ext[i + 1].type : proto);
    append(chain, ext[i].body);
  }
  append(chain, payload);
  Bytes b;
  append32(b, 0x60000000u | (o.flow_label & 0xFFFFF));
  append16(b, uint16_t(o.payload_len >= 0 ? o.payload_len : int(chain.size())));
  b.push_back(ext.empty() ? proto : ext[0].type);
  b.push_back(o.hop_limit);
  b.insert(b.end(), src.b.begin(), src.b.end());
  b.insert(b.end(), dst.b.begin(), dst.b.end());
  append(b, chain);
  return b;
}

std::vector<Bytes> ipv6Fragments(const IpAddr& src, const IpAddr& dst, uint8_t proto,
                                 const Bytes& segment, size_t first_len, uint32_t id) {
  return {ipv6(src, dst, proto, slice(segment, 0, first_len), {fragmentExt(0, true, id)}),
          ipv6(src, dst, proto, slice(segment, first_len, segment.size()),
               {fragmentExt(uint16_t(first_len), false, id)})};
}

Bytes ether(const L2& l2, uint16_t type, const Bytes& payload, size_t min_len) {
  Bytes b(l2.dst.b.begin(), l2.dst.b.end());
  b.insert(b.end(), l2.src.b.begin(), l2.src.b.end());
  if (l2.vlan) {
    append16(b, kEthVlan);
    append16(b, *l2.vlan);
  }
  append16(b, type);
  append(b, payload);
  if (b.size() < min_len) b.resize(min_len, 0);
  return b;
}

Bytes arpRequest(const MacAddr& src, uint32_t sender_ip, uint32_t target_ip) {
  Bytes a;
  append16(a, 1);
  append16(a, kEthIpv4);
  a.push_back(6);
  a.push_back(4);
  append16(a, 1);
  a.insert(a.end(), src.b.begin(), src.b.end());
  append32(a, sender_ip);
  a.resize(a.size() + 6, 0);
  append32(a, target_ip);
  return ether({mac("ff:ff:ff:ff:ff:ff"), src, {}}, kEthArp, a, 60);
}

Bytes arp(uint16_t op, const MacAddr& dst, const MacAddr& src, uint32_t sender_ip,
          const MacAddr& target_mac, uint32_t target_ip, std::optional<uint16_t> vlan) {
  Bytes a;
  append16(a, 1);
  append16(a, kEthIpv4);
  a.push_back(6);
  a.push_back(4);
  append16(a, op);
  a.insert(a.end(), src.b.begin(), src.b.end());
  append32(a, sender_ip);
  a.insert(a.end(), target_mac.b.begin(), target_mac.b.end());
  append32(a, target_ip);
  return ether({dst, src, vlan}, kEthArp, a, 60);
}

IpAddr solicitedNode(const IpAddr& a) {
  IpAddr s = ip("ff02::1:ff00:0");
  s.b[13] = a.b[13];
  s.b[14] = a.b[14];
  s.b[15] = a.b[15];
  return s;
}

MacAddr multicastMac(const IpAddr& group) {
  return MacAddr{{0x33, 0x33, group.b[12], group.b[13], group.b[14], group.b[15]}};
}

Bytes neighborSolicitation(const MacAddr& src_mac, const IpAddr& src, const IpAddr& target,
                           std::optional<MacAddr> to, std::optional<uint16_t> vlan) {
  IpAddr dst = to ? target : solicitedNode(target);
  MacAddr dst_mac = to ? *to : multicastMac(dst);
  Bytes body(target.b.begin(), target.b.end());
  body.push_back(1);  // source link-layer address option
  body.push_back(1);
  body.insert(body.end(), src_mac.b.begin(), src_mac.b.end());
  V6 o;
  o.hop_limit = 255;
  return ether({dst_mac, src_mac, vlan}, kEthIpv6, ipv6(src, dst, 58, icmp6(src, dst, 135, 0, 0, body), {}, o));
}

Bytes geneveOption(uint16_t cls, uint8_t type, const Bytes& data) {
  Bytes b;
  append16(b, cls);
  b.push_back(type);
  b.push_back(uint8_t(data.size() / 4));
  append(b, data);
  return b;
}

Bytes geneve(const GeneveHdr& g) {
  Bytes b;
  int words = g.opt_len_words >= 0 ? g.opt_len_words : int(g.options.size() / 4);
  b.push_back(uint8_t((g.version << 6) | (words & 0x3F)));
  b.push_back(uint8_t((g.oam ? 0x80 : 0) | (g.critical ? 0x40 : 0)));
  append16(b, g.protocol);
  append32(b, (g.vni & 0xFFFFFF) << 8);
  append(b, g.options);
  return b;
}

Bytes awsOptions(uint64_t endpoint_id, uint64_t attachment_id, uint32_t cookie) {
  Bytes e, a, c;
  append64(e, endpoint_id);
  append64(a, attachment_id);
  append32(c, cookie);
  Bytes b = geneveOption(0x0108, 1, e);
  append(b, geneveOption(0x0108, 2, a));
  append(b, geneveOption(0x0108, 3, c));
  return b;
}

Bytes geneveFrame(const MacAddr& dst_mac, const MacAddr& src_mac, const IpAddr& src,
                  const IpAddr& dst, uint16_t sport, const Bytes& geneve_hdr, const Bytes& inner) {
  Bytes payload = geneve_hdr;
  append(payload, inner);
  if (src.isV6())  // an IPv6 underlay: hop limit 64, no extension headers
    return ether({dst_mac, src_mac, {}}, kEthIpv6, ipv6(src, dst, 17, udp(src, dst, sport, 6081, payload)));
  V4 o;
  o.id = 0;
  return ether({dst_mac, src_mac, {}}, kEthIpv4,
               ipv4(src, dst, 17, udp(src, dst, sport, 6081, payload), o));
}

std::string hex(const Bytes& b, size_t max) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < b.size() && i < max; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", b[i]);
    s += buf;
    if (i % 4 == 3) s += ' ';
  }
  if (b.size() > max) s += "...";
  return s;
}

}  // namespace gwlb::dptest
