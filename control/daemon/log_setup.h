// How gwlbd's log lines look (docs/observability.md "Logs"): the default
// "[time] [level] message" on a terminal or in a file; under systemd, when
// stdout is the journal's stream, each line starts with its syslog priority
// ("<4>" for a warning) so journald files it at that priority (and adds the
// time itself).
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace gwlb::ctl {

// True when `fd` is the stream systemd connected to the journal:
// JOURNAL_STREAM (`env`, "DEVICE:INODE") names the file fd refers to.
bool isJournalStream(int fd, const char* env) noexcept;

// The syslog priority journald files a line of this level at.
int syslogPriority(spdlog::level::level_enum l) noexcept;

// The pattern of the default logger: with `journal`, "<N>[level] message".
void setLogPattern(spdlog::logger& logger, bool journal);

}  // namespace gwlb::ctl
