// Reading the classes' prefix files (prefix_list.h): each file once, bounded
// in bytes, its prefixes appended to the class's inline ones so that the
// checks, the warnings, the compile and the config digest see one list.
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <system_error>
#include <tuple>

#include "control/config/prefix_list.h"

namespace gwlb::ctl {

namespace {

struct PrefixFile {
  bool ok = false;
  std::vector<PrefixConfig> prefixes;
  std::vector<uint32_t> lines;
  std::string sha256;  // hex
};

std::string sha256Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1) return {};
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

// The file's bytes, at most `limit` (one more is an error); "" with `error`.
bool readFile(const std::string& path, size_t limit, std::string& text, std::string& error) {
  auto sysError = [&](const char* what, int e) {
    error = std::string("cannot ") + what + " '" + path + "': " + std::error_code(e, std::generic_category()).message();
    return false;
  };
  // O_NONBLOCK: a FIFO named by mistake must not stall a check or a reload.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return sysError("open", errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return sysError("read", errno);
  if (!S_ISREG(st.st_mode)) {
    error = "'" + path + "' is not a regular file";
    return false;
  }
  text.clear();
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sysError("read", errno);
    if (n == 0) return true;
    if (text.size() + size_t(n) > limit) {
      error = "'" + path + "' is larger than " + std::to_string(limit >> 10) +
              " KiB; a prefix file is at most that long";
      return false;
    }
    text.append(buf, size_t(n));
  }
}

std::string absolute(const std::string& file, const std::string& base_dir) {
  if (!file.empty() && file[0] == '/') return file;
  std::string dir = base_dir;
  if (dir.empty() || dir[0] != '/') {
    char cwd[4096];
    std::string here = ::getcwd(cwd, sizeof cwd) ? cwd : ".";
    dir = dir.empty() ? here : here + "/" + dir;
  }
  return dir + (dir.back() == '/' ? "" : "/") + file;
}

}  // namespace

void loadPrefixFiles(Config& c, const std::string& base_dir, std::vector<ConfigError>& errors) {
  std::map<std::string, PrefixFile> files;
  size_t total = 0, prefixes = 0;
  for (size_t i = 0; i < c.traffic_classes.size(); ++i) {
    TrafficClassMatch& m = c.traffic_classes[i].match;
    if (m.prefixes_file.empty()) continue;
    const std::string key = "traffic_classes[" + std::to_string(i) + "].match.prefixes_file";
    if (m.prefixes_file.find('\0') != std::string::npos) {
      errors.push_back({key, "holds a NUL byte; expected a file path"});
      continue;
    }
    m.prefixes_file = absolute(m.prefixes_file, base_dir);
    const std::string& path = m.prefixes_file;
    auto [it, fresh] = files.try_emplace(path);
    PrefixFile& f = it->second;
    if (fresh) {
      std::string text, error;
      if (!readFile(path, kMaxPrefixFileBytes, text, error)) {
        errors.push_back({key, error});
        continue;
      }
      total += text.size();
      if (total > kMaxPrefixFilesBytes) {
        errors.push_back({key, "'" + path + "' brings the prefix files to more than " +
                                   std::to_string(kMaxPrefixFilesBytes >> 20) +
                                   " MiB; the prefix files of a config are at most that long together"});
        continue;
      }
      std::vector<PrefixListError> errs;
      f.ok = parsePrefixList(text, kMaxClassPrefixes, f.prefixes, f.lines, errs);
      for (const PrefixListError& e : errs)
        errors.push_back({key, path + ":" + std::to_string(e.line) + ": " + e.message});
      if (errs.size() >= kMaxPrefixListErrors)
        errors.push_back({key, path + ": stopped after " + std::to_string(kMaxPrefixListErrors) + " errors"});
      if (f.ok) f.sha256 = sha256Hex(text);
      prefixes += f.prefixes.size();
      if (f.ok && prefixes > kMaxFilePrefixes) {
        errors.push_back({key, "'" + path + "' brings the prefix files to more than " +
                                   std::to_string(kMaxFilePrefixes) + " prefixes; the prefix files of a "
                                   "config hold at most that many together (a file named by several "
                                   "classes counts once)"});
        f.ok = false;
      }
    }
    if (!f.ok) continue;  // reported at the first class that names it
    const size_t inline_count = m.prefixes.size();
    if (inline_count + f.prefixes.size() > kMaxClassPrefixes) {
      const size_t first_over = kMaxClassPrefixes - inline_count;
      errors.push_back({key, path + ":" + std::to_string(f.lines[first_over]) + ": more than " +
                                 std::to_string(kMaxClassPrefixes) + " prefixes with the class's " +
                                 std::to_string(inline_count) + " in prefixes; a class matches at most " +
                                 std::to_string(kMaxClassPrefixes) + ", its prefixes and its prefixes_file's together"});
      continue;
    }
    // A prefix both inline and in the file: the same rule as a repeat within
    // either list.
    if (inline_count > 0) {
      auto less = [](const PrefixConfig& a, const PrefixConfig& b) {
        return std::tie(a.addr.family, a.addr.b, a.len) < std::tie(b.addr.family, b.addr.b, b.len);
      };
      std::vector<std::pair<PrefixConfig, size_t>> own;
      for (size_t k = 0; k < inline_count; ++k) own.emplace_back(m.prefixes[k], k);
      std::sort(own.begin(), own.end(), [&](const auto& a, const auto& b) { return less(a.first, b.first); });
      bool repeats = false;
      for (size_t k = 0; k < f.prefixes.size(); ++k) {
        const PrefixConfig& p = f.prefixes[k];
        auto at = std::lower_bound(own.begin(), own.end(), p,
                                   [&](const auto& a, const PrefixConfig& b) { return less(a.first, b); });
        if (at == own.end() || less(p, at->first)) continue;
        errors.push_back({key, path + ":" + std::to_string(f.lines[k]) + ": '" + p.addr.str() + "/" +
                                   std::to_string(p.len) + "' is also in traffic_classes[" + std::to_string(i) +
                                   "].match.prefixes[" + std::to_string(at->second) + "]"});
        repeats = true;
      }
      if (repeats) continue;
    }
    m.prefixes.insert(m.prefixes.end(), f.prefixes.begin(), f.prefixes.end());
    m.file_prefixes = uint32_t(f.prefixes.size());
    m.prefixes_file_sha256 = f.sha256;
  }
}

}  // namespace gwlb::ctl
