// gwlb-replay: runs the real worker pipeline over a capture file.
//
// The main lcore reads the captures, hands bursts to worker lcores through rings
// (round-robin, so both directions of a flow and its returning Geneve traffic
// land on different workers when there are two), collects what the workers emit,
// writes it to pcap files and, with --reflect, plays a transparent appliance:
// every Geneve packet goes back with outer addresses swapped and the Geneve
// header untouched. The capture's timestamps are the clock.
#include <getopt.h>
#include <pcap/pcap.h>
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/counters.h"
#include "common/packet_parser.h"
#include "control/config.h"
#include "control/snapshot_builder.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"

using namespace gwlb;

namespace {

constexpr unsigned kRing = 4096;
constexpr unsigned kDataRoom = 10240;  // jumbo frames fit in one segment
constexpr uint16_t kRouterPort = 0;

struct Options {
  std::string config, in, out_dir, appliance_in;
  bool reflect = false;
  unsigned workers = 1;
  unsigned burst = 32;
};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: gwlb-replay --config FILE --in PCAP --out-dir DIR [--reflect]\n"
               "                   [--appliance-in PCAP] [--workers N] [--burst N]\n"
               "Runs gwlbd's worker pipeline over a capture. Writes DIR/to-appliances.pcap,\n"
               "DIR/returned.pcap and DIR/summary.json.\n"
               "  --reflect          act as transparent appliances: send every Geneve packet back\n"
               "  --appliance-in F   also feed F as traffic arriving from the appliances\n"
               "  --workers N        worker lcores (1..8, default 1); packets are dealt round-robin\n"
               "  --burst N          packets per burst (1..256, default 32)\n");
}

struct Frame {
  uint64_t ts_ns;
  uint16_t port;
  std::vector<uint8_t> bytes;
};

bool readPcap(const std::string& path, uint16_t port, std::vector<Frame>& out, std::string& err) {
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
  for (;;) {
    void* obj;
    if (rte_ring_dequeue(ws.in, &obj) != 0) {
      rte_rcu_qsbr_quiescent(g.qsbr, idx);
      if (g.stop.load(std::memory_order_acquire) && rte_ring_empty(ws.in)) break;
      rte_pause();
      continue;
    }
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

}  // namespace

int main(int argc, char** argv) {
  Options o;
  static option longopts[] = {{"config", required_argument, nullptr, 'c'},
                              {"in", required_argument, nullptr, 'i'},
                              {"out-dir", required_argument, nullptr, 'o'},
                              {"reflect", no_argument, nullptr, 'r'},
                              {"appliance-in", required_argument, nullptr, 'a'},
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
  std::vector<Frame> frames;
  std::string err;
  if (!o.in.empty() && !readPcap(o.in, kRouterPort, frames, err)) {
    std::fprintf(stderr, "gwlb-replay: %s\n", err.c_str());
    return 2;
  }
  size_t n_router_in = frames.size();
  if (!o.appliance_in.empty() && !readPcap(o.appliance_in, cfg.node.underlay_port, frames, err)) {
    std::fprintf(stderr, "gwlb-replay: %s\n", err.c_str());
    return 2;
  }
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
    rte_mempool* pool = dp::createMbufPool("replay_pool", 16383, kDataRoom);
    g.qsbr = dp::createQsbr(o.workers);
    dp::FlowTable flows("replay_flows", std::max<uint32_t>(cfg.dataplane.flow_table_size, 1024),
                        g.qsbr, int(rte_socket_id()));
    ctl::ServerRegistry reg;
    auto snap = ctl::buildSnapshot(cfg, reg, {}, 1);
    g.dp.flows = &flows;
    g.dp.snapshot.store(snap.get());

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
    uint64_t now = frames.empty() ? 0 : frames.front().ts_ns;
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
        while (taken < o.burst && next < frames.size()) {
          const Frame& f = frames[next];
          rte_mbuf* m = rte_pktmbuf_alloc(pool);
          if (!m) {
            ++alloc_retries;
            break;
          }
          size_t len = std::min<size_t>(f.bytes.size(), kDataRoom);
          std::memcpy(rte_pktmbuf_append(m, uint16_t(len)), f.bytes.data(), len);
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
      if (now - last_expire >= 1'000'000'000ULL) {
        flows.expire(now);
        flows.reclaim(false);
        last_expire = now;
      }
      if (next >= frames.size() && pending_reflect.empty()) {
        // Wait for all workers to go idle, then drain what they produced.
        for (;;) {
          bool idle = true;
          for (auto& w : workers) idle = idle && rte_ring_empty(w.in);
          if (idle && rte_ring_count(g.free_jobs) == jobs.size()) break;
          drain();
          rte_pause();
        }
        drain();
      }
    }
    g.stop.store(true, std::memory_order_release);
    rte_eal_mp_wait_lcore();
    drain();
    to_app.close();
    returned.close();

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
    nlohmann::json apps = nlohmann::json::array();
    std::printf("%-16s %-8s %10s %8s\n", "appliance", "group", "packets", "flows");
    for (size_t id = 0; id < snap->servers.size(); ++id) {
      const auto& sv = snap->servers[id];
      if (!sv.in_use) continue;
      std::string addr = IpAddr::v4(sv.ip).str();
      uint64_t pk = pkts_per_ip[sv.ip];
      uint64_t fl = flows_per_server[uint16_t(id)];
      apps.push_back({{"address", addr},
                      {"group", cfg.server_groups[sv.group].name},
                      {"packets", pk},
                      {"flows", fl}});
      std::printf("%-16s %-8s %10llu %8llu\n", addr.c_str(),
                  cfg.server_groups[sv.group].name.c_str(), (unsigned long long)pk,
                  (unsigned long long)fl);
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
    std::ofstream(o.out_dir + "/summary.json") << j.dump(2) << "\n";
    uint64_t dropped = 0;
    for (auto& [k, v] : drops.items()) dropped += v.get<uint64_t>();
    std::printf("in %zu, to appliances %llu, returned %llu, dropped %llu%s\n", n_router_in,
                (unsigned long long)to_app.count(), (unsigned long long)returned.count(),
                (unsigned long long)dropped, dropped ? " (see summary.json)" : "");
    std::printf("outputs: %s/{to-appliances.pcap,returned.pcap,summary.json}\n",
                o.out_dir.c_str());
    g.dp.snapshot.store(nullptr);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gwlb-replay: %s\n", e.what());
    rc = 2;
  }
  rte_eal_cleanup();
  return rc;
}
