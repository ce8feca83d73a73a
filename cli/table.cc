#include "cli/table.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace gwlb::cli {

void Table::addRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

size_t displayWidth(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++w;  // count lead bytes only
  }
  return w;
}

namespace {

void pad(std::string& out, size_t n) { out.append(n, ' '); }

}  // namespace

std::string Table::render() const {
  std::vector<size_t> width(columns_.size(), 0);
  for (size_t c = 0; c < columns_.size(); ++c) width[c] = displayWidth(columns_[c].header);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], displayWidth(row[c]));
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells, bool header) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = header ? columns_[c].header : cells[c];
      size_t fill = width[c] - displayWidth(cell);
      bool right = !header && columns_[c].align == Align::kRight;
      // Headers of right-aligned columns are right-aligned too, above their numbers.
      if (header && columns_[c].align == Align::kRight) right = true;
      if (c > 0) line += "  ";
      if (right) pad(line, fill);
      line += cell;
      if (!right) pad(line, fill);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  emit({}, true);
  for (const auto& row : rows_) emit(row, false);
  return out;
}

std::string renderKeyValues(const std::vector<std::pair<std::string, std::string>>& kv) {
  size_t w = 0;
  for (const auto& [k, v] : kv) w = std::max(w, displayWidth(k));
  std::string out;
  for (const auto& [k, v] : kv) {
    std::string line = k;
    pad(line, w - displayWidth(k) + 2);
    size_t start = 0;
    bool first = true;
    while (true) {
      size_t nl = v.find('\n', start);
      std::string part = v.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
      if (!first) {
        line.assign(w + 2, ' ');
      }
      line += part;
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line;
      out += '\n';
      first = false;
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
  }
  return out;
}

namespace {

std::string scaled(double v, const char* const* units, size_t n_units, double base,
                   const char* sep) {
  size_t u = 0;
  while (v >= base && u + 1 < n_units) {
    v /= base;
    ++u;
  }
  char buf[64];
  if (v >= 99.95) {
    std::snprintf(buf, sizeof buf, "%.0f%s%s", v, sep, units[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f%s%s", v, sep, units[u]);
  }
  return buf;
}

}  // namespace

std::string formatCount(uint64_t n) {
  if (n < 10000) return std::to_string(n);
  static const char* const kUnits[] = {"", "k", "M", "G", "T", "P", "E"};
  return scaled(double(n), kUnits, 7, 1000.0, "");
}

std::string formatBytes(uint64_t n) {
  if (n < 1024) return std::to_string(n) + " B";
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  return scaled(double(n), kUnits, 7, 1024.0, " ");
}

std::string formatRate(double per_second) {
  if (!std::isfinite(per_second) || per_second <= 0.0) return "0";
  if (per_second < 1000.0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", per_second);
    return buf;
  }
  static const char* const kUnits[] = {"", "k", "M", "G", "T"};
  return scaled(per_second, kUnits, 5, 1000.0, "");
}

std::string formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  char buf[64];
  if (seconds < 10.0 && seconds != std::floor(seconds)) {
    std::snprintf(buf, sizeof buf, "%.1fs", std::floor(seconds * 10.0) / 10.0);
    return buf;
  }
  auto s = uint64_t(seconds);
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llus", static_cast<unsigned long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%llum%llus", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lluh%llum", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llud%lluh", static_cast<unsigned long long>(s / 86400),
                  static_cast<unsigned long long>(s % 86400 / 3600));
  }
  return buf;
}

std::string formatNs(double ns) {
  if (!std::isfinite(ns) || ns < 0) return "-";
  static const char* const kUnits[] = {"ns", "us", "ms"};
  double v = ns;
  for (const char* unit : kUnits) {
    if (v < 9.95) {
      char buf[32];
      std::snprintf(buf, sizeof buf, unit == kUnits[0] ? "%.0f%s" : "%.1f%s", v, unit);
      return buf;
    }
    if (v < 999.5) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f%s", v, unit);
      return buf;
    }
    v /= 1000.0;
  }
  if (v < 9.95) {  // formatDuration rounds down: 0.9996 s would read 0.9s
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fs", v);
    return buf;
  }
  return formatDuration(v);
}

std::string formatAge(double instant_unix, double now_unix) {
  if (instant_unix <= 0) return "-";
  double d = now_unix - instant_unix;
  if (d < 0) return "in " + formatDuration(-d);
  return formatDuration(std::floor(d)) + " ago";
}

std::string formatTime(double instant_unix) {
  if (instant_unix <= 0) return "-";
  auto t = static_cast<time_t>(instant_unix);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

}  // namespace gwlb::cli
