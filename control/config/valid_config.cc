#include "control/config/valid_config.h"

namespace gwlb::ctl {

std::optional<ValidConfig> validConfig(Config c, std::vector<ConfigError>& errors) {
  std::vector<ConfigError> found;
  if (!validateConfig(c, found)) {
    errors.insert(errors.end(), found.begin(), found.end());
    return std::nullopt;
  }
  return ValidConfig(std::move(c));
}

bool loadRunnableConfig(const std::string& path, std::optional<ValidConfig>& out,
                        std::vector<ConfigError>& errors, FlowHashKey* key, bool* key_configured) {
  out.reset();
  Config c;
  // parseConfig() ends with the same checks validateConfig() makes, on the
  // typed result (with the YAML's line order for the errors).
  if (!loadRunnableConfig(path, c, errors, key, key_configured)) return false;
  out.emplace(ValidConfig(std::move(c)));
  return true;
}

}  // namespace gwlb::ctl
