// gwlb-replay's run: worker lcores fed from the main lcore through rings, the
// control core (control/engine/engine.h) driven on capture time by the --events
// schedule (control/engine/scripted_events.h), outputs written as they come, and
// summary.json at the end. gwlb_replay.cc's main() parses arguments and calls
// step() until it returns false.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/counters.h"
#include "common/geneve.h"
#include "control/config/config.h"
#include "control/engine/scripted_events.h"
#include "tools/replay_io.h"

namespace gwlb::replay {

struct Options {
  std::string config, in, out_dir, appliance_in, events;
  bool reflect = false;
  // --reflect-bypass-after N: a reflecting appliance that asks for a bypass
  // (for the flow's life, class option_class) once a flow brought it N bytes
  // (inner packets, both directions); 0: never.
  uint64_t reflect_bypass_after = 0;
  uint16_t option_class = gwlb::kGwlbOptionClassDefault;
  unsigned workers = 1;
  unsigned burst = 32;
  // --node K/N: this run is node K (1..N) of a simulated fleet of N and is
  // fed only the capture's router frames a router's ECMP would send it
  // (ecmpNode, tools/replay_io.h); N = 0: the whole capture.
  unsigned node = 0, nodes = 0;
  // --ecmp-policy: how that router hashes (which frames it keeps together).
  EcmpPolicy ecmp_policy = kDefaultEcmpPolicy;
  // Capture time that --events count from and the engine starts at (the
  // whole capture's first frame, also for a node that sees a later one); 0:
  // the first frame fed.
  uint64_t clock_start_ns = 0;
  // --interval: the time series' interval of capture time (0: auto, about
  // 100 points over the capture).
  uint64_t interval_ns = 0;
  // --strict: exit 1 when packets were dropped for flow_table_full or
  // neighbour_unresolved (an appliance without a MAC); they are warned about
  // either way.
  bool strict = false;
  // A progress line is being drawn on stderr (a terminal): lines printed
  // during the run clear it first (the next update draws it again).
  bool progress = false;
};


// Mbuf data room: at least kDataRoom (9216-byte jumbo frames and more), raised to
// the largest frame of the captures, up to what one mbuf can hold (its buffer
// length is 16 bits). The pipeline takes single-segment frames only, so a larger
// frame is not fed: it is counted (summary.json frames_too_large) and warned
// about, never cut short and then blamed on the packet.
constexpr unsigned kDataRoom = 10240;
unsigned maxDataRoom();

// Throws ctl::EventError when an event would fail against `cfg` (each is
// applied to a scratch control core with no flows). EAL must be initialised.
void checkEvents(const std::vector<ctl::ScriptedEvent>& events, const ctl::Config& cfg);

// Warns loudly (stderr) about packets dropped for flow_table_full or
// neighbour_unresolved (no MAC for an appliance: the replay does no ARP).
// Returns the exit status: 1 when there were any and `strict`, else 0.
int warnLosses(const WorkerCounters& total, const ctl::Config& cfg, bool strict);

class Replay {
 public:
  // EAL is initialised; `cfg` is valid, `frames` sorted by time (the first
  // n_router_in of them read from --in), `events` checked. Throws
  // std::runtime_error when memory, rings or lcores cannot be set up.
  Replay(const Options& o, ctl::Config cfg, std::vector<Frame> frames, size_t n_router_in,
         std::vector<ctl::ScriptedEvent> events, const CaptureStats& cs);
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  // One turn of the main loop: a burst fed to the workers (reflections
  // first), or, when a control action is due before the next frame, the
  // workers drained and the action run. False once every frame and
  // reflection has been processed.
  bool step();
  // Stops the workers, writes the outputs and summary.json, prints the
  // summary. Returns the exit code.
  int finish();

  // Progress: frames fed so far, of how many, and the capture time reached
  // (ns after the first frame) of how long the capture is.
  size_t fed() const;
  size_t total() const;
  uint64_t captureNow() const;
  uint64_t captureSpan() const;

 private:
  struct State;
  std::unique_ptr<State> st_;
};

}  // namespace gwlb::replay
