// Text formatting for gwlbctl: aligned tables, key/value blocks and human
// units (counts, bytes, rates, durations, ages). Pure code: no sockets, no
// clock (callers pass `now`). Allocates; never throws except std::bad_alloc.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gwlb::cli {

enum class Align : uint8_t { kLeft, kRight };

// Columns separated by two spaces, header row first, no trailing blanks.
class Table {
 public:
  struct Column {
    std::string header;
    Align align = Align::kLeft;
  };

  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // A row with fewer cells than columns is padded with empty cells; extra cells are dropped.
  void addRow(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  std::string render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "key   value" lines, keys padded to the longest. Values may be multi-line
// (continuation lines are indented under the value).
std::string renderKeyValues(const std::vector<std::pair<std::string, std::string>>& kv);

// Display width of UTF-8 text (code points; gwlbctl prints no wide characters).
size_t displayWidth(const std::string& s);

// 1234 -> "1234", 12345 -> "12.3k", 1234567 -> "1.2M" (SI, exact below 10000).
std::string formatCount(uint64_t n);
// 512 -> "512 B", 1536 -> "1.5 KiB", 10 MiB -> "10.0 MiB" (IEC).
std::string formatBytes(uint64_t n);
// Per-second rate: "0", "12.5", "999.0", "12.3k", "1.2M".
std::string formatRate(double per_second);
// 0.25 -> "0.2s", 42 -> "42s", 312 -> "5m12s", 7260 -> "2h1m", 90000 -> "1d1h".
std::string formatDuration(double seconds);
// A short time in nanoseconds: 850 -> "850ns", 4500 -> "4.5us", 45000 -> "45us",
// 1.2e6 -> "1.2ms", 250e6 -> "250ms", 3e9 -> "3s" (formatDuration above 1 s);
// "-" for a negative or non-finite value.
std::string formatNs(double ns);
// Age of an instant: "5m12s ago"; "-" for 0 (never); "in 3s" if in the future.
std::string formatAge(double instant_unix, double now_unix);
// UTC "2024-05-01 12:00:00Z" for a Unix time ("-" for 0).
std::string formatTime(double instant_unix);

}  // namespace gwlb::cli
