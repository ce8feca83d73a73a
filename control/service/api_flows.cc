// The control API's flow methods (docs/control-api.md): `flows` lists the flow
// table's entries (filtered, paged by cursor, bounded per request) and `explain`
// says where a 5-tuple goes and why. Control thread: no worker stops for them.
#include <algorithm>
#include <cstdio>

#include "common/flow_key.h"
#include "control/api/api_params.h"
#include "control/service/handlers.h"

namespace gwlb::ctl {

using nlohmann::json;

namespace {

constexpr size_t kMaxFlowLimit = 10000;
// What one request may walk: the control thread answers it in one call, so
// a page (and a count) ends after this many slots or keys, whichever comes
// first, with a cursor to go on from (docs/control-api.md "flows"): a
// sliced walk, as the engine's (docs/architecture.md "Walks in slices").
constexpr size_t kFlowScanSlots = size_t(1) << 18;
constexpr size_t kFlowScanKeys = size_t(1) << 14;
// And at most this many rows, whatever `limit` asks: a row costs about 7 us
// of the control thread to build and serialize (bench/control_walk_stall).
constexpr size_t kFlowRowsPerPage = 512;

std::string protoName(uint8_t p) {
  switch (p) {
    case kProtoTcp: return "tcp";
    case kProtoUdp: return "udp";
    case kProtoIcmp: return "icmp";
    case kProtoIcmpv6: return "icmpv6";
    case kProtoSctp: return "sctp";
    default: return std::to_string(p);
  }
}

std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

std::string addrText(const uint8_t* a, uint8_t family) {
  return (family == 6 ? IpAddr::v6(a) : IpAddr::v4(a)).str();
}

// "192.0.2.1:443", "[2001:db8::1]:443": an address followed by a port.
std::string endpointText(const uint8_t* a, uint8_t family, uint16_t port) {
  std::string s = addrText(a, family);
  return (family == 6 ? "[" + s + "]" : s) + ":" + std::to_string(port);
}

// Where a flow was before its last move and why (null when it never moved).
json movedJson(const dp::FlowEntry& e, const dp::Snapshot* s, uint64_t now) {
  uint64_t mv = e.moved.load(std::memory_order_acquire);
  if (!mv) return nullptr;
  uint16_t from = dp::moveFrom(mv);
  uint64_t at = e.moved_at.ns(now);
  return {{"from", s && from < s->appliances.size() ? json(applianceAddress(s->appliances[from]).str())
                                                 : json(nullptr)},
          {"reason", dp::toString(dp::MoveReason(dp::moveReason(mv)))},
          {"old_cookie", hex32(dp::moveCookie(mv))},
          {"ago_s", now > at ? double(now - at) / 1e9 : 0.0},
          {"moves", e.moves.load(std::memory_order_relaxed)}};
}

// Its appliance's bypass (null when none, or a timed one that ended and
// awaits the flow's next packet to clear it): who asked, and the seconds left
// (null: for the flow's life).
json bypassJson(uint64_t r, const dp::Snapshot* s, uint64_t now) {
  if (!dp::routeBypassed(r) || dp::bypassEnded(r, now)) return nullptr;
  uint16_t sid = dp::routeAppliance(r);
  json by = s && sid < s->appliances.size() ? json(applianceAddress(s->appliances[sid]).str()) : json(nullptr);
  if (!dp::routeBypassTimed(r)) return {{"by", by}, {"until_s", nullptr}};
  uint64_t until = dp::bypassUntilNs(r, now);
  return {{"by", by}, {"until_s", until > now ? double(until - now) / 1e9 : 0.0}};
}

}  // namespace

std::string snapshotListenerName(const Engine& engine, uint8_t li) {
  // As the snapshot builder numbers them: the listeners with regions, in order.
  size_t n = 0;
  for (const RegionTracker::Listener& l : engine.regions().listeners())
    if (!l.regions.empty() && n++ == li) return l.name;
  return engine.regions().listeners().empty() ? "default" : "?";
}

std::string groupName(const Engine& engine, int group, uint32_t ip) {
  if (group >= 0 && size_t(group) < engine.config().server_groups.size()) return engine.config().server_groups[size_t(group)].name;
  const ApplianceLifecycle::Entry* le = engine.lifecycle().find(ip);
  return le ? le->group : "?";
}

json flowsMethod(const Engine& engine, const json& p) {
  Params pr(p, {"server", "group", "src", "dst", "proto", "port", "limit", "cursor", "count"});
  FlowsQuery q;
  if (pr.has("server")) {
    IpAddr a = pr.ip("server");
    q.appliance = engine.registry().find(applianceKeyOf(engine, a));
    if (q.appliance == dp::kNoAppliance) notFound("no appliance " + a.str());
    q.by_appliance = true;
  }
  q.group = pr.has("group") ? groupIndex(engine.config(), pr.str("group")) : -1;
  if (pr.has("src")) q.src = parseCidr("src", pr.str("src"));
  if (pr.has("dst")) q.dst = parseCidr("dst", pr.str("dst"));
  q.proto = pr.has("proto") ? parseProto(pr.str("proto")) : -1;
  q.port = pr.has("port") ? int(pr.num("port", 0, 65535)) : -1;
  q.limit = pr.has("limit") ? size_t(pr.num("limit", 1, kMaxFlowLimit)) : 100;
  q.count_only = pr.has("count") && pr.boolean("count");
  if (pr.has("cursor")) q.cursor = parseCursor(pr.str("cursor"));

  // Class names by counter slot, the value a flow entry keeps (FlowEntry::origin).
  for (const TrafficClassConfig& tc : engine.config().traffic_classes) {
    uint16_t slot = engine.classSlots().slotOf(tc.name);
    if (slot >= kMaxClasses) continue;
    if (slot >= q.class_by_slot.size()) q.class_by_slot.resize(slot + 1);
    q.class_by_slot[slot] = tc.name;
  }
  return flowsPage(engine.flows(), engine.current(), q, dp::monotonicNs(),
                   [&engine](int group, uint32_t ip) { return groupName(engine, group, ip); });
}

json flowsPage(const dp::FlowTable& flows, const dp::Snapshot* s, const FlowsQuery& q, uint64_t now,
               const std::function<std::string(int group, uint32_t ip)>& group_name) {
  json rows = json::array();
  size_t count = 0, scanned = 0;
  uint32_t cursor = q.cursor;
  // A page ends after `limit` rows (at most kFlowRowsPerPage), kFlowScanKeys
  // keys or kFlowScanSlots slots: it may hold fewer rows than `limit` (none,
  // over empty slots) and still have a next_cursor. A count goes by pages too.
  const size_t rows_max = std::min(q.limit, kFlowRowsPerPage);
  bool more = flows.scan(cursor, kFlowScanKeys, kFlowScanSlots, [&](const FlowKey& k, int32_t,
                                                                    const dp::FlowEntry& e) {
    ++scanned;
    uint64_t r = e.route.load(std::memory_order_acquire);
    if (!(r & dp::kRouteSet)) return true;
    if (q.by_appliance && dp::routeAppliance(r) != q.appliance) return true;
    // Keys carry the listener; the group is the flow's appliance's.
    uint16_t sid = dp::routeAppliance(r);
    int fgroup = s && sid < s->appliances.size() ? s->appliances[sid].group : -1;
    if (q.group >= 0 && fgroup != q.group) return true;
    bool a_first = dp::originDir(e.origin.load(std::memory_order_relaxed)) == 0;
    const uint8_t* s_addr = a_first ? k.a : k.b;
    const uint8_t* d_addr = a_first ? k.b : k.a;
    uint16_t sport = a_first ? k.port_a : k.port_b, dport = a_first ? k.port_b : k.port_a;
    if (k.kind == KeyKind::kFragment) sport = dport = 0;
    if (q.src && !q.src->contains(s_addr, k.family)) return true;
    if (q.dst && !q.dst->contains(d_addr, k.family)) return true;
    if (q.proto >= 0 && k.proto != q.proto) return true;
    if (q.port >= 0 && (k.kind != KeyKind::kFlow || (sport != q.port && dport != q.port))) return true;
    ++count;
    if (q.count_only) return true;
    std::string app = s && sid < s->appliances.size() ? applianceAddress(s->appliances[sid]).str() : "?";
    uint64_t seen = e.last_seen.ns(now);
    uint64_t born = e.created.ns(now);
    rows.push_back({{"src", addrText(s_addr, k.family)},
                    {"dst", addrText(d_addr, k.family)},
                    {"sport", sport},
                    {"dport", dport},
                    {"proto", protoName(k.proto)},
                    {"group", group_name(fgroup, s && sid < s->appliances.size() ? s->appliances[sid].ip : 0)},
                    {"appliance", app},
                    {"cookie", hex32(dp::routeCookie(r))},
                    {"kind", k.kind == KeyKind::kFlow ? "flow" : "fragment"},
                    {"age_s", now > born ? double(now - born) / 1e9 : 0.0},
                    {"idle_s", now > seen ? double(now - seen) / 1e9 : 0.0},
                    {"packets", e.packets.load(std::memory_order_relaxed)},
                    {"moved", movedJson(e, s, now)}});
    if (json b = bypassJson(r, s, now); !b.is_null()) rows.back()["bypass"] = b;
    // The traffic class the flow was created under (none without classes):
    // the entry holds its name's counter slot (control/engine/class_slots.h).
    uint16_t slot = dp::originClass(e.origin.load(std::memory_order_relaxed));
    if (slot < q.class_by_slot.size() && !q.class_by_slot[slot].empty())
      rows.back()["class"] = q.class_by_slot[slot];
    return rows.size() < rows_max;
  });
  json next = more ? json(std::to_string(cursor)) : json(nullptr);
  if (q.count_only) return {{"count", count}, {"scanned", scanned}, {"next_cursor", next}};
  return {{"flows", rows}, {"next_cursor", next}, {"scanned", scanned}};
}

namespace {

// The entry of the flow of tuple t: under the listener it is keyed to now
// (entry_li in: that listener), or, with traffic classes (any_listener),
// under any other (entry_li out: the one it was found under). -1: none.
int32_t findEntry(const Engine& engine, const dp::Snapshot& s, const L4Tuple& t, const KeyedPacket& kp,
                  uint32_t hash, bool any_listener, uint8_t& entry_li) {
  const uint8_t li = entry_li;
  int32_t pos = engine.flows().lookup(kp.key, hash);
  for (uint8_t l = 0; pos < 0 && any_listener && l < s.listeners.size(); ++l) {
    if (l == li) continue;
    KeyedPacket other = makeFlowKey(t, s.listeners[l].stickiness, l);
    int32_t at = engine.flows().lookup(other.key, flowHash(other.key));
    if (at >= 0 && (engine.flows().entry(at).route.load(std::memory_order_acquire) & dp::kRouteSet)) {
      pos = at;
      entry_li = l;
    }
  }
  return pos;
}

// Why a flow's appliance may not keep it: shedding, draining or gone ("" when
// it is in service).
std::string leavingText(const Config& cfg, const dp::ApplianceSlot& sv) {
  if (sv.move_reason != dp::MoveReason::kNone)
    return std::string("; its appliance sheds its flows (") + dp::toString(sv.move_reason) +
           "): the next packet moves it to today's Maglev choice";
  if (sv.phase == dp::AppliancePhase::kDraining)
    return "; its appliance is draining: the flow stays until the drain ends";
  if (sv.phase == dp::AppliancePhase::kDrained)
    return sv.group < cfg.server_groups.size() &&
                   cfg.server_groups[sv.group].failover_mode == FailoverMode::kRebalance
               ? "; its appliance left the group; the flow stays until an appliance of "
                 "the group is in service to move it to"
               : "; its appliance left the group; no_rebalance keeps the flow there";
  return "";
}

}  // namespace

json explainMethod(const Engine& engine, const json& p) {
  const ExplainQuery q = parseExplain(p);
  const L4Tuple& t = q.tuple;
  const dp::Snapshot* s = engine.current();
  if (!s || s->listeners.empty()) notFound("no snapshot published");
  // With traffic_classes, the class the packet matches picks the listener
  // that keys a new flow (or bypasses or drops it); without, listener 0
  // receives everything. New flows take the Maglev table of the listener's
  // active group (none: new flows are dropped).
  json cls = nullptr;
  uint8_t li = 0;
  bool inspected = true;
  if (!engine.config().traffic_classes.empty()) {
    cls = classExplainJson(engine.config(), t, q.port, q.vlan);
    const int ci = cls["index"].is_null() ? -1 : cls["index"].get<int>();
    inspected = ci >= 0 && engine.config().traffic_classes[size_t(ci)].action == ClassAction::kInspect &&
                size_t(ci) < s->classes.size() && s->classes.listener(uint16_t(ci)) < s->listeners.size();
    if (inspected) li = s->classes.listener(uint16_t(ci));
  }
  const dp::ListenerView& lv = s->listeners[li];
  uint8_t gi = inspected ? lv.active : dp::kNoGroup;
  static const dp::GroupView kNone;
  const dp::GroupView& g = gi < s->groups.size() ? s->groups[gi] : kNone;
  KeyedPacket kp = makeFlowKey(t, lv.stickiness, li);
  uint32_t hash = flowHash(kp.key);
  uint32_t slot = g.maglev.empty() ? 0 : hash % uint32_t(g.maglev.size());
  uint16_t mid = g.maglev.empty() ? dp::kNoAppliance : g.maglev[slot];
  auto appText = [&](uint16_t id) {
    return id < s->appliances.size() ? json(applianceAddress(s->appliances[id]).str()) : json(nullptr);
  };
  const char* stick[] = {"5-tuple", "3-tuple", "2-tuple"};
  std::string key = endpointText(kp.key.a, kp.key.family, kp.key.port_a) + " <-> " +
                    endpointText(kp.key.b, kp.key.family, kp.key.port_b) + " proto " +
                    std::to_string(kp.key.proto);
  json out = {{"group", gi < engine.config().server_groups.size() ? json(engine.config().server_groups[gi].name) : json(nullptr)},
              {"listener", inspected ? json(snapshotListenerName(engine, li)) : json(nullptr)},
              {"stickiness", stick[size_t(lv.stickiness)]},
              {"key", key},
              {"hash", hex32(hash)},
              {"maglev", {{"slot", slot}, {"table_size", g.maglev.size()}, {"appliance", appText(mid)}}}};
  if (!cls.is_null()) out["class"] = cls;
  if (!inspected) out["maglev"] = nullptr;  // no listener takes a new flow
  // Concurrency rule R11: a flow keeps the listener it was keyed to, whatever
  // the classes say now; the workers look for its entry under every listener.
  uint8_t entry_li = li;
  int32_t pos = findEntry(engine, *s, t, kp, hash, !cls.is_null(), entry_li);
  uint64_t r = pos >= 0 ? engine.flows().entry(pos).route.load(std::memory_order_acquire) : 0;
  if (r & dp::kRouteSet) {
    const dp::FlowEntry& e = engine.flows().entry(pos);
    uint64_t now = dp::monotonicNs();
    uint64_t born = e.created.ns(now);
    double age = now > born ? double(now - born) / 1e9 : 0.0;
    uint16_t sid = dp::routeAppliance(r);
    out["existing"] = true;
    out["appliance"] = appText(sid);
    out["cookie"] = hex32(dp::routeCookie(r));
    out["age_s"] = age;
    char buf[320];
    std::snprintf(buf, sizeof buf, "existing flow entry, created %.1f s ago%s", age,
                  sid == mid ? "; its appliance is also today's Maglev choice"
                             : "; today's Maglev choice differs, the entry keeps its appliance");
    std::string reason = buf;
    json moved = movedJson(e, s, now);
    if (!moved.is_null()) {
      std::snprintf(buf, sizeof buf, "; moved %.1f s ago from %s (%s)",
                    moved["ago_s"].get<double>(),
                    moved["from"].is_null() ? "?" : moved["from"].get<std::string>().c_str(),
                    moved["reason"].get<std::string>().c_str());
      reason += buf;
    }
    if (sid < s->appliances.size()) reason += leavingText(engine.config(), s->appliances[sid]);
    if (!cls.is_null() && (!inspected || entry_li != li))
      reason += "; the flow began when the classes sent it to listener '" + snapshotListenerName(engine, entry_li) +
                "': it keeps its listener and appliance until it ends (class changes apply to new flows)";
    json bypass = bypassJson(r, s, now);
    if (!bypass.is_null()) {
      reason += "; BYPASSED BY " + (bypass["by"].is_null() ? std::string("?") : bypass["by"].get<std::string>());
      if (bypass["until_s"].is_null()) {
        reason += " for the flow's life";
      } else {
        std::snprintf(buf, sizeof buf, " for %.0f s more", bypass["until_s"].get<double>());
        reason += buf;
      }
      reason += ": its packets go straight back to the router, uninspected";
    }
    out["reason"] = reason;
    out["moved"] = moved;
    out["bypass"] = bypass;
  } else if (!inspected) {
    out["existing"] = false;
    out["appliance"] = nullptr;
    out["reason"] = "no flow entry: " + cls["reason"].get<std::string>();
  } else {
    out["existing"] = false;
    out["appliance"] = appText(mid);
    out["reason"] = mid == dp::kNoAppliance
                        ? "no flow entry, and the group has no appliance for new flows"
                        : "no flow entry: a new flow takes Maglev slot " + std::to_string(slot) +
                              " of " + std::to_string(g.maglev.size());
  }
  return out;
}

}  // namespace gwlb::ctl
