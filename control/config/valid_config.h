// A Config that passed validateConfig(), as it was then. Only validation
// makes one and it cannot be edited, so what runs after the check (the
// service guard, the probe-path checks, the engine, every snapshot build)
// takes it as checked instead of checking again: a large config costs tens
// of milliseconds per validation, and a snapshot is built at every health
// change. To edit one, take its Config back (release() or a copy of get())
// and validate the result again. Thread: any.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "control/config/config.h"

namespace gwlb::ctl {

class ValidConfig {
 public:
  const Config& get() const { return c_; }
  const Config& operator*() const { return c_; }
  const Config* operator->() const { return &c_; }
  // The Config itself, to be edited (and validated again).
  Config release() && { return std::move(c_); }

 private:
  explicit ValidConfig(Config c) : c_(std::move(c)) {}
  friend std::optional<ValidConfig> validConfig(Config c, std::vector<ConfigError>& errors);
  friend bool loadRunnableConfig(const std::string& path, std::optional<ValidConfig>& out,
                                 std::vector<ConfigError>& errors, FlowHashKey* key,
                                 bool* key_configured);
  Config c_;
};

// How many times validateConfig() ran in this process (any thread): the
// tests hold each change to one validation, and snapshot builds to none.
uint64_t validationsRun();

// `c` checked (validateConfig): the ValidConfig, or none with `errors` filled.
// Never throws but bad_alloc.
std::optional<ValidConfig> validConfig(Config c, std::vector<ConfigError>& errors);

// loadRunnableConfig() whose result is a ValidConfig (the loader validated
// it: it is not checked twice). Never throws but bad_alloc; reads files.
bool loadRunnableConfig(const std::string& path, std::optional<ValidConfig>& out,
                        std::vector<ConfigError>& errors, FlowHashKey* key = nullptr,
                        bool* key_configured = nullptr);

}  // namespace gwlb::ctl
