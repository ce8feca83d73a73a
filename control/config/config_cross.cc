// Cross-field validation: rules that relate several keys (names and the
// references to them, duplicates across items, overlaps, rules that depend on
// another key's value). Everything about one key's value alone is in the key
// table (config_schema.cc) and checked by config_validate.cc; a value that
// fails there is skipped here without a second error.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#include "common/geneve.h"
#include "common/maglev.h"
#include "control/config/config.h"
#include "control/config/config_schema.h"

namespace gwlb::ctl::schema {
namespace {

using AddrKey = std::pair<uint8_t, std::array<uint8_t, 16>>;

std::string at(const std::string& list, size_t i) { return list + "[" + std::to_string(i) + "]"; }

// Why a fleet sync address cannot carry records ("" when it can): an IPv6
// link-local one needs an interface its form cannot name; an IPv4-mapped one
// is an IPv4 peer written otherwise; a peer is no wildcard or multicast group.
std::string unusableSyncAddress(const IpAddr& a, bool peer) {
  const bool wildcard = a.b == std::array<uint8_t, 16>{};
  if (a.isV6()) {
    if (a.b[0] == 0xfe && (a.b[1] & 0xc0) == 0x80)
      return " is an IPv6 link-local address, which needs an interface (a zone) that address:port "
             "cannot name; use a global or unique local (fd00::/8) address";
    bool mapped = a.b[10] == 0xff && a.b[11] == 0xff;
    for (size_t i = 0; i < 10; ++i) mapped = mapped && a.b[i] == 0;
    if (mapped) return " is an IPv4-mapped IPv6 address; write the IPv4 address itself";
    if (peer && a.b[0] == 0xff) return " is a multicast address; a peer is one node's address";
  } else if (peer && a.b[0] >= 224) {
    return " is a multicast or reserved address; a peer is one node's address";
  }
  if (peer && wildcard) return " is the wildcard address; a peer is one node's address";
  return "";
}

// Two listening addresses on one port collide: the same address, or a
// wildcard of the other's family, or the IPv6 wildcard (dual stack).
bool listenersOverlap(const IpAddr& a, const IpAddr& b) {
  auto wildcard = [](const IpAddr& x) { return x.b == std::array<uint8_t, 16>{}; };
  if (a == b) return true;
  if ((a.isV6() && wildcard(a)) || (b.isV6() && wildcard(b))) return true;
  return a.family == b.family && (wildcard(a) || wildcard(b));
}

class Cross {
 public:
  Cross(Report& r, UnknownNames u) : r_(r), unknown_(u) {}

  void run(const Config& c) {
    ports(c.node);
    groups(c);
    listen(c);
    regions(c);
    fleet(c);
    checkClasses(c, r_, unknown_);
    checkIpv6Underlay(c, r_);
  }

 private:
  void add(std::string path, std::string msg) { r_.add(std::move(path), std::move(msg)); }

  // node.ports[]: each port once; the underlay port takes the appliances'
  // Geneve and has node.underlay_mac.
  void ports(const NodeConfig& n) {
    std::map<uint16_t, size_t> seen;
    for (size_t i = 0; i < n.ports.size(); ++i) {
      const PortConfig& pc = n.ports[i];
      const std::string p = at("node.ports", i);
      auto [it, inserted] = seen.emplace(pc.id, i);
      if (!inserted) {
        add(p + ".id", quote(std::to_string(pc.id)) + " is already node.ports[" +
                           std::to_string(it->second) + "]; list each port once");
        continue;
      }
      const bool underlay = pc.id == n.underlay_port;
      if (underlay && pc.role == PortRole::kRouter)
        add(p + ".role", "port " + std::to_string(pc.id) +
                             " is node.underlay_port: the appliances' Geneve comes back there, so "
                             "its role must be appliance or both");
      bool underlay_mac_ok = !n.underlay_mac.isZero() && !(n.underlay_mac.b[0] & 1);
      if (pc.mac && underlay && underlay_mac_ok && !(*pc.mac == n.underlay_mac))
        add(p + ".mac", quote(pc.mac->str()) + ": port " + std::to_string(pc.id) +
                            " is node.underlay_port, whose MAC is node.underlay_mac (" +
                            n.underlay_mac.str() + "); leave mac out");
    }
  }

  // Group names; each appliance address in one group once, never this
  // node's; the Maglev table larger than the group; health check keys that
  // only mean something for one protocol.
  // A VXLAN group's tunnels: the returns are told apart by UDP port, so the
  // two tunnels need two ports, and neither may be Geneve's.
  void vxlan(const std::string& p, const VxlanConfig& v) {
    for (const auto& [name, t] : {std::pair{"internal", v.internal}, std::pair{"external", v.external}})
      if (t.port == kGenevePort)
        add(p + "." + name + ".port", quote(std::to_string(t.port)) +
                                          " is Geneve's port; a VXLAN tunnel needs a port of its own");
    if (v.internal.port == v.external.port && v.internal.port != 0)
      add(p + ".external.port", quote(std::to_string(v.external.port)) +
                                    " is also vxlan.internal.port; the two tunnels need two ports");
  }

  void groups(const Config& c) {
    std::map<std::string, size_t> names;
    std::map<AddrKey, std::pair<size_t, size_t>> addrs;  // address -> (group, server)
    for (size_t gi = 0; gi < c.server_groups.size(); ++gi) {
      const ApplianceGroupConfig& g = c.server_groups[gi];
      const std::string gp = at("server_groups", gi);
      if (g.name.empty()) {
        add(gp + ".name", "is required: a name of 1..63 characters from A-Z a-z 0-9 _ . -");
      } else if (!validName(g.name)) {
        add(gp + ".name", quote(g.name) +
                              " is not a valid group name; use 1..63 characters from A-Z a-z "
                              "0-9 _ . -");
      } else if (auto [it, inserted] = names.emplace(g.name, gi); !inserted) {
        add(gp + ".name", quote(g.name) + " is already the name of server_groups[" +
                              std::to_string(it->second) + "]; group names must be unique");
      }
      healthCheck(gp + ".health_check", g.health_check);
      if (g.encapsulation == Encapsulation::kVxlan) {
        vxlan(gp + ".vxlan", g.vxlan);
        // The forwarding check's probe is a Geneve packet (control/health).
        if (g.health_check.forwarding)
          add(gp + ".health_check.forwarding",
              "is not available with encapsulation: vxlan (its probe travels in Geneve); use the "
              "group's passive check");
      }
      // The nsi format's endpoint ID carries the flow cookie in its low half.
      if (g.encapsulation == Encapsulation::kGeneve && g.geneve.format == GeneveFormat::kNsi &&
          g.geneve.endpoint_id > 0xFFFFFFFFu)
        add(gp + ".geneve.endpoint_id",
            quote(std::to_string(g.geneve.endpoint_id)) +
                " is too large for format nsi: at most 4294967295 (the endpoint ID option's high 32 bits; "
                "its low 32 carry the flow cookie)");
      const uint32_t ts = g.maglev_table_size;
      if (kMaglevRange.contains(ts) && isPrime(ts) && ts <= g.appliances.size())
        add(gp + ".maglev_table_size",
            quote(std::to_string(ts)) + " must be greater than the number of servers (" +
                std::to_string(g.appliances.size()) + "); at least 100 times as many is advised");
      for (size_t si = 0; si < g.appliances.size(); ++si) {
        const IpAddr& a = g.appliances[si].address;
        const std::string ap = at(gp + ".servers", si) + ".address";
        if (!a.isV4() && !a.isV6()) continue;  // the key's own check said what is wrong
        if (a == c.node.underlay_ip) {
          add(ap, quote(a.str()) + " is node.underlay_ip; a server cannot have this node's own address");
          continue;
        }
        auto [it, inserted] = addrs.emplace(AddrKey{a.family, a.b}, std::make_pair(gi, si));
        if (inserted) continue;
        const auto [ogi, osi] = it->second;
        const std::string other = at(at("server_groups", ogi) + ".servers", osi);
        if (ogi == gi)
          add(ap, quote(a.str()) + " is listed twice in this group (also " + other +
                      "); server addresses must be unique");
        else
          add(ap, quote(a.str()) + " is already in server group " + quote(c.server_groups[ogi].name) +
                      " (" + other + "); an appliance address can be in at most one server group");
      }
    }
    size_t total = 0;
    for (const auto& g : c.server_groups) total += g.appliances.size();
    if (total > kMaxAppliancesTotal)
      add("server_groups", std::to_string(total) + " servers in all groups; allowed at most " +
                               std::to_string(kMaxAppliancesTotal));
  }

  // verify and ca_file only mean something to an https check: elsewhere they
  // would be silently ignored.
  void healthCheck(const std::string& hp, const HealthCheckConfig& h) {
    if (!h.configured) return;
    // An ejected appliance comes back by passing its checks: without them it never would.
    if (h.passive.enabled && !h.enabled)
      add(hp + ".passive.enabled", "needs health checks (enabled: true): an appliance ejected for "
                                   "no returns comes back only by passing them");
    const DampeningConfig& d = h.dampening;
    auto in = [](uint32_t v, uint32_t lo, uint32_t hi) { return v >= lo && v <= hi; };
    if (in(d.suppress, 1, 100000) && in(d.reuse, 1, 100000) && in(d.half_life_s, 1, 3600) &&
        in(d.max_hold_s, 1, 86400)) {
      const double ceiling = d.reuse * std::exp2(double(d.max_hold_s) / d.half_life_s);
      if (d.suppress <= d.reuse)
        add(hp + ".dampening.suppress", quote(std::to_string(d.suppress)) + " must be above reuse (" +
                                            std::to_string(d.reuse) + ")");
      else if (ceiling <= d.suppress)
        add(hp + ".dampening.max_hold",
            quote(std::to_string(d.max_hold_s) + "s") + ": the penalty is capped at reuse x 2^(max_hold / "
            "half_life) = " + std::to_string(uint64_t(ceiling)) + ", not above suppress (" +
            std::to_string(d.suppress) + "), so nothing would ever be held down; raise max_hold or "
            "lower suppress");
    }
    if (h.keep_alive && h.protocol == HealthProtocol::kTcp)
      add(hp + ".keep_alive", "applies to http and https health checks only; protocol is tcp");
    if (h.protocol != HealthProtocol::kHttps) {
      const char* proto = toString(h.protocol);
      if (h.verify)
        add(hp + ".verify", std::string("applies to https health checks only; protocol is ") + proto);
      else if (!h.ca_file.empty())
        add(hp + ".ca_file", std::string("applies to https health checks only; protocol is ") + proto);
    } else if (!h.verify && !h.ca_file.empty()) {
      add(hp + ".ca_file", "is only used to verify the certificate, but verify is false: set "
                           "verify: true (or leave verify out: a ca_file implies it), or remove "
                           "ca_file");
    } else if (h.verify && h.ca_file.empty()) {
      add(hp + ".ca_file", "is required when verify is true");
    }
    if (h.forwarding_probe.src == h.forwarding_probe.dst)
      add(hp + ".forwarding_probe.dst", "is the same address as src; the probe needs two");
    else if (h.forwarding_probe.src.isV6() != h.forwarding_probe.dst.isV6())
      add(hp + ".forwarding_probe.src", "'" + h.forwarding_probe.src.str() + "' is IPv" +
                                            (h.forwarding_probe.src.isV6() ? "6 but dst is IPv4" : "4 but dst is IPv6") +
                                            "; the probe's two addresses are of one family");
  }

  // A fleet has a secret; one given inline in two places is the same key
  // (files are compared when the key is loaded: loadHashKey).
  void fleet(const Config& c) {
    const FleetConfig& f = c.fleet;
    if (!f.configured) return;
    if (f.secret.empty() && f.secret_file.empty()) {
      add("fleet.secret", "is required: set fleet.secret (32 hex digits) or fleet.secret_file "
                          "(a file holding them); every gateway of the fleet needs the same one");
      return;
    }
    // Both 32 hex digits (else their own checks said what is wrong), in lower case.
    auto digits = [](const std::string& v) {
      std::string out;
      for (char ch : v) {
        if (!std::isxdigit(static_cast<unsigned char>(ch))) return std::string();
        out += char(std::tolower(static_cast<unsigned char>(ch)));
      }
      return out.size() == 32 ? out : std::string();
    };
    // Flow sync: peers need a local address, and are not that address.
    if (!f.peers.empty() && f.sync_listen.empty())
      add("fleet.sync_listen", "is required when fleet.peers is set: the address this node "
                               "receives flow records on (peers send theirs there)");
    // (Compared as address and port: [2001:db8:0::1]:7946 is [2001:db8::1]:7946.
    // An entry that reaches this node through a wildcard sync_listen depends
    // on the host's addresses: gwlbd warns of it and skips it, control/fleet/fleet_peers.h.)
    IpAddr la, pa;
    uint16_t lport = 0, pport = 0;
    bool listen_ok = parseListen(f.sync_listen, la, lport);
    if (listen_ok) {
      if (std::string why = unusableSyncAddress(la, false); !why.empty())
        add("fleet.sync_listen", quote(f.sync_listen) + why);
    }
    for (size_t i = 0; i < f.peers.size(); ++i) {
      const std::string pp = "fleet.peers[" + std::to_string(i) + "]";
      if (!parseListen(f.peers[i], pa, pport)) continue;  // its own check said what is wrong
      if (std::string why = unusableSyncAddress(pa, true); !why.empty()) {
        add(pp, quote(f.peers[i]) + why);
      } else if (listen_ok && pa == la && pport == lport) {
        add(pp, quote(f.peers[i]) + " is this node's own fleet.sync_listen");
      } else if (listen_ok && pa.isV6() && la.isV4()) {
        // Records leave from the sync_listen socket: an IPv4 one reaches no IPv6 peer.
        add(pp, quote(f.peers[i]) + " is IPv6 but fleet.sync_listen " + quote(f.sync_listen) +
                    " is IPv4: records leave from that socket; listen on IPv6 (or [::]:" +
                    std::to_string(lport) + ", which takes both families)");
      } else if (listen_ok && pa.isV4() && la.isV6() && !(la.b == std::array<uint8_t, 16>{})) {
        add(pp, quote(f.peers[i]) + " is IPv4 but fleet.sync_listen " + quote(f.sync_listen) +
                    " is an IPv6 address: records leave from that socket; listen on IPv4 (or [::]:" +
                    std::to_string(lport) + ", which takes both families)");
      }
    }
    const std::string fs = digits(f.secret), ns = digits(c.node.flow_hash_secret);
    if (!fs.empty() && !ns.empty() && fs != ns)
      add("fleet.secret", std::string("holds another key than node.flow_hash_secret") + kOneHashKeyAdvice);
  }

  // The two HTTP listeners cannot share a port.
  void listen(const Config& c) {
    IpAddr a, ha;
    uint16_t port = 0, hport = 0;
    if (parseListen(c.metrics.listen, a, port) && parseListen(c.health_endpoint.listen, ha, hport) &&
        hport == port && listenersOverlap(a, ha))
      add("health_endpoint.listen", quote(c.health_endpoint.listen) + " overlaps metrics.listen " +
                                        quote(c.metrics.listen) +
                                        "; the two HTTP listeners need different ports");
  }

  // Names of one kind: valid and unique. Returns name -> index.
  template <typename T>
  std::map<std::string, size_t> names(const std::vector<T>& v, const std::string& key,
                                      const char* what) {
    std::map<std::string, size_t> m;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string np = at(key, i) + ".name";
      if (v[i].name.empty()) {
        add(np, std::string("is required: a ") + what + " name of 1..63 characters from A-Z a-z 0-9 _ . -");
      } else if (!validName(v[i].name)) {
        add(np, quote(v[i].name) + " is not a valid name; use 1..63 characters from A-Z a-z 0-9 _ . -");
      } else if (!m.emplace(v[i].name, i).second) {
        add(np, quote(v[i].name) + " is already the name of " + at(key, m[v[i].name]) +
                    "; names must be unique");
      }
    }
    return m;
  }

  // Aggregated health and listeners: every reference resolves in this
  // config; a composite is never a source of another.
  void regions(const Config& c) {
    std::map<std::string, size_t> groups;
    for (size_t i = 0; i < c.server_groups.size(); ++i) groups.emplace(c.server_groups[i].name, i);
    auto policies = names(c.health_aggregation_policies, "health_aggregation_policies", "policy");
    auto sources = names(c.health_sources, "health_sources", "health source");
    auto composites = names(c.composite_health_checks, "composite_health_checks", "composite health check");
    auto listeners = names(c.listeners, "listeners", "listener");
    for (size_t i = 0; i < c.health_sources.size(); ++i) {
      const auto& hs = c.health_sources[i];
      const std::string sp = at("health_sources", i);
      if (composites.count(hs.name))
        add(sp + ".name", quote(hs.name) + " is also the name of a composite health check; "
                                        "sources and composites need distinct names");
      if (hs.server_group.empty())
        add(sp + ".server_group", "is required: the name of a server group");
      else if (!groups.count(hs.server_group) && !unknown_.groups)
        add(sp + ".server_group", quote(hs.server_group) + " is not a server group in this config");
      if (!hs.policy.empty() && !policies.count(hs.policy) && !unknown_.policies)
        add(sp + ".policy", quote(hs.policy) + " is not a policy in health_aggregation_policies");
    }
    for (size_t i = 0; i < c.composite_health_checks.size(); ++i) {
      const auto& ch = c.composite_health_checks[i];
      const std::string cp = at("composite_health_checks", i);
      if (ch.sources.empty() || ch.sources.size() > kMaxRegionItems)
        add(cp + ".sources", "needs 1.." + std::to_string(kMaxRegionItems) + " health source names");
      std::set<std::string> seen;
      for (size_t j = 0; j < ch.sources.size(); ++j) {
        const std::string& n = ch.sources[j];
        const std::string jp = at(cp + ".sources", j);
        if (composites.count(n))
          add(jp, quote(n) + " is a composite health check; a composite's result cannot be a "
                             "source of another composite");
        else if (!sources.count(n)) {
          if (!unknown_.sources) add(jp, quote(n) + " is not a health source in health_sources");
        } else if (!seen.insert(n).second) {
          add(jp, quote(n) + " is listed twice");
        }
      }
      if (ch.destination.empty())
        add(cp + ".destination", "is required: the name of a listener");
      else if (!listeners.count(ch.destination) && !unknown_.listeners)
        add(cp + ".destination", quote(ch.destination) + " is not a listener in listeners");
    }
    std::map<std::string, std::string> owner;  // group -> listener
    for (size_t i = 0; i < c.listeners.size(); ++i) {
      const auto& l = c.listeners[i];
      const std::string lp = at("listeners", i);
      if (l.server_groups.empty() || l.server_groups.size() > kMaxRegionItems)
        add(lp + ".server_groups", "needs 1.." + std::to_string(kMaxRegionItems) +
                                       " server group names, in order of preference");
      const ApplianceGroupConfig* first = nullptr;
      for (size_t j = 0; j < l.server_groups.size(); ++j) {
        const std::string& g = l.server_groups[j];
        const std::string jp = at(lp + ".server_groups", j);
        auto gi = groups.find(g);
        if (gi == groups.end()) {
          if (!unknown_.groups) add(jp, quote(g) + " is not a server group in this config");
          continue;
        }
        auto [it, fresh] = owner.emplace(g, l.name);
        if (!fresh) {
          add(jp, quote(g) + (it->second == l.name ? " is listed twice"
                                                   : " already belongs to listener " + quote(it->second)) +
                      "; a server group serves at most one listener");
          continue;
        }
        const ApplianceGroupConfig& gc = c.server_groups[gi->second];
        if (!first) {
          first = &gc;
        } else if (gc.stickiness != first->stickiness) {
          add(jp, quote(g) + " has stickiness " + toString(gc.stickiness) + " but " +
                      quote(first->name) + " has " + toString(first->stickiness) +
                      "; the groups of one listener must share their stickiness (a flow keeps "
                      "its key when it fails over)");
        }
      }
    }
  }

  Report& r_;
  UnknownNames unknown_;
};

}  // namespace

void checkCrossFields(const Config& c, Report& r, UnknownNames unknown) { Cross(r, unknown).run(c); }

}  // namespace gwlb::ctl::schema

namespace gwlb::ctl {

std::vector<ConfigError> configWarnings(const Config& c, unsigned ports) {
  std::vector<ConfigError> out;
  std::set<std::string> served;
  for (const ListenerConfig& l : c.listeners) served.insert(l.server_groups.begin(), l.server_groups.end());
  std::set<std::string> mirrors;  // groups that receive copies (traffic_classes[].mirror)
  for (const TrafficClassConfig& tc : c.traffic_classes)
    if (!tc.mirror.group.empty()) mirrors.insert(tc.mirror.group);
  for (size_t i = 0; i < c.server_groups.size(); ++i) {
    const std::string& name = c.server_groups[i].name;
    const std::string path = "server_groups[" + std::to_string(i) + "]";
    if (mirrors.count(name)) {
      // A mirror group: its traffic is the copies.
    } else if (c.listeners.empty() && i > 0)
      out.push_back({path, "server group '" + name + "' receives no traffic: without `listeners` "
                           "only the first group ('" + c.server_groups[0].name +
                           "') is served; list the groups in a listener, or remove this one"});
    else if (!c.listeners.empty() && !served.count(name))
      out.push_back({path, "server group '" + name + "' is in no listener, so it receives no "
                           "traffic; add it to a listener's server_groups, or remove it"});
    if (!c.server_groups[i].health_check.configured)
      out.push_back({path, "server group '" + name + "' has no health_check, so its appliances count "
                           "as healthy forever and new flows keep going to one that is down; add "
                           "health_check (or health_check: { enabled: false } to say so)"});
  }
  // The warm start asks one peer at a time (control/fleet/fleet_sync_warm.cc):
  // a peer that accepts and then sends nothing holds it for the connect and
  // idle timeouts; a whole timeout no longer than that never reaches the next
  // peer (the soak found it: a peer whose sync link was congested).
  const FleetConfig& f = c.fleet;
  uint64_t per_peer_ms = uint64_t(f.warm_start_connect_timeout_ms) + f.warm_start_idle_timeout_ms;
  if (f.peers.size() >= 2 && uint64_t(f.warm_start_timeout_s) * 1000 <= per_peer_ms)
    out.push_back({"fleet.warm_start_timeout",
                   std::to_string(f.warm_start_timeout_s) + " s is not more than one peer's "
                   "warm_start_connect_timeout + warm_start_idle_timeout (" +
                   std::to_string(per_peer_ms) + " ms): a peer that accepts and then stays "
                   "silent uses the whole warm start and the next peer is never asked; "
                   "raise it, or lower those two"});
  // Lcores set aside in `eal` that gwlbd will never run anything on: it uses
  // the main lcore and dataplane.workers more (an isolated core left idle).
  // Only when `eal` names its cores: without -l/--lcores/-c the EAL takes
  // every CPU it may run on, and none was set aside.
  const bool named_cores = std::any_of(c.eal_args.begin(), c.eal_args.end(), [](const std::string& a) {
    return a.rfind("-l", 0) == 0 || a.rfind("--lcores", 0) == 0 || a.rfind("-c", 0) == 0;
  });
  const unsigned lcores = named_cores ? ealLcoreCount(c.eal_args) : 0;
  if (lcores > c.dataplane.workers + 1)
    out.push_back({"dataplane.workers",
                   std::to_string(c.dataplane.workers) + " worker(s) use " +
                   std::to_string(c.dataplane.workers + 1) + " of the " + std::to_string(lcores) +
                   " lcores `eal` gives (the main lcore and one per worker): " +
                   std::to_string(lcores - c.dataplane.workers - 1) + " stay idle; set "
                   "dataplane.workers: " + std::to_string(lcores - 1) + ", or give fewer cores"});
  // The flow table against the config's planned rate: a flow stays at least
  // its group's idle timeout after its last packet, and eviction starts at 90 %
  // of the table (deleting flows still in use).
  uint32_t idle_s = 0;
  std::string idle_key;
  for (size_t i = 0; i < c.server_groups.size(); ++i) {
    const ApplianceGroupConfig& g = c.server_groups[i];
    const std::string gp = "server_groups[" + std::to_string(i) + "].";
    if (g.tcp_idle_timeout_s > idle_s) idle_s = g.tcp_idle_timeout_s, idle_key = gp + "tcp_idle_timeout";
    if (g.other_idle_timeout_s > idle_s) idle_s = g.other_idle_timeout_s, idle_key = gp + "other_idle_timeout";
  }
  const uint64_t held = uint64_t(c.dataplane.new_flows_per_s) * idle_s;
  const uint64_t want = (held * 10 + 8) / 9;  // held must stay under the 90 % mark
  if (c.dataplane.new_flows_per_s && want > c.dataplane.flow_table_size)
    out.push_back({"dataplane.flow_table_size",
                   std::to_string(c.dataplane.flow_table_size) + " entries are too few for "
                   "dataplane.new_flows_per_s " + std::to_string(c.dataplane.new_flows_per_s) +
                   ": each flow stays at least " + std::to_string(idle_s) + " s (" + idle_key +
                   "), so the table holds " + std::to_string(held) + " flows or more, and "
                   "eviction (above 90 %) deletes flows still in use; set it to " +
                   std::to_string(want) + " or more"});
  schema::classWarnings(c, out, ports);
  return out;
}

}  // namespace gwlb::ctl
