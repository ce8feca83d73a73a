// A small valid config the control-logic unit tests start from: node
// 192.0.2.1 with a gateway MAC, one group "fw" (Maglev 251) with the given
// appliances. Tests change what they exercise.
#pragma once

#include <initializer_list>

#include "control/config/config.h"

namespace gwlb::ctl::testing {

inline Config smallConfig(std::initializer_list<const char*> appliances = {"10.0.0.11", "10.0.0.12",
                                                                           "10.0.0.13"}) {
  Config c;
  c.node.underlay_ip = *IpAddr::parse("192.0.2.1");
  c.node.underlay_mac = *MacAddr::parse("02:00:00:00:00:01");
  c.node.gateway_mac = *MacAddr::parse("02:00:00:00:00:fe");
  ApplianceGroupConfig g;
  g.name = "fw";
  g.maglev_table_size = 251;
  for (const char* a : appliances) {
    ApplianceConfig s;
    s.address = *IpAddr::parse(a);
    g.appliances.push_back(s);
  }
  c.server_groups.push_back(g);
  return c;
}

}  // namespace gwlb::ctl::testing
