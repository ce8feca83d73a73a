#include "control/fleet/announce.h"

namespace gwlb::ctl {

AnnounceDecision decideAnnounce(const AnnounceInputs& in) {
  if (in.stopping)
    return {false, "stopping: routes withdrawn, forwarding for the grace period (" +
                       std::to_string(in.grace_period_s) + " s), then exit"};
  if (in.left_by_operator) return {false, "left by operator (gwlbctl fleet join to return)"};
  if (!in.dataplane_running) return {false, "not ready: dataplane not running"};
  if (!in.snapshot_published) return {false, "not ready: no snapshot published yet"};
  if (!in.appliances_ready)
    return {false, "not ready: " + (in.appliances_why.empty() ? std::string("appliances not resolved")
                                                               : in.appliances_why)};
  if (!in.warm_start_done) return {false, "not ready: warm start"};
  if (in.destinations_drop)
    return {false, "unhealthy: " + (in.destinations_why.empty()
                                        ? std::string("every destination drops new flows")
                                        : in.destinations_why)};
  return {true, "ready: dataplane running, appliances in service, warm start done"};
}

bool AnnounceState::update(const AnnounceDecision& d, bool bird_converged,
                           const std::string& bird_error, uint64_t now_ns) {
  std::string state, reason;
  if (!d.announce) {
    state = "withdrawn";
    reason = d.reason;
  } else if (bird_converged) {
    state = "announced";
    reason = d.reason;
  } else {
    state = "announcing";
    reason = "waiting for BIRD" + (bird_error.empty() ? std::string() : ": " + bird_error);
  }
  if (state == state_ && reason == reason_) return false;
  if ((state == "announced") != (state_ == "announced")) ++changes_;
  if (state != state_ || since_ns_ == 0) since_ns_ = now_ns;
  state_ = std::move(state);
  reason_ = std::move(reason);
  return true;
}

}  // namespace gwlb::ctl
