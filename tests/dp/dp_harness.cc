#include "tests/dp/dp_harness.h"

#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "dataplane/eal.h"

namespace gwlb::dptest {

const Net& net() {
  static const Net n;
  return n;
}

const char* toString(Verdict v) {
  switch (v) {
    case Verdict::kAppliance: return "to_appliance";
    case Verdict::kRouter: return "to_router";
    case Verdict::kKernel: return "to_kernel";
    case Verdict::kDrop: return "drop";
    case Verdict::kPunt: return "punt";
  }
  return "?";
}

std::string describe(const Result& r) {
  std::string s = toString(r.verdict);
  if (r.verdict == Verdict::kDrop)
    s += std::string(" ") + (r.drop == Counter::kCount ? "(no counter)" : kCounterInfo[size_t(r.drop)].name);
  else
    s += " port " + std::to_string(r.port) + " len " + std::to_string(r.bytes.size());
  return s;
}

namespace {
std::atomic<unsigned> g_harness_seq{0};

Bytes copyOut(const rte_mbuf* m) {
  const uint8_t* p = rte_pktmbuf_mtod(m, const uint8_t*);
  return Bytes(p, p + m->data_len);
}
}  // namespace

Harness::Harness(const HarnessOptions& o) : opts_(o) {
  const Net& n = net();
  cfg_.node.underlay_ip = n.underlay;
  cfg_.node.underlay_mac = n.underlay_mac;
  if (o.gateway_mac) cfg_.node.gateway_mac = n.gateway_mac;
  cfg_.node.underlay_port = kUnderlayPort;
  cfg_.node.underlay_mtu = o.underlay_mtu;
  cfg_.node.icmp_rate_per_s = o.icmp_rate_per_s;
  cfg_.node.ports = o.ports;
  cfg_.node.ipv6_addresses = o.ipv6_addresses;
  cfg_.node.underlay_ipv6 = o.underlay_ipv6;
  devices_ = {n.our_a, n.our_b, n.our_v, MacAddr{}};
  ctl::ApplianceGroupConfig g;
  g.name = "inspection";
  g.stickiness = o.stickiness;
  g.geneve.format = o.format;
  g.encapsulation = o.encapsulation;
  g.geneve.vni = kVni;
  g.geneve.endpoint_id = kEndpointId;
  g.geneve.attachment_id = kAttachmentId;
  g.failover_mode = o.failover_mode;
  g.connection_draining.enabled = o.draining;
  for (const IpAddr& a : o.appliances.empty() ? n.appliances : o.appliances) {
    ctl::ApplianceConfig s;
    s.address = a;
    g.appliances.push_back(s);
  }
  cfg_.server_groups.push_back(g);
  snap_ = ctl::buildSnapshot(cfg_, reg_, {}, 1, {}, nullptr, nullptr, &devices_);

  unsigned seq = g_harness_seq.fetch_add(1);
  qsbr_ = dp::createQsbr(2);
  rte_rcu_qsbr_thread_register(qsbr_, 0);
  rte_rcu_qsbr_thread_online(qsbr_, 0);
  flows_ = std::make_unique<dp::FlowTable>("dpt_ft" + std::to_string(seq), o.flow_table_size,
                                           qsbr_, int(rte_socket_id()));
  if (o.punt_ring) punt_ = dp::createRing("dpt_punt" + std::to_string(seq), 64);
  dp_.flows = flows_.get();
  dp_.punt = punt_;
  if (o.exception_ring)
    exception_ = dp::createRing("dpt_exc" + std::to_string(seq), o.exception_ring_size);
  dp_.exception = exception_;
  if (o.sync_ring_size) sync_ = dp::createRing("dpt_sync" + std::to_string(seq), o.sync_ring_size);
  dp_.sync = sync_;
  dp_.snapshot.store(snap_.get(), std::memory_order_release);
  pool_avail_at_start_ = rte_mempool_avail_count(testPool());
}

Harness::~Harness() {
  if (sync_) rte_ring_free(sync_);  // positions only, nothing to free
  expectCounterInvariant(worker_.counters, "harness teardown");
  if (punt_) {
    void* obj;
    while (rte_ring_dequeue(punt_, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
    rte_ring_free(punt_);
  }
  if (exception_) {
    void* obj;
    while (rte_ring_dequeue(exception_, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
    rte_ring_free(exception_);
  }
  EXPECT_EQ(rte_mempool_avail_count(testPool()), pool_avail_at_start_)
      << "mbufs leaked (or freed twice) by the pipeline";
  flows_.reset();
  rte_rcu_qsbr_thread_offline(qsbr_, 0);
  rte_rcu_qsbr_thread_unregister(qsbr_, 0);
  rte_free(qsbr_);
}

void Harness::republish(const ctl::HealthMap& health, const ctl::ApplianceLifecycle* life,
                        const ctl::RegionTracker* regions) {
  auto next = ctl::buildSnapshot(cfg_, reg_, {}, snap_->generation + 1, health, life, regions,
                                 &devices_);
  next->followClassGen(snap_.get());  // as ctl::Engine::build does
  dp_.snapshot.store(next.get(), std::memory_order_release);
  old_snaps_.push_back(std::move(snap_));
  snap_ = std::move(next);
}

void Harness::quiescent() { rte_rcu_qsbr_quiescent(qsbr_, 0); }

Result Harness::send(const Bytes& frame, uint16_t port) {
  Result r;
  rte_mbuf* m = rte_pktmbuf_alloc(testPool());
  if (!m) {
    ADD_FAILURE() << "mbuf pool exhausted";
    return r;
  }
  char* d = rte_pktmbuf_append(m, uint16_t(frame.size()));
  if (!d) {
    ADD_FAILURE() << "frame of " << frame.size() << " bytes does not fit an mbuf";
    rte_pktmbuf_free(m);
    return r;
  }
  if (!frame.empty()) std::memcpy(d, frame.data(), frame.size());
  m->port = port;
  return sendMbuf(m);
}

Result Harness::sendMbuf(rte_mbuf* m) {
  Result r;
  WorkerCounters before = worker_.counters;
  dp::BurstOutput out;
  dp::processBurst(dp_, worker_, &m, 1, now, out);
  quiescent();
  const WorkerCounters& after = worker_.counters;

  EXPECT_EQ(after.get(Counter::rx_packets), before.get(Counter::rx_packets) + 1);
  EXPECT_LE(out.n_appliance + out.n_router, 1) << "one frame in, at most one frame out";
  auto take = [&](rte_mbuf* o, Verdict v) {
    EXPECT_EQ(o->nb_segs, 1);
    EXPECT_EQ(o->pkt_len, o->data_len);
    r.verdict = v;
    r.bytes = copyOut(o);
    r.port = o->port;
    r.ol_flags = o->ol_flags & RTE_MBUF_F_TX_OFFLOAD_MASK;
    r.l2_len = uint16_t(o->l2_len);
    r.l3_len = uint16_t(o->l3_len);
    rte_pktmbuf_free(o);
  };
  if (out.n_appliance == 1) {
    take(out.to_appliance[0], Verdict::kAppliance);
    EXPECT_EQ(r.port, kUnderlayPort) << "Geneve leaves through the underlay port";
  } else if (out.n_router == 1) {
    take(out.to_router[0], Verdict::kRouter);
  } else if (after.get(Counter::punted_exception) != before.get(Counter::punted_exception)) {
    EXPECT_EQ(after.get(Counter::punted), before.get(Counter::punted) + 1)
        << "frames for the kernel are counted as punted too";
    void* obj = nullptr;
    if (exception_ && rte_ring_dequeue(exception_, &obj) == 0) {
      EXPECT_EQ(obj, static_cast<void*>(m)) << "the frame for the kernel is the one received";
      take(static_cast<rte_mbuf*>(obj), Verdict::kKernel);
    } else {
      ADD_FAILURE() << "punted_exception moved but the exception ring is empty";
    }
  } else if (after.get(Counter::punted) != before.get(Counter::punted)) {
    r.verdict = Verdict::kPunt;
    void* obj = nullptr;
    EXPECT_NE(punt_, nullptr);
    if (punt_ && rte_ring_dequeue(punt_, &obj) == 0) {
      EXPECT_EQ(obj, static_cast<void*>(m)) << "the punted mbuf is the one received";
      take(static_cast<rte_mbuf*>(obj), Verdict::kPunt);
    } else {
      ADD_FAILURE() << "punted counter moved but the punt ring is empty";
    }
  } else {
    r.verdict = Verdict::kDrop;
    int moved = 0;
    for (size_t i = 0; i < kNumCounters; ++i) {
      if (!kCounterInfo[i].is_drop) continue;
      uint64_t delta = after.v[i] - before.v[i];
      if (delta == 0) continue;
      ++moved;
      EXPECT_EQ(delta, 1u) << kCounterInfo[i].name;
      r.drop = Counter(i);
    }
    EXPECT_EQ(moved, 1) << "a dropped frame moves exactly one drop counter";
  }
  expectCounterInvariant(after, "after one frame");
  return r;
}

std::vector<Result> Harness::sendBurst(const std::vector<std::pair<Bytes, uint16_t>>& frames) {
  std::vector<rte_mbuf*> ms;
  for (const auto& [bytes, port] : frames) {
    rte_mbuf* m = rte_pktmbuf_alloc(testPool());
    if (!m) {
      ADD_FAILURE() << "mbuf pool exhausted";
      break;
    }
    std::memcpy(rte_pktmbuf_append(m, uint16_t(bytes.size())), bytes.data(), bytes.size());
    m->port = port;
    ms.push_back(m);
  }
  dp::BurstOutput out;
  dp::processBurst(dp_, worker_, ms.data(), uint16_t(ms.size()), now, out);
  quiescent();
  std::vector<Result> rs;
  for (uint16_t i = 0; i < out.n_appliance; ++i) {
    rs.push_back({Verdict::kAppliance, copyOut(out.to_appliance[i]), out.to_appliance[i]->port});
    rte_pktmbuf_free(out.to_appliance[i]);
  }
  for (uint16_t i = 0; i < out.n_router; ++i) {
    rs.push_back({Verdict::kRouter, copyOut(out.to_router[i]), out.to_router[i]->port});
    rte_pktmbuf_free(out.to_router[i]);
  }
  return rs;
}

uint64_t dropSum(const WorkerCounters& c) {
  uint64_t s = 0;
  for (size_t i = 0; i < kNumCounters; ++i)
    if (kCounterInfo[i].is_drop) s += c.v[i];
  return s;
}

void expectCounterInvariant(const WorkerCounters& c, const std::string& where) {
  uint64_t out = c.get(Counter::encapsulated) + c.get(Counter::returned) +
                 c.get(Counter::icmp_sent) + c.get(Counter::tcp_resets_sent) + c.get(Counter::punted) +
                 c.get(Counter::bypassed) + dropSum(c);
  EXPECT_EQ(c.get(Counter::rx_packets), out) << where
      << ": rx_packets != encapsulated + returned + icmp_sent + tcp_resets_sent + punted + bypassed + drops";
  EXPECT_EQ(c.get(Counter::tcp_resets_sent), c.get(Counter::tcp_resets_unhealthy) +
                                                 c.get(Counter::tcp_resets_deregistered) +
                                                 c.get(Counter::tcp_resets_idle) +
                                                 c.get(Counter::tcp_resets_fleet_view_incomplete))
      << where << ": tcp_resets_sent is the sum of its reasons";
}

Encap sendExpectingEncap(Harness& h, const Frame& f, Bytes* sent) {
  Result r = h.send(f);
  if (r.verdict != Verdict::kAppliance) {
    ADD_FAILURE() << "not encapsulated: " << describe(r);
    return {};
  }
  if (sent) *sent = r.bytes;
  return checkEncap(h, r.bytes, expectedInner(h, f), expectedProtocol(h, f));
}

Bytes expectedInner(const Harness& h, const Frame& f) { return h.aws() ? f.l3 : f.unpadded(); }

uint16_t expectedProtocol(const Harness& h, const Frame& f) {
  if (!h.aws()) return kEthTeb;
  return (f.l3.at(0) >> 4) == 6 ? kEthIpv6 : kEthIpv4;
}

Encap checkEncap(const Harness& h, const Bytes& out, const Bytes& inner, uint16_t protocol) {
  const Net& n = net();
  Encap e;
  const size_t opt = h.aws() ? 32 : 0;
  const size_t hdr = 14 + 20 + 8 + 8 + opt;
  if (out.size() != hdr + inner.size()) {
    ADD_FAILURE() << "Geneve packet is " << out.size() << " bytes, want " << hdr + inner.size()
                  << ": " << hex(out);
    return e;
  }
  // Ethernet: to the appliance's next hop (gateway_mac), from us.
  EXPECT_EQ(slice(out, 0, 6), Bytes(n.gateway_mac.b.begin(), n.gateway_mac.b.end()))
      << "outer Ethernet dst";
  EXPECT_EQ(slice(out, 6, 6), Bytes(n.underlay_mac.b.begin(), n.underlay_mac.b.end()))
      << "outer Ethernet src";
  EXPECT_EQ(get16(out, 12), kEthIpv4) << "outer ethertype (IPv4 even for IPv6 payloads)";

  // IPv4.
  const size_t ipo = 14;
  EXPECT_EQ(out[ipo], 0x45) << "outer IPv4 version/IHL";
  EXPECT_EQ(out[ipo + 1], 0) << "outer TOS";
  EXPECT_EQ(get16(out, ipo + 2), out.size() - 14) << "outer IPv4 total length";
  EXPECT_EQ(get16(out, ipo + 6), 0x4000) << "outer flags/offset: DF only";
  EXPECT_EQ(out[ipo + 8], 64) << "outer TTL";
  EXPECT_EQ(out[ipo + 9], 17) << "outer protocol";
  EXPECT_TRUE(checksumOk(out.data() + ipo, 20)) << "outer IPv4 header checksum";
  EXPECT_EQ(get32(out, ipo + 12), kUnderlayIp) << "outer source = node.underlay_ip";
  uint8_t dst[4] = {out[ipo + 16], out[ipo + 17], out[ipo + 18], out[ipo + 19]};
  e.appliance = IpAddr::v4(dst);
  EXPECT_NE(std::find(n.appliances.begin(), n.appliances.end(), e.appliance), n.appliances.end())
      << "outer destination " << e.appliance.str() << " is not a configured appliance";

  // UDP.
  const size_t udpo = 34;
  const size_t udp_len = out.size() - udpo;
  e.sport = get16(out, udpo);
  EXPECT_GE(e.sport, 49152) << "UDP source port in the dynamic range";
  EXPECT_EQ(get16(out, udpo + 2), 6081) << "UDP destination port";
  EXPECT_EQ(get16(out, udpo + 4), udp_len) << "UDP length";
  EXPECT_NE(get16(out, udpo + 6), 0) << "UDP checksum present";
  EXPECT_TRUE(checksumOk(out.data() + udpo, udp_len,
                         pseudoSum(n.underlay, e.appliance, 17, udp_len)))
      << "UDP checksum over the pseudo header";

  // Geneve.
  const size_t go = 42;
  EXPECT_EQ(out[go] >> 6, 0) << "Geneve version";
  EXPECT_EQ(out[go] & 0x3F, opt / 4) << "Geneve option length (4-byte words)";
  EXPECT_EQ(out[go + 1] & 0x80, 0) << "Geneve O bit";
  EXPECT_EQ(out[go + 1] & 0x40, 0) << "Geneve C bit";
  EXPECT_EQ(out[go + 1] & 0x3F, 0) << "Geneve reserved bits";
  EXPECT_EQ(get16(out, go + 2), protocol) << "Geneve protocol type";
  EXPECT_EQ(get32(out, go + 4) >> 8, kVni) << "Geneve VNI";
  EXPECT_EQ(out[go + 7], 0) << "Geneve reserved byte";
  if (h.aws()) {
    // Option headers: class 0x0108, types 1, 2, 3 (not critical), lengths 2, 2, 1.
    const size_t o = go + 8;
    EXPECT_EQ(get16(out, o), 0x0108);
    EXPECT_EQ(out[o + 2], 1);
    EXPECT_EQ(out[o + 3], 2);
    EXPECT_EQ(get64(out, o + 4), kEndpointId) << "GWLB endpoint ID";
    EXPECT_EQ(get16(out, o + 12), 0x0108);
    EXPECT_EQ(out[o + 14], 2);
    EXPECT_EQ(out[o + 15], 2);
    EXPECT_EQ(get64(out, o + 16), kAttachmentId) << "attachment ID";
    EXPECT_EQ(get16(out, o + 24), 0x0108);
    EXPECT_EQ(out[o + 26], 3);
    EXPECT_EQ(out[o + 27], 1);
    e.cookie = get32(out, o + 28);
    EXPECT_NE(e.cookie, 0u) << "flow cookie";
  }
  e.geneve_hdr = slice(out, go, 8 + opt);
  e.inner = slice(out, hdr, out.size() - hdr);
  EXPECT_EQ(e.inner, inner) << "inner packet differs:\n got  " << hex(e.inner) << "\n want "
                            << hex(inner);
  return e;
}

Bytes reflect(const Bytes& g) {
  Bytes r = g;
  for (size_t i = 0; i < 6; ++i) std::swap(r.at(i), r.at(6 + i));
  for (size_t i = 0; i < 4; ++i) std::swap(r.at(26 + i), r.at(30 + i));
  return r;
}

Bytes fromAppliance(const IpAddr& from, uint16_t sport, const Bytes& geneve_hdr,
                    const Bytes& inner) {
  const Net& n = net();
  return geneveFrame(n.underlay_mac, n.gateway_mac, from, n.underlay, sport, geneve_hdr, inner);
}

}  // namespace gwlb::dptest
