// A control API request that fails: an error code (bad_request, not_found,
// invalid_config, limit_reached, ...), a message and optional details.
// Thrown by the API's parameter checks (control/api/api_params.h) and by the
// handlers, which render the engine's refusals (control/engine/refusal.h) as
// one; the method table turns it into the error reply (docs/control-api.md).
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>

namespace gwlb::ctl {

struct ApiFailure : std::runtime_error {
  std::string code;
  nlohmann::json details;
  ApiFailure(std::string c, const std::string& m, nlohmann::json d = nullptr)
      : std::runtime_error(m), code(std::move(c)), details(std::move(d)) {}
};

}  // namespace gwlb::ctl
