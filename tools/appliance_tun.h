// gwlb-appliance's tun mode (--tun NAME): Geneve in userspace, inspection by
// the kernel. Each decapsulated inner IP packet is written to the tun device
// NAME in the appliance's namespace; the kernel forwards it (ip_forward, a
// route back out of the same tun) through whatever the namespace's netfilter
// says (the lab loads an nftables conntrack firewall: docs/lab.md, "The
// stateful appliance"); what it sends out of the tun is wrapped again with the
// Geneve header of its flow (tools/appliance_tun_flows.h) and sent back to the
// gateway, as AWS's sample tunnel handler does with its gwi/gwo devices.
// The ethernet format (0x6558) goes through the same tun: its inner Ethernet
// header is taken off on the way in, kept with the flow's Geneve header, and
// put back on the way out. A tap device would hand the kernel frames
// addressed to the router's and gateway's MACs, which its IP stack discards
// as not its own, and what it forwarded would leave with the tap's MAC after
// neighbour resolution of next hops that are not on that link; stripping
// keeps the appliance a bump in the wire at layer 2 (the frame returns with
// the addresses it came with, as the plain appliance returns it) under the
// same ruleset. Runs on the appliance's one Asio thread.
#pragma once

#include <utility>  // before Boost 1.74 Asio under C++20 (std::exchange)

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <string>
#include <vector>

#include "tools/appliance_tun_flows.h"

namespace gwlb::appliance {

struct TunOptions {
  std::string device;           // the tun device (made by the lab with `ip tuntap`, or here)
  size_t max_flows = 65536;     // flow table bound
  double idle_seconds = 350;    // AWS GWLB's TCP idle timeout
  uint16_t reply_port = 6081;   // the gateway's Geneve port
};

class TunPath {
 public:
  // Attaches to (or creates) the tun device. Throws std::runtime_error naming
  // the device and the reason when it cannot (start-up only).
  TunPath(boost::asio::io_context& io, boost::asio::ip::udp::socket& sock, TunOptions opt);

  void start();

  // A validated Geneve packet (header geneve_len bytes, then l2_len bytes of
  // inner Ethernet header for the ethernet format, 0 for aws, then the inner
  // IP packet described by `inner`) from `from`: learn its flow, write the
  // inner IP packet to the tun. bypass (the flow is past --bypass-after-bytes):
  // this direction's returns ask the gateway for a bypass (TunFlowTable::learn).
  void fromGeneve(const uint8_t* pkt, size_t n, size_t geneve_len, size_t l2_len, const Inner& inner,
                  const boost::asio::ip::udp::endpoint& from, const BypassAsk* bypass = nullptr);

  nlohmann::json stats() const;
  void reset();  // zero the counters and forget the flows (/stats/reset)

 private:
  void read();
  void fromTun(size_t n);
  void sweep();
  double now() const;

  TunOptions opt_;
  boost::asio::ip::udp::socket& sock_;
  boost::asio::posix::stream_descriptor tun_;
  boost::asio::steady_timer sweep_timer_;
  TunFlowTable table_;
  TunCounters c_;
  std::array<uint8_t, 65536> in_{};
  std::vector<uint8_t> out_;
  std::string read_error_;
};

}  // namespace gwlb::appliance
