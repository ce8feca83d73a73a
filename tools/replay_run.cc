#include "tools/replay_run.h"

#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <sched.h>

#include <algorithm>
#include <map>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "common/counters.h"
#include "common/packet_parser.h"
#include "control/engine/engine.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "tools/replay_series.h"
#include "tools/replay_summary.h"

namespace gwlb::replay {

using nlohmann::json;

unsigned maxDataRoom() { return UINT16_MAX - RTE_PKTMBUF_HEADROOM; }

namespace {

constexpr unsigned kRing = 4096;
constexpr size_t kPoolBytes = 192u << 20;  // the mbuf pool's budget with larger frames

// One unit of work between the main lcore and a worker: a burst and its clock.
struct Job {
  uint64_t now_ns;
  uint16_t n;
  rte_mbuf* pkts[dp::kMaxBurst];
};

struct WorkerSlot {
  dp::WorkerState state;
  rte_ring* in = nullptr;   // Job* from main
  rte_ring* out = nullptr;  // rte_mbuf* to main, tagged by mbuf->hash.usr (0 appliance, 1 router, 2 mirror)
  unsigned lcore = 0;
};

// What worker lcores share with the main lcore.
struct Shared {
  dp::Dataplane dp;
  rte_rcu_qsbr* qsbr = nullptr;
  std::vector<WorkerSlot>* workers = nullptr;
  std::atomic<bool> stop{false};
  rte_ring* free_jobs = nullptr;
};

Shared g;

int workerMain(void* arg) {
  auto idx = unsigned(reinterpret_cast<uintptr_t>(arg));
  WorkerSlot& ws = (*g.workers)[idx];
  rte_rcu_qsbr_thread_register(g.qsbr, idx);
  rte_rcu_qsbr_thread_online(g.qsbr, idx);
  dp::BurstOutput out;
  unsigned idle = 0;
  for (;;) {
    void* obj;
    if (rte_ring_dequeue(ws.in, &obj) != 0) {
      rte_rcu_qsbr_quiescent(g.qsbr, idx);
      if (g.stop.load(std::memory_order_acquire) && rte_ring_empty(ws.in)) break;
      // Lcores share two CPUs (--lcores ...@(0-1)): give the CPU away when
      // idle for a while rather than spin against the main lcore.
      if (++idle >= 64) sched_yield();
      else rte_pause();
      continue;
    }
    idle = 0;
    Job* job = static_cast<Job*>(obj);
    dp::processBurst(g.dp, ws.state, job->pkts, job->n, job->now_ns, out);
    for (uint16_t i = 0; i < out.n_appliance; ++i) out.to_appliance[i]->hash.usr = 0;
    for (uint16_t i = 0; i < out.n_router; ++i) out.to_router[i]->hash.usr = 1;
    for (uint16_t i = 0; i < out.n_mirror; ++i) out.to_mirror[i]->hash.usr = 2;
    // The main lcore drains continuously; spin rather than drop test output.
    for (uint16_t i = 0; i < out.n_appliance; ++i)
      while (rte_ring_enqueue(ws.out, out.to_appliance[i]) != 0) rte_pause();
    for (uint16_t i = 0; i < out.n_router; ++i)
      while (rte_ring_enqueue(ws.out, out.to_router[i]) != 0) rte_pause();
    for (uint16_t i = 0; i < out.n_mirror; ++i)
      while (rte_ring_enqueue(ws.out, out.to_mirror[i]) != 0) rte_pause();
    // The job's pkts are consumed; the job itself goes back.
    rte_ring_enqueue(g.free_jobs, job);
    rte_rcu_qsbr_quiescent(g.qsbr, idx);
  }
  rte_rcu_qsbr_thread_offline(g.qsbr, idx);
  rte_rcu_qsbr_thread_unregister(g.qsbr, idx);
  return 0;
}

// The state at an event boundary, taken while every worker is idle: which
// appliance each flow is on, and what each appliance has received so far.
struct Boundary {
  std::unordered_map<std::string, uint16_t> flows;  // FlowKey bytes -> server id
  std::vector<uint64_t> packets;                   // by server id
};

}  // namespace

int warnLosses(const WorkerCounters& total, const ctl::Config& cfg, bool strict) {
  const uint64_t full = total.get(Counter::drop_flow_table_full);
  const uint64_t no_mac = total.get(Counter::drop_neighbour_unresolved);
  if (full)
    std::fprintf(stderr,
                 "gwlb-replay: WARNING: %llu packet(s) dropped because the flow table was full "
                 "(drop_flow_table_full; dataplane.flow_table_size is %u): raise "
                 "dataplane.flow_table_size\n",
                 (unsigned long long)full, std::max<uint32_t>(cfg.dataplane.flow_table_size, 1024));
  if (no_mac) {
    std::string which;
    for (const ctl::ApplianceGroupConfig& g : cfg.server_groups)
      for (const ctl::ApplianceConfig& sv : g.appliances)
        if (!sv.mac && !cfg.node.gateway_mac) which += (which.empty() ? "" : ", ") + sv.address.str();
    std::fprintf(stderr,
                 "gwlb-replay: WARNING: %llu packet(s) dropped because an appliance has no MAC "
                 "address (drop_neighbour_unresolved; the replay does no ARP)%s%s: set "
                 "node.gateway_mac or the appliance's mac\n",
                 (unsigned long long)no_mac, which.empty() ? "" : ": no mac for ", which.c_str());
  }
  if ((full || no_mac) && strict) {
    std::fprintf(stderr, "gwlb-replay: --strict: exit status 1 (packets dropped, above)\n");
    return 1;
  }
  return 0;
}

void checkEvents(const std::vector<ctl::ScriptedEvent>& events, const ctl::Config& cfg) {
  if (events.empty()) return;
  rte_rcu_qsbr* qsbr = dp::createQsbr(1);
  dp::FlowTable flows("replay_check", 1024, qsbr, int(rte_socket_id()));
  dp::Dataplane d;
  d.flows = &flows;
  ctl::Engine scratch(cfg, flows, d, qsbr);
  scratch.setCatchUp(false);
  scratch.start(0);
  ctl::checkEvents(events, scratch);
}

struct Replay::State {
  Options o;
  std::vector<Frame> frames;
  size_t n_router_in = 0;
  std::vector<ctl::ScriptedEvent> events;
  CaptureStats cs;
  rte_mempool* pool = nullptr;
  std::unique_ptr<dp::FlowTable> flows;
  std::unique_ptr<ctl::Engine> engine;
  std::unique_ptr<ctl::EventSchedule> schedule;
  std::vector<WorkerSlot> workers;
  std::vector<Job> jobs;
  PcapWriter to_app, returned, to_mirrors;
  uint64_t first_ts = 0;
  // Each mbuf carries its input frame's capture timestamp in a dynamic field
  // (the pipeline rewrites packets in place and never allocates, so every
  // output, a reflection of it and what returns from it keep the timestamp
  // of the frame they came from).
  int ts_off = -1;
  std::unique_ptr<Timeline> timeline;
  uint64_t& tsOf(rte_mbuf* m) const { return *RTE_MBUF_DYNFIELD(m, ts_off, uint64_t*); }

  // Decisions as summary.json shows them.
  json region_changes = json::array();
  json* region_sink = nullptr;  // also the current event's lines
  json lifecycle_changes = json::array();
  json service_changes = json::array();  // flap dampening, slow start

  // The main loop.
  std::deque<rte_mbuf*> pending_reflect;
  size_t next = 0;
  unsigned rr = 0;
  uint64_t now = 0;
  uint64_t reflected = 0, alloc_retries = 0;
  // --reflect-bypass-after: inner bytes reflected per flow, and reflections
  // that asked for a bypass.
  std::map<std::string, uint64_t> reflected_bytes;
  uint64_t reflected_bypass = 0;
  std::vector<Job*> round;

  // --events windows: from an applied event's boundary to the next one.
  ctl::ScriptedEvent* open_event = nullptr;
  Boundary open_at;
  // Its appliance's server id, taken when it was applied (a removed
  // appliance's id may be given back before the window closes).
  uint16_t open_sid = dp::kNoAppliance;
  std::vector<uint32_t> open_addrs;  // the registry's addresses by id then
  std::vector<uint64_t> last_packets;  // at the previous boundary (start: none)
  std::vector<std::string> id_names;   // address text by server id

  // Per traffic class: totals by name and action, and the workers' counters
  // (by counter slot) at the last fold.
  std::vector<ClassTotal> class_totals;
  struct ClassCount {
    uint64_t packets = 0, bytes = 0, kept_packets = 0, kept_bytes = 0;
  };
  std::vector<ClassCount> class_base;  // by counter slot

  double rel(uint64_t t) const { return double(t - std::min(t, first_ts)) / 1e9; }
  void decided(const ctl::Decision& d);
  Job* getJob();
  void drain();
  bool workersIdle() const;
  unsigned dealTo(rte_mbuf* m);
  std::vector<uint64_t> appliancePackets() const;
  Boundary takeBoundary() const;
  const std::string& addrOf(uint16_t id);
  json packetDiff(const std::vector<uint64_t>& to, const std::vector<uint64_t>& from);
  void closeWindow(const Boundary& b);
  void runControl(uint64_t t);
  void feedBurst();
  void foldClasses();
};

// Adds what each class of the config in force counted since the last fold to
// its name's totals (workers idle), under the action that handled it: the
// class's action then, or inspect for packets that went on along an existing
// flow entry instead (a flow set up before a reload changed its class).
// Runs before every event (a reload can renumber the classes or change
// their actions) and at the end.
void Replay::State::foldClasses() {
  // Workers count a class in its name's slot (control/engine/class_slots.h),
  // not at its position: a reload that reorders classes keeps the slots.
  const ctl::Config& c = engine->config();
  const size_t n = std::min(c.traffic_classes.size(), kMaxClasses);
  class_base.resize(kMaxClasses);
  auto row = [&](const std::string& name, const std::string& action) -> ClassTotal& {
    auto it = std::find_if(class_totals.begin(), class_totals.end(), [&](const ClassTotal& t) {
      return t.name == name && t.action == action;
    });
    if (it == class_totals.end()) it = class_totals.insert(class_totals.end(), ClassTotal{name, action});
    return *it;
  };
  for (size_t i = 0; i < n; ++i) {
    const ctl::TrafficClassConfig& tc = c.traffic_classes[i];
    const uint16_t slot = engine->classSlots().slotOf(tc.name);
    if (slot >= kMaxClasses) continue;
    ClassCount now;
    for (auto& w : workers) {
      now.packets += w.state.classPackets(slot);
      now.bytes += w.state.classBytes(slot);
      now.kept_packets += w.state.classKeptPackets(slot);
      now.kept_bytes += w.state.classKeptBytes(slot);
    }
    const ClassCount& was = class_base[slot];
    const uint64_t kept_p = now.kept_packets - was.kept_packets, kept_b = now.kept_bytes - was.kept_bytes;
    ClassTotal& own = row(tc.name, ctl::toString(tc.action));
    if (tc.action == ctl::ClassAction::kInspect) {
      const std::string l = tc.listener.empty() ? "default" : tc.listener;
      if (std::find(own.listeners.begin(), own.listeners.end(), l) == own.listeners.end())
        own.listeners.push_back(l);
    }
    own.packets += now.packets - was.packets - kept_p;
    own.bytes += now.bytes - was.bytes - kept_b;
    if (kept_p) {
      ClassTotal& inspected = row(tc.name, ctl::toString(ctl::ClassAction::kInspect));
      inspected.packets += kept_p;
      inspected.bytes += kept_b;
    }
    class_base[slot] = now;
  }
}

void Replay::State::decided(const ctl::Decision& d) {
  if (d.kind == ctl::Decision::Kind::kRegion) {
    std::fprintf(stderr, "%sgwlb-replay: regions at %s: %s\n", o.progress ? "\r\033[K" : "",
                 ctl::secondsText(d.at_ns - std::min(d.at_ns, first_ts)).c_str(), d.text.c_str());
    region_changes.push_back({{"at_s", rel(d.at_ns)}, {"line", d.text}});
    if (region_sink) region_sink->push_back(d.text);
  } else if (d.kind == ctl::Decision::Kind::kService) {
    service_changes.push_back({{"at_s", rel(d.at_ns)}, {"line", d.text}});
  } else if (d.kind == ctl::Decision::Kind::kLifecycle) {
    lifecycle_changes.push_back({{"at_s", rel(d.at_ns)},
                                 {"server", IpAddr::v4(d.ip).str()},
                                 {"from", dp::toString(d.from)},
                                 {"to", dp::toString(d.to)},
                                 {"why", d.why},
                                 {"flows", d.flows}});
  }
}

Replay::Replay(const Options& o, ctl::Config cfg, std::vector<Frame> frames, size_t n_router_in,
               std::vector<ctl::ScriptedEvent> events, const CaptureStats& cs)
    : st_(std::make_unique<State>()) {
  State& s = *st_;
  s.o = o;
  s.frames = std::move(frames);
  s.n_router_in = n_router_in;
  s.events = std::move(events);
  s.cs = cs;
  std::string err;
  if (!s.to_app.open(o.out_dir + "/to-appliances.pcap", err) ||
      !s.returned.open(o.out_dir + "/returned.pcap", err) ||
      !s.to_mirrors.open(o.out_dir + "/to-mirrors.pcap", err))
    throw std::runtime_error(err);
  const unsigned data_room = std::max<unsigned>(kDataRoom, unsigned(cs.largest));
  const unsigned n_mbufs =
      data_room == kDataRoom
          ? 16383
          : unsigned(std::clamp<size_t>(kPoolBytes / (data_room + RTE_PKTMBUF_HEADROOM + 192) | 1,
                                        2047, 16383));
  s.pool = dp::createMbufPool("replay_pool", n_mbufs, data_room);
  g.qsbr = dp::createQsbr(o.workers);
  s.flows = std::make_unique<dp::FlowTable>(
      "replay_flows", std::max<uint32_t>(cfg.dataplane.flow_table_size, 1024), g.qsbr,
      int(rte_socket_id()));
  g.dp.flows = s.flows.get();

  // The control core, as gwlbd runs it, on capture time: --events drive it,
  // health is scripted (every appliance unchecked until an event says).
  s.first_ts = o.clock_start_ns ? o.clock_start_ns : s.frames.empty() ? 0 : s.frames.front().ts_ns;
  s.now = s.first_ts;
  static const rte_mbuf_dynfield ts_field = {"gwlb_replay_ts", sizeof(uint64_t), alignof(uint64_t), 0};
  s.ts_off = rte_mbuf_dynfield_register(&ts_field);
  if (s.ts_off < 0) throw std::runtime_error("cannot register the mbuf timestamp field");
  {
    const uint64_t last = s.frames.empty() ? s.first_ts : std::max(s.first_ts, s.frames.back().ts_ns);
    if (o.interval_ns && (last - s.first_ts) / o.interval_ns >= 100'000)
      throw std::runtime_error("--interval " + ctl::secondsText(o.interval_ns) + " gives more than "
                               "100,000 points over the capture's " +
                               ctl::secondsText(last - s.first_ts) + ": choose a longer interval");
    s.timeline = std::make_unique<Timeline>(
        s.first_ts, last, o.interval_ns ? o.interval_ns : autoInterval(last - s.first_ts));
  }
  ctl::EngineHooks hooks;
  hooks.decided = [&s](const ctl::Decision& d) { s.decided(d); };
  s.engine = std::make_unique<ctl::Engine>(std::move(cfg), *s.flows, g.dp, g.qsbr,
                                           ctl::EngineInputs{}, std::move(hooks));
  s.engine->start(s.first_ts);
  s.schedule = std::make_unique<ctl::EventSchedule>(*s.engine, s.events, s.first_ts);

  s.workers = std::vector<WorkerSlot>(o.workers);
  g.workers = &s.workers;
  g.free_jobs = dp::createRing("free_jobs", 1024, false);
  s.jobs.resize(1023);
  for (auto& j : s.jobs) rte_ring_enqueue(g.free_jobs, &j);
  for (unsigned i = 0; i < o.workers; ++i) {
    s.workers[i].state.id = uint16_t(i);
    s.workers[i].in = dp::createRing("w_in" + std::to_string(i), kRing, true);
    s.workers[i].out = dp::createRing("w_out" + std::to_string(i), kRing * 4, true);
  }
  unsigned lc = rte_get_next_lcore(-1, 1, 0);
  for (unsigned i = 0; i < o.workers; ++i, lc = rte_get_next_lcore(lc, 1, 0)) {
    s.workers[i].lcore = lc;
    rte_eal_remote_launch(workerMain, reinterpret_cast<void*>(uintptr_t(i)), lc);
  }
  s.round.resize(o.workers);
}

Replay::~Replay() {
  if (!st_) return;
  g.stop.store(true, std::memory_order_release);
  rte_eal_mp_wait_lcore();
  st_->engine.reset();  // the workers have stopped: every snapshot is freed
}

Job* Replay::State::getJob() {
  void* obj;
  while (rte_ring_dequeue(g.free_jobs, &obj) != 0) rte_pause();
  return static_cast<Job*>(obj);
}

void Replay::State::drain() {
  void* objs[256];
  for (auto& w : workers) {
    unsigned k;
    while ((k = rte_ring_dequeue_burst(w.out, objs, 256, nullptr)) > 0) {
      for (unsigned i = 0; i < k; ++i) {
        auto* m = static_cast<rte_mbuf*>(objs[i]);
        // A mirror copy's header mbuf is fresh: its data segment (attached to
        // the original, dynamic fields copied) holds the timestamp.
        const uint64_t ts = m->hash.usr == 2 && m->next ? tsOf(m->next) : tsOf(m);
        if (m->hash.usr == 2) {
          to_mirrors.write(m, ts);
        } else if (m->hash.usr == 0) {
          to_app.write(m, ts);
          timeline->toAppliance(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, ts);
          if (o.reflect) {
            reflect(m);
            if (o.reflect_bypass_after) {
              std::string key;
              size_t inner = 0;
              if (reflectedFlow(m, key, inner) &&
                  (reflected_bytes[key] += inner) >= o.reflect_bypass_after &&
                  addBypassToReflection(m, o.option_class, 0))
                ++reflected_bypass;
            }
            m->port = engine->config().node.underlay_port;
            pending_reflect.push_back(m);
            ++reflected;
            continue;
          }
        } else {
          returned.write(m, ts);
          timeline->returned(ts, m->pkt_len);
        }
        rte_pktmbuf_free(m);
      }
    }
  }
}

// Every job is back (and so every output is in an out ring).
bool Replay::State::workersIdle() const {
  bool idle = true;
  for (auto& w : workers) idle = idle && rte_ring_empty(w.in);
  return idle && rte_ring_count(g.free_jobs) == jobs.size();
}

std::vector<uint64_t> Replay::State::appliancePackets() const {
  std::vector<uint64_t> v(engine->registry().size(), 0);
  for (auto& w : workers)
    for (size_t id = 0; id < v.size() && id < dp::kMaxApplianceIds; ++id)
      v[id] += w.state.sentPackets(uint16_t(id));
  return v;
}

Boundary Replay::State::takeBoundary() const {
  Boundary b;
  flows->forEach([&](const FlowKey& k, int32_t, const dp::FlowEntry& e) {
    uint64_t r = e.route.load(std::memory_order_acquire);
    if (k.kind == KeyKind::kFlow && (r & dp::kRouteSet))
      b.flows.emplace(std::string(reinterpret_cast<const char*>(&k), sizeof k), dp::routeAppliance(r));
  });
  b.packets = appliancePackets();
  return b;
}

const std::string& Replay::State::addrOf(uint16_t id) {
  const ctl::ApplianceRegistry& reg = engine->registry();
  if (id_names.size() != reg.size()) {
    id_names.clear();
    for (uint32_t ip : reg.addresses()) id_names.push_back(IpAddr::v4(ip).str());
  }
  static const std::string unknown = "unknown";
  return id < id_names.size() ? id_names[id] : unknown;
}

json Replay::State::packetDiff(const std::vector<uint64_t>& to, const std::vector<uint64_t>& from) {
  json j = json::object();
  for (size_t id = 0; id < to.size(); ++id) {
    uint64_t d = to[id] - (id < from.size() ? from[id] : 0);
    if (d) j[addrOf(uint16_t(id))] = d;
  }
  return j;
}

// The window of an applied event runs from its boundary to the next one (the
// next applied event, or the end of the replay).
void Replay::State::closeWindow(const Boundary& b) {
  if (!open_event) return;
  std::map<std::string, uint64_t> moved;
  uint64_t stayed = 0, ended = 0, on_appliance = 0;
  const uint16_t sid = open_sid;
  for (auto& [k, s] : open_at.flows) {
    if (s == sid) ++on_appliance;
    auto it = b.flows.find(k);
    if (it == b.flows.end()) {
      ++ended;
      continue;
    }
    if (it->second == s) ++stayed;
    else
      ++moved[(s < open_addrs.size() ? IpAddr::v4(open_addrs[s]).str() : addrOf(s)) + "->" +
              addrOf(it->second)];
  }
  json& r = open_event->result;
  r["flows_moved"] = moved;
  r["flows_stayed"] = stayed;
  r["flows_ended"] = ended;
  r["flows_on_server_at_event"] = on_appliance;
  r["flows_at_event"] = open_at.flows.size();
  r["packets_after"] = packetDiff(b.packets, open_at.packets);
  last_packets = open_at.packets;
  open_event = nullptr;
}

// Runs every event and engine action due by t (workers idle): each applied
// event closes the previous event's window and opens its own; a refused one
// changed nothing and leaves the open window open.
void Replay::State::runControl(uint64_t t) {
  json lines;
  Boundary b;
  ctl::ScriptedEvent* was_open = nullptr;
  std::vector<uint64_t> was_last;
  schedule->runUntil(
      t,
      [&](ctl::ScriptedEvent& e, uint64_t) {
        foldClasses();
        b = takeBoundary();
        was_open = open_event;
        was_last = last_packets;
        closeWindow(b);
        e.result["packets_before"] = packetDiff(b.packets, last_packets);
        lines = json::array();
        region_sink = &lines;
      },
      [&](ctl::ScriptedEvent& e, uint64_t) {
        region_sink = nullptr;
        e.result["region_changes"] = lines;
        e.result["listeners_after"] = listenersJson(engine->regions(), first_ts);
        if (!e.applied) {  // refused: the window it closed is open again (closed later)
          open_event = was_open;
          last_packets = std::move(was_last);
          return;
        }
        open_event = &e;
        open_sid = engine->registry().find(applianceKey(e.appliance));
        open_addrs = engine->registry().addresses();
        open_at = std::move(b);
      });
}

// Packets are dealt one by one, round-robin, so consecutive packets of a flow
// (and its returning Geneve traffic) meet on different workers. IP fragments
// are the exception: like a NIC's RSS, which hashes fragments on addresses
// only, all fragments of a datagram go to one worker, in order.
unsigned Replay::State::dealTo(rte_mbuf* m) {
  ParsedPacket p;
  Counter why;
  if (o.workers > 1 &&
      parseFrame(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, p, why) == ParseStatus::kOk &&
      p.is_fragment) {
    uint32_t h = p.tuple.src.v4HostOrder() ^ p.tuple.dst.v4HostOrder() ^ p.frag_id ^
                 (uint32_t(p.tuple.src.b[15]) << 8) ^ p.tuple.dst.b[15];
    return (h ^ (h >> 16)) % o.workers;
  }
  unsigned w = rr;
  rr = (rr + 1) % o.workers;
  return w;
}

void Replay::State::feedBurst() {
  for (auto& j : round) j = nullptr;
  unsigned taken = 0;
  auto add = [&](rte_mbuf* m) {
    unsigned w = dealTo(m);
    if (!round[w]) {
      round[w] = getJob();
      round[w]->n = 0;
      round[w]->now_ns = now;
    }
    round[w]->pkts[round[w]->n++] = m;
    ++taken;
  };
  if (!pending_reflect.empty()) {
    // Reflected packets go first: an appliance answers before new traffic.
    while (taken < o.burst && !pending_reflect.empty()) {
      add(pending_reflect.front());
      pending_reflect.pop_front();
    }
  } else {
    now = frames[next].ts_ns;
    const uint64_t due = schedule->nextDue();  // a burst never spans a control action
    while (taken < o.burst && next < frames.size() && frames[next].ts_ns < due) {
      const Frame& f = frames[next];
      rte_mbuf* m = rte_pktmbuf_alloc(pool);
      if (!m) {
        ++alloc_retries;
        break;
      }
      // Fits: the pool's data room is at least the largest frame read.
      std::memcpy(rte_pktmbuf_append(m, uint16_t(f.bytes.size())), f.bytes.data(), f.bytes.size());
      m->port = f.port;
      tsOf(m) = f.ts_ns;
      if (!f.appliance_in) timeline->input(f.ts_ns, uint32_t(f.bytes.size()));
      add(m);
      ++next;
    }
  }
  for (unsigned w = 0; w < o.workers; ++w)
    if (round[w])
      while (rte_ring_enqueue(workers[w].in, round[w]) != 0) rte_pause();
}

bool Replay::step() {
  State& s = *st_;
  if (s.next >= s.frames.size() && s.pending_reflect.empty()) return false;
  if (s.pending_reflect.empty() && s.next < s.frames.size() &&
      s.frames[s.next].ts_ns >= s.schedule->nextDue()) {
    // A control action is due before this frame: every earlier packet, and
    // every reflection of one, is processed first; then the action runs
    // with the workers idle and this frame meets the new snapshot.
    if (!s.workersIdle()) {
      s.drain();
      sched_yield();
      return true;
    }
    s.drain();
    if (s.pending_reflect.empty()) {
      // Nothing is in flight: every later output is at least this frame's
      // time, so what the outputs hold can be written in time order now.
      s.to_app.flush();
      s.returned.flush();
      s.to_mirrors.flush();
      s.runControl(s.frames[s.next].ts_ns);
    }
    return true;
  }
  s.feedBurst();
  // Keep the reflect loop honest: let workers finish what is queued, then drain.
  s.drain();
  if (s.next >= s.frames.size() && s.pending_reflect.empty()) {
    // Wait for all workers to go idle, then drain what they produced.
    while (!s.workersIdle()) {
      s.drain();
      sched_yield();
    }
    s.drain();
  }
  return true;
}

int Replay::finish() {
  State& s = *st_;
  g.stop.store(true, std::memory_order_release);
  rte_eal_mp_wait_lcore();
  s.drain();
  s.to_app.close();
  s.returned.close();
  s.to_mirrors.close();
  s.closeWindow(s.takeBoundary());
  s.foldClasses();
  for (const ctl::ScriptedEvent& e : s.events)
    if (!e.applied && e.refused.empty())
      std::fprintf(stderr,
                   "gwlb-replay: warning: events[%zu] at %s comes after the last packet; "
                   "not applied\n",
                   e.index, ctl::secondsText(e.at_ns).c_str());

  SummaryInput in{s.o, *s.engine, *s.flows, s.events, s.cs};
  in.n_router_in = s.n_router_in;
  in.appliance_in = s.frames.size() - s.n_router_in;
  in.to_appliances = s.to_app.count();
  in.returned = s.returned.count();
  in.to_mirrors = s.to_mirrors.count();
  in.reflected = s.reflected;
  in.reflected_bypass = s.reflected_bypass;
  in.alloc_retries = s.alloc_retries;
  in.first_ts = s.first_ts;
  for (auto& w : s.workers)
    for (size_t k = 0; k < kNumCounters; ++k) in.total.v[k] += w.state.counters.v[k];
  in.lifecycle_changes = &s.lifecycle_changes;
  in.region_changes = &s.region_changes;
  in.service_changes = &s.service_changes;
  in.timeline = s.timeline.get();
  in.classes = &s.class_totals;
  writeSummary(in);
  return warnLosses(in.total, s.engine->config(), s.o.strict);
}

size_t Replay::fed() const { return st_->next; }
size_t Replay::total() const { return st_->frames.size(); }
uint64_t Replay::captureNow() const { return st_->now - std::min(st_->now, st_->first_ts); }
uint64_t Replay::captureSpan() const {
  const State& s = *st_;
  return s.frames.empty() ? 0 : s.frames.back().ts_ns - std::min(s.frames.back().ts_ns, s.first_ts);
}

}  // namespace gwlb::replay
