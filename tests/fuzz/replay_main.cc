// Replay driver for the fuzz targets of tests/fuzz/ when they are built
// without libFuzzer (GCC, meson suite 'fuzz'): runs LLVMFuzzerTestOneInput
// over every file of the given directories (the seed corpus and every crash
// input ever found), then over a fixed number of deterministic mutations of
// them (own mutator, fixed seed: bit flips, interesting bytes, truncations,
// insertions, deletions, 16/32-bit length-field perturbation, chunk copies and
// splices between inputs). Same seed, same inputs, same executions: a failure
// reproduces exactly. On a crash or a failed FUZZ_CHECK the input being run is
// written to ./fuzz-failure-<target>.bin (and its origin printed) so it can be
// kept under tests/fuzz/regressions/<target>/.
//
// --timeout S stops on an input that runs longer than S seconds (manual runs;
// the meson tests rely on meson's timeout, whose SIGTERM also dumps the input).
//
//   fuzz_<target> [--mutations N] [--seed S] [--max-len L] [--timeout S] [--name T] DIR|FILE...
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_check.h"

namespace {

using Bytes = std::vector<uint8_t>;

// What is running now, for the fatal-signal handler.
const uint8_t* g_cur = nullptr;
size_t g_cur_len = 0;
char g_origin[512] = "";
char g_dump_path[256] = "fuzz-failure.bin";
unsigned g_timeout_s = 0;  // per input, with --timeout; 0: only the test's own timeout

void writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w <= 0) return;
    c += w;
    n -= size_t(w);
  }
}

void onFatal(int sig) {
  // Only async-signal-safe calls: the process is dying anyway.
  const char* m1 = sig == SIGALRM ? "\nfuzz replay: timeout (one input ran too long) while running "
                                  : "\nfuzz replay: fatal signal while running ";
  writeAll(2, m1, std::strlen(m1));
  writeAll(2, g_origin, std::strlen(g_origin));
  const char* m2 = "; input written to ";
  writeAll(2, m2, std::strlen(m2));
  writeAll(2, g_dump_path, std::strlen(g_dump_path));
  writeAll(2, "\n", 1);
  int fd = ::open(g_dump_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    if (g_cur && g_cur_len) writeAll(fd, g_cur, g_cur_len);
    ::close(fd);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// splitmix64: small, fast, fully determined by its seed.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : size_t(next() % n); }
};

// Runs one input from an exactly sized heap block, so that a read one byte
// past the end is a heap overflow for AddressSanitizer.
void runOne(const Bytes& in, const std::string& origin) {
  uint8_t* p = static_cast<uint8_t*>(std::malloc(in.size() ? in.size() : 1));
  if (!p) std::abort();
  if (!in.empty()) std::memcpy(p, in.data(), in.size());
  std::snprintf(g_origin, sizeof g_origin, "%s", origin.c_str());
  g_cur = p;
  g_cur_len = in.size();
  if (g_timeout_s) ::alarm(g_timeout_s);
  LLVMFuzzerTestOneInput(p, in.size());
  if (g_timeout_s) ::alarm(0);
  g_cur = nullptr;
  g_cur_len = 0;
  std::free(p);
}

void mutateOnce(Bytes& b, const std::vector<Bytes>& pool, Rng& r, size_t max_len) {
  static const uint8_t kInteresting[] = {0x00, 0x01, 0x02, 0x04, 0x05, 0x06, 0x08, 0x0f, 0x10,
                                         0x11, 0x20, 0x3a, 0x40, 0x45, 0x60, 0x7f, 0x80, 0x81,
                                         0xfe, 0xff, ':', '\n', '\r', ' ', '"', '{', '['};
  switch (r.below(9)) {
    case 0:  // bit flip
      if (!b.empty()) b[r.below(b.size())] ^= uint8_t(1u << r.below(8));
      break;
    case 1:  // interesting byte
      if (!b.empty()) b[r.below(b.size())] = kInteresting[r.below(sizeof kInteresting)];
      break;
    case 2:  // random byte
      if (!b.empty()) b[r.below(b.size())] = uint8_t(r.next());
      break;
    case 3:  // truncate
      b.resize(r.below(b.size() + 1));
      break;
    case 4: {  // insert 1..8 bytes
      size_t pos = r.below(b.size() + 1), n = 1 + r.below(8);
      Bytes ins(n);
      for (auto& c : ins) c = r.below(2) ? uint8_t(r.next()) : kInteresting[r.below(sizeof kInteresting)];
      b.insert(b.begin() + std::ptrdiff_t(pos), ins.begin(), ins.end());
      break;
    }
    case 5: {  // delete a range
      if (b.empty()) break;
      size_t pos = r.below(b.size()), n = 1 + r.below(std::min<size_t>(16, b.size() - pos));
      b.erase(b.begin() + std::ptrdiff_t(pos), b.begin() + std::ptrdiff_t(pos + n));
      break;
    }
    case 6: {  // length field: a 16- or 32-bit big-endian value nudged or set to an edge
      bool wide = r.below(4) == 0;
      size_t w = wide ? 4 : 2;
      if (b.size() < w) break;
      size_t pos = r.below(b.size() - w + 1);
      uint64_t v = 0;
      for (size_t i = 0; i < w; ++i) v = (v << 8) | b[pos + i];
      switch (r.below(5)) {
        case 0: v += 1 + r.below(8); break;
        case 1: v -= 1 + r.below(8); break;
        case 2: v = 0; break;
        case 3: v = wide ? 0xFFFFFFFFu : 0xFFFFu; break;
        default: v = b.size() - pos + r.below(9) - 4; break;  // about "the rest"
      }
      for (size_t i = 0; i < w; ++i) b[pos + i] = uint8_t(v >> (8 * (w - 1 - i)));
      break;
    }
    case 7: {  // copy a chunk of another input (or this one) into this one
      const Bytes& o = pool.empty() ? b : pool[r.below(pool.size())];
      if (o.empty()) break;
      size_t from = r.below(o.size()), n = 1 + r.below(std::min<size_t>(64, o.size() - from));
      Bytes chunk(o.begin() + std::ptrdiff_t(from), o.begin() + std::ptrdiff_t(from + n));
      size_t pos = r.below(b.size() + 1);
      if (r.below(2) && pos + n <= b.size())
        std::copy(chunk.begin(), chunk.end(), b.begin() + std::ptrdiff_t(pos));
      else
        b.insert(b.begin() + std::ptrdiff_t(pos), chunk.begin(), chunk.end());
      break;
    }
    default: {  // splice: our head, another input's tail
      if (pool.empty()) break;
      const Bytes& o = pool[r.below(pool.size())];
      size_t cut = r.below(b.size() + 1), ocut = r.below(o.size() + 1);
      b.resize(cut);
      b.insert(b.end(), o.begin() + std::ptrdiff_t(ocut), o.end());
      break;
    }
  }
  if (b.size() > max_len) b.resize(max_len);
}

bool readFile(const std::filesystem::path& p, Bytes& out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return !f.bad();
}

int usage() {
  std::fprintf(stderr,
               "usage: fuzz_<target> [--mutations N] [--seed S] [--max-len L] [--timeout S] [--name T] "
               "DIR|FILE...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mutations = 20000, seed = 1;
  size_t max_len = 4096;
  std::string name = std::filesystem::path(argv[0]).filename().string();
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", what);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--mutations") mutations = std::strtoull(val("--mutations"), nullptr, 10);
    else if (a == "--seed") seed = std::strtoull(val("--seed"), nullptr, 10);
    else if (a == "--max-len") max_len = std::strtoull(val("--max-len"), nullptr, 10);
    else if (a == "--name") name = val("--name");
    else if (a == "--timeout") g_timeout_s = unsigned(std::strtoul(val("--timeout"), nullptr, 10));
    else if (a.rfind("--", 0) == 0) return usage();
    else paths.push_back(a);
  }
  if (paths.empty()) return usage();
  std::snprintf(g_dump_path, sizeof g_dump_path, "fuzz-failure-%s.bin", name.c_str());
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGALRM, SIGTERM}) ::signal(sig, onFatal);

  // Inputs: every regular file of each directory (sorted; README* and dot
  // files are notes, not inputs), or the file itself.
  std::vector<Bytes> pool;
  std::vector<std::string> names;
  for (const std::string& p : paths) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(p, ec)) {
        std::string fn = e.path().filename().string();
        if (!e.is_regular_file() || fn.rfind("README", 0) == 0 || fn[0] == '.') continue;
        files.push_back(e.path());
      }
      if (ec) {
        std::fprintf(stderr, "%s: cannot list %s: %s\n", name.c_str(), p.c_str(), ec.message().c_str());
        return 2;
      }
      std::sort(files.begin(), files.end());
    } else if (std::filesystem::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "%s: %s is neither a directory nor a file\n", name.c_str(), p.c_str());
      return 2;
    }
    for (const auto& f : files) {
      Bytes b;
      if (!readFile(f, b)) {
        std::fprintf(stderr, "%s: cannot read %s\n", name.c_str(), f.c_str());
        return 2;
      }
      pool.push_back(std::move(b));
      names.push_back(f.string());
    }
  }
  if (pool.empty()) {
    std::fprintf(stderr, "%s: no inputs in %zu path(s): the seed corpus is missing\n",
                 name.c_str(), paths.size());
    return 1;
  }

  for (size_t i = 0; i < pool.size(); ++i) runOne(pool[i], names[i]);

  Rng r{seed};
  for (uint64_t i = 0; i < mutations; ++i) {
    size_t base = r.below(pool.size());
    Bytes b = pool[base];
    size_t ops = 1 + r.below(4);
    for (size_t k = 0; k < ops; ++k) mutateOnce(b, pool, r, max_len);
    runOne(b, "mutation " + std::to_string(i) + " (seed " + std::to_string(seed) + ") of " +
                  names[base]);
  }
  std::printf("%s: %zu inputs (corpus and regressions) and %llu mutations (seed %llu) ran; "
              "every invariant held\n",
              name.c_str(), pool.size(), (unsigned long long)mutations, (unsigned long long)seed);
  return 0;
}
