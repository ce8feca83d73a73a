// The flow table of gwlb-appliance's tun mode (tools/appliance_tun_flows.h).
#include "tools/appliance_tun_flows.h"

#include <cstring>

#include "common/geneve.h"

namespace gwlb::appliance {

bool TunFlowTable::learn(const Inner& inner, const uint8_t* geneve, size_t geneve_len,
                         const GatewayAddr& from, double now, TunCounters& c, size_t l2_len,
                         const BypassAsk* bypass) {
  // The caller validated both.
  if (l2_len > kMaxInnerL2 || (l2_len != 0 && l2_len < 14) || geneve_len < 8 + l2_len ||
      geneve_len - l2_len > kMaxGeneveHeader)
    return false;
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
  const size_t with = bypass ? gwlb::addBypassOption(geneve, geneve_len, d.hdr.data(), d.hdr.size(),
                                                     bypass->option_class, bypass->seconds)
                             : 0;
  if (!with) std::memcpy(d.hdr.data(), geneve, geneve_len);
  d.len = uint16_t(with ? with : geneve_len);
  d.l2_len = uint8_t(l2_len);
  d.bypass = with != 0;
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
  const bool other = d->len == 0;
  if (other) d = &e.dir[forward ? 1 : 0];
  out.resize(d->len + n);
  std::memcpy(out.data(), d->hdr.data(), d->len);
  std::memcpy(out.data() + d->len, pkt, n);
  if (other && d->l2_len) {
    // The other direction's frame, turned round: from where it went to.
    uint8_t* eth = out.data() + d->len - d->l2_len;
    uint8_t mac[6];
    std::memcpy(mac, eth, 6);
    std::memcpy(eth, eth + 6, 6);
    std::memcpy(eth + 6, mac, 6);
  }
  if (d->bypass) ++c.bypass_returned;
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
