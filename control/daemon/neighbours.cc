#include "control/daemon/neighbours.h"

#include <algorithm>

namespace gwlb::ctl {

const char* toString(NeighbourCache::State s) {
  switch (s) {
    case NeighbourCache::State::kIncomplete: return "incomplete";
    case NeighbourCache::State::kReachable: return "reachable";
    case NeighbourCache::State::kStale: return "stale";
    case NeighbourCache::State::kProbe: return "probe";
  }
  return "?";
}

bool NeighbourCache::track(const std::vector<uint32_t>& ips, uint64_t now_ns) {
  bool forgot_mac = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (std::find(ips.begin(), ips.end(), it->first) != ips.end()) {
      ++it;
      continue;
    }
    forgot_mac = forgot_mac || it->second.mac.has_value();
    it = entries_.erase(it);
  }
  for (uint32_t ip : ips)
    if (entries_.emplace(ip, Entry{}).second) entries_[ip].next_ns = now_ns;
  return forgot_mac;
}

bool NeighbourCache::heard(uint32_t ip, const MacAddr& mac, uint64_t now_ns) {
  auto it = entries_.find(ip);
  if (it == entries_.end()) return false;
  Entry& e = it->second;
  bool changed = !e.mac || !(*e.mac == mac);
  e.mac = mac;
  e.state = State::kReachable;
  e.confirmed_ns = now_ns;
  e.probes = 0;
  return changed;
}

bool NeighbourCache::tick(uint64_t now_ns, std::vector<Request>& out) {
  bool forgot_mac = false;
  for (auto& [ip, e] : entries_) {
    if (e.state == State::kReachable && now_ns - e.confirmed_ns >= t_.reachable_ns)
      e.state = State::kStale;
    if (e.state == State::kStale) {
      // Confirm the MAC we have with a unicast request before trusting it longer.
      e.state = State::kProbe;
      e.probes = 0;
      e.next_ns = now_ns;
    }
    if (e.state == State::kProbe && now_ns >= e.next_ns) {
      if (e.probes < t_.max_probes) {
        out.push_back({ip, e.mac});
        ++e.probes;
        e.next_ns = now_ns + t_.retrans_ns;
        continue;
      }
      // Nobody answers at that MAC: forget it and ask everyone.
      e.state = State::kIncomplete;
      e.mac.reset();
      e.probes = 0;
      e.next_ns = now_ns;
      forgot_mac = true;
    }
    if (e.state == State::kIncomplete && now_ns >= e.next_ns) {
      out.push_back({ip, std::nullopt});
      e.next_ns = now_ns + t_.retrans_ns;
    }
  }
  return forgot_mac;
}

std::map<uint32_t, MacAddr> NeighbourCache::macs() const {
  std::map<uint32_t, MacAddr> out;
  for (const auto& [ip, e] : entries_)
    if (e.mac) out.emplace(ip, *e.mac);
  return out;
}

const NeighbourCache::Entry* NeighbourCache::find(uint32_t ip) const {
  auto it = entries_.find(ip);
  return it == entries_.end() ? nullptr : &it->second;
}

}  // namespace gwlb::ctl
