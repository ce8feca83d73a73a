#include "control/api/health_endpoint.h"

namespace gwlb::ctl {

std::string jsonText(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

HttpReply destinationsReply(
    const std::string& path, const std::vector<RegionTracker::Listener>& listeners,
    const std::function<nlohmann::json(const RegionTracker::Listener&)>& render) {
  using nlohmann::json;
  const std::string kJson = "application/json";
  if (path == "/destinations" || path == "/destinations/") {
    json all = json::array();
    for (const auto& l : listeners) all.push_back(render(l));
    return {200, kJson, jsonText(json{{"destinations", all}}, 2) + "\n"};
  }
  const std::string prefix = "/destinations/";
  if (path.rfind(prefix, 0) == 0) {
    std::string name = path.substr(prefix.size());
    for (const auto& l : listeners)
      if (l.name == name) return {l.destination_healthy ? 200 : 503, kJson, jsonText(render(l), 2) + "\n"};
    return {404, kJson, jsonText(json{{"error", "no destination '" + name + "'"}}) + "\n"};
  }
  return {404, kJson, jsonText(json{{"error", "use /destinations or /destinations/NAME"}}) + "\n"};
}

}  // namespace gwlb::ctl
