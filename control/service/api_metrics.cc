// What gwlbd shows Prometheus (docs/observability.md): the /metrics page,
// one function per family group, on the views of control/service/metrics.h.
// Control thread.
#include <map>
#include <sstream>
#include <tuple>

#include "control/runtime/control_loop.h"
#include "control/service/appliance_view.h"
#include "control/service/handlers.h"
#include "control/service/metrics.h"

namespace gwlb::ctl {
namespace {

using nlohmann::json;

void metric(std::ostringstream& o, const std::string& name, const char* type, const std::string& help) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '\\' || c == '"') r += '\\';
    if (c == '\n') { r += "\\n"; continue; }
    r += c;
  }
  return r;
}

}  // namespace

// Per appliance: state, probes, traffic both ways. Each family's samples together.
void applianceMetrics(std::ostringstream& o, const ServiceContext& c) {
  const std::vector<ApplianceView::Row> rows = c.appliances.rows();
  auto labels = [](const ApplianceView::Row& r) {
    return "group=\"" + escape(r.group) + "\",address=\"" + r.address + "\"";
  };
  metric(o, "gwlb_server_state", "gauge",
         "1 for the state each appliance is in, 0 for the others (initializing, active, unresolved, "
         "unhealthy, dampened, idle, draining, drained, removed)");
  for (const ApplianceView::Row& r : rows)
    for (const char* st : kApplianceStates)
      o << "gwlb_server_state{" << labels(r) << ",state=\"" << st << "\"} " << (r.state == st ? 1 : 0)
        << '\n';
  // Probe series only where checks are configured: a fleet of 16384
  // appliances without checks keeps its /metrics small.
  std::vector<std::pair<const ApplianceView::Row*, const HealthTracker*>> probed;
  for (const ApplianceView::Row& r : rows)
    if (const HealthTracker* ht = c.health.checkedTracker(r.ip)) probed.emplace_back(&r, ht);
  metric(o, "gwlb_server_consecutive_failures", "gauge",
         "failed health checks in a row up to the appliance's last result (0 after a passed one)");
  for (const auto& [r, ht] : probed)
    o << "gwlb_server_consecutive_failures{" << labels(*r) << "} " << ht->consecutiveFailures()
      << '\n';
  metric(o, "gwlb_server_probe_duration_seconds", "histogram",
         "response time of every health check result (a timed-out check counts at its timeout)");
  for (const auto& [r, ht] : probed) {
    const ProbeLatencyHistogram& h = ht->latency();
    for (size_t b = 0; b <= ProbeLatencyHistogram::kBuckets; ++b) {
      o << "gwlb_server_probe_duration_seconds_bucket{" << labels(*r) << ",le=\"";
      if (b == ProbeLatencyHistogram::kBuckets) o << "+Inf";
      else o << double(ProbeLatencyHistogram::kBoundsUs[b]) / 1e6;
      o << "\"} " << h.cumulative(b) << '\n';
    }
    o << "gwlb_server_probe_duration_seconds_sum{" << labels(*r) << "} " << double(h.sum_us) / 1e6
      << '\n';
    o << "gwlb_server_probe_duration_seconds_count{" << labels(*r) << "} " << h.count << '\n';
  }
  metric(o, "gwlb_server_failing_reason", "gauge",
         "1 while an appliance's checks fail, labelled with its last failed check's reason "
         "(connect_timeout, bad_status, forwarding_timeout, ...); no sample while they pass");
  for (const auto& [r, ht] : probed) {
    if (ht->lastOk() || ht->history().empty()) continue;
    for (auto it = ht->history().rbegin(); it != ht->history().rend(); ++it) {
      if (it->is_transition) continue;
      const std::string why = it->reason.substr(0, it->reason.find_first_of(": "));
      o << "gwlb_server_failing_reason{" << labels(*r) << ",reason=\"" << escape(why) << "\"} 1\n";
      break;
    }
  }
  if (c.health.checker) {
    const HealthChecker::ForwardingCounts& f = c.health.checker->forwardingCounts();
    metric(o, "gwlb_forwarding_probes_total", "counter",
           "forwarding-check probes (health_check.forwarding) by what became of them: sent, unsent "
           "(no MAC or template yet), returned in time, timed_out, late (back after their timeout), "
           "wrong_appliance (back from another appliance than they were sent to)");
    const std::pair<const char*, uint64_t> kinds[] = {
        {"sent", f.sent}, {"unsent", f.unsent}, {"returned", f.returned},
        {"timed_out", f.timed_out}, {"late", f.late}, {"wrong_appliance", f.wrong_appliance}};
    for (const auto& [k, v] : kinds) o << "gwlb_forwarding_probes_total{result=\"" << k << "\"} " << v << '\n';
    const HealthChecker::TlsCounts& tls = c.health.checker->tlsHandshakes();
    metric(o, "gwlb_probe_tls_handshakes_total", "counter",
           "TLS handshakes HTTPS health checks completed: full (certificate and key exchange) or "
           "resumed (an earlier probe's session); full ones rising with every probe mean the "
           "appliances do not resume sessions");
    o << "gwlb_probe_tls_handshakes_total{kind=\"full\"} " << tls.full << '\n';
    o << "gwlb_probe_tls_handshakes_total{kind=\"resumed\"} " << tls.resumed << '\n';
    const probe::KeptConnections& kept = c.health.checker->keptConnections();
    metric(o, "gwlb_probe_kept_connections", "gauge",
           "connections health_check.keep_alive keeps open between an appliance's probes, now");
    o << "gwlb_probe_kept_connections " << kept.size() << '\n';
    const probe::KeptConnections::Counts& k = kept.counts();
    metric(o, "gwlb_probe_kept_connection_events_total", "counter",
           "kept connections by what became of them: reused (a probe asked on it), closed (the "
           "appliance had closed it, or sent bytes unasked, when the next probe came), stale (it "
           "failed before its response: asked again on the probe's fresh connection), expired "
           "(idle too long), refused (not kept: the pool was full)");
    const std::pair<const char*, uint64_t> events[] = {
        {"reused", k.reused}, {"closed", k.closed}, {"stale", k.stale}, {"expired", k.expired},
        {"refused", k.refused}};
    for (const auto& [e, v] : events)
      o << "gwlb_probe_kept_connection_events_total{event=\"" << e << "\"} " << v << '\n';
  }
  std::vector<ApplianceTraffic> traffic;
  for (const ApplianceView::Row& r : rows) traffic.push_back(c.appliances.traffic(r.id));
  const std::tuple<const char*, const char*, uint64_t ApplianceTraffic::*> families[] = {
      {"gwlb_server_sent_packets_total", "packets the gateway sent to each appliance (Geneve)",
       &ApplianceTraffic::sent_packets},
      {"gwlb_server_sent_bytes_total", "bytes the gateway sent to each appliance (Geneve frames)",
       &ApplianceTraffic::sent_bytes},
      {"gwlb_server_returned_packets_total",
       "packets that came back from each appliance and were returned toward the router",
       &ApplianceTraffic::returned_packets},
      {"gwlb_server_returned_bytes_total",
       "bytes of those packets as the appliance sent them (Geneve frames)",
       &ApplianceTraffic::returned_bytes},
      {"gwlb_server_bypassed_packets_total",
       "packets of flows each appliance handed back (appliance_bypass), sent straight back "
       "toward the router instead of to it",
       &ApplianceTraffic::bypassed_packets},
      {"gwlb_server_bypassed_bytes_total", "bytes of those packets (frame length)",
       &ApplianceTraffic::bypassed_bytes},
  };
  for (const auto& [name, help, field] : families) {
    metric(o, name, "counter", help);
    for (size_t i = 0; i < rows.size(); ++i)
      o << name << '{' << labels(rows[i]) << "} " << traffic[i].*field << '\n';
  }
}

namespace {

// Every worker counter, per worker: the drop reasons as one family.
void workerCounterMetrics(std::ostringstream& o,
                          const std::vector<std::unique_ptr<dp::WorkerState>>& states) {
  for (size_t k = 0; k < kNumCounters; ++k) {
    const CounterInfo& ci = kCounterInfo[k];
    if (ci.is_drop) continue;
    std::string name = std::string("gwlb_") + ci.name + "_total";
    metric(o, name, "counter", ci.help);
    for (const auto& st : states)
      o << name << "{worker=\"" << st->id << "\"} " << st->counters.get(Counter(k)) << '\n';
  }
  metric(o, "gwlb_dropped_packets_total", "counter",
         "packets dropped by a worker, by reason (docs/counters.md)");
  for (size_t k = 0; k < kNumCounters; ++k) {
    const CounterInfo& ci = kCounterInfo[k];
    if (!ci.is_drop) continue;
    for (const auto& st : states)
      o << "gwlb_dropped_packets_total{worker=\"" << st->id << "\",reason=\"" << (ci.name + 5)
        << "\"} " << st->counters.get(Counter(k)) << '\n';
  }
}

void flowTableMetrics(std::ostringstream& o, const dp::FlowTable& flows) {
  metric(o, "gwlb_flows", "gauge", "entries in the flow table (flows and fragment entries)");
  o << "gwlb_flows " << flows.count() << '\n';
  metric(o, "gwlb_flow_table_capacity", "gauge", "entries the flow table can hold");
  o << "gwlb_flow_table_capacity " << flows.capacity() << '\n';
  metric(o, "gwlb_flows_evicted_total", "counter",
         "flows deleted by the exhaustion policy (table above 90 % of capacity: idlest flows "
         "evicted down to 80 %)");
  o << "gwlb_flows_evicted_total " << flows.evicted() << '\n';
}

// The NICs' own counters, per DPDK port (`ports`: status's figures).
void portMetrics(std::ostringstream& o, const json& ports) {
  const char* port_metrics[][2] = {{"rx_packets", "packets the port received"},
                                   {"tx_packets", "packets the port sent"},
                                   {"rx_bytes", "bytes the port received"},
                                   {"tx_bytes", "bytes the port sent"},
                                   {"rx_missed", "packets the port missed (RX queue full)"}};
  for (auto& pm : port_metrics) {
    std::string name = std::string("gwlb_port_") + pm[0] + "_total";
    metric(o, name, "counter", pm[1]);
    for (size_t p = 0; p < ports.size(); ++p)
      o << name << "{port=\"" << p << "\"} " << ports[p].value(pm[0], uint64_t(0)) << '\n';
  }
}

// Each port's kernel tap (node.exception_path): no family without one.
void exceptionPathMetrics(std::ostringstream& o, const json& ports) {
  std::vector<std::pair<size_t, const json*>> taps;
  for (size_t p = 0; p < ports.size(); ++p)
    if (ports[p].contains("exception_path")) taps.emplace_back(p, &ports[p]["exception_path"]);
  if (taps.empty()) return;
  auto row = [&](const char* name, size_t p, const json& t, const char* label, const char* value,
                 const char* key) {
    o << name << "{port=\"" << p << "\",tap=\"" << t.value("tap", "") << "\"," << label << "=\"" << value
      << "\"} " << t.value(key, uint64_t(0)) << '\n';
  };
  metric(o, "gwlb_exception_path_packets_total", "counter",
         "frames through a port's kernel tap (node.exception_path), by direction");
  for (const auto& [p, t] : taps) {
    row("gwlb_exception_path_packets_total", p, *t, "direction", "to_kernel", "to_kernel");
    row("gwlb_exception_path_packets_total", p, *t, "direction", "from_kernel", "from_kernel");
  }
  metric(o, "gwlb_exception_path_dropped_total", "counter",
         "frames the exception path dropped: tap (refused by the tap: interface down or full), "
         "wire (kernel frame, control_tx full); the workers' full queue is "
         "gwlb_dropped_packets_total{reason=\"exception_queue_full\"}");
  for (const auto& [p, t] : taps) {
    row("gwlb_exception_path_dropped_total", p, *t, "reason", "tap", "dropped_tap");
    row("gwlb_exception_path_dropped_total", p, *t, "reason", "wire", "dropped_wire");
  }
}

// The workers' heartbeats: a stalled worker's loops stop rising.
void workerLoopMetrics(std::ostringstream& o, const std::vector<std::unique_ptr<dp::WorkerRun>>& runs) {
  metric(o, "gwlb_worker_loops_total", "counter",
         "poll loops a worker completed; stops rising while the worker stalls");
  for (size_t i = 0; i < runs.size(); ++i)
    o << "gwlb_worker_loops_total{worker=\"" << i << "\"} "
      << runs[i]->heartbeat.loops.load(std::memory_order_relaxed) << '\n';
  metric(o, "gwlb_worker_max_loop_gap_seconds", "gauge",
         "longest time between the starts of two poll loops of a worker since gwlbd started");
  for (size_t i = 0; i < runs.size(); ++i)
    o << "gwlb_worker_max_loop_gap_seconds{worker=\"" << i << "\"} "
      << double(runs[i]->heartbeat.max_loop_gap_ns.load(std::memory_order_relaxed)) / 1e9
      << '\n';
  metric(o, "gwlb_worker_recent_max_loop_gap_seconds", "gauge",
         "longest time between the starts of two poll loops of a worker in the last completed "
         "second");
  for (size_t i = 0; i < runs.size(); ++i)
    o << "gwlb_worker_recent_max_loop_gap_seconds{worker=\"" << i << "\"} "
      << double(runs[i]->heartbeat.recent_max_loop_gap_ns.load(std::memory_order_relaxed)) / 1e9
      << '\n';
}

// Drains and removals of appliances.
void lifecycleMetrics(std::ostringstream& o, const ApplianceLifecycle::Stats& ls) {
  const std::pair<const char*, std::pair<uint64_t, const char*>> lifecycle[] = {
      {"drains_started", {ls.drains_started,
                          "appliance drains started (removals and operator drains with draining on)"}},
      {"drains_emptied", {ls.drains_emptied, "drains that ended because their last flow ended"}},
      {"drains_timed_out", {ls.drains_timed_out, "drains that ended at their timeout with flows left"}},
      {"flows_drained", {ls.flows_drained, "flows that ended (idle) on a draining appliance"}},
      {"flows_drain_timed_out",
       {ls.flows_drain_timed_out, "flows still on an appliance when its drain timed out"}},
      {"removals", {ls.removals, "appliances that left the config (reload, server.remove)"}},
      {"forgotten", {ls.forgotten, "leaving appliances forgotten once no flow was left on them"}},
      {"flows_swept", {ls.flows_swept, "idle flows the control thread moved off leaving appliances"}},
  };
  for (const auto& [name, v] : lifecycle) {
    std::string full = std::string("gwlb_lifecycle_") + name + "_total";
    metric(o, full, "counter", v.second);
    o << full << ' ' << v.first << '\n';
  }
}

// The published snapshot and those waiting for their RCU grace period.
void snapshotMetrics(std::ostringstream& o, const dp::Snapshot* snap, size_t retiring) {
  metric(o, "gwlb_snapshot_generation", "gauge",
         "generation of the published snapshot; rises by one with every snapshot published");
  o << "gwlb_snapshot_generation " << (snap ? snap->generation : 0) << '\n';
  metric(o, "gwlb_snapshots_live", "gauge",
         "snapshots alive in the process (published, awaiting their RCU grace period, or being "
         "built); comes back to 1-2 when retired ones are freed");
  o << "gwlb_snapshots_live " << dp::Snapshot::live() << '\n';
  metric(o, "gwlb_snapshots_retiring", "gauge",
         "replaced snapshots awaiting their RCU grace period before they are freed");
  o << "gwlb_snapshots_retiring " << retiring << '\n';
}

void groupInfoMetrics(std::ostringstream& o, const Config& cfg) {
  metric(o, "gwlb_server_group_info", "gauge",
         "1 per server group, labelled with how its packets travel: encapsulation geneve or vxlan, "
         "and the inner format (aws, ethernet; VXLAN carries Ethernet frames)");
  for (const auto& g : cfg.server_groups) {
    const bool vx = g.encapsulation == Encapsulation::kVxlan;
    o << "gwlb_server_group_info{group=\"" << escape(g.name) << "\",encapsulation=\""
      << toString(g.encapsulation) << "\",format=\"" << (vx ? "ethernet" : toString(g.geneve.format))
      << "\"} 1\n";
  }
}

// Aggregated health: destinations, the active group of each listener, the
// composites and their sources (control/engine/region_failover.h).
void regionMetrics(std::ostringstream& o, const RegionTracker& regions) {
  metric(o, "gwlb_destination_healthy", "gauge",
         "1 when the health destination (listener) is healthy: what GET /destinations/NAME answers "
         "with 200");
  for (const auto& l : regions.listeners())
    o << "gwlb_destination_healthy{destination=\"" << escape(l.name) << "\"} "
      << (l.destination_healthy ? 1 : 0) << '\n';
  metric(o, "gwlb_destination_healthy_with_dry_run", "gauge",
         "the same with dry-run composites acting: 0 here and 1 above means a dry run would fail over");
  for (const auto& l : regions.listeners())
    o << "gwlb_destination_healthy_with_dry_run{destination=\"" << escape(l.name) << "\"} "
      << (l.destination_healthy_with_dry_run ? 1 : 0) << '\n';
  // One family at a time: Prometheus wants each metric's samples together.
  auto perGroup = [&](const char* name, const char* help, bool would) {
    metric(o, name, "gauge", help);
    for (const auto& l : regions.listeners())
      for (size_t i = 0; i < l.regions.size(); ++i)
        o << name << "{listener=\"" << escape(l.name) << "\",group=\"" << escape(l.regions[i].group)
          << "\"} " << (int(i) == (would ? l.would_be_active : l.active) ? 1 : 0) << '\n';
  };
  perGroup("gwlb_listener_active_group",
           "1 for the server group a listener sends new flows to (0 for its other groups)", false);
  perGroup("gwlb_listener_would_be_active_group", "the same with dry-run composites acting", true);
  metric(o, "gwlb_composite_healthy", "gauge",
         "1 when every health source of the composite health check is healthy");
  for (const auto& c : regions.composites())
    o << "gwlb_composite_healthy{composite=\"" << escape(c.name) << "\",destination=\""
      << escape(c.destination) << "\",dry_run=\"" << (c.dry_run ? "true" : "false") << "\"} "
      << (c.healthy ? 1 : 0) << '\n';
  auto perSource = [&](const char* name, const char* help, auto value) {
    metric(o, name, "gauge", help);
    for (const auto& c : regions.composites())
      for (const auto& src : c.sources)
        o << name << "{composite=\"" << escape(c.name) << "\",source=\"" << escape(src.name)
          << "\",group=\"" << escape(src.group) << "\"} " << value(src) << '\n';
  };
  perSource("gwlb_health_source_healthy_servers",
            "healthy servers a health source counts (weight 0 and drained ones are not counted)",
            [](const RegionTracker::Source& x) { return x.healthy; });
  perSource("gwlb_health_source_servers", "servers a health source counts",
            [](const RegionTracker::Source& x) { return x.appliances; });
  perSource("gwlb_health_source_healthy", "1 when the source meets its policy",
            [](const RegionTracker::Source& x) { return x.ok ? 1u : 0u; });
}

// The control thread itself: handlers that threw, and the HTTP listeners
// (absent ones are null).
void controlMetrics(std::ostringstream& o, const std::vector<const HttpServer*>& http) {
  metric(o, "gwlb_control_handler_errors_total", "counter",
         "exceptions that escaped a control-thread handler (logged; the control thread went "
         "on), by where: http (a request handler), timer, signal, health (a snapshot rebuild after a "
         "health change), loop (any other handler)");
  {
    std::map<std::string, uint64_t> by = controlFaults().byWhere();
    for (const char* w : {"http", "timer", "signal", "health", "loop"}) by.emplace(w, 0);
    for (const auto& [where, n] : by)
      o << "gwlb_control_handler_errors_total{where=\"" << escape(where) << "\"} " << n << '\n';
  }
  auto perListener = [&](const char* name, const char* type, const char* help, auto value) {
    metric(o, name, type, help);
    for (const HttpServer* h : http)
      if (h) o << name << "{listener=\"" << h->name() << "\"} " << value(h->stats()) << '\n';
  };
  perListener("gwlb_http_connections", "gauge", "open connections of an HTTP listener (at most 64)",
              [](const HttpStats& st) { return uint64_t(st.open); });
  perListener("gwlb_http_connections_accepted_total", "counter",
              "connections an HTTP listener accepted",
              [](const HttpStats& st) { return st.accepted; });
  perListener("gwlb_http_connections_evicted_total", "counter",
              "connections closed to make room for a new one at the cap of 64 (the one open "
              "longest goes)",
              [](const HttpStats& st) { return st.evicted; });
  perListener("gwlb_http_accept_errors_total", "counter",
              "failed accepts of an HTTP listener (e.g. out of file descriptors); each is followed "
              "by a 100 ms pause",
              [](const HttpStats& st) { return st.accept_errors; });
}

// Server ids: held, waiting for their last flow, given back.
void applianceIdMetrics(std::ostringstream& o, const ApplianceRegistry& reg) {
  metric(o, "gwlb_server_ids_held", "gauge",
         "server ids held by appliances configured, leaving with flows, or gone and not yet "
         "reclaimed (at most 16384: a change needing more is refused with limit_reached)");
  o << "gwlb_server_ids_held " << reg.held() << '\n';
  metric(o, "gwlb_server_ids_releasing", "gauge",
         "server ids of appliances gone, waiting for the last flow naming them to end");
  o << "gwlb_server_ids_releasing " << reg.released() << '\n';
  metric(o, "gwlb_server_ids_reclaimed_total", "counter",
         "server ids given back for reuse by other appliance addresses");
  o << "gwlb_server_ids_reclaimed_total " << reg.reclaimed_total() << '\n';
}

}  // namespace

std::string metricsText(const MetricsView& v) {
  const ServiceContext& c = v.service;
  const Engine& engine = c.engine;
  std::ostringstream o;
  workerCounterMetrics(o, c.workers.states);
  flowTableMetrics(o, engine.flows());
  applianceMetrics(o, c);
  serviceMetrics(o, engine, c.health);
  classMetrics(o, engine, c.workers);
  const json ports = c.ports ? c.ports() : json::array();
  portMetrics(o, ports);
  exceptionPathMetrics(o, ports);
  workerLoopMetrics(o, c.workers.runs);
  lifecycleMetrics(o, engine.lifecycle().stats());
  snapshotMetrics(o, engine.current(), engine.retiredSnapshots());
  groupInfoMetrics(o, engine.config());
  regionMetrics(o, engine.regions());
  controlMetrics(o, v.listeners ? v.listeners() : std::vector<const HttpServer*>{});
  applianceIdMetrics(o, engine.registry());
  metric(o, "gwlb_uptime_seconds", "gauge", "seconds since gwlbd started");
  o << "gwlb_uptime_seconds " << double(c.now() - c.facts.started_ns) / 1e9 << '\n';
  if (v.fleet.sync) {
    std::string fleet;
    v.fleet.sync->metrics(fleet);
    o << fleet;
  }
  fleetMetrics(o, v.fleet);
  return o.str();
}

}  // namespace gwlb::ctl
