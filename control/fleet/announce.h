// When this node's routes are announced (docs/fleet.md, "Announcing the
// routes"): the rules, pure (inputs in, a decision out, time passed in), so
// tests/unit/fleet/test_bird.cc checks each without BIRD. The daemon gathers
// the inputs every second and on every event (control/daemon/daemon_fleet.cc) and
// hands the wish to the BIRD client (control/fleet/bird_client.h).
//
// Announce only when all hold: the dataplane runs (workers launched), a
// snapshot is published, every server group has at least one appliance in
// service (weight > 0, its MAC known; health is the Maglev builder's business:
// an initializing or fail_open group still forwards), warm start is done, and
// no destination rules out traffic (below). Withdraw when the operator left
// (`gwlbctl fleet leave`), gwlbd is stopping (SIGTERM: the grace period), or
// every listener is dropping its new flows: its destination unhealthy with
// when_all_unhealthy drop (a node that forwards nothing new should not draw
// traffic; one that still serves some destination keeps its routes, which
// all destinations share).
//
// Control thread only.
#pragma once

#include <cstdint>
#include <string>

namespace gwlb::ctl {

struct AnnounceInputs {
  bool dataplane_running = false;
  bool snapshot_published = false;
  bool appliances_ready = false;
  std::string appliances_why;    // when not ready: e.g. "group g0 has no appliance in service"
  bool warm_start_done = true;
  bool destinations_drop = false;  // every listener drops new flows
  std::string destinations_why;    // e.g. "destination l: unhealthy, when_all_unhealthy drop"
  bool left_by_operator = false;
  bool stopping = false;
  uint32_t grace_period_s = 0;
};

struct AnnounceDecision {
  bool announce = false;
  std::string reason;  // why not (or "ready" when announcing)
};

// The rules above; the first reason that holds wins, in the order: stopping,
// left, not ready (dataplane, snapshot, appliances, warm start), destinations.
AnnounceDecision decideAnnounce(const AnnounceInputs& in);

// The node's announce state as shown by `gwlbctl fleet`: "announced" (wanted
// and BIRD has every protocol up), "announcing" (wanted, BIRD not there yet),
// "withdrawn" (not wanted), each with its reason and since when.
class AnnounceState {
 public:
  // Returns true when the state or its reason changed.
  bool update(const AnnounceDecision& d, bool bird_converged, const std::string& bird_error,
              uint64_t now_ns);
  const std::string& state() const { return state_; }
  const std::string& reason() const { return reason_; }
  uint64_t sinceNs() const { return since_ns_; }
  bool announced() const { return state_ == "announced"; }
  // Changes of announced() (0 -> 1 and 1 -> 0).
  uint64_t changes() const { return changes_; }

 private:
  std::string state_ = "withdrawn";
  std::string reason_ = "not ready: starting";
  uint64_t since_ns_ = 0;
  uint64_t changes_ = 0;
};

}  // namespace gwlb::ctl
