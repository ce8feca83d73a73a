// Shared fixture for the dp suite: the test network, a Harness that owns one
// snapshot + flow table + worker and feeds frames through dp::processBurst,
// and checkers for what the pipeline emits.
//
// EAL is initialised once per binary by the environment in main.cc
// (--no-huge --no-pci, two lcores); every test runs on the main lcore, which
// is registered as QSBR reader 0 of its harness.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/counters.h"
#include "common/snapshot.h"
#include "control/config/config.h"
#include "control/engine/snapshot_builder.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "tests/dp/packet_builder.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_rcu_qsbr;
struct rte_ring;

namespace gwlb::dptest {

// ---- The test network ----------------------------------------------------
//
//  client 198.51.100.10 / 2001:db8:1::10      server 203.0.113.20 / 2001:db8:2::20
//        |                                          |
//  router A (port 0, VLAN side port 2)         router B (port 1)
//        \______________ gwlb (192.0.2.1, underlay port 3) ______________/
//                               |  via gateway_mac
//                  appliances 10.0.0.11 / .12 / .13
inline constexpr uint16_t kPortA = 0;
inline constexpr uint16_t kPortB = 1;
inline constexpr uint16_t kPortVlan = 2;
inline constexpr uint16_t kUnderlayPort = 3;
inline constexpr uint32_t kVni = 0x123456;
inline constexpr uint64_t kEndpointId = 0x0A0B0C0D01020304ULL;
inline constexpr uint64_t kAttachmentId = 0x1122334455667788ULL;
inline constexpr uint32_t kUnderlayIp = 0xC0000201;  // 192.0.2.1

struct Net {
  IpAddr underlay = ip("192.0.2.1");
  MacAddr underlay_mac = mac("02:00:00:00:00:01");
  MacAddr gateway_mac = mac("02:00:00:00:00:fe");
  std::vector<IpAddr> appliances = {ip("10.0.0.11"), ip("10.0.0.12"), ip("10.0.0.13")};
  IpAddr client4 = ip("198.51.100.10"), server4 = ip("203.0.113.20");
  IpAddr client6 = ip("2001:db8:1::10"), server6 = ip("2001:db8:2::20");
  MacAddr router_a = mac("02:00:00:00:0a:0a"), our_a = mac("02:00:00:00:00:a1");
  MacAddr router_b = mac("02:00:00:00:0b:0b"), our_b = mac("02:00:00:00:00:b1");
  MacAddr router_v = mac("02:00:00:00:0c:0c"), our_v = mac("02:00:00:00:00:c1");
  L2 fromA() const { return {our_a, router_a, {}}; }
  L2 fromB() const { return {our_b, router_b, {}}; }
  L2 fromVlan(uint16_t tci) const { return {our_v, router_v, tci}; }
  // The MAC each port of the harness takes frames to (its "device" MAC).
  MacAddr portMac(uint16_t port) const {
    return port == 0 ? our_a : port == 1 ? our_b : port == 2 ? our_v : underlay_mac;
  }
};
const Net& net();

// The mbuf pool every test allocates from (created by the environment).
rte_mempool* testPool();
// The second lcore for the two-worker test (the environment asks for two).
unsigned workerLcore();

// A frame as it arrives: its L2, its L3 packet, the port it arrives on.
struct Frame {
  L2 l2;
  uint16_t type = kEthIpv4;
  Bytes l3;
  uint16_t port = kPortA;
  size_t min_len = 0;  // zero padding (runt frames)
  Bytes bytes() const { return ether(l2, type, l3, min_len); }
  Bytes unpadded() const { return ether(l2, type, l3); }
  // What the gateway must send back toward the router once the appliance returns it.
  Bytes returned() const { return ether({l2.src, l2.dst, l2.vlan}, type, l3); }
};

// kKernel: queued on the exception ring for the port's kernel tap.
enum class Verdict { kAppliance, kRouter, kDrop, kPunt, kKernel };
const char* toString(Verdict v);
inline void PrintTo(Verdict v, std::ostream* os) { *os << toString(v); }

struct Result {
  Verdict verdict = Verdict::kDrop;
  Bytes bytes;
  uint16_t port = 0;              // mbuf->port of the output
  Counter drop = Counter::kCount; // the drop counter that moved
  uint64_t ol_flags = 0;          // the output mbuf's TX offload requests
  uint16_t l2_len = 0, l3_len = 0;
};
std::string describe(const Result& r);

struct HarnessOptions {
  ctl::GeneveFormat format = ctl::GeneveFormat::kAws;
  ctl::Encapsulation encapsulation = ctl::Encapsulation::kGeneve;  // vxlan: Azure's default tunnels
  ctl::Stickiness stickiness = ctl::Stickiness::kFiveTuple;
  uint32_t underlay_mtu = 1500;
  uint32_t icmp_rate_per_s = 100;
  bool punt_ring = false;
  bool exception_ring = false;  // node.exception_path on: dp.exception set
  unsigned exception_ring_size = 64;
  unsigned sync_ring_size = 0;  // > 0: fleet sync on, dp.sync is a ring of this size
  bool gateway_mac = true;  // false: appliance MACs unknown (no ARP in these tests)
  uint32_t flow_table_size = 4096;
  ctl::FailoverMode failover_mode = ctl::FailoverMode::kNoRebalance;
  bool draining = false;           // connection_draining.enabled
  // node.ports and node.ipv6_addresses. Without ports: the underlay port is
  // appliance-facing, ports A, B and the VLAN port face routers, and each
  // port takes in frames to its own MAC (Net: our_a, our_b, our_v,
  // underlay_mac), as gwlbd's devices would give them.
  std::vector<ctl::PortConfig> ports;
  std::vector<IpAddr> ipv6_addresses;
  // node.underlay_ipv6 (IPv6 appliances in `servers` need it).
  std::optional<IpAddr> underlay_ipv6;
  // The group's appliances in config order; empty: Net::servers.
  std::vector<IpAddr> appliances;
};

class Harness {
 public:
  explicit Harness(const HarnessOptions& o = {});
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  // One frame in a burst of its own, at `now`. Outputs are copied and freed.
  Result send(const Bytes& frame, uint16_t port);
  Result send(const Frame& f) { return send(f.bytes(), f.port); }
  // The same for an mbuf the test built itself (e.g. a chain); takes ownership.
  Result sendMbuf(rte_mbuf* m);
  // Several frames in one burst: returns every output (appliance ones first).
  std::vector<Result> sendBurst(const std::vector<std::pair<Bytes, uint16_t>>& frames);

  // This worker passes a quiescent point (between bursts).
  void quiescent();
  bool aws() const { return opts_.format == ctl::GeneveFormat::kAws; }
  const HarnessOptions& options() const { return opts_; }
  const dp::Snapshot& snapshot() const { return *snap_; }
  // The config the snapshot was built from; republish() builds and publishes
  // a new snapshot from it (old ones stay alive until the harness ends).
  ctl::Config& config() { return cfg_; }
  void republish(const ctl::HealthMap& health = {}, const ctl::ApplianceLifecycle* life = nullptr,
                 const ctl::RegionTracker* regions = nullptr);
  dp::FlowTable& flows() { return *flows_; }
  dp::Dataplane& dataplane() { return dp_; }
  rte_rcu_qsbr* qsbr() { return qsbr_; }
  const WorkerCounters& counters() const { return worker_.counters; }
  uint64_t get(Counter c) const { return worker_.counters.get(c); }
  const dp::WorkerState& worker() const { return worker_; }

  uint64_t now = 1'000'000'000'000ULL;  // 1000 s on the monotonic clock

 private:
  HarnessOptions opts_;
  ctl::Config cfg_;
  ctl::ApplianceRegistry reg_;
  ctl::PortMacs devices_;
  std::unique_ptr<dp::Snapshot> snap_;
  std::vector<std::unique_ptr<dp::Snapshot>> old_snaps_;
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::unique_ptr<dp::FlowTable> flows_;
  rte_ring* punt_ = nullptr;
  rte_ring* exception_ = nullptr;
  rte_ring* sync_ = nullptr;
  dp::Dataplane dp_;
  dp::WorkerState worker_;
  unsigned pool_avail_at_start_ = 0;
};

// rx_packets == encapsulated + returned + icmp_sent + tcp_resets_sent + punted + bypassed
// + sum(drop_*), and tcp_resets_sent is the sum of its reasons.
void expectCounterInvariant(const WorkerCounters& c, const std::string& where);
uint64_t dropSum(const WorkerCounters& c);

// What a Geneve packet says about its flow.
struct Encap {
  IpAddr appliance;
  uint16_t sport = 0;
  uint32_t cookie = 0;  // 0 in the ethernet format
  Bytes geneve_hdr;     // Geneve header with options, as sent
  Bytes inner;
};
// Asserts every outer header field of a packet the pipeline sent to an
// appliance (see the file comment in test_forward.cc) and that its payload
// is `inner`. `protocol` is the expected Geneve protocol type.
Encap checkEncap(const Harness& h, const Bytes& out, const Bytes& inner, uint16_t protocol);
// What the pipeline must carry for a frame: its L3 packet (aws) or the frame
// without Ethernet padding (ethernet).
Bytes expectedInner(const Harness& h, const Frame& f);
uint16_t expectedProtocol(const Harness& h, const Frame& f);
// Sends f, expects it wrapped for an appliance and checks every header
// (checkEncap). The Geneve packet as sent goes to *sent when given. A frame
// that was not encapsulated is a test failure and gives an empty Encap.
Encap sendExpectingEncap(Harness& h, const Frame& f, Bytes* sent = nullptr);

// A transparent appliance: outer MACs and IPv4 addresses swapped, UDP ports
// and the Geneve header kept.
Bytes reflect(const Bytes& geneve_frame);
// A packet from appliance `from` to the gateway carrying `geneve_hdr` + `inner`.
Bytes fromAppliance(const IpAddr& from, uint16_t sport, const Bytes& geneve_hdr,
                    const Bytes& inner);

}  // namespace gwlb::dptest
