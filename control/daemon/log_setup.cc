#include "control/daemon/log_setup.h"

#include <spdlog/pattern_formatter.h>
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <memory>

namespace gwlb::ctl {

namespace {

// %* : the line's syslog priority as journald reads it, "<N>".
class PriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    char b[8];
    int n = std::snprintf(b, sizeof b, "<%d>", syslogPriority(msg.level));
    dest.append(b, b + n);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PriorityFlag>();
  }
};

}  // namespace

bool isJournalStream(int fd, const char* env) noexcept {
  if (!env || !*env) return false;
  uintmax_t dev = 0, ino = 0;
  char tail = 0;
  if (std::sscanf(env, "%" SCNuMAX ":%" SCNuMAX "%c", &dev, &ino, &tail) != 2) return false;
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  return uintmax_t(st.st_dev) == dev && uintmax_t(st.st_ino) == ino;
}

int syslogPriority(spdlog::level::level_enum l) noexcept {
  switch (l) {
    case spdlog::level::critical: return 2;  // LOG_CRIT
    case spdlog::level::err: return 3;       // LOG_ERR
    case spdlog::level::warn: return 4;      // LOG_WARNING
    case spdlog::level::info: return 6;      // LOG_INFO
    default: return 7;                       // LOG_DEBUG (trace, debug)
  }
}

void setLogPattern(spdlog::logger& logger, bool journal) {
  if (!journal) return;  // spdlog's default: "[time] [level] message"
  auto f = std::make_unique<spdlog::pattern_formatter>();
  f->add_flag<PriorityFlag>('*').set_pattern("%*[%l] %v");
  logger.set_formatter(std::move(f));
}

}  // namespace gwlb::ctl
