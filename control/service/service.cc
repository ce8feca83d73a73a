// The method table of the control API and the views its handlers read
// (control/service/service.h). Control thread.
#include "control/service/service.h"

#include <chrono>

#include "control/api/api_server.h"
#include "control/api/api_failure.h"
#include "control/service/appliance_view.h"
#include "control/service/handlers.h"

namespace gwlb::ctl {

using nlohmann::json;

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

WorkerCounters WorkerStats::totals() const {
  WorkerCounters t;
  for (const auto& s : states)
    for (size_t k = 0; k < kNumCounters; ++k) t.v[k] += s->counters.get(Counter(k));
  return t;
}

ClassCount WorkerStats::classSlot(uint16_t slot) const {
  ClassCount c;
  if (slot >= kMaxClasses) return c;
  for (const auto& st : states) {
    c.packets += st->classPackets(slot);
    c.bytes += st->classBytes(slot);
    c.appliance_bypassed_packets += st->classBypassedPackets(slot);
    c.appliance_bypassed_bytes += st->classBypassedBytes(slot);
  }
  return c;
}

ApplianceTraffic WorkerStats::appliance(uint16_t id) const {
  ApplianceTraffic t;
  if (id >= dp::kMaxApplianceIds) return t;
  for (const auto& st : states) {
    t.sent_packets += st->sentPackets(id);
    t.sent_bytes += st->sentBytes(id);
    t.returned_packets += st->returnedPackets(id);
    t.returned_bytes += st->returnedBytes(id);
    t.bypassed_packets += st->bypassedPackets(id);
    t.bypassed_bytes += st->bypassedBytes(id);
  }
  return t;
}

void ServiceTable::add(const std::string& method, ServiceHandler h) {
  if (!handlers_.emplace(method, std::move(h)).second)
    throw std::logic_error("control API method " + method + " registered twice");
  order_.push_back(method);
}

void ServiceTable::addDeferred(const std::string& method,
                               std::function<ApiDeferral(const json& params, ApiReply reply)> start) {
  if (handlers_.count(method)) throw std::logic_error("control API method " + method + " registered twice");
  for (const ApiDeferredMethod& d : deferred_)
    if (d.method == method) throw std::logic_error("control API method " + method + " registered twice");
  deferred_.push_back({method, std::move(start)});
  order_.push_back(method);
}

json ServiceTable::call(const std::string& method, const json& params) const {
  try {
    auto it = handlers_.find(method);
    if (it == handlers_.end()) {
      std::string list;
      for (const std::string& n : order_) list += (list.empty() ? "" : ", ") + n;
      throw ApiFailure("bad_request", "unknown method '" + method + "' (" + list + ")");
    }
    return {{"ok", true}, {"result", it->second(params)}};
  } catch (const ApiFailure& f) {
    return failureReply(f);
  }
}

void addServiceMethods(ServiceTable& t, ServiceContext& c) {
  using P = const json&;
  t.add("status", [&c](P p) { return statusMethod(c, p); });
  t.add("servers", [&c](P p) { return appliancesMethod(c.engine, c.appliances, p); });
  t.add("groups", [&c](P p) { return groupsMethod(c.engine, c.appliances, p); });
  t.add("flows", [&c](P p) { return flowsMethod(c.engine, p); });
  t.add("explain", [&c](P p) { return explainMethod(c.engine, p); });
  t.add("classes", [&c](P p) {
    return classesMethod(c.engine, c.workers, c.reloading && c.reloading(), p);
  });
  t.add("stats", [&c](P p) { return statsMethod(c, p); });
  t.add("server.add", [&c](P p) { return applianceAddMethod(c, p); });
  t.add("server.remove", [&c](P p) { return applianceRemoveMethod(c, p); });
  t.add("server.set", [&c](P p) { return applianceSetMethod(c, p); });
  t.add("server.drain", [&c](P p) { return drainMethod(c.engine, c.now(), p); });
  t.add("server.undrain", [&c](P p) { return undrainMethod(c.engine, c.now(), p); });
  t.add("config", [&c](P p) { return configMethod(c.engine.config(), c.engine.fileConfig(), p); });
  t.add("health", [&c](P p) { return healthMethod(c.engine.config(), c.health, c.appliances, p); });
  t.add("destinations", [&c](P p) { return destinationsMethod(c.engine.regions(), p); });
}

}  // namespace gwlb::ctl
