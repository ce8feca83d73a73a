// gwlbd configuration: names of the enums, error formatting, listen
// addresses and the flow hash key. The loader is config_parse.cc, the key
// table config_schema*.cc, validation config_validate.cc (per key) and
// config_cross.cc (between keys), the reload diff and the generated doc
// config_reload.cc. See docs/config.md.

#include "control/config/config.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "control/config/config_schema.h"

namespace gwlb::ctl {

std::string underlayAddresses(const NodeConfig& n) {
  std::string v4 = n.underlay_ip ? n.underlay_ip->str() : "", v6 = n.underlay_ipv6 ? n.underlay_ipv6->str() : "";
  if (v4.empty() || v6.empty()) return v4 + v6;
  return v4 + " and " + v6;
}

const char* toString(Stickiness s) { return schema::kStickiness.nameOf(uint64_t(s)); }
const char* toString(GeneveFormat f) { return schema::kGeneveFormat.nameOf(uint64_t(f)); }
const char* toString(Encapsulation e) { return schema::kEncapsulation.nameOf(uint64_t(e)); }
const char* toString(HealthProtocol p) { return schema::kHealthProtocol.nameOf(uint64_t(p)); }
const char* toString(WhenAllUnhealthy w) { return schema::kWhenAllUnhealthy.nameOf(uint64_t(w)); }
const char* toString(FailoverMode m) { return schema::kFailoverMode.nameOf(uint64_t(m)); }
const char* toString(ClassAction a) { return schema::kClassAction.nameOf(uint64_t(a)); }

std::string formatErrors(const std::vector<ConfigError>& errors) {
  std::string out;
  for (const ConfigError& e : errors) {
    if (!e.path.empty()) out += e.path + ": ";
    out += e.message;
    out += '\n';
  }
  return out;
}




bool parseListen(const std::string& s, IpAddr& addr, uint16_t& port) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon + 1 >= s.size()) return false;
  std::string host = s.substr(0, colon), p = s.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    auto a = IpAddr::parse(host);
    if (!a || !a->isV6()) return false;
    addr = *a;
  } else {
    auto a = IpAddr::parse(host);
    if (!a || !a->isV4()) return false;
    addr = *a;
  }
  if (p.empty() || p.size() > 5 || !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  unsigned long v = std::stoul(p);
  if (v == 0 || v > 65535) return false;
  port = uint16_t(v);
  return true;
}

namespace {

bool parseHexKey(const std::string& digits, FlowHashKey& key) {
  if (digits.size() != 32) return false;
  uint64_t w[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    char ch = digits[i];
    int v = ch >= '0' && ch <= '9' ? ch - '0'
            : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
            : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
    if (v < 0) return false;
    w[i / 16] = w[i / 16] << 4 | uint64_t(v);
  }
  key.k0 = w[0];
  key.k1 = w[1];
  return true;
}

enum class KeyForm { kDigits, kFile, kEither };

// A key from `v` (its 32 digits, or when `v` is an absolute path the file's),
// for key `label`; `form` says which of the two `v` may be.
bool loadKey(const std::string& label, const std::string& v, KeyForm form, FlowHashKey& key,
             std::string& error) {
  key = FlowHashKey{};
  error.clear();
  if (form == KeyForm::kDigits || (form == KeyForm::kEither && v[0] != '/')) {
    if (parseHexKey(v, key)) return true;
    error = label + ": must be 32 hexadecimal digits (value not shown)";
    return false;
  }
  if (v[0] != '/') {
    error = label + ": must be an absolute path";
    return false;
  }
  int fd = ::open(v.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    struct stat lst {};
    if (err == ELOOP && ::lstat(v.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
      error = label + ": '" + v + "' is a symbolic link; a secret file must not be a symbolic "
              "link (name the file itself)";
    else
      error = label + ": cannot open '" + v + "': " + std::strerror(err);
    // The same recipe as docs/fleet.md: created 0600 (never readable by
    // others, even for a moment), and no tool beyond coreutils.
    if (err == ENOENT)
      error += "; make one (the same file on every node of a fleet): (umask 077; od -An -tx1 "
               "-N16 /dev/urandom | tr -dc 0-9a-f > " + v + ")";
    return false;
  }
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = label + ": '" + v + "' is not a regular file";
  } else if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    error = label + ": '" + v + "' has mode " + mode +
            "; a secret file must not be readable or writable by group or others (chmod 600)";
  } else {
    char buf[256];
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) error = label + ": cannot read '" + v + "': " + std::strerror(errno);
    else text.assign(buf, size_t(r));
  }
  ::close(fd);
  if (!error.empty()) return false;
  size_t b = text.find_first_not_of(" \t\r\n"), e = text.find_last_not_of(" \t\r\n");
  std::string digits = b == std::string::npos ? "" : text.substr(b, e - b + 1);
  if (!parseHexKey(digits, key)) {
    error = label + ": '" + v + "' must hold 32 hexadecimal digits (128 bits)";
    return false;
  }
  return true;
}

}  // namespace

bool loadFlowHashKey(const NodeConfig& n, FlowHashKey& key, bool& configured, std::string& error) {
  configured = !n.flow_hash_secret.empty();
  key = FlowHashKey{};
  if (!configured) return true;
  return loadKey("node.flow_hash_secret", n.flow_hash_secret, KeyForm::kEither, key, error);
}

bool loadHashKey(const Config& c, FlowHashKey& key, bool& configured, std::string& error) {
  struct Source {
    const char* label;
    const std::string* value;
    KeyForm form;
  };
  const Source sources[] = {{"fleet.secret", &c.fleet.secret, KeyForm::kDigits},
                            {"fleet.secret_file", &c.fleet.secret_file, KeyForm::kFile},
                            {"node.flow_hash_secret", &c.node.flow_hash_secret, KeyForm::kEither}};
  key = FlowHashKey{};
  configured = false;
  const char* first = nullptr;
  for (const Source& s : sources) {
    if (s.value->empty() || (!c.fleet.configured && s.value != &c.node.flow_hash_secret)) continue;
    FlowHashKey k;
    if (!loadKey(s.label, *s.value, s.form, k, error)) return false;
    if (!first) {
      first = s.label;
      key = k;
      configured = true;
    } else if (!(k == key)) {
      error = std::string(s.label) + ": holds another key than " + first + kOneHashKeyAdvice;
      return false;
    }
  }
  return true;
}

bool loadRunnableConfig(const std::string& path, Config& out, std::vector<ConfigError>& errors,
                        FlowHashKey* key, bool* key_configured) {
  if (!loadConfigFile(path, out, errors)) return false;
  FlowHashKey k;
  bool configured = false;
  std::string err;
  if (!loadHashKey(out, k, configured, err)) {
    // loadKey's errors start with the key's path ("fleet.secret_file: ...").
    size_t colon = err.find(": ");
    if (colon == std::string::npos) errors.push_back({"", err});
    else errors.push_back({err.substr(0, colon), err.substr(colon + 2)});
    return false;
  }
  if (key) *key = k;
  if (key_configured) *key_configured = configured;
  return true;
}

std::string stateDirectory(const char* env) {
  if (env == nullptr || *env == '\0') return kStateDirectory;
  std::string dirs = env;  // systemd: one path per StateDirectory= entry, ':' between
  return dirs.substr(0, dirs.find(':'));
}

FlowHashKey randomFlowHashKey() {
  uint64_t w[2] = {0, 0};
  if (::getrandom(w, sizeof w, 0) != ssize_t(sizeof w)) {
    std::random_device rd;
    w[0] = uint64_t(rd()) << 32 ^ rd();
    w[1] = uint64_t(rd()) << 32 ^ rd();
  }
  FlowHashKey k;
  k.k0 = w[0];
  k.k1 = w[1];
  return k;
}

namespace {

// Writes a new random key to `path` so that no reader ever sees a partial
// file: a private temporary file beside it, linked to the name only when
// complete. Another gwlbd that won the race keeps its key (EEXIST: true).
bool writeStateKey(const std::string& dir, const std::string& path, std::string& error) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    error = "flow hash key: cannot create the state directory '" + dir + "': " +
            std::strerror(errno) + " (set node.flow_hash_secret, or give gwlbd the directory)";
    return false;
  }
  std::string tmp = dir + "/." + kStateKeyFile + ".XXXXXX";
  int fd = ::mkstemp(tmp.data());  // mode 0600
  if (fd < 0) {
    error = "flow hash key: cannot write in '" + dir + "': " + std::strerror(errno) +
            " (set node.flow_hash_secret, or give gwlbd the directory)";
    return false;
  }
  const FlowHashKey k = randomFlowHashKey();
  char text[40];
  std::snprintf(text, sizeof text, "%016llx%016llx\n", static_cast<unsigned long long>(k.k0),
                static_cast<unsigned long long>(k.k1));
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, text, 33) == 33 && ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (ok && ::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    ok = false;
    err = errno;
  }
  ::unlink(tmp.c_str());
  if (!ok) {
    error = "flow hash key: cannot write '" + path + "': " + std::strerror(err);
    return false;
  }
  int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d >= 0) {
    ::fsync(d);  // the new name survives a power cut
    ::close(d);
  }
  return true;
}

}  // namespace

bool loadStateKey(const std::string& dir, bool create, FlowHashKey& key, StateKeyOutcome& outcome,
                  std::string& error) {
  const std::string path = dir + "/" + kStateKeyFile;
  key = FlowHashKey{};
  outcome = StateKeyOutcome::kRead;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) {
    if (!create) {
      outcome = StateKeyOutcome::kMissing;
      return true;
    }
    if (!writeStateKey(dir, path, error)) return false;
    outcome = StateKeyOutcome::kCreated;
  }
  if (!create && ::access(path.c_str(), R_OK) != 0 && errno == EACCES) {
    outcome = StateKeyOutcome::kNotReadable;
    return true;
  }
  if (loadKey("flow hash key", path, KeyForm::kFile, key, error)) return true;
  error += "; this key keeps flows on their appliances across restarts: restore the file, or "
           "remove it to have gwlbd generate a new one (every flow then moves once), or set "
           "node.flow_hash_secret";
  return false;
}

std::string hashKeyRestartName(const Config& running) {
  Config changed = running;
  std::string& field = running.fleet.configured ? changed.fleet.secret : changed.node.flow_hash_secret;
  field = field == "0" ? "1" : "0";  // any other value: only its name is wanted
  std::vector<std::string> names = restartNeeded(running, changed);
  return names.empty() ? "node.flow_hash_secret" : names.front();
}

}  // namespace gwlb::ctl
