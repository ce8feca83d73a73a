#include "control/health/probe_path.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/fib_rules.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <stdexcept>

namespace gwlb::ctl {
namespace {

// One request on a NETLINK_ROUTE socket, one answer: the first reply message
// (RTM_GETROUTE, RTM_GETLINK) or the kernel's acknowledgement.
class RouteSocket {
 public:
  RouteSocket() {
    fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd_ < 0) return;
    timeval tv{1, 0};  // the kernel answers at once; never wait for ever
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RouteSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  RouteSocket(const RouteSocket&) = delete;
  RouteSocket& operator=(const RouteSocket&) = delete;

  // Returns 0 and the reply (if any) in `reply`, or -errno.
  int talk(std::vector<uint8_t>& req, std::vector<uint8_t>* reply) {
    return exchange(req, [&](const nlmsghdr* m) {
      if (reply) reply->assign(reinterpret_cast<const uint8_t*>(m), reinterpret_cast<const uint8_t*>(m) + m->nlmsg_len);
      return true;  // one answer
    });
  }

  // A dump request (NLM_F_DUMP): calls `each` with every message up to the
  // kernel's NLMSG_DONE. Returns 0 or -errno.
  template <class Each>
  int dump(std::vector<uint8_t>& req, Each&& each) {
    return exchange(req, [&](const nlmsghdr* m) {
      if (m->nlmsg_type == NLMSG_DONE) return true;
      each(m);
      return false;
    });
  }

 private:
  // Sends `req` and hands `take` each answer to it until `take` says it had
  // the last (0) or the kernel answers with an error or acknowledgement.
  template <class Take>
  int exchange(std::vector<uint8_t>& req, Take&& take) {
    if (fd_ < 0) return -errno;
    auto* h = reinterpret_cast<nlmsghdr*>(req.data());
    h->nlmsg_len = uint32_t(req.size());
    h->nlmsg_seq = ++seq_;
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd_, req.data(), req.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
                 sizeof kernel) < 0)
      return -errno;
    alignas(nlmsghdr) static thread_local uint8_t buf[32768];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0) return errno == EAGAIN ? -ETIMEDOUT : -errno;
      int len = int(n);
      for (auto* m = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(m, len); m = NLMSG_NEXT(m, len)) {
        if (m->nlmsg_seq != seq_) continue;  // a late answer to an earlier request
        if (m->nlmsg_type == NLMSG_ERROR) {
          if (m->nlmsg_len < NLMSG_LENGTH(sizeof(nlmsgerr))) return -EPROTO;
          return static_cast<const nlmsgerr*>(NLMSG_DATA(m))->error;  // 0: acknowledged
        }
        if (take(m)) return 0;
      }
    }
  }

  int fd_ = -1;
  uint32_t seq_ = 0;
};

// A netlink request under construction: header, fixed body, attributes.
template <class Body>
std::vector<uint8_t> request(uint16_t type, uint16_t flags, const Body& body) {
  std::vector<uint8_t> m(NLMSG_SPACE(sizeof(Body)), 0);
  auto* h = reinterpret_cast<nlmsghdr*>(m.data());
  h->nlmsg_type = type;
  h->nlmsg_flags = uint16_t(NLM_F_REQUEST | flags);
  std::memcpy(NLMSG_DATA(h), &body, sizeof body);
  return m;
}

void attr(std::vector<uint8_t>& m, uint16_t type, const void* data, size_t len) {
  size_t at = m.size();
  m.resize(at + RTA_SPACE(len), 0);
  auto* a = reinterpret_cast<rtattr*>(m.data() + at);
  a->rta_type = type;
  a->rta_len = uint16_t(RTA_LENGTH(len));
  std::memcpy(RTA_DATA(a), data, len);
}

std::string errnoText(int neg) { return std::strerror(-neg); }

std::string nameOf(int ifindex) {
  char name[IF_NAMESIZE] = {};
  return ::if_indextoname(unsigned(ifindex), name) ? std::string(name) : "ifindex " + std::to_string(ifindex);
}

// The master of an interface (IFLA_MASTER: its VRF or bridge), "" when none.
std::string masterOf(RouteSocket& nl, int ifindex) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = ifindex;
  std::vector<uint8_t> req = request(RTM_GETLINK, 0, ifi);
  std::vector<uint8_t> reply;
  if (nl.talk(req, &reply) != 0 || reply.size() < NLMSG_LENGTH(sizeof(ifinfomsg))) return "";
  auto* h = reinterpret_cast<nlmsghdr*>(reply.data());
  int len = int(IFLA_PAYLOAD(h));
  for (auto* a = IFLA_RTA(static_cast<ifinfomsg*>(NLMSG_DATA(h))); RTA_OK(a, len); a = RTA_NEXT(a, len))
    if (a->rta_type == IFLA_MASTER && RTA_PAYLOAD(a) >= 4) {
      uint32_t m;
      std::memcpy(&m, RTA_DATA(a), 4);
      return nameOf(int(m));
    }
  return "";
}

int familyOf(const IpAddr& a) { return a.isV6() ? AF_INET6 : AF_INET; }
size_t bytesOf(const IpAddr& a) { return a.isV6() ? 16 : 4; }

bool hasAddress(const std::string& device, const IpAddr& a) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || device != i->ifa_name) continue;
    if (i->ifa_addr->sa_family == AF_INET && a.isV4())
      found = std::memcmp(&reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, a.b.data(), 4) == 0;
    else if (i->ifa_addr->sa_family == AF_INET6 && a.isV6())
      found = std::memcmp(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, a.b.data(), 16) == 0;
  }
  ::freeifaddrs(list);
  return found;
}

// Adds `a` to the tap as a host address (/32, /128). IPv6 without duplicate
// address detection: a tentative address cannot be a probe's source, and the
// node owns it on the underlay already. Returns 0 or -errno.
int addHostAddress(RouteSocket& nl, int ifindex, const IpAddr& a) {
  ifaddrmsg ifa{};
  ifa.ifa_family = uint8_t(familyOf(a));
  ifa.ifa_prefixlen = uint8_t(bytesOf(a) * 8);
  ifa.ifa_scope = RT_SCOPE_UNIVERSE;
  ifa.ifa_index = uint32_t(ifindex);
  if (a.isV6()) ifa.ifa_flags = IFA_F_NODAD;
  std::vector<uint8_t> req = request(RTM_NEWADDR, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, ifa);
  attr(req, IFA_LOCAL, a.b.data(), bytesOf(a));
  attr(req, IFA_ADDRESS, a.b.data(), bytesOf(a));
  int rc = nl.talk(req, nullptr);
  return rc == -EEXIST ? 0 : rc;
}

// Removes the host address `a` (/32, /128) from the tap. Returns 0 (also
// when it is gone already) or -errno.
int deleteHostAddress(RouteSocket& nl, int ifindex, const IpAddr& a) {
  ifaddrmsg ifa{};
  ifa.ifa_family = uint8_t(familyOf(a));
  ifa.ifa_prefixlen = uint8_t(bytesOf(a) * 8);
  ifa.ifa_index = uint32_t(ifindex);
  std::vector<uint8_t> req = request(RTM_DELADDR, NLM_F_ACK, ifa);
  attr(req, IFA_LOCAL, a.b.data(), bytesOf(a));
  int rc = nl.talk(req, nullptr);
  return rc == -EADDRNOTAVAIL || rc == -ENOENT ? 0 : rc;
}

// net.ipv4.conf.<dev>.rp_filter, or -1 when unreadable.
int rpFilter(const std::string& dev) {
  std::ifstream f("/proc/sys/net/ipv4/conf/" + dev + "/rp_filter");
  int v = -1;
  if (!(f >> v)) return -1;
  return v;
}

// IPv6 probes bound to the tap need a route by it: a socket bound to a device
// finds no IPv6 route by another one (IPv4 falls back to "on link"). The
// routes live in a table of their own that only traffic leaving by the tap
// looks up (a rule "oif TAP"), so the host's own traffic to the appliances
// keeps its routes. 6081: Geneve's port, easy to recognise in `ip -6 rule`.
constexpr uint32_t kProbeTable6 = 6081;
constexpr uint32_t kProbeRulePriority6 = 6081;

// The rule "oif TAP lookup kProbeTable6". Returns 0 (also when it exists) or -errno.
int probeRule6(RouteSocket& nl, const std::string& tap) {
  fib_rule_hdr h{};
  h.family = AF_INET6;
  h.action = FR_ACT_TO_TBL;
  std::vector<uint8_t> req = request(RTM_NEWRULE, NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, h);
  attr(req, FRA_OIFNAME, tap.c_str(), tap.size() + 1);
  attr(req, FRA_TABLE, &kProbeTable6, sizeof kProbeTable6);
  attr(req, FRA_PRIORITY, &kProbeRulePriority6, sizeof kProbeRulePriority6);
  int rc = nl.talk(req, nullptr);
  return rc == -EEXIST ? 0 : rc;
}

// A host route (/128) to `a` out of the tap, in kProbeTable6. Returns 0 or -errno.
int hostRoute6(RouteSocket& nl, int ifindex, const IpAddr& a) {
  rtmsg rt{};
  rt.rtm_family = AF_INET6;
  rt.rtm_dst_len = 128;
  rt.rtm_table = RT_TABLE_UNSPEC;  // the table is the attribute's (ids past 255)
  rt.rtm_protocol = RTPROT_STATIC;
  rt.rtm_scope = RT_SCOPE_UNIVERSE;
  rt.rtm_type = RTN_UNICAST;
  std::vector<uint8_t> req = request(RTM_NEWROUTE, NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE, rt);
  attr(req, RTA_TABLE, &kProbeTable6, sizeof kProbeTable6);
  attr(req, RTA_DST, a.b.data(), 16);
  attr(req, RTA_OIF, &ifindex, sizeof ifindex);
  return nl.talk(req, nullptr);
}

// The host routes gwlbd put in kProbeTable6 by the tap (ifindex): their
// destinations. Returns 0 or -errno.
int probeRoutes6(RouteSocket& nl, int ifindex, std::vector<IpAddr>& out) {
  rtmsg rt{};
  rt.rtm_family = AF_INET6;
  std::vector<uint8_t> req = request(RTM_GETROUTE, NLM_F_DUMP, rt);
  return nl.dump(req, [&](const nlmsghdr* m) {
    if (m->nlmsg_type != RTM_NEWROUTE || m->nlmsg_len < NLMSG_LENGTH(sizeof(rtmsg))) return;
    const auto* r = static_cast<const rtmsg*>(NLMSG_DATA(m));
    if (r->rtm_family != AF_INET6 || r->rtm_dst_len != 128) return;
    uint32_t table = r->rtm_table;
    int oif = 0;
    std::optional<IpAddr> dst;
    int len = int(RTM_PAYLOAD(m));
    for (auto* a = RTM_RTA(r); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
      if (a->rta_type == RTA_TABLE && RTA_PAYLOAD(a) >= 4) std::memcpy(&table, RTA_DATA(a), 4);
      else if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= 4) std::memcpy(&oif, RTA_DATA(a), 4);
      else if (a->rta_type == RTA_DST && RTA_PAYLOAD(a) == 16)
        dst = IpAddr::v6(static_cast<const uint8_t*>(RTA_DATA(a)));
    }
    if (table == kProbeTable6 && oif == ifindex && dst) out.push_back(*dst);
  });
}

// Deletes the host route to `a` by the tap from kProbeTable6. Returns 0 or -errno.
int deleteHostRoute6(RouteSocket& nl, int ifindex, const IpAddr& a) {
  rtmsg rt{};
  rt.rtm_family = AF_INET6;
  rt.rtm_dst_len = 128;
  rt.rtm_table = RT_TABLE_UNSPEC;
  std::vector<uint8_t> req = request(RTM_DELROUTE, NLM_F_ACK, rt);
  attr(req, RTA_TABLE, &kProbeTable6, sizeof kProbeTable6);
  attr(req, RTA_DST, a.b.data(), 16);
  attr(req, RTA_OIF, &ifindex, sizeof ifindex);
  return nl.talk(req, nullptr);
}

bool probesIpv6(const ApplianceGroupConfig& g) {
  return std::any_of(g.appliances.begin(), g.appliances.end(), [](const ApplianceConfig& s) { return s.address.isV6(); });
}

struct Probed {
  const ApplianceGroupConfig* group;
  size_t index;
  ProbePath path;
};
std::vector<Probed> probedGroups(const Config& c) {
  std::vector<Probed> out;
  for (size_t i = 0; i < c.server_groups.size(); ++i)
    if (c.server_groups[i].health_check.active())
      out.push_back({&c.server_groups[i], i, probePathOf(c, c.server_groups[i].health_check)});
  return out;
}

}  // namespace

const char* toString(ProbePath::Kind k) {
  switch (k) {
    case ProbePath::Kind::kData: return "data";
    case ProbePath::Kind::kManagement: return "management";
    case ProbePath::Kind::kUnbound: break;
  }
  return "unbound";
}

std::optional<IpAddr> ProbePath::sourceFor(const IpAddr& dst) const {
  if (source && source->family == dst.family) return source;
  if (source6 && dst.isV6()) return source6;
  return std::nullopt;
}

std::string ProbePath::describe() const {
  if (kind == Kind::kUnbound) return "no probe path (the host's routes)";
  std::string d = std::string(toString(kind)) + " path (" +
                  (kind == Kind::kData ? "tap " : "interface ") + device;
  if (source) d += ", from " + source->str();
  else if (source6) d += ", from " + source6->str();  // an IPv6-only node
  return d + ")";
}

std::string applianceTap(const NodeConfig& node) {
  return node.exception_path.name_prefix + std::to_string(node.underlay_port);
}

ProbePath probePathOf(const Config& c, const HealthCheckConfig& h) {
  ProbePath p;
  if (!h.interface.empty()) {
    p.kind = ProbePath::Kind::kManagement;
    p.device = h.interface;
    p.source = h.source;
  } else if (c.node.exception_path.enabled) {
    p.kind = ProbePath::Kind::kData;
    p.device = applianceTap(c.node);
    p.source = c.node.underlay_ip;
    p.source6 = c.node.underlay_ipv6;
  } else {
    p.source = h.source;
  }
  return p;
}

std::vector<ConfigError> probePathErrors(const Config& c) {
  std::vector<ConfigError> errors;
  for (size_t i = 0; i < c.server_groups.size(); ++i) {
    const HealthCheckConfig& h = c.server_groups[i].health_check;
    if (!h.active() || !h.interface.empty()) continue;
    const std::string at = "server_groups[" + std::to_string(i) + "].health_check";
    if (!c.node.exception_path.enabled) {
      errors.push_back(
          {at, "its probes have no path: they take the data path (out of node.underlay_port, "
               "from node.underlay_ip), which needs node.exception_path.enabled: true; or set "
               "health_check.interface for a management path (docs/deploy.md, \"Where probes "
               "travel\")"});
    } else if (h.source && h.source != c.node.underlay_ip) {
      errors.push_back({at + ".source",
                        h.source->str() + ": on the data path probes come from node.underlay_ip (" +
                            (c.node.underlay_ip ? c.node.underlay_ip->str() : "not set") +
                            "); a source of its own needs health_check.interface (a management path)"});
    }
  }
  return errors;
}

namespace {

KernelRoute routeOn(RouteSocket& nl, const IpAddr& dst, const std::string& device,
                    const std::optional<IpAddr>& source) {
  KernelRoute r;
  if ((!dst.isV4() && !dst.isV6()) || (source && source->family != dst.family)) {
    r.error = "a source of another family than the destination";
    return r;
  }
  int oif = 0;
  if (!device.empty()) {
    oif = int(::if_nametoindex(device.c_str()));
    if (oif == 0) {
      r.error = "no interface " + device + " in gwlbd's network namespace";
      return r;
    }
  }
  rtmsg rt{};
  const size_t n = bytesOf(dst);
  rt.rtm_family = uint8_t(familyOf(dst));
  rt.rtm_dst_len = uint8_t(n * 8);
  if (source) rt.rtm_src_len = uint8_t(n * 8);
  std::vector<uint8_t> req = request(RTM_GETROUTE, 0, rt);
  attr(req, RTA_DST, dst.b.data(), n);
  if (source) attr(req, RTA_SRC, source->b.data(), n);
  if (oif) attr(req, RTA_OIF, &oif, sizeof oif);
  std::vector<uint8_t> reply;
  int rc = nl.talk(req, &reply);
  if (rc != 0 || reply.size() < NLMSG_LENGTH(sizeof(rtmsg))) {
    r.error = rc != 0 ? errnoText(rc) : "no answer from the kernel";
    return r;
  }
  auto* h = reinterpret_cast<nlmsghdr*>(reply.data());
  int len = int(RTM_PAYLOAD(h));
  int out = 0;
  for (auto* a = RTM_RTA(static_cast<rtmsg*>(NLMSG_DATA(h))); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= 4) std::memcpy(&out, RTA_DATA(a), 4);
    if (a->rta_type == RTA_PREFSRC && RTA_PAYLOAD(a) >= n)
      r.source = dst.isV6() ? IpAddr::v6(static_cast<const uint8_t*>(RTA_DATA(a)))
                            : IpAddr::v4(static_cast<const uint8_t*>(RTA_DATA(a)));
  }
  if (out == 0) {
    r.error = "the kernel named no outgoing interface";
    return r;
  }
  r.ok = true;
  r.out = nameOf(out);
  r.out_master = masterOf(nl, out);
  return r;
}

}  // namespace

KernelRoute kernelRoute(const IpAddr& dst, const std::string& device,
                        const std::optional<IpAddr>& source) {
  RouteSocket nl;
  return routeOn(nl, dst, device, source);
}

std::vector<ConfigError> probeRouteErrors(const Config& c) {
  std::vector<ConfigError> errors;
  // Answers to data-path probes arrive on the tap; reverse-path filtering
  // checks their source against the host's own routes (the larger of `all`
  // and the tap's setting: 1 strict, 2 loose).
  // prepareDataPath turns the tap's own setting off, so on the data path
  // the host-wide one decides.
  const std::string tap = applianceTap(c.node);
  const int rp = rpFilter("all");
  // Until prepareDataPath adds it, node.underlay_ip is no address of this
  // host and the kernel refuses it as a source: ask for the route alone.
  const bool underlay_ready = c.node.underlay_ip && hasAddress(tap, *c.node.underlay_ip);
  RouteSocket nl;  // one socket for every lookup: this runs before each config change
  for (const Probed& p : probedGroups(c)) {
    if (p.path.kind == ProbePath::Kind::kUnbound) continue;  // probePathErrors' to report
    const std::string at = "server_groups[" + std::to_string(p.index) + "].health_check";
    const bool data = p.path.kind == ProbePath::Kind::kData;
    for (const ApplianceConfig& sc : p.group->appliances) {
      // prepareDataPath routes each IPv6 appliance by the tap itself.
      if (data && sc.address.isV6()) continue;
      const std::optional<IpAddr> source =
          data && !underlay_ready ? std::nullopt : p.path.sourceFor(sc.address);
      KernelRoute r = routeOn(nl, sc.address, p.path.device, source);
      const std::string head = "appliance " + sc.address.str() + " (" + p.group->name + "): ";
      if (!r.ok) {
        errors.push_back({at, head + "no route for its probes on the " + p.path.describe() + ": " + r.error});
        continue;
      }
      if (r.out != p.path.device && r.out_master != p.path.device) {
        errors.push_back({at, head + "its probes would leave by " + r.out + ", not by " + p.path.device +
                         " (" + p.path.describe() + ")"});
        continue;
      }
      if (!data || rp <= 0 || sc.address.isV6()) continue;
      KernelRoute back = routeOn(nl, sc.address, "", std::nullopt);
      if (rp == 1 && (!back.ok || back.out != tap))
        errors.push_back({at, head + "strict reverse-path filtering (net.ipv4.conf.all.rp_filter = 1) "
                                "drops its answers on " + tap + ": the host routes " +
                         sc.address.str() + (back.ok ? " by " + back.out : " nowhere") +
                         "; set net.ipv4.conf.all.rp_filter to 0 or 2"});
      else if (rp == 2 && !back.ok)
        errors.push_back({at, head + "loose reverse-path filtering (rp_filter = 2) drops its answers: "
                                "the host has no route to " + sc.address.str() +
                         "; set net.ipv4.conf.all.rp_filter to 0, or give the host a route"});
    }
  }
  return errors;
}

std::vector<NeighbourPin> wantedPins(const Config& c) {
  std::vector<NeighbourPin> out;
  for (const Probed& p : probedGroups(c)) {
    if (p.path.kind != ProbePath::Kind::kData) continue;
    for (const ApplianceConfig& sc : p.group->appliances) {
      const bool seen = std::any_of(out.begin(), out.end(),
                                    [&](const NeighbourPin& n) { return n.address == sc.address; });
      if (!seen && (sc.mac || c.node.gateway_mac))
        out.push_back({sc.address, sc.mac ? *sc.mac : *c.node.gateway_mac});
    }
  }
  return out;
}

namespace {

// Sets (RTM_NEWNEIGH) or deletes (RTM_DELNEIGH) one permanent neighbour on the tap.
int neighbour(RouteSocket& nl, uint16_t type, int ifindex, const NeighbourPin& pin) {
  ndmsg nd{};
  nd.ndm_family = uint8_t(familyOf(pin.address));
  nd.ndm_ifindex = ifindex;
  nd.ndm_state = NUD_PERMANENT;
  const uint16_t flags = type == RTM_NEWNEIGH ? NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE : NLM_F_ACK;
  std::vector<uint8_t> req = request(type, flags, nd);
  attr(req, NDA_DST, pin.address.b.data(), bytesOf(pin.address));
  if (type == RTM_NEWNEIGH) attr(req, NDA_LLADDR, pin.mac.b.data(), 6);
  return nl.talk(req, nullptr);
}

bool pinnedIn(const std::vector<NeighbourPin>& set, const IpAddr& a) {
  return std::any_of(set.begin(), set.end(), [&](const NeighbourPin& n) { return n.address == a; });
}

// The IPv6 appliances the tap routes (kProbeTable6): those probed on the data path.
std::vector<IpAddr> routedByTap6(const Config& c, const std::vector<Probed>& probed) {
  std::vector<IpAddr> out;
  for (const Probed& p : probed) {
    if (p.path.kind != ProbePath::Kind::kData || !c.node.underlay_ipv6) continue;
    for (const ApplianceConfig& sc : p.group->appliances)
      if (sc.address.isV6()) out.push_back(sc.address);
  }
  return out;
}

// The table's other routes by the tap (an appliance removed or moved off
// the data path, or left by an earlier run) go: they would steer nothing of
// gwlbd's, but they would stay for as long as the tap.
void dropStaleRoutes6(RouteSocket& nl, int ifindex, const std::vector<IpAddr>& keep, const std::string& who,
                      std::vector<std::string>& done) {
  std::vector<IpAddr> present;
  if (probeRoutes6(nl, ifindex, present) != 0) return;
  size_t unrouted = 0;
  for (const IpAddr& a : present) {
    if (std::find(keep.begin(), keep.end(), a) != keep.end()) continue;
    int rc = deleteHostRoute6(nl, ifindex, a);
    if (rc != 0 && rc != -ESRCH)
      throw std::runtime_error(who + ": cannot remove the route " + a.str() + "/128 from table " +
                               std::to_string(kProbeTable6) + ": " + errnoText(rc));
    ++unrouted;
  }
  if (unrouted)
    done.push_back(std::to_string(unrouted) + " IPv6 route(s) (/128) no longer probed removed from table " +
                   std::to_string(kProbeTable6));
}

// Removes from the tap the addresses gwlbd added (`added`) that are neither
// `v4` nor `v6` (what the config wants there now), and forgets them.
void dropStaleAddresses(RouteSocket& nl, int ifindex, std::vector<IpAddr>& added, const std::optional<IpAddr>& v4,
                        const std::optional<IpAddr>& v6, const std::string& tap, std::vector<std::string>& done) {
  for (auto it = added.begin(); it != added.end();) {
    if (*it == v4 || *it == v6) {
      ++it;
      continue;
    }
    const std::string a = it->str() + (it->isV6() ? "/128" : "/32");
    if (int rc = deleteHostAddress(nl, ifindex, *it); rc != 0)
      throw std::runtime_error("data-path probes: tap " + tap + ": cannot remove " + a + ": " + errnoText(rc));
    done.push_back("removed " + a + " from " + tap + " (no longer this node's underlay address for probes)");
    it = added.erase(it);
  }
}

}  // namespace

std::vector<std::string> prepareDataPath(const Config& c, TapState& state) {
  std::vector<NeighbourPin>& pinned = state.pins;
  std::vector<std::string> done;
  const std::vector<Probed> probed = probedGroups(c);
  const bool used = std::any_of(probed.begin(), probed.end(), [](const Probed& p) {
    return p.path.kind == ProbePath::Kind::kData;
  });
  const std::vector<NeighbourPin> wanted = wantedPins(c);
  const std::string tap = applianceTap(c.node);
  const std::string who = "data-path probes: tap " + tap;
  const int ifindex = int(::if_nametoindex(tap.c_str()));
  if (ifindex == 0) {
    pinned.clear();  // the tap is gone, and its neighbours and addresses with it
    state.addresses.clear();
    if (!used) return done;
    throw std::runtime_error(who + " is not in gwlbd's network namespace (keep the appliance "
                                   "port's tap there, or set health_check.interface)");
  }
  RouteSocket nl;
  // First what the config no longer wants: an appliance removed, moved off
  // the data path, or now resolved by ARP.
  size_t removed = 0;
  for (auto it = pinned.begin(); it != pinned.end();) {
    if (pinnedIn(wanted, it->address)) {
      ++it;
      continue;
    }
    int rc = neighbour(nl, RTM_DELNEIGH, ifindex, *it);
    if (rc != 0 && rc != -ENOENT)
      throw std::runtime_error(who + ": cannot remove the neighbour " + it->address.str() + " -> " +
                               it->mac.str() + ": " + errnoText(rc));
    it = pinned.erase(it);
    ++removed;
  }
  if (removed)
    done.push_back(std::to_string(removed) + " appliance MAC(s) no longer pinned on " + tap +
                   " (the config no longer fixes them)");
  const std::vector<IpAddr> routes6 = routedByTap6(c, probed);
  dropStaleRoutes6(nl, ifindex, routes6, who, done);
  const bool v6 = used && c.node.underlay_ipv6 && std::any_of(probed.begin(), probed.end(), [](const Probed& p) {
    return p.path.kind == ProbePath::Kind::kData && probesIpv6(*p.group);
  });
  dropStaleAddresses(nl, ifindex, state.addresses, used ? c.node.underlay_ip : std::nullopt,
                     v6 ? c.node.underlay_ipv6 : std::nullopt, tap, done);
  if (!used) return done;
  // An IPv6-only node (no node.underlay_ip) gives the tap no IPv4 address.
  if (const std::optional<IpAddr>& a4 = c.node.underlay_ip; a4 && !hasAddress(tap, *a4)) {
    int rc = addHostAddress(nl, ifindex, *a4);
    if (rc != 0)
      throw std::runtime_error(who + ": cannot add node.underlay_ip " + a4->str() + "/32: " + errnoText(rc));
    state.addresses.push_back(*a4);
    done.push_back("added node.underlay_ip " + a4->str() + "/32 to " + tap + " (probes leave from it)");
  }
  // A host that turns IPv6 off by default (net.ipv6.conf.default) gave the tap none.
  const std::string no6 = "/proc/sys/net/ipv6/conf/" + tap + "/disable_ipv6";
  if (v6 && std::ifstream(no6).get() == '1') {
    std::ofstream f(no6);
    if (!(f << 0 << std::flush))
      throw std::runtime_error(who + ": cannot write net.ipv6.conf." + tap + ".disable_ipv6 = 0");
    done.push_back("net.ipv6.conf." + tap + ".disable_ipv6 = 0");
  }
  if (v6 && !hasAddress(tap, *c.node.underlay_ipv6)) {
    const IpAddr& a = *c.node.underlay_ipv6;
    int rc = addHostAddress(nl, ifindex, a);
    if (rc != 0)
      throw std::runtime_error(who + ": cannot add node.underlay_ipv6 " + a.str() + "/128: " + errnoText(rc));
    state.addresses.push_back(a);
    done.push_back("added node.underlay_ipv6 " + a.str() + "/128 to " + tap +
                   " (probes to IPv6 appliances leave from it)");
  }
  if (v6) {
    int rc = probeRule6(nl, tap);
    if (rc != 0)
      throw std::runtime_error(who + ": cannot add the rule 'oif " + tap + " lookup " +
                               std::to_string(kProbeTable6) + "': " + errnoText(rc));
  }
  size_t routed = 0;
  for (const IpAddr& a : routes6) {
    int rc = hostRoute6(nl, ifindex, a);
    if (rc != 0) throw std::runtime_error(who + ": cannot route " + a.str() + "/128 by it: " + errnoText(rc));
    ++routed;
  }
  if (routed)
    done.push_back(std::to_string(routed) + " IPv6 appliance(s) routed (/128) by " + tap + " in table " +
                   std::to_string(kProbeTable6) + " (rule: oif " + tap + ")");
  // Answers come in on the tap: its own reverse-path filter off (the
  // host-wide one is checked by probeRouteErrors, which counts on this).
  if (rpFilter(tap) > 0) {
    std::ofstream f("/proc/sys/net/ipv4/conf/" + tap + "/rp_filter");
    if (!(f << 0 << std::flush))
      throw std::runtime_error(who + ": cannot write net.ipv4.conf." + tap + ".rp_filter = 0");
    done.push_back("net.ipv4.conf." + tap + ".rp_filter = 0");
  }
  size_t set = 0;
  for (const NeighbourPin& pin : wanted) {
    if (std::find(pinned.begin(), pinned.end(), pin) != pinned.end()) continue;
    int rc = neighbour(nl, RTM_NEWNEIGH, ifindex, pin);
    if (rc != 0)
      throw std::runtime_error(who + ": cannot set the neighbour " + pin.address.str() + " -> " +
                               pin.mac.str() + ": " + errnoText(rc));
    std::erase_if(pinned, [&](const NeighbourPin& n) { return n.address == pin.address; });
    pinned.push_back(pin);
    ++set;
  }
  if (set)
    done.push_back(std::to_string(set) + " appliance MAC(s) pinned on " + tap +
                   " (the MACs the dataplane sends to)");
  return done;
}

}  // namespace gwlb::ctl
