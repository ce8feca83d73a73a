#include "control/fleet/fleet_view.h"

namespace gwlb::ctl {

void FleetView::extend(uint64_t now, const char* why) {
  if (now + horizon_ns_ <= until_ns_) return;
  until_ns_ = now + horizon_ns_;
  until_why_ = why;
}

void FleetView::warmStartEnded(bool got_table, bool any_peer, uint64_t now) {
  warm_ended_ = true;
  warm_end_ns_ = now;
  wait_all_ = !got_table && any_peer;
  // Peers heard during the warm start: without a table, what they sent
  // before we heard them is missing too; the horizon starts once all are heard.
  if (wait_all_) heard(peers_.size(), 0, now);
}

void FleetView::heard(size_t i, uint64_t epoch, uint64_t now) {
  if (i < peers_.size()) {
    Peer& p = peers_[i];
    // Silent, then heard again in the same run: it kept running, and what it
    // sent meanwhile did not arrive. A new epoch is a restart: a peer that
    // was down sent nothing.
    if (p.heard_ns != 0 && p.epoch == epoch && now - p.heard_ns > kSilentNs)
      extend(now, "a peer's records were lost while it was silent");
    p.heard_ns = now;
    p.epoch = epoch;
  }
  if (!wait_all_ || !warm_ended_) return;
  for (const Peer& p : peers_)
    if (!p.ignored && p.heard_ns == 0) return;
  wait_all_ = false;
  extend(now, "the warm start got no peer's table");
}

std::string FleetView::why(uint64_t now) const {
  if (!warm_ended_) return "the warm start is under way";
  if (wait_all_ && now - warm_end_ns_ < horizon_ns_)
    return "the warm start got no peer's table and a peer has not been heard since";
  for (const Peer& p : peers_) {
    if (p.ignored || p.heard_ns == 0) continue;
    // Silent for longer than the horizon: gone (its flows have expired or
    // reached the others, which hold their records).
    uint64_t silent = now - p.heard_ns;
    if (silent > kSilentNs && silent < horizon_ns_) return "a peer is silent";
  }
  if (now < until_ns_) return until_why_;
  return "";
}

}  // namespace gwlb::ctl
