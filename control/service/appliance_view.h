// Every appliance as the API, /metrics and telemetry show it: its traffic
// (the workers' counters, from zero for each new holder of a server id), its
// status with the reason and since when (set from every published snapshot),
// and the one state shown for it (one of kApplianceStates). Control thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/engine/engine.h"
#include "control/service/service.h"

namespace gwlb::ctl {

class ApplianceView {
 public:
  ApplianceView(const Engine& engine, HealthView health, WorkerStats workers)
      : engine_(engine), health_(health), workers_(workers) {}

  // A snapshot is about to be published: each appliance's status follows it
  // (a change is logged). `now_unix`: when (Unix seconds).
  void update(const dp::Snapshot& s, double now_unix);
  // Server ids the engine gave back: their traffic counts start from zero
  // for the next appliance to get them.
  void idsFreed(const std::vector<uint16_t>& freed);
  // What workers sent to server id `id`, and returned from it, since the id
  // was last given out.
  ApplianceTraffic traffic(uint16_t id) const;

  // The state of configured appliance ip (lifecycle phase first, then status).
  std::string state(uint32_t ip) const;
  struct Status {
    std::string state;  // initializing | active | unresolved | unhealthy | dampened | idle
    std::string reason;
    double since = 0;   // Unix time of the last state change
  };
  // Its status as of the last snapshot (null: in none yet).
  const Status* status(uint32_t ip) const;
  // Every appliance gwlbd knows (configured, then removed ones still
  // carrying flows) with its state.
  struct Row {
    std::string group, address, state;
    uint32_t ip = 0;
    uint16_t id = 0;
  };
  std::vector<Row> rows() const;
  // Why a held-down appliance is held (flap dampening), as `dampened`'s reason.
  std::string dampenedReason(uint32_t ip) const;
  // The appliance's passive detection, flap dampening and slow start as the
  // API's health objects carry them (empty: none of them applies).
  nlohmann::json serviceJson(uint32_t ip) const;
  // The `health` object of an appliance in `servers` and `health`.
  nlohmann::json healthJson(uint32_t ip) const;

 private:
  const Engine& engine_;
  HealthView health_;
  WorkerStats workers_;
  std::map<uint32_t, Status> status_;
  // Per server id: the workers' counts when the id was reclaimed.
  std::vector<ApplianceTraffic> traffic_base_;
};

}  // namespace gwlb::ctl
