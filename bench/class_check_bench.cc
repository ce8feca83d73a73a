// Benchmark (never pass/fail): how long a traffic-class config takes to
// check and to compile, on the shapes that cost the most. gwlbd checks a file
// in --check-config (the unit's ExecStartPre), at start, in `gwlbctl config
// check` and on reload on the control thread, where the systemd watchdog
// kills it after 10 s; the bar is 1 s for the worst class set the schema
// accepts.
//
// Shapes (a gateway with one server group and the implicit listener, then
// the classes; random values from --seed). A config file holds at most
// ctl::kMaxConfigBytes of YAML; a class's prefixes may also come from a
// prefix file (prefixes_file, written to a temporary directory and read by
// the parse), 1,024 prefixes a class either way:
//   anchor-N       N classes (25, 50, 1000) sharing one list of 1,024 IPv4
//                  prefixes through a YAML anchor, each with its own
//                  l4_ports (4 ports): every pair of classes has the same
//                  prefixes, so only their ports tell them apart
//   shared-file    the same as anchor-1000 with the list in one prefix file
//                  all 1,000 classes name
//   scattered-32s  as many classes of 1,024 distinct random IPv4 /32s as a
//                  config file at its limit holds (YAML), each with its own 4 ports
//   files-32s      1,000 classes of 1,024 distinct random IPv4 /32s, each
//                  class's in its own prefix file, and 4 ports each
//   distinct-1000  1,000 classes of 1,024 distinct random prefixes (/8../32,
//                  IPv4 and IPv6) in their own prefix files, and 4 ports each
//   near-ports     as many classes as a config file holds (YAML; ports have
//                  no files) whose 1,024 l4_ports are the same but for one
//                  port near the top (each class shadows none, and telling so
//                  walks almost every port of almost every pair: the shadow
//                  check's worst case, where it stops at its bound)
//   near-prefixes  1,000 classes of 1,024 prefixes (/24s) in their own prefix
//                  files, the same but for one, and no ports
//   mixed-1000     1,000 classes of the kinds a person writes (VLAN + UDP,
//                  IPv4 /24 + port, TCP + port range, VLAN + IPv6 /48)
//
// Figures per shape (milliseconds of the thread's CPU time, median of
// --reps; wall-clock in the JSON): parse = YAML text to a validated Config
// (parseConfig, what --check-config and gwlbctl do before the warnings);
// validate = validateConfig on the typed Config alone; warnings =
// configWarnings (the shadow check and the rest); compile = the ClassTable
// from the classes, as the snapshot builder makes it at start and on reload
// (--compile none|legal|all: legal, the default, leaves out the shapes no
// file can hold); check = parse + warnings; total = check + compile, the
// figure the 1 s bar is for. Also: the file's size (with its prefix files),
// whether the shadow check was computed, the warnings' count, the compiled
// bytes.
//
//   class_check_bench [--shapes a,b,...] [--reps R] [--compile none|legal|all] [--seed X]
//                     [--config-bytes N]
// --config-bytes: fill the YAML-only shapes (scattered-32s, near-ports) to N
// bytes instead of the loader's limit (to measure where the limit belongs).
// Prints a table, then one JSON line (last line of stdout).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "common/traffic_class.h"
#include "control/config/config.h"
#include "control/config/prefix_list.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::bench {
namespace {

struct Options {
  std::vector<std::string> shapes = {"anchor-25",     "anchor-50", "anchor-1000", "shared-file",
                                     "scattered-32s", "files-32s", "distinct-1000", "near-ports",
                                     "near-prefixes", "mixed-1000"};
  unsigned reps = 5;
  std::string compile = "legal";
  uint64_t seed = 0x6777'6c62'0034ULL;
  size_t config_bytes = ctl::kMaxConfigBytes;
};

// A shape: the config's YAML and its prefix files (name -> text).
struct Shape {
  std::string yaml;
  std::map<std::string, std::string> files;
  size_t bytes() const {
    size_t n = yaml.size();
    for (const auto& [name, text] : files) n += text.size();
    return n;
  }
};

// Prefixes per file when `n` classes have files of their own: 1,024, or
// fewer so that all of them stay within the loader's total.
size_t perFile(size_t n) { return std::min<size_t>(1024, ctl::kMaxFilePrefixes / n); }

// A prefix file of `items`, one per line after a comment.
std::string prefixFile(const std::vector<std::string>& items) {
  std::string f = "# class_check_bench\n";
  for (const std::string& s : items) f += s + "\n";
  return f;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "class_check_bench: %s\n", what.c_str());
  std::exit(2);
}

const char* kHead =
    "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
    "server_groups:\n"
    "  - name: fw\n"
    "    health_check: { protocol: tcp, port: 80 }\n"
    "    servers: [ { address: 192.0.2.10 } ]\n"
    "traffic_classes:\n";

std::string v4(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string(a >> 16 & 255) + "." + std::to_string(a >> 8 & 255) + "." +
         std::to_string(a & 255);
}

// One class as flow-style YAML; `prefixes` either literal items, "*name" or
// "@file" (a prefix file).
std::string classLine(size_t i, const std::string& prefixes, const std::string& ports, const char* action = "drop") {
  std::string m;
  if (!prefixes.empty() && prefixes[0] == '@') m += "prefixes_file: " + prefixes.substr(1);
  else if (!prefixes.empty()) m += "prefixes: " + prefixes;
  if (!ports.empty()) m += std::string(m.empty() ? "" : ", ") + "l4_ports: " + ports;
  return "  - { name: c" + std::to_string(i) + ", action: " + action + ", match: { " + m + " } }\n";
}

std::string list(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + "]";
}

// `n` distinct ports at random, as a YAML list.
std::string ownPorts(std::mt19937_64& rng, size_t n) {
  std::set<uint16_t> p;
  while (p.size() < n) p.insert(uint16_t(rng()));
  std::vector<std::string> s;
  for (uint16_t x : p) s.push_back(std::to_string(x));
  return list(s);
}

Shape shapeOf(const std::string& shape, const Options& o) {
  std::mt19937_64 rng(o.seed);
  Shape sh;
  std::string& y = sh.yaml;
  y = kHead;
  // Appends a class line while the YAML stays within the limit.
  auto fits = [&](const std::string& line) { return y.size() + line.size() <= o.config_bytes; };
  auto v4Prefix = [&](unsigned len) {
    const uint32_t mask = len == 32 ? ~0u : ~((1u << (32 - len)) - 1);
    return v4(uint32_t(rng()) & mask) + "/" + std::to_string(len);
  };
  if (shape.rfind("anchor-", 0) == 0 || shape == "shared-file") {
    const size_t n = shape == "shared-file" ? 1000 : std::stoul(shape.substr(7));
    std::set<uint32_t> nets;
    while (nets.size() < 1024) nets.insert(uint32_t(rng()) & 0xFFFFFF00u);
    std::vector<std::string> items;
    for (uint32_t a : nets) items.push_back(v4(a) + "/24");
    if (shape == "shared-file") sh.files["shared.txt"] = prefixFile(items);
    for (size_t i = 0; i < n; ++i) {
      const std::string prefixes = shape == "shared-file" ? "@shared.txt" : i == 0 ? "&shared " + list(items) : "*shared";
      y += classLine(i, prefixes, ownPorts(rng, 4));
    }
  } else if (shape == "scattered-32s" || shape == "files-32s" || shape.rfind("distinct-", 0) == 0) {
    const bool yaml = shape == "scattered-32s", scattered = shape.rfind("distinct-", 0) != 0;
    const size_t n = shape.rfind("distinct-", 0) == 0 ? std::stoul(shape.substr(9)) : 1000;
    for (size_t i = 0; i < n; ++i) {
      std::set<std::string> items;
      while (items.size() < (yaml ? 1024 : perFile(n))) {
        if (scattered || rng() % 4) {
          items.insert(v4Prefix(scattered ? 32 : 8 + unsigned(rng() % 25)));
        } else {
          char b[64];
          std::snprintf(b, sizeof b, "2001:db8:%x:%x::/64", unsigned(rng() & 0xFFFF), unsigned(rng() & 0xFFFF));
          items.insert(b);
        }
      }
      const std::vector<std::string> v(items.begin(), items.end());
      if (yaml) {
        std::string line = classLine(i, list(v), ownPorts(rng, 4));
        if (!fits(line)) break;
        y += line;
      } else {
        const std::string name = "c" + std::to_string(i) + ".txt";
        sh.files[name] = prefixFile(v);
        y += classLine(i, "@" + name, ownPorts(rng, 4));
      }
    }
  } else if (shape == "near-ports") {
    std::vector<std::string> base;
    for (uint32_t p = 0; p < 1023; ++p) base.push_back(std::to_string(p * 64));
    for (size_t i = 0; i < 1000; ++i) {
      // One per class among the top shared ones, lower for each later class
      // (so that bounds, sizes and coarse buckets all allow the pair).
      std::vector<std::string> items = base;
      items.push_back(std::to_string(65535 - 2 * i));
      std::string line = classLine(i, "", list(items));
      if (!fits(line)) break;
      y += line;
    }
  } else if (shape == "near-prefixes") {
    std::vector<std::string> base;
    for (uint32_t k = 0; k + 1 < perFile(1000); ++k) base.push_back(v4(0x0A000000u | k << 12) + "/24");
    for (size_t i = 0; i < 1000; ++i) {
      std::vector<std::string> items = base;
      items.push_back(v4(0x0B000000u | uint32_t(999 - i) << 8) + "/24");  // past the shared ones
      const std::string name = "c" + std::to_string(i) + ".txt";
      sh.files[name] = prefixFile(items);
      y += classLine(i, "@" + name, "");
    }
  } else if (shape == "mixed-1000") {
    for (uint32_t i = 0; i < 1000; ++i) {
      std::string m;
      switch (i % 4) {
        case 0: m = "vlans: [" + std::to_string(100 + i % 3900) + "], protocols: [udp]"; break;
        case 1:
          m = "prefixes: [" + v4(0x0A000000u | (100 + i / 256 % 100) << 16 | (i % 256) << 8) + "/24], l4_ports: [" +
              std::to_string(2000 + i) + "]";
          break;
        case 2: m = "protocols: [tcp], l4_ports: [" + std::to_string(30000 + i) + "-" + std::to_string(30005 + i) + "]"; break;
        default: {
          char b[64];
          std::snprintf(b, sizeof b, "\"2001:db8:%x::/48\"", i);
          m = "prefixes: [" + std::string(b) + "], vlans: [" + std::to_string(1 + i % 4000) + "]";
        }
      }
      y += "  - { name: c" + std::to_string(i) + ", action: bypass, match: { " + m + " } }\n";
    }
  } else {
    die("unknown shape '" + shape + "'");
  }
  return sh;
}

double cpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}
double wallMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Timed {
  std::vector<double> cpu, wall;
  void run(const std::function<void()>& f) {
    const double c = cpuMs(), w = wallMs();
    f();
    cpu.push_back(cpuMs() - c);
    wall.push_back(wallMs() - w);
  }
  double median() const { return stats(cpu).median; }
  std::string json() const {
    if (cpu.empty()) return "null";
    return "{\"cpu_ms\":" + fmt("%.3f", stats(cpu).median) + ",\"wall_ms\":" + fmt("%.3f", stats(wall).median) +
           ",\"cpu_ms_max\":" + fmt("%.3f", stats(cpu).max) + "}";
  }
};

struct Row {
  std::string shape;
  size_t bytes = 0, files = 0, classes = 0, prefixes = 0, warnings = 0;
  bool file = false, computed = true, compiled = false, cross = false;
  size_t table_bytes = 0;
  Timed parse, validate, warn, compile;
};

Row measure(const std::string& shape, const Options& o) {
  Row r;
  r.shape = shape;
  const Shape sh = shapeOf(shape, o);
  const std::string& text = sh.yaml;
  r.bytes = sh.bytes();
  r.files = sh.files.size();
  r.file = text.size() <= o.config_bytes;
  // The prefix files in a directory of their own, read by every parse (from
  // the page cache, as a check soon after an edit reads them).
  char tmpl[] = "/tmp/class_check_bench.XXXXXX";
  if (!sh.files.empty() && !::mkdtemp(tmpl)) die("mkdtemp failed");
  const std::string dir = sh.files.empty() ? std::string() : std::string(tmpl) + "/";
  for (const auto& [name, body] : sh.files) std::ofstream(dir + name, std::ios::binary) << body;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      if (!dir.empty()) std::filesystem::remove_all(dir);
    }
  } cleanup{dir};
  ctl::Config cfg;
  std::vector<ctl::ConfigError> errors;
  if (!ctl::parseConfig(text, cfg, errors, dir)) die(shape + ": not valid: " + ctl::formatErrors(errors));
  r.classes = cfg.traffic_classes.size();
  for (const auto& c : cfg.traffic_classes) r.prefixes += c.match.prefixes.size();
  const bool compile = o.compile == "all" || (o.compile == "legal" && r.file);
  for (unsigned k = 0; k < o.reps; ++k) {
    if (r.file)
      r.parse.run([&] {
        ctl::Config c;
        std::vector<ctl::ConfigError> e;
        if (!ctl::parseConfig(text, c, e, dir)) die(shape + ": parse failed");
      });
    r.validate.run([&] {
      std::vector<ctl::ConfigError> e;
      if (!ctl::validateConfig(cfg, e)) die(shape + ": validate failed");
    });
    std::vector<ctl::ConfigError> w;
    r.warn.run([&] { w = ctl::configWarnings(cfg); });
    r.warnings = w.size();
    r.computed = std::none_of(w.begin(), w.end(),
                              [](const ctl::ConfigError& e) { return e.message.rfind("not computed", 0) == 0; });
    if (compile)
      r.compile.run([&] {
        std::vector<ClassRule> rules;
        for (const auto& c : cfg.traffic_classes) rules.push_back(ctl::classRule(c));
        ClassTable t(rules);
        r.table_bytes = t.memoryBytes();
        r.cross = t.crossProduct();
      });
    r.compiled = compile;
  }
  return r;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    size_t b = s.find(',', a);
    if (b == std::string::npos) b = s.size();
    if (b > a) out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  using namespace gwlb::bench;
  Options o;
  const char* usage =
      "usage: class_check_bench [--shapes a,b,...] [--reps R] [--compile none|legal|all] [--seed X] [--config-bytes N]";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(usage);
      return argv[++i];
    };
    if (a == "--shapes") o.shapes = split(next());
    else if (a == "--reps") o.reps = unsigned(std::stoul(next()));
    else if (a == "--compile") o.compile = next();
    else if (a == "--seed") o.seed = std::stoull(next(), nullptr, 0);
    else if (a == "--config-bytes") o.config_bytes = std::stoull(next(), nullptr, 0);
    else die(usage);
  }
  if (o.reps == 0 || (o.compile != "none" && o.compile != "legal" && o.compile != "all")) die(usage);
  std::printf("%-14s %8s %8s %6s %9s %10s %10s %10s %10s %10s %10s %s\n", "shape", "classes", "MiB", "files",
              "prefixes", "parse ms", "valid. ms", "warn. ms", "check ms", "compile ms", "total ms", "shadow check");
  std::string rows;
  for (const std::string& s : o.shapes) {
    Row r = measure(s, o);
    auto ms = [](const Timed& t) { return t.cpu.empty() ? std::string("-") : fmt("%.1f", t.median()); };
    const double check = (r.file ? r.parse.median() : r.validate.median()) + r.warn.median();
    const double total = check + (r.compile.cpu.empty() ? 0.0 : r.compile.median());
    std::printf("%-14s %8zu %8.2f %6zu %9zu %10s %10s %10s %10.1f %10s %10.1f %s\n", s.c_str(), r.classes,
                double(r.bytes) / (1 << 20), r.files, r.prefixes, ms(r.parse).c_str(), ms(r.validate).c_str(),
                ms(r.warn).c_str(), check, ms(r.compile).c_str(), total,
                r.computed ? "computed" : "not computed (bound)");
    std::fflush(stdout);
    rows += std::string(rows.empty() ? "" : ",") + "{\"shape\":\"" + s + "\",\"classes\":" + std::to_string(r.classes) +
            ",\"bytes\":" + std::to_string(r.bytes) + ",\"prefix_files\":" + std::to_string(r.files) +
            ",\"file\":" + (r.file ? "true" : "false") +
            ",\"prefixes\":" + std::to_string(r.prefixes) + ",\"parse\":" + r.parse.json() +
            ",\"validate\":" + r.validate.json() + ",\"warnings\":" + r.warn.json() +
            ",\"check_cpu_ms\":" + fmt("%.3f", check) + ",\"total_cpu_ms\":" + fmt("%.3f", total) + ",\"warning_count\":" + std::to_string(r.warnings) +
            ",\"shadow_check_computed\":" + (r.computed ? "true" : "false") + ",\"compile\":" + r.compile.json() +
            ",\"table_bytes\":" + std::to_string(r.table_bytes) +
            ",\"structure\":\"" + (r.compiled ? (r.cross ? "cross_product" : "bit_vectors") : "") + "\"}";
  }
  std::printf("{\"reps\":%u,\"seed\":%llu,\"compile\":\"%s\",\"rows\":[%s]}\n", o.reps,
              static_cast<unsigned long long>(o.seed), o.compile.c_str(), rows.c_str());
  return 0;
}
