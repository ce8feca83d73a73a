// The flow table of gwlb-appliance's tun mode (tools/appliance_tun_flows.h).
#include "tools/appliance_tun_flows.h"

#include <cstring>

namespace gwlb::appliance {

bool TunFlowTable::learn(const Inner& inner, const uint8_t* geneve, size_t geneve_len,
                         const GatewayAddr& from, double now, TunCounters& c) {
  if (geneve_len < 8 || geneve_len > kMaxGeneveHeader) return false;  // the caller validated it
  bool forward = true;
  FlowKey key = flowKeyOf(inner, &forward);
  auto it = flows_.find(key);
  if (it == flows_.end()) {
    if (flows_.size() >= max_flows_) {
      ++c.table_full;
      return false;
    }
    it = flows_.emplace(key, Entry{}).first;
    ++c.flows_learned;
  }
  Entry& e = it->second;
  Direction& d = e.dir[forward ? 0 : 1];
  std::memcpy(d.hdr.data(), geneve, geneve_len);
  d.len = uint16_t(geneve_len);
  d.gateway = from;
  e.last_seen = now;
  return true;
}

const GatewayAddr* TunFlowTable::wrap(const uint8_t* pkt, size_t n, std::vector<uint8_t>& out,
                                      double now, TunCounters& c) {
  Inner inner;
  if (!parseIp(pkt, n, inner)) {
    ++c.from_tun_malformed;
    return nullptr;
  }
  bool forward = true;
  auto it = flows_.find(flowKeyOf(inner, &forward));
  if (it == flows_.end()) {
    ++c.from_tun_unknown_flow;
    return nullptr;
  }
  Entry& e = it->second;
  const Direction* d = &e.dir[forward ? 0 : 1];
  if (d->len == 0) d = &e.dir[forward ? 1 : 0];
  out.resize(d->len + n);
  std::memcpy(out.data(), d->hdr.data(), d->len);
  std::memcpy(out.data() + d->len, pkt, n);
  e.last_seen = now;
  return &d->gateway;
}

size_t TunFlowTable::expire(double now, TunCounters& c) {
  size_t gone = 0;
  for (auto it = flows_.begin(); it != flows_.end();) {
    if (now - it->second.last_seen > idle_) {
      it = flows_.erase(it);
      ++gone;
    } else {
      ++it;
    }
  }
  c.flows_expired += gone;
  return gone;
}

}  // namespace gwlb::appliance
