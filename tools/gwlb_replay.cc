// gwlb-replay: runs the real worker pipeline over a capture file.
//
// The main lcore reads the captures, hands bursts to worker lcores through rings
// (round-robin, so both directions of a flow and its returning Geneve traffic
// land on different workers when there are two), collects what the workers emit,
// writes it to pcap files and, with --reflect, plays a transparent appliance:
// every Geneve packet goes back with outer addresses swapped and the Geneve
// header untouched. The capture's timestamps are the clock.
//
// --events FILE changes appliances at capture times (docs/replay.md): before the
// first packet at or after an event, every earlier packet (and its reflection)
// is processed, then the event goes through the same control code as gwlbd's
// (ServerLifecycle, health map, buildSnapshot) and a new snapshot is published.
// Every snapshot build first updates a ctl::RegionTracker with the capture
// time, as gwlbd's rebuildSnapshot() does (listeners, composites, failover to
// another region); a failback hold that ends in capture time triggers a build
// like a drain deadline does.
#include <getopt.h>
#include <pcap/pcap.h>
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <sched.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/counters.h"
#include "common/health.h"
#include "common/packet_parser.h"
#include "control/config.h"
#include "control/regions.h"
#include "control/snapshot_builder.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"

using namespace gwlb;

namespace {

constexpr unsigned kRing = 4096;
// Mbuf data room: at least kDataRoom (9216-byte jumbo frames and more), raised to
// the largest frame of the captures, up to what one mbuf can hold (its buffer
// length is 16 bits). The pipeline takes single-segment frames only, so a larger
// frame is not fed: it is counted (summary.json frames_too_large) and warned
// about, never cut short and then blamed on the packet (issue 14, item 18).
constexpr unsigned kDataRoom = 10240;
constexpr unsigned kMaxDataRoom = UINT16_MAX - RTE_PKTMBUF_HEADROOM;
constexpr size_t kPoolBytes = 192u << 20;  // the mbuf pool's budget with larger frames
constexpr uint16_t kRouterPort = 0;

struct Options {
  std::string config, in, out_dir, appliance_in, events;
  bool reflect = false;
  unsigned workers = 1;
  unsigned burst = 32;
};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: gwlb-replay --config FILE --in PCAP --out-dir DIR [--reflect]\n"
               "                   [--appliance-in PCAP] [--events FILE] [--workers N] [--burst N]\n"
               "Runs gwlbd's worker pipeline over a capture. Writes DIR/to-appliances.pcap,\n"
               "DIR/returned.pcap and DIR/summary.json.\n"
               "  --reflect          act as transparent appliances: send every Geneve packet back\n"
               "  --appliance-in F   also feed F as traffic arriving from the appliances\n"
               "  --events FILE      YAML list of appliance changes at capture times, applied as\n"
               "                     gwlbd would (docs/replay.md), e.g.\n"
               "                       - { at: 4s, server: 192.0.2.10, health: unhealthy }\n"
               "                       - { at: 6.5s, server: 192.0.2.11, remove: true }\n"
               "                       - { at: 7s, server: 192.0.2.12, drain: true, timeout: 30s }\n"
               "                     actions: health: unhealthy|healthy, remove: true,\n"
               "                     add: GROUP [weight: N], weight: N, drain: true [timeout: T],\n"
               "                     undrain: true; `at` counts from the first packet's timestamp.\n"
               "                     Listeners, composite health checks and failover between\n"
               "                     regions follow the config as in gwlbd (region log on stderr)\n"
               "  --workers N        worker lcores (1..8, default 1); packets are dealt round-robin\n"
               "  --burst N          packets per burst (1..256, default 32)\n");
}

struct Frame {
  uint64_t ts_ns;
  uint16_t port;
  std::vector<uint8_t> bytes;
};

// What the captures held beyond the ordinary: frames the capture itself cut
// (caplen < len: its snaplen) and frames too large for one mbuf.
struct CaptureStats {
  size_t largest = 0;        // bytes of the largest frame read
  uint64_t cut_by_capture = 0;
  uint64_t too_large = 0;    // not fed: larger than kMaxDataRoom
  size_t largest_skipped = 0;
};

bool readPcap(const std::string& path, uint16_t port, std::vector<Frame>& out, std::string& err,
              CaptureStats& cs) {
  char eb[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, eb);
  if (!p) return err = path + ": " + eb, false;
  if (pcap_datalink(p) != DLT_EN10MB) {
    pcap_close(p);
    return err = path + ": link type is not Ethernet", false;
  }
  pcap_pkthdr* h;
  const u_char* d;
  int rc;
  while ((rc = pcap_next_ex(p, &h, &d)) == 1) {
    if (h->caplen < h->len) ++cs.cut_by_capture;
    if (h->caplen > kMaxDataRoom) {
      ++cs.too_large;
      cs.largest_skipped = std::max<size_t>(cs.largest_skipped, h->caplen);
      continue;
    }
    cs.largest = std::max<size_t>(cs.largest, h->caplen);
    Frame f;
    f.ts_ns = uint64_t(h->ts.tv_sec) * 1'000'000'000ULL + uint64_t(h->ts.tv_usec);
    f.port = port;
    f.bytes.assign(d, d + h->caplen);
    out.push_back(std::move(f));
  }
  pcap_close(p);
  if (rc == -1) return err = path + ": read error", false;
  return true;
}

class PcapWriter {
 public:
  bool open(const std::string& path, std::string& err) {
    dead_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
    dump_ = pcap_dump_open(dead_, path.c_str());
    if (!dump_) return err = path + ": " + pcap_geterr(dead_), false;
    return true;
  }
  void write(const rte_mbuf* m, uint64_t ts_ns) {
    pcap_pkthdr h{};
    h.ts.tv_sec = long(ts_ns / 1'000'000'000ULL);
    h.ts.tv_usec = long(ts_ns % 1'000'000'000ULL);
    h.caplen = h.len = m->pkt_len;
    pcap_dump(reinterpret_cast<u_char*>(dump_), &h, rte_pktmbuf_mtod(m, const u_char*));
    ++count_;
  }
  void close() {
    if (dump_) pcap_dump_close(dump_);
    if (dead_) pcap_close(dead_);
    dump_ = nullptr;
    dead_ = nullptr;
  }
  uint64_t count() const { return count_; }

 private:
  pcap_t* dead_ = nullptr;
  pcap_dumper_t* dump_ = nullptr;
  uint64_t count_ = 0;
};

// One unit of work between the main lcore and a worker: a burst and its clock.
struct Job {
  uint64_t now_ns;
  uint16_t n;
  rte_mbuf* pkts[dp::kMaxBurst];
};

struct WorkerSlot {
  dp::WorkerState state;
  rte_ring* in = nullptr;     // Job* from main
  rte_ring* out = nullptr;    // rte_mbuf* to main, tagged by mbuf->hash.usr (0 appliance, 1 router)
  unsigned lcore = 0;
};

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
    // The main lcore drains continuously; spin rather than drop test output.
    for (uint16_t i = 0; i < out.n_appliance; ++i)
      while (rte_ring_enqueue(ws.out, out.to_appliance[i]) != 0) rte_pause();
    for (uint16_t i = 0; i < out.n_router; ++i)
      while (rte_ring_enqueue(ws.out, out.to_router[i]) != 0) rte_pause();
    // The job's pkts are consumed; the job itself goes back.
    rte_ring_enqueue(g.free_jobs, job);
    rte_rcu_qsbr_quiescent(g.qsbr, idx);
  }
  rte_rcu_qsbr_thread_offline(g.qsbr, idx);
  rte_rcu_qsbr_thread_unregister(g.qsbr, idx);
  return 0;
}

// The transparent appliance: swap outer MACs and IPv4 addresses, keep UDP ports
// and the Geneve header. Swapping addresses leaves both checksums valid.
void reflect(rte_mbuf* m) {
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  uint8_t tmp[6];
  std::memcpy(tmp, f, 6);
  std::memcpy(f, f + 6, 6);
  std::memcpy(f + 6, tmp, 6);
  uint8_t ip[4];
  std::memcpy(ip, f + 14 + 12, 4);
  std::memcpy(f + 14 + 12, f + 14 + 16, 4);
  std::memcpy(f + 14 + 16, ip, 4);
}

// --- --events: control-plane changes at capture times -------------------------------------

constexpr uint64_t kNsPerS = 1'000'000'000ULL;

enum class Action : uint8_t { kHealth, kRemove, kAdd, kWeight, kDrain, kUndrain };

struct Event {
  size_t index = 0;
  int line = 0;                        // in the events file (1-based)
  uint64_t at_ns = 0;                  // after the capture's first timestamp
  IpAddr server;
  Action action = Action::kHealth;
  bool unhealthy = false;              // kHealth
  std::string group;                   // kAdd
  std::optional<uint32_t> weight;      // kAdd (optional), kWeight
  std::optional<uint32_t> timeout_s;   // kDrain (optional)
  // Filled in by the run.
  bool applied = false;
  nlohmann::json result = nlohmann::json::object();
};

const char* actionName(const Event& e) {
  switch (e.action) {
    case Action::kHealth: return e.unhealthy ? "unhealthy" : "healthy";
    case Action::kRemove: return "remove";
    case Action::kAdd: return "add";
    case Action::kWeight: return "weight";
    case Action::kDrain: return "drain";
    case Action::kUndrain: return "undrain";
  }
  return "?";
}

std::string secondsText(uint64_t ns) {
  char b[48];
  std::snprintf(b, sizeof b, "%.9g s", double(ns) / 1e9);
  return b;
}

// "2.5s", "1500ms", "2" or "0.25" (seconds) into ns: digits, an optional
// fraction (down to 1 ns), an optional unit. False when malformed or past 10^7 s.
bool parseDurationNs(std::string t, uint64_t& ns) {
  uint64_t unit = kNsPerS;
  size_t max_frac = 9;
  if (t.size() > 2 && t.compare(t.size() - 2, 2, "ms") == 0) {
    unit = 1'000'000ULL;
    max_frac = 6;
    t.resize(t.size() - 2);
  } else if (!t.empty() && t.back() == 's') {
    t.pop_back();
  }
  size_t dot = t.find('.');
  std::string ip = t.substr(0, dot), fp = dot == std::string::npos ? "" : t.substr(dot + 1);
  auto digits = [](const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(ip) || ip.size() > 10) return false;
  if (dot != std::string::npos && (!digits(fp) || fp.size() > max_frac)) return false;
  uint64_t whole = std::stoull(ip);
  if (whole > 10'000'000'000'000'000ULL / unit) return false;  // past 10^7 s
  uint64_t frac = 0, scale = 1;
  for (char c : fp) {
    frac = frac * 10 + uint64_t(c - '0');
    scale *= 10;
  }
  ns = whole * unit + frac * (unit / scale);
  return true;
}

// Every problem in an events file stops the replay before it starts.
struct EventError {
  std::string text;
};

[[noreturn]] void eventFail(const std::string& text) { throw EventError{text}; }

bool isTrue(const std::string& s) { return s == "true"; }  // as the config loader reads booleans

std::vector<Event> parseEvents(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    eventFail(path + ": cannot read the file");
  } catch (const YAML::Exception& e) {
    eventFail(path + ": YAML syntax error at line " + std::to_string(e.mark.line + 1) + ", column " +
              std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  if (root.IsNull()) return {};
  if (!root.IsSequence())
    eventFail(path + ": must be a YAML list of events, e.g.\n"
              "  - { at: 2s, server: 192.0.2.10, health: unhealthy }");
  static const char* kKeys[] = {"at", "server", "health", "remove", "add",
                                "weight", "drain", "timeout", "undrain"};
  static const char* kActions[] = {"health", "remove", "add", "weight", "drain", "undrain"};
  std::vector<Event> out;
  for (size_t i = 0; i < root.size(); ++i) {
    const YAML::Node n = root[i];
    std::string p = "events[" + std::to_string(i) + "]";
    std::string where = " (line " + std::to_string(n.Mark().line + 1) + ")";
    if (!n.IsMap())
      eventFail(p + where + ": must be a mapping such as {at: 2s, server: 192.0.2.10, remove: true}");
    std::map<std::string, std::string> v;
    for (const auto& kv : n) {
      std::string k = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys)) {
        std::string allowed;
        for (const char* a : kKeys) allowed += std::string(allowed.empty() ? "" : ", ") + a;
        eventFail(p + where + ": unknown key '" + k + "'; allowed keys: " + allowed);
      }
      if (!kv.second.IsScalar())
        eventFail(p + "." + k + where + ": must be a single value");
      if (!v.emplace(k, kv.second.Scalar()).second)
        eventFail(p + "." + k + where + ": given twice");
    }
    Event e;
    e.index = i;
    e.line = n.Mark().line + 1;
    if (!v.count("at")) eventFail(p + where + ": missing key 'at' (e.g. at: 2.5s)");
    if (!parseDurationNs(v["at"], e.at_ns))
      eventFail(p + ".at" + where + ": '" + v["at"] +
                "' is not a time after the first packet (e.g. 2.5s, 1500ms, 3 for seconds)");
    if (!v.count("server")) eventFail(p + where + ": missing key 'server' (an appliance address)");
    auto ip = IpAddr::parse(v["server"]);
    if (!ip || !ip->isV4())
      eventFail(p + ".server" + where + ": '" + v["server"] + "' is not an IPv4 address");
    e.server = *ip;
    std::vector<std::string> acts;
    for (const char* a : kActions)
      if (v.count(a) && !(std::string(a) == "weight" && v.count("add"))) acts.push_back(a);
    if (acts.empty())
      eventFail(p + where + ": no action; give one of health, remove, add, weight, drain, undrain");
    if (acts.size() > 1)
      eventFail(p + where + ": two actions in one event (" + acts[0] + " and " + acts[1] +
                "); give one action per event");
    if (v.count("timeout") && acts[0] != "drain")
      eventFail(p + ".timeout" + where + ": only allowed with drain");
    const std::string& a = acts[0];
    const std::string& val = v[a];
    auto mustBeTrue = [&]() {
      if (!isTrue(val))
        eventFail(p + "." + a + where + ": '" + val + "' must be true (leave the event out instead)");
    };
    auto weight = [&]() -> uint32_t {
      const std::string& w = v["weight"];
      if (w.empty() || w.size() > 5 || w.find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(w) > 10000)
        eventFail(p + ".weight" + where + ": '" + w + "' is not a weight from 0 to 10000");
      return uint32_t(std::stoul(w));
    };
    if (a == "health") {
      e.action = Action::kHealth;
      if (val == "unhealthy") e.unhealthy = true;
      else if (val != "healthy")
        eventFail(p + ".health" + where + ": '" + val + "' is not healthy or unhealthy");
    } else if (a == "remove") {
      e.action = Action::kRemove;
      mustBeTrue();
    } else if (a == "add") {
      e.action = Action::kAdd;
      e.group = val;
      if (val.empty()) eventFail(p + ".add" + where + ": needs a server group name");
      if (v.count("weight")) e.weight = weight();
    } else if (a == "weight") {
      e.action = Action::kWeight;
      e.weight = weight();
    } else if (a == "drain") {
      e.action = Action::kDrain;
      mustBeTrue();
      if (v.count("timeout")) {
        uint64_t ns = 0;
        if (!parseDurationNs(v["timeout"], ns) || ns % kNsPerS || ns < kNsPerS ||
            ns > 3600 * kNsPerS)
          eventFail(p + ".timeout" + where + ": '" + v["timeout"] +
                    "' is not a whole number of seconds from 1 s to 3600 s (e.g. 30s)");
        e.timeout_s = uint32_t(ns / kNsPerS);
      }
    } else {
      e.action = Action::kUndrain;
      mustBeTrue();
    }
    if (!out.empty() && e.at_ns < out.back().at_ns)
      eventFail(p + ".at" + where + ": " + secondsText(e.at_ns) + " is before events[" +
                std::to_string(i - 1) + "].at (" + secondsText(out.back().at_ns) +
                "); events must be in time order");
    out.push_back(std::move(e));
  }
  return out;
}

// Applies one event at now_ns to the control state the way gwlbd's API does
// (server.add/remove/set go through ServerLifecycle::applyConfig, drain and
// undrain through the lifecycle, health through the health map). Returns ""
// or "KEY: what is wrong".
std::string applyEvent(const Event& e, ctl::Config& cfg, ctl::HealthMap& health,
                       ctl::ServerLifecycle& life, uint64_t now_ns) {
  const uint32_t ip = e.server.v4HostOrder();
  const std::string addr = e.server.str();
  ctl::ServerGroupConfig* in_group = nullptr;
  for (auto& gc : cfg.server_groups)
    for (size_t s = 0; s < gc.servers.size(); ++s)
      if (gc.servers[s].address == e.server) in_group = &gc;
  auto notConfigured = [&]() {
    std::string list;
    for (auto& gc : cfg.server_groups)
      for (auto& s : gc.servers) list += (list.empty() ? "" : ", ") + s.address.str();
    return "server: " + addr + " is not a configured appliance at this point (configured: " + list +
           ")";
  };
  auto change = [&](ctl::Config next, const char* key) -> std::string {
    std::vector<ctl::ConfigError> errors;
    if (!ctl::validateConfig(next, errors)) {
      std::string t = ctl::formatErrors(errors);
      if (!t.empty() && t.back() == '\n') t.pop_back();
      return std::string(key) + ": the config would become invalid: " + t;
    }
    life.applyConfig(cfg, next, now_ns, "removed by event");
    cfg = std::move(next);
    return "";
  };
  switch (e.action) {
    case Action::kHealth:
      if (!in_group) return notConfigured();
      health[ip] = e.unhealthy ? HealthState::kUnhealthy : HealthState::kHealthy;
      return "";
    case Action::kRemove: {
      if (!in_group) return notConfigured();
      ctl::Config next = cfg;
      for (auto& gc : next.server_groups)
        gc.servers.erase(std::remove_if(gc.servers.begin(), gc.servers.end(),
                                        [&](const ctl::ServerConfig& s) { return s.address == e.server; }),
                         gc.servers.end());
      std::string err = change(std::move(next), "remove");
      if (err.empty()) health.erase(ip);  // like gwlbd: a removed appliance is no longer checked
      return err;
    }
    case Action::kAdd: {
      if (in_group)
        return "add: " + addr + " is already an appliance of group '" + in_group->name + "'";
      ctl::Config next = cfg;
      ctl::ServerGroupConfig* g = nullptr;
      std::string names;
      for (auto& gc : next.server_groups) {
        names += (names.empty() ? "'" : ", '") + gc.name + "'";
        if (gc.name == e.group) g = &gc;
      }
      if (!g) return "add: no server group '" + e.group + "' (groups: " + names + ")";
      ctl::ServerConfig sc;
      sc.address = e.server;
      if (e.weight) sc.weight = *e.weight;
      g->servers.push_back(sc);
      return change(std::move(next), "add");
    }
    case Action::kWeight: {
      if (!in_group) return notConfigured();
      ctl::Config next = cfg;
      for (auto& gc : next.server_groups)
        for (auto& s : gc.servers)
          if (s.address == e.server) s.weight = *e.weight;
      return change(std::move(next), "weight");
    }
    case Action::kDrain: {
      if (!in_group) return notConfigured();
      std::string err = life.drain(cfg, ip, e.timeout_s, now_ns);
      return err.empty() ? "" : "drain: " + addr + ": " + err;
    }
    case Action::kUndrain: {
      if (!in_group) return notConfigured();
      std::string err = life.undrain(ip);
      return err.empty() ? "" : "undrain: " + addr + ": " + err;
    }
  }
  return "";
}

// Runs every event against a scratch copy of the control state so that a bad
// file fails before any packet moves (the run applies the same functions).
void checkEvents(const std::vector<Event>& events, const ctl::Config& cfg) {
  ctl::Config c = cfg;
  ctl::HealthMap h;
  ctl::ServerLifecycle life;
  for (const Event& e : events) {
    std::string err = applyEvent(e, c, h, life, e.at_ns);
    if (err.empty()) continue;
    size_t colon = err.find(": ");  // "KEY: text" -> "events[i].KEY (line N): text"
    eventFail("events[" + std::to_string(e.index) + "]." + err.substr(0, colon) + " (line " +
              std::to_string(e.line) + ")" + err.substr(colon));
  }
}

// The state at an event boundary, taken while every worker is idle: which
// appliance each flow is on, and what each appliance has received so far.
struct Boundary {
  std::unordered_map<std::string, uint16_t> flows;  // FlowKey bytes -> server id
  std::vector<uint64_t> packets;                   // by server id
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  static option longopts[] = {{"config", required_argument, nullptr, 'c'},
                              {"in", required_argument, nullptr, 'i'},
                              {"out-dir", required_argument, nullptr, 'o'},
                              {"reflect", no_argument, nullptr, 'r'},
                              {"appliance-in", required_argument, nullptr, 'a'},
                              {"events", required_argument, nullptr, 'e'},
                              {"workers", required_argument, nullptr, 'w'},
                              {"burst", required_argument, nullptr, 'b'},
                              {"help", no_argument, nullptr, 'h'},
                              {nullptr, 0, nullptr, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
    switch (ch) {
      case 'c': o.config = optarg; break;
      case 'i': o.in = optarg; break;
      case 'o': o.out_dir = optarg; break;
      case 'r': o.reflect = true; break;
      case 'a': o.appliance_in = optarg; break;
      case 'e': o.events = optarg; break;
      case 'w': o.workers = unsigned(std::strtoul(optarg, nullptr, 10)); break;
      case 'b': o.burst = unsigned(std::strtoul(optarg, nullptr, 10)); break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (o.config.empty() || (o.in.empty() && o.appliance_in.empty()) || o.out_dir.empty() ||
      o.workers < 1 || o.workers > 8 || o.burst < 1 || o.burst > dp::kMaxBurst) {
    usage(stderr);
    return 2;
  }

  ctl::Config cfg;
  std::vector<ctl::ConfigError> errors;
  if (!ctl::loadConfigFile(o.config, cfg, errors)) {
    std::fprintf(stderr, "gwlb-replay: invalid config %s:\n%s", o.config.c_str(),
                 ctl::formatErrors(errors).c_str());
    return 2;
  }
  {
    // The config's flow hash key, or the zero key: a replay is reproducible.
    FlowHashKey key;
    bool configured = false;
    std::string err;
    if (!ctl::loadFlowHashKey(cfg.node, key, configured, err)) {
      std::fprintf(stderr, "gwlb-replay: invalid config %s:\n  %s\n", o.config.c_str(), err.c_str());
      return 2;
    }
    setFlowHashKey(key);
  }
  std::vector<Event> events;
  if (!o.events.empty()) {
    try {
      events = parseEvents(o.events);
      checkEvents(events, cfg);
    } catch (const EventError& e) {
      std::fprintf(stderr, "gwlb-replay: invalid events file %s:\n%s\n", o.events.c_str(),
                   e.text.c_str());
      return 2;
    }
  }
  std::vector<Frame> frames;
  std::string err;
  CaptureStats cs;
  if (!o.in.empty() && !readPcap(o.in, kRouterPort, frames, err, cs)) {
    std::fprintf(stderr, "gwlb-replay: %s\n", err.c_str());
    return 2;
  }
  size_t n_router_in = frames.size();
  if (!o.appliance_in.empty() &&
      !readPcap(o.appliance_in, cfg.node.underlay_port, frames, err, cs)) {
    std::fprintf(stderr, "gwlb-replay: %s\n", err.c_str());
    return 2;
  }
  if (cs.too_large)
    std::fprintf(stderr,
                 "gwlb-replay: warning: %llu frame(s) larger than one mbuf holds (%u bytes; "
                 "largest %zu) not replayed (summary.json frames_too_large)\n",
                 (unsigned long long)cs.too_large, kMaxDataRoom, cs.largest_skipped);
  if (cs.cut_by_capture)
    std::fprintf(stderr,
                 "gwlb-replay: warning: %llu frame(s) were cut by the capture (shorter than on "
                 "the wire: snaplen); replayed as captured (summary.json frames_cut_by_capture)\n",
                 (unsigned long long)cs.cut_by_capture);
  const unsigned data_room = std::max<unsigned>(kDataRoom, unsigned(cs.largest));
  const unsigned n_mbufs =
      data_room == kDataRoom
          ? 16383
          : unsigned(std::clamp<size_t>(kPoolBytes / (data_room + RTE_PKTMBUF_HEADROOM + 192) | 1,
                                        2047, 16383));
  std::stable_sort(frames.begin(), frames.end(),
                   [](const Frame& a, const Frame& b) { return a.ts_ns < b.ts_ns; });
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  PcapWriter to_app, returned;
  if (!to_app.open(o.out_dir + "/to-appliances.pcap", err) ||
      !returned.open(o.out_dir + "/returned.pcap", err)) {
    std::fprintf(stderr, "gwlb-replay: %s\n", err.c_str());
    return 2;
  }

  std::string lcores = "--lcores=0@(0-1)";
  for (unsigned i = 1; i <= o.workers; ++i) lcores += "," + std::to_string(i) + "@(0-1)";
  try {
    dp::initEal("gwlb-replay", {"--no-huge", "--no-pci", "--no-shconf", "-m", "512",
                                "--log-level=*:warning", "--no-telemetry", lcores});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gwlb-replay: %s\n", e.what());
    return 2;
  }

  int rc = 0;
  try {
    rte_mempool* pool = dp::createMbufPool("replay_pool", n_mbufs, data_room);
    g.qsbr = dp::createQsbr(o.workers);
    dp::FlowTable flows("replay_flows", std::max<uint32_t>(cfg.dataplane.flow_table_size, 1024),
                        g.qsbr, int(rte_socket_id()));

    // The control state, kept as gwlbd keeps it; --events changes it at capture
    // times. `cfg` is the running config from here on.
    ctl::ServerRegistry reg;
    ctl::HealthMap health;
    ctl::ServerLifecycle life;
    // Listeners and regions (control/regions.h): updated before every build,
    // as gwlbd's Daemon::rebuildSnapshot() does; each line it logs is kept.
    ctl::RegionTracker regions;
    const uint64_t first_ts = frames.empty() ? 0 : frames.front().ts_ns;
    auto rel = [&](uint64_t t) { return double(t - std::min(t, first_ts)) / 1e9; };
    nlohmann::json region_changes = nlohmann::json::array();
    nlohmann::json* region_sink = nullptr;  // also the current event's lines
    auto updateRegions = [&](uint64_t t) {
      std::vector<std::string> lines;
      regions.update(cfg, health, &life, t, &lines);
      for (const std::string& line : lines) {
        std::fprintf(stderr, "gwlb-replay: regions at %s: %s\n", secondsText(t - std::min(t, first_ts)).c_str(),
                     line.c_str());
        region_changes.push_back({{"at_s", rel(t)}, {"line", line}});
        if (region_sink) region_sink->push_back(line);
      }
    };
    uint64_t generation = 1;
    updateRegions(first_ts);
    std::unique_ptr<dp::Snapshot> snap =
        ctl::buildSnapshot(cfg, reg, {}, generation, health, &life, &regions);
    g.dp.flows = &flows;
    g.dp.snapshot.store(snap.get());
    // A replaced snapshot is freed once every worker has passed a quiescent
    // point after the swap (rte_rcu_qsbr, as gwlbd does); those still waiting
    // when the replay ends are freed after the workers have stopped.
    struct Retired {
      std::unique_ptr<dp::Snapshot> snap;
      uint64_t token;
    };
    std::deque<Retired> retired;
    auto retireSnapshots = [&]() {
      while (!retired.empty() &&
             rte_rcu_qsbr_check(g.qsbr, retired.front().token, false) == 1)
        retired.pop_front();
    };
    auto publish = [&](uint64_t t) {
      updateRegions(t);
      std::unique_ptr<dp::Snapshot> s =
          ctl::buildSnapshot(cfg, reg, {}, ++generation, health, &life, &regions);
      g.dp.snapshot.store(s.get(), std::memory_order_release);
      retired.push_back({std::move(snap), rte_rcu_qsbr_start(g.qsbr)});
      snap = std::move(s);
      retireSnapshots();
    };

    // Each listener's state as the tracker has it now (summary.json).
    auto listenersJson = [&]() {
      nlohmann::json j = nlohmann::json::object();
      for (const ctl::RegionTracker::Listener& l : regions.listeners()) {
        auto groupOf = [&](int i) -> nlohmann::json {
          if (i < 0 || size_t(i) >= l.regions.size()) return nullptr;
          return l.regions[size_t(i)].group;
        };
        nlohmann::json rj = nlohmann::json::array();
        for (const ctl::RegionTracker::Region& r : l.regions)
          rj.push_back({{"group", r.group},
                        {"healthy", r.healthy},
                        {"healthy_with_dry_run", r.healthy_with_dry_run},
                        {"healthy_since_s", r.healthy ? nlohmann::json(rel(r.healthy_since_ns))
                                                      : nlohmann::json(nullptr)}});
        j[l.name] = {{"active_group", groupOf(l.active)},
                     {"would_be_active_group", groupOf(l.would_be_active)},
                     {"healthy", l.destination_healthy},
                     {"healthy_with_dry_run", l.destination_healthy_with_dry_run},
                     {"since_s", rel(l.since_ns)},
                     {"reason", l.reason},
                     {"regions", rj}};
      }
      return j;
    };
    auto compositesJson = [&]() {
      nlohmann::json j = nlohmann::json::array();
      for (const ctl::RegionTracker::Composite& c : regions.composites()) {
        nlohmann::json sj = nlohmann::json::array();
        for (const ctl::RegionTracker::Source& so : c.sources)
          sj.push_back({{"name", so.name},
                        {"server_group", so.group},
                        {"policy", so.policy},
                        {"servers", so.servers},
                        {"healthy_servers", so.healthy},
                        {"healthy", so.ok},
                        {"why", so.why}});
        j.push_back({{"name", c.name},
                     {"destination", c.destination},
                     {"dry_run", c.dry_run},
                     {"healthy", c.healthy},
                     {"since_s", rel(c.since_ns)},
                     {"changes", c.changes},
                     {"sources", sj}});
      }
      return j;
    };

    std::vector<WorkerSlot> workers(o.workers);
    g.workers = &workers;
    g.free_jobs = dp::createRing("free_jobs", 1024, false);
    std::vector<Job> jobs(1023);
    for (auto& j : jobs) rte_ring_enqueue(g.free_jobs, &j);
    for (unsigned i = 0; i < o.workers; ++i) {
      workers[i].state.id = uint16_t(i);
      workers[i].state.rng ^= uint64_t(i + 1) * 0x9E3779B97F4A7C15ULL;
      workers[i].in = dp::createRing("w_in" + std::to_string(i), kRing, true);
      workers[i].out = dp::createRing("w_out" + std::to_string(i), kRing * 4, true);
    }
    unsigned lc = rte_get_next_lcore(-1, 1, 0);
    for (unsigned i = 0; i < o.workers; ++i, lc = rte_get_next_lcore(lc, 1, 0)) {
      workers[i].lcore = lc;
      rte_eal_remote_launch(workerMain, reinterpret_cast<void*>(uintptr_t(i)), lc);
    }

    // Main loop: feed frames in bursts, drain outputs, reflect Geneve packets.
    std::deque<rte_mbuf*> pending_reflect;
    size_t next = 0;
    unsigned rr = 0;
    uint64_t now = first_ts;
    uint64_t last_expire = now;
    uint64_t reflected = 0, alloc_retries = 0;

    auto getJob = [&]() {
      void* obj;
      while (rte_ring_dequeue(g.free_jobs, &obj) != 0) rte_pause();
      return static_cast<Job*>(obj);
    };
    auto drain = [&]() {
      void* objs[256];
      for (auto& w : workers) {
        unsigned k;
        while ((k = rte_ring_dequeue_burst(w.out, objs, 256, nullptr)) > 0) {
          for (unsigned i = 0; i < k; ++i) {
            auto* m = static_cast<rte_mbuf*>(objs[i]);
            if (m->hash.usr == 0) {
              to_app.write(m, now);
              if (o.reflect) {
                reflect(m);
                m->port = cfg.node.underlay_port;
                pending_reflect.push_back(m);
                ++reflected;
                continue;
              }
            } else {
              returned.write(m, now);
            }
            rte_pktmbuf_free(m);
          }
        }
      }
    };
    // Every job is back (and so every output is in an out ring).
    auto workersIdle = [&]() {
      bool idle = true;
      for (auto& w : workers) idle = idle && rte_ring_empty(w.in);
      return idle && rte_ring_count(g.free_jobs) == jobs.size();
    };

    // --- control actions at capture times: events, drain deadlines, housekeeping ---
    nlohmann::json lifecycle_changes = nlohmann::json::array();
    // ServerLifecycle::tick with fresh per-server flow counts (gwlbd's
    // lifecycleTick). With `sweep` (once a capture-second, as gwlbd's slow
    // timer), flows still on leaving appliances that shed their flows move
    // first, so such an appliance is forgotten without waiting for packets.
    auto lifecycleTick = [&](uint64_t t, bool sweep) {
      if (life.entries().empty()) return;
      std::map<uint32_t, dp::ServerPhase> before;
      for (auto& [ip, e] : life.entries()) before[ip] = e.phase;
      if (sweep) life.addSwept(flows.sweepMoves(*snap, t));
      std::vector<uint32_t> counts;
      flows.countByServer(counts);
      if (!life.tick(t, &counts, reg.addresses())) return;
      for (auto& [ip, ph] : before) {
        const ctl::ServerLifecycle::Entry* e = life.find(ip);
        dp::ServerPhase now_ph = e ? e->phase : dp::ServerPhase::kGone;
        if (now_ph == ph) continue;
        // tick() ends a drain early only when no flow is left on it.
        std::string why = !e ? (ph == dp::ServerPhase::kDraining ? "no flow left: drain over, forgotten"
                                                                 : "no flow left: forgotten")
                          : e->flows == 0 ? "no flow left: drain over"
                                          : "drain timeout";
        lifecycle_changes.push_back({{"at_s", rel(t)},
                                     {"server", IpAddr::v4(ip).str()},
                                     {"from", dp::toString(ph)},
                                     {"to", dp::toString(now_ph)},
                                     {"why", why},
                                     {"flows", e ? e->flows : 0}});
      }
      publish(t);
    };
    auto housekeeping = [&](uint64_t t) {
      std::vector<uint16_t> expired_on;
      flows.expire(t, 0, &expired_on);
      if (!expired_on.empty()) life.flowsExpired(expired_on, reg.addresses());
      flows.reclaim(false);
      lifecycleTick(t, true);
      last_expire = t;
    };
    auto serverPackets = [&]() {
      std::vector<uint64_t> v(reg.size(), 0);
      for (auto& w : workers)
        for (size_t id = 0; id < v.size() && id < dp::kMaxServerIds; ++id)
          v[id] += w.state.sentPackets(uint16_t(id));
      return v;
    };
    auto takeBoundary = [&]() {
      Boundary b;
      flows.forEach([&](const FlowKey& k, int32_t, const dp::FlowEntry& e) {
        uint64_t r = e.route.load(std::memory_order_acquire);
        if (k.kind == KeyKind::kFlow && (r & dp::kRouteSet))
          b.flows.emplace(std::string(reinterpret_cast<const char*>(&k), sizeof k),
                          dp::routeServer(r));
      });
      b.packets = serverPackets();
      return b;
    };
    std::vector<std::string> id_names;  // address text by server id
    auto addrOf = [&](uint16_t id) -> const std::string& {
      if (id_names.size() != reg.size()) {
        id_names.clear();
        for (uint32_t ip : reg.addresses()) id_names.push_back(IpAddr::v4(ip).str());
      }
      static const std::string unknown = "unknown";
      return id < id_names.size() ? id_names[id] : unknown;
    };
    auto packetDiff = [&](const std::vector<uint64_t>& to, const std::vector<uint64_t>& from) {
      nlohmann::json j = nlohmann::json::object();
      for (size_t id = 0; id < to.size(); ++id) {
        uint64_t d = to[id] - (id < from.size() ? from[id] : 0);
        if (d) j[addrOf(uint16_t(id))] = d;
      }
      return j;
    };
    // The window of an applied event runs from its boundary to the next one
    // (the next applied event, or the end of the replay).
    Event* open_event = nullptr;
    Boundary open_at;
    std::vector<uint64_t> last_packets;  // at the previous boundary (start: none)
    auto closeWindow = [&](const Boundary& b) {
      if (!open_event) return;
      std::map<std::string, uint64_t> moved;
      uint64_t stayed = 0, ended = 0, on_server = 0;
      uint16_t sid = reg.find(open_event->server.v4HostOrder());
      for (auto& [k, s] : open_at.flows) {
        if (s == sid) ++on_server;
        auto it = b.flows.find(k);
        if (it == b.flows.end()) {
          ++ended;
          continue;
        }
        if (it->second == s) ++stayed;
        else ++moved[addrOf(s) + "->" + addrOf(it->second)];
      }
      nlohmann::json& r = open_event->result;
      r["flows_moved"] = moved;
      r["flows_stayed"] = stayed;
      r["flows_ended"] = ended;
      r["flows_on_server_at_event"] = on_server;
      r["flows_at_event"] = open_at.flows.size();
      r["packets_after"] = packetDiff(b.packets, open_at.packets);
      last_packets = open_at.packets;
      open_event = nullptr;
    };
    auto evTime = [&](size_t i) { return first_ts + events[i].at_ns; };
    size_t next_ev = 0;
    auto applyNext = [&]() {
      Event& e = events[next_ev];
      Boundary b = takeBoundary();
      closeWindow(b);
      e.result["packets_before"] = packetDiff(b.packets, last_packets);
      std::string why = applyEvent(e, cfg, health, life, evTime(next_ev));
      if (!why.empty())  // checkEvents ran the same changes: cannot happen
        throw std::runtime_error("events[" + std::to_string(e.index) + "]." + why);
      e.applied = true;
      nlohmann::json lines = nlohmann::json::array();
      region_sink = &lines;
      publish(evTime(next_ev));
      region_sink = nullptr;
      e.result["region_changes"] = lines;
      e.result["listeners_after"] = listenersJson();
      open_event = &e;
      open_at = std::move(b);
      ++next_ev;
    };
    // When the next control action is due (capture time).
    auto dueAt = [&]() {
      uint64_t t = last_expire + kNsPerS;
      if (next_ev < events.size()) t = std::min(t, evTime(next_ev));
      if (auto d = life.nextDeadline()) t = std::min(t, *d);
      if (auto h = regions.nextHoldDeadline()) t = std::min(t, *h);
      return t;
    };
    // Runs, in time order, every event, drain deadline and failback hold end
    // at or before t, then the once-per-capture-second housekeeping when due.
    // Workers are idle.
    auto control = [&](uint64_t t) {
      for (;;) {
        std::optional<uint64_t> dl = life.nextDeadline();
        std::optional<uint64_t> hd = regions.nextHoldDeadline();
        bool ev = next_ev < events.size() && evTime(next_ev) <= t;
        bool dd = dl && *dl <= t;
        bool hh = hd && *hd <= t;
        if (!ev && !dd && !hh) break;
        if (hh && (!ev || *hd <= evTime(next_ev)) && (!dd || *hd < *dl)) {
          // A failback hold ended: gwlbd rebuilds then (its fast timer), and
          // new flows may return to the preferred region.
          publish(*hd);
          if (regions.nextHoldDeadline() == hd)
            throw std::logic_error("failback hold deadline did not end its hold");
          continue;
        }
        if (dd && (!ev || *dl <= evTime(next_ev))) {
          // Its deadline ends the drain; tick() ends every drain due by then.
          size_t n = life.entries().size();
          lifecycleTick(*dl, false);
          if (life.nextDeadline() == dl && life.entries().size() == n)
            throw std::logic_error("drain deadline did not end its drain");
          continue;
        }
        applyNext();
      }
      if (t >= last_expire + kNsPerS) housekeeping(t);
      retireSnapshots();
    };

    // Packets are dealt one by one, round-robin, so consecutive packets of a flow
    // (and its returning Geneve traffic) meet on different workers. IP fragments
    // are the exception: like a NIC's RSS, which hashes fragments on addresses
    // only, all fragments of a datagram go to one worker, in order.
    std::vector<Job*> round(o.workers);
    auto dealTo = [&](rte_mbuf* m) -> unsigned {
      ParsedPacket p;
      Counter why;
      if (o.workers > 1 &&
          parseFrame(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, p, why) ==
              ParseStatus::kOk &&
          p.is_fragment) {
        uint32_t h = p.tuple.src.v4HostOrder() ^ p.tuple.dst.v4HostOrder() ^ p.frag_id ^
                     (uint32_t(p.tuple.src.b[15]) << 8) ^ p.tuple.dst.b[15];
        return (h ^ (h >> 16)) % o.workers;
      }
      unsigned w = rr;
      rr = (rr + 1) % o.workers;
      return w;
    };
    while (next < frames.size() || !pending_reflect.empty()) {
      if (pending_reflect.empty() && next < frames.size() && frames[next].ts_ns >= dueAt()) {
        // A control action is due before this frame: every earlier packet, and
        // every reflection of one, is processed first; then the action runs
        // with the workers idle and this frame meets the new snapshot.
        if (!workersIdle()) {
          drain();
          sched_yield();
          continue;
        }
        drain();
        if (!pending_reflect.empty()) continue;
        control(frames[next].ts_ns);
        continue;
      }
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
        const uint64_t due = dueAt();  // a burst never spans a control action
        while (taken < o.burst && next < frames.size() && frames[next].ts_ns < due) {
          const Frame& f = frames[next];
          rte_mbuf* m = rte_pktmbuf_alloc(pool);
          if (!m) {
            ++alloc_retries;
            break;
          }
          // Fits: the pool's data room is at least the largest frame read.
          std::memcpy(rte_pktmbuf_append(m, uint16_t(f.bytes.size())), f.bytes.data(),
                      f.bytes.size());
          m->port = f.port;
          add(m);
          ++next;
        }
      }
      for (unsigned w = 0; w < o.workers; ++w)
        if (round[w])
          while (rte_ring_enqueue(workers[w].in, round[w]) != 0) rte_pause();
      // Keep the reflect loop honest: let workers finish what is queued, then drain.
      drain();
      if (next >= frames.size() && pending_reflect.empty()) {
        // Wait for all workers to go idle, then drain what they produced.
        while (!workersIdle()) {
          drain();
          sched_yield();
        }
        drain();
      }
    }
    g.stop.store(true, std::memory_order_release);
    rte_eal_mp_wait_lcore();
    drain();
    to_app.close();
    returned.close();
    closeWindow(takeBoundary());
    for (const Event& e : events)
      if (!e.applied)
        std::fprintf(stderr,
                     "gwlb-replay: warning: events[%zu] at %s comes after the last packet; "
                     "not applied\n",
                     e.index, secondsText(e.at_ns).c_str());

    // Summary.
    WorkerCounters total;
    for (auto& w : workers)
      for (size_t k = 0; k < kNumCounters; ++k) total.v[k] += w.state.counters.v[k];

    std::map<uint16_t, uint64_t> flows_per_server;
    flows.forEach([&](const FlowKey& k, int32_t, const dp::FlowEntry& e) {
      if (k.kind == KeyKind::kFlow)
        ++flows_per_server[dp::routeServer(e.route.load(std::memory_order_relaxed))];
    });
    // Packets per appliance: count the outer destinations of what we wrote.
    std::map<uint32_t, uint64_t> pkts_per_ip;
    {
      char eb[PCAP_ERRBUF_SIZE];
      pcap_t* p = pcap_open_offline((o.out_dir + "/to-appliances.pcap").c_str(), eb);
      if (p) {
        pcap_pkthdr* h;
        const u_char* d;
        while (pcap_next_ex(p, &h, &d) == 1)
          if (h->caplen >= 34) ++pkts_per_ip[rd32(d + 30)];
        pcap_close(p);
      }
    }
    nlohmann::json j;
    j["input_packets"] = n_router_in;
    j["appliance_input_packets"] = frames.size() - n_router_in;
    j["workers"] = o.workers;
    j["reflect"] = o.reflect;
    j["to_appliances_packets"] = to_app.count();
    j["returned_packets"] = returned.count();
    j["reflected_packets"] = reflected;
    j["flows_in_table"] = flows.count();
    j["mbuf_alloc_retries"] = alloc_retries;
    j["largest_frame"] = cs.largest;
    j["frames_too_large"] = cs.too_large;
    j["frames_cut_by_capture"] = cs.cut_by_capture;
    nlohmann::json apps = nlohmann::json::array();
    std::printf("%-16s %-8s %10s %8s\n", "appliance", "group", "packets", "flows");
    // Configured appliances; with --events also removed ones that flows still use.
    for (size_t id = 0; id < snap->servers.size(); ++id) {
      const auto& sv = snap->servers[id];
      if (!sv.in_use && !(sv.routable && !events.empty())) continue;
      std::string addr = IpAddr::v4(sv.ip).str();
      uint64_t pk = pkts_per_ip[sv.ip];
      uint64_t fl = flows_per_server[uint16_t(id)];
      const std::string& gname = cfg.server_groups[sv.group].name;
      nlohmann::json a = {{"address", addr}, {"group", gname}, {"packets", pk}, {"flows", fl}};
      if (!events.empty()) {
        a["phase"] = dp::toString(sv.phase);
        a["in_config"] = sv.in_use;
      }
      apps.push_back(a);
      std::printf("%-16s %-8s %10llu %8llu%s%s\n", addr.c_str(), gname.c_str(),
                  (unsigned long long)pk, (unsigned long long)fl,
                  sv.phase != dp::ServerPhase::kActive ? "  " : "",
                  sv.phase != dp::ServerPhase::kActive ? dp::toString(sv.phase) : "");
    }
    j["appliances"] = apps;
    nlohmann::json counters = nlohmann::json::object(), drops = nlohmann::json::object();
    for (size_t k = 0; k < kNumCounters; ++k) {
      if (kCounterInfo[k].is_drop) {
        if (total.v[k]) drops[kCounterInfo[k].name + 5] = total.v[k];
      } else {
        counters[kCounterInfo[k].name] = total.v[k];
      }
    }
    j["counters"] = counters;
    j["drops"] = drops;

    // --events: what each event did, the lifecycle, and where every appliance
    // ever known ended up.
    nlohmann::json evj = nlohmann::json::array();
    for (const Event& e : events) {
      nlohmann::json x = {{"index", e.index},
                          {"at_s", double(e.at_ns) / 1e9},
                          {"server", e.server.str()},
                          {"action", actionName(e)},
                          {"applied", e.applied}};
      if (e.action == Action::kAdd) x["group"] = e.group;
      if (e.weight) x["weight"] = *e.weight;
      if (e.timeout_s) x["timeout_s"] = *e.timeout_s;
      x.update(e.result);
      evj.push_back(x);
      if (e.applied)
        std::printf("event %zu at %s: %s %s: flows on it %llu, moved %llu, stayed %llu\n",
                    e.index, secondsText(e.at_ns).c_str(), actionName(e), e.server.str().c_str(),
                    (unsigned long long)e.result["flows_on_server_at_event"].get<uint64_t>(),
                    (unsigned long long)[&] {
                      uint64_t m = 0;
                      for (auto& [k, v] : e.result["flows_moved"].items()) m += v.get<uint64_t>();
                      return m;
                    }(),
                    (unsigned long long)e.result["flows_stayed"].get<uint64_t>());
      if (e.applied)
        for (const auto& line : e.result["region_changes"]) std::printf("  regions: %s\n", line.get<std::string>().c_str());
    }
    j["events"] = evj;
    const ctl::ServerLifecycle::Stats& ls = life.stats();
    j["lifecycle"] = {{"drains_started", ls.drains_started},
                      {"drains_emptied", ls.drains_emptied},
                      {"drains_timed_out", ls.drains_timed_out},
                      {"flows_drained", ls.flows_drained},
                      {"flows_drain_timed_out", ls.flows_drain_timed_out},
                      {"removals", ls.removals},
                      {"forgotten", ls.forgotten},
                      {"flows_swept", ls.flows_swept}};
    j["lifecycle_changes"] = lifecycle_changes;
    j["region_changes"] = region_changes;
    j["listeners"] = listenersJson();
    j["composites"] = compositesJson();
    nlohmann::json servers = nlohmann::json::array();
    for (size_t id = 0; id < snap->servers.size(); ++id) {
      const auto& sv = snap->servers[id];
      nlohmann::json x = {{"address", IpAddr::v4(sv.ip).str()},
                          {"phase", dp::toString(sv.phase)},
                          {"in_config", sv.in_use},
                          {"routable", sv.routable},
                          {"move", dp::toString(sv.move)},
                          {"flows", flows_per_server[uint16_t(id)]}};
      if (const ctl::ServerLifecycle::Entry* le = life.find(sv.ip)) x["why"] = le->why;
      servers.push_back(x);
    }
    j["servers"] = servers;
    j["snapshots_published"] = generation;

    std::ofstream(o.out_dir + "/summary.json") << j.dump(2) << "\n";
    uint64_t dropped = 0;
    for (auto& [k, v] : drops.items()) dropped += v.get<uint64_t>();
    std::printf("in %zu, to appliances %llu, returned %llu, dropped %llu%s\n", n_router_in,
                (unsigned long long)to_app.count(), (unsigned long long)returned.count(),
                (unsigned long long)dropped, dropped ? " (see summary.json)" : "");
    std::printf("outputs: %s/{to-appliances.pcap,returned.pcap,summary.json}\n",
                o.out_dir.c_str());
    g.dp.snapshot.store(nullptr);
    retired.clear();  // the workers have stopped
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gwlb-replay: %s\n", e.what());
    rc = 2;
  }
  rte_eal_cleanup();
  return rc;
}
