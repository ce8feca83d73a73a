// The fleet's control side in gwlbd (docs/fleet.md): when the node's routes
// are announced through BIRD (control/fleet/announce.h rules, control/fleet/bird_client.h
// I/O) and the graceful stop (withdraw, grace period, exit); the API's fleet
// methods and metrics read it through a FleetApiView (control/service/api_fleet.cc,
// control/service/api_metrics.cc).
// Control thread.
#include <spdlog/spdlog.h>


#include "control/daemon/daemon.h"

namespace gwlb::ctl {

using nlohmann::json;

void Daemon::startFleet() {
  const FleetConfig& f = cfg().fleet;
  if (!f.configured || !f.bird.configured) return;
  bird_ = std::make_shared<BirdClient>(io_, f.bird.socket, f.bird.protocols);
  bird_->on_round = [this] { updateAnnounce(); };
  bird_->start();
  spdlog::info("fleet node {}: routes through BIRD at {} (protocols {}), grace period {} s",
               f.node_name, f.bird.socket, fmt::format("{}", fmt::join(f.bird.protocols, ", ")),
               f.grace_period_s);
  updateAnnounce();
}

void Daemon::stopFleet() {
  if (bird_) bird_->stop();
  grace_timer_.reset();
}

AnnounceInputs Daemon::announceInputs() const {
  AnnounceInputs in;
  in.dataplane_running = !worker_lcores_.empty() && !stop_.load();
  const dp::Snapshot* s = dp_.snapshot.load();
  in.snapshot_published = s != nullptr;
  in.appliances_ready = s != nullptr;
  if (s) {
    // At least one appliance per group in service: weight > 0, MAC known, active.
    for (size_t g = 0; g < cfg().server_groups.size() && g < s->groups.size(); ++g) {
      bool any = false;
      for (const dp::ApplianceSlot& sv : s->appliances)
        any = any || (sv.in_use && sv.group == g && sv.weight > 0 && sv.mac_known &&
                      sv.phase == dp::AppliancePhase::kActive);
      if (!any) {
        in.appliances_ready = false;
        in.appliances_why = "group " + cfg().server_groups[g].name +
                            " has no appliance in service (MAC known, weight > 0)";
        break;
      }
    }
  }
  // Routes wait for warm start: a node that announced before it had its
  // peers' flows would send the flows ECMP moves to it to today's choice.
  in.warm_start_done = fleet_ ? fleet_->warmStartDone() : true;
  // Every listener drops new flows: its region choice is "drop", or its
  // destination is unhealthy under when_all_unhealthy drop.
  const auto& ls = engine_->regions().listeners();
  in.destinations_drop = !ls.empty();
  std::string why;
  for (const auto& l : ls) {
    bool drops = l.active < 0 ||
                 (!l.destination_healthy && l.when_all_unhealthy == WhenAllUnhealthy::kDrop);
    if (!drops) {
      in.destinations_drop = false;
      break;
    }
    why += (why.empty() ? "" : ", ") + std::string("destination ") + l.name;
  }
  if (in.destinations_drop) in.destinations_why = why + ": unhealthy, when_all_unhealthy drop";
  in.left_by_operator = fleet_left_;
  in.stopping = stopping_;
  in.grace_period_s = cfg().fleet.grace_period_s;
  return in;
}

void Daemon::updateAnnounce() {
  if (!bird_) return;
  AnnounceDecision d = decideAnnounce(announceInputs());
  bird_->setAnnounce(d.announce);
  bool was = announce_.announced();
  if (announce_.update(d, bird_->converged(), bird_->lastError(), dp::monotonicNs())) {
    auto log = announce_.announced() || was ? spdlog::level::warn : spdlog::level::info;
    spdlog::log(log, "fleet: routes {}: {}", announce_.state(), announce_.reason());
  }
}

bool Daemon::beginGracefulStop(int sig) {
  if (!bird_ || stopping_) return false;
  stopping_ = true;
  // The recent moves go to the peers once more before the routes go: one
  // that lost a move's record would send the flow back to the appliance it
  // left when the router moves the flow there (docs/fleet.md "Graceful stop").
  if (fleet_) fleet_->handOff(dp::monotonicNs());
  updateAnnounce();
  uint32_t grace = cfg().fleet.grace_period_s;
  spdlog::warn("signal {}: routes withdrawn; forwarding for the grace period ({} s), then exit "
               "(a second signal exits at once)",
               sig, grace);
  grace_timer_ = std::make_unique<boost::asio::steady_timer>(io_, std::chrono::seconds(grace));
  grace_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    spdlog::info("grace period over ({}): stopping", announce_.state());
    io_.stop();
  });
  return true;
}

}  // namespace gwlb::ctl
