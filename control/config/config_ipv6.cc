// The rules of an IPv6 underlay. An appliance's address family decides the
// outer family of its Geneve packets, so IPv4 and IPv6 appliances may share a
// node and a group; an IPv6 one needs the node's IPv6 underlay address (its
// MAC is found by neighbor discovery unless the config gives one), an IPv4 one
// the IPv4 address, which an IPv6-only node leaves out.
// Each rule names the key to change.
#include <map>

#include "control/config/config.h"
#include "control/config/config_schema.h"

namespace gwlb::ctl::schema {

namespace {

std::string at(const std::string& list, size_t i) { return list + "[" + std::to_string(i) + "]"; }

// The addresses the key's own check (config_validate.cc ipUnicast) accepts:
// the rest already have their error.
bool usableIpv6(const IpAddr& a) {
  if (!a.isV6() || a.b[0] == 0xff) return false;
  bool high_zero = true;
  for (size_t i = 0; i < 10; ++i) high_zero = high_zero && a.b[i] == 0;
  if (high_zero && a.b[10] == 0xff && a.b[11] == 0xff) return false;  // IPv4-mapped
  return !(high_zero && a.b[10] == 0 && a.b[11] == 0 && a.b[12] == 0 && a.b[13] == 0 &&
           a.b[14] == 0 && a.b[15] <= 1);  // :: and ::1
}

}  // namespace

void checkIpv6Underlay(const Config& c, Report& r) {
  const std::optional<IpAddr>& us = c.node.underlay_ipv6;
  // Each family's underlay address is needed only by appliances of that
  // family (nothing else gwlbd sends comes from it), so an IPv6-only node
  // needs no IPv4 address; a node with neither has no underlay at all.
  if (!c.node.underlay_ip && !us)
    r.add("node.underlay_ip", "is required: set this node's IPv4 address on the underlay, or "
                              "node.underlay_ipv6 for an IPv6-only underlay");
  for (size_t gi = 0; gi < c.server_groups.size() && !c.node.underlay_ip && us; ++gi)
    for (size_t si = 0; si < c.server_groups[gi].appliances.size(); ++si) {
      const IpAddr& a = c.server_groups[gi].appliances[si].address;
      if (a.isV4())
        r.add(at(at("server_groups", gi) + ".servers", si) + ".address",
              quote(a.str()) + " is IPv4: set node.underlay_ip, this node's IPv4 underlay address "
                               "(the source of Geneve over IPv4)");
    }
  // Control code knows an appliance by applianceKey(): each key must name
  // one address (IPv4 keys are the addresses, so only IPv6 ones can collide).
  std::map<uint32_t, std::pair<IpAddr, std::string>> keys;
  for (size_t gi = 0; gi < c.server_groups.size(); ++gi)
    for (size_t si = 0; si < c.server_groups[gi].appliances.size(); ++si) {
      const IpAddr& a = c.server_groups[gi].appliances[si].address;
      auto entry = std::make_pair(a, at(at("server_groups", gi) + ".servers", si));
      // An IPv4 appliance keeps its key: the IPv6 one that folds to it is told.
      if (a.isV4()) keys.insert_or_assign(applianceKey(a), entry);
      else if (a.isV6()) keys.emplace(applianceKey(a), entry);
    }
  for (size_t gi = 0; gi < c.server_groups.size(); ++gi) {
    const ApplianceGroupConfig& g = c.server_groups[gi];
    const std::string gp = at("server_groups", gi);
    for (size_t si = 0; si < g.appliances.size(); ++si) {
      const ApplianceConfig& sc = g.appliances[si];
      const std::string sp = at(gp + ".servers", si);
      if (!usableIpv6(sc.address)) continue;
      const std::string q = quote(sc.address.str());
      // Equal addresses are the duplicate rule's (config_cross.cc).
      const auto& [other, other_path] = keys.at(applianceKey(sc.address));
      if (!(other == sc.address))
        r.add(sp + ".address", q + " folds to the same 32-bit appliance key as " + other_path + " (" +
                                   other.str() + "); change one of the two addresses");
      if (!us) {
        r.add(sp + ".address", q + " is IPv6: set node.underlay_ipv6, this node's IPv6 underlay "
                                   "address (the source of Geneve over IPv6)");
      } else if (sc.address == *us) {
        r.add(sp + ".address", q + " is node.underlay_ipv6; a server cannot have this node's own address");
      }
    }
  }
}

}  // namespace gwlb::ctl::schema
