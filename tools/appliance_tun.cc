// gwlb-appliance's tun mode (tools/appliance_tun.h).
#include "tools/appliance_tun.h"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace gwlb::appliance {

namespace asio = boost::asio;
using asio::ip::udp;

namespace {

int openTun(const std::string& name) {
  if (name.empty() || name.size() >= IFNAMSIZ)
    throw std::runtime_error("--tun: '" + name + "' is not a device name (1.." + std::to_string(IFNAMSIZ - 1) +
                             " characters)");
  int fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("--tun " + name + ": /dev/net/tun: " + std::strerror(errno));
  ifreq ifr{};
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;  // bare IP packets, as the aws format carries them
  std::memcpy(ifr.ifr_name, name.data(), name.size());
  if (::ioctl(fd, TUNSETIFF, &ifr) < 0) {
    int e = errno;
    ::close(fd);
    throw std::runtime_error("--tun " + name + ": TUNSETIFF: " + std::strerror(e));
  }
  return fd;
}

GatewayAddr gatewayOf(const udp::endpoint& ep) {
  GatewayAddr g;
  auto a = ep.address();
  if (a.is_v4()) {
    auto b = a.to_v4().to_bytes();
    std::memcpy(g.addr.data(), b.data(), 4);
  } else {
    auto b = a.to_v6().to_bytes();
    std::memcpy(g.addr.data(), b.data(), 16);
    g.v6 = true;
  }
  return g;
}

asio::ip::address addressOf(const GatewayAddr& g) {
  if (!g.v6) return asio::ip::address_v4({g.addr[0], g.addr[1], g.addr[2], g.addr[3]});
  asio::ip::address_v6::bytes_type b;
  std::memcpy(b.data(), g.addr.data(), 16);
  return asio::ip::address_v6(b);
}

}  // namespace

TunPath::TunPath(asio::io_context& io, udp::socket& sock, TunOptions opt)
    : opt_(std::move(opt)), sock_(sock), tun_(io, openTun(opt_.device)), sweep_timer_(io),
      table_(opt_.max_flows, opt_.idle_seconds) {}

void TunPath::start() {
  read();
  sweep();
}

double TunPath::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void TunPath::fromGeneve(const uint8_t* pkt, size_t n, size_t geneve_len, size_t l2_len, const Inner& inner,
                         const udp::endpoint& from, const BypassAsk* bypass) {
  const size_t head = geneve_len + l2_len;
  if (head > n || !table_.learn(inner, pkt, head, gatewayOf(from), now(), c_, l2_len, bypass)) return;
  ssize_t w = ::write(tun_.native_handle(), pkt + head, n - head);
  if (w < 0 || size_t(w) != n - head) {
    ++c_.to_tun_errors;
    return;
  }
  ++c_.to_tun;
  if (l2_len) ++c_.ethernet_frames;
}

void TunPath::read() {
  tun_.async_read_some(asio::buffer(in_), [this](boost::system::error_code ec, size_t n) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) {  // the device went away: stop reading (shown in /stats), never spin
      read_error_ = ec.message();
      return;
    }
    fromTun(n);
    read();
  });
}

void TunPath::fromTun(size_t n) {
  ++c_.from_tun;
  const GatewayAddr* gw = table_.wrap(in_.data(), n, out_, now(), c_);
  if (!gw) return;
  boost::system::error_code ec;
  sock_.send_to(asio::buffer(out_), udp::endpoint(addressOf(*gw), opt_.reply_port), 0, ec);
  if (ec) {
    ++c_.send_errors;
    return;
  }
  ++c_.returned;
}

void TunPath::sweep() {
  table_.expire(now(), c_);
  sweep_timer_.expires_after(std::chrono::seconds(1));
  sweep_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) sweep();
  });
}

nlohmann::json TunPath::stats() const {
  nlohmann::json j;
  j["device"] = opt_.device;
  j["flows"] = table_.size();
  j["max_flows"] = opt_.max_flows;
  if (!read_error_.empty()) j["read_error"] = read_error_;
#define GWLB_X(name, help) j[#name] = c_.name;
  GWLB_APPLIANCE_TUN_COUNTERS(GWLB_X)
#undef GWLB_X
  return j;
}

void TunPath::reset() {
  c_ = TunCounters{};
  table_.clear();
}

}  // namespace gwlb::appliance
