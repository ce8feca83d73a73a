// gwlbd configuration: the YAML loader, driven by the key table
// (config_schema.h). See docs/config.md.
//
// The parser walks the YAML tree along the table and reports shape and type
// errors (unknown keys with suggestions, missing required keys, wrong node
// kinds, text that is not a value of the key's kind). It does not check
// ranges: it stores every number that fits its member and remembers the text
// it was written as; the validator (config_validate.cc, the one place ranges
// are checked) then quotes that text. Paths whose value failed to parse are
// remembered so that the validator does not report them a second time (for
// example "required" on an address that was present but malformed).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <sstream>
#include <system_error>

#include "control/config/config.h"
#include "control/config/config_schema.h"
#include "control/config/prefix_list.h"

namespace gwlb::ctl {

using schema::Key;
using schema::Kind;
using schema::quote;
using schema::Range;
using schema::rangeText;
using schema::Section;

namespace {

// Errors reported at most; the rest are counted in one more line.
constexpr size_t kMaxErrors = 100;

const char* kindOf(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "no value";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Undefined: break;
  }
  return "nothing";
}

std::string join(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return path + "." + std::string(key);
}

std::string index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

bool allDigits(std::string_view t) {
  return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
}

class Parser {
 public:
  explicit Parser(std::vector<ConfigError>& e) : errs_(e) {}

  void root(const YAML::Node& n, Config& c) {
    if (!n.IsMap()) {
      fail("", std::string("the top level must be a map with keys node, server_groups, ...; got ") +
                   kindOf(n));
      return;
    }
    section(n, "", schema::rootSection(), &c);
  }

  // Position of `path` in the document, or of its nearest ancestor that has
  // one; (-1, -1) for the document itself.
  std::pair<int, int> positionOf(std::string path) const {
    while (!path.empty()) {
      auto it = lines_.find(path);
      if (it != lines_.end()) return it->second;
      size_t cut = path.find_last_of(".[");
      path.resize(cut == std::string::npos ? 0 : cut);
    }
    return {-1, -1};
  }

  // Sorts errors[from..] into document order (stable for equal lines).
  void sortByLine(std::vector<ConfigError>& errors, size_t from) const {
    std::vector<std::pair<std::pair<int, int>, ConfigError>> keyed;
    keyed.reserve(errors.size() - from);
    for (size_t i = from; i < errors.size(); ++i)
      keyed.emplace_back(positionOf(errors[i].path), std::move(errors[i]));
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < keyed.size(); ++i) errors[from + i] = std::move(keyed[i].second);
  }

  // Which kinds of names are incomplete: their list, an item or an item's
  // name failed to parse.
  schema::UnknownNames unknownNames() const {
    auto failed = [&](const std::string& kind) {
      for (const std::string& s : suppressed_) {
        if (s.empty() || s == kind) return true;
        if (s.rfind(kind + "[", 0) != 0) continue;
        std::string rest = s.substr(s.find(']') + 1);
        if (rest.empty() || rest == ".name") return true;
      }
      return false;
    };
    return {failed("server_groups"), failed("health_aggregation_policies"),
            failed("health_sources"), failed("listeners")};
  }

  // True if `path` is, or is inside, a value that already failed to parse.
  bool suppressed(const std::string& path) const {
    for (const std::string& s : suppressed_) {
      if (s.empty()) return true;
      if (path.size() < s.size() || path.compare(0, s.size(), s) != 0) continue;
      if (path.size() == s.size() || path[s.size()] == '.' || path[s.size()] == '[') return true;
    }
    return false;
  }

  // Numbers (and strings with a check) as written in the file, by key path.
  const std::map<std::string, std::string>& written() const { return written_; }

 private:
  void error(std::string path, std::string msg) {
    errs_.push_back({std::move(path), std::move(msg)});
  }
  void fail(const std::string& path, std::string msg) {
    error(path, std::move(msg));
    suppressed_.push_back(path);
  }

  static std::string keyList(const Section& s) {
    std::string out;
    for (const Key& k : s.keys) out += (out.empty() ? "" : ", ") + std::string(k.name);
    return out;
  }

  static std::string unknownKey(const std::string& k, const Section& s) {
    std::string msg = "unknown key " + quote(k);
    std::string_view best;
    size_t best_d = 3;  // suggest only close matches
    for (const Key& a : s.keys) {
      size_t d = schema::editDistance(k, a.name);
      if (d < best_d) {
        best_d = d;
        best = a.name;
      }
    }
    if (!best.empty()) return msg + "; did you mean '" + std::string(best) + "'?";
    return msg + "; allowed keys: " + keyList(s);
  }

  // A map section: rejects non-map values, non-string, duplicate and unknown
  // keys; reports missing required keys. A null value is an empty map.
  void section(const YAML::Node& n, const std::string& path, const Section& s, void* obj) {
    if (s.begin) s.begin(obj);
    if (!n.IsNull() && !n.IsMap()) {
      fail(path, "expected a map with keys " + keyList(s) + "; got " + kindOf(n) +
                     (n.IsScalar() ? " " + quote(n.Scalar()) : std::string()));
      return;
    }
    std::set<std::string, std::less<>> seen;
    if (n.IsMap()) {
      for (const auto& kv : n) {
        const YAML::Node& key = kv.first;
        if (!key.IsScalar()) {
          error(path, std::string("map keys must be plain strings; got ") + kindOf(key));
          continue;
        }
        const std::string& k = key.Scalar();
        if (!schema::validUtf8(k)) {  // never part of a key path
          error(path, "key " + quote(k) + " is not valid UTF-8");
          continue;
        }
        const std::string kp = join(path, k);
        if (!seen.insert(k).second) {
          fail(kp, "duplicate key " + quote(k));
          continue;
        }
        noteLine(kp, key);
        auto it = std::find_if(s.keys.begin(), s.keys.end(), [&](const Key& d) { return d.name == k; });
        if (it == s.keys.end()) {
          error(kp, unknownKey(k, s));
          continue;
        }
        value(*it, kv.second, kp, obj);
      }
    }
    for (const Key& k : s.keys) {
      if (k.required && seen.find(k.name) == seen.end()) fail(join(path, k.name), "required key is missing");
      // A key whose rules depend on a sibling that failed would only restate that failure.
      for (std::string_view dep : k.after)
        if (suppressed(join(path, dep))) {
          suppressed_.push_back(join(path, k.name));
          break;
        }
    }
    if (s.finish)
      s.finish(
          obj, [](const void* ctx, std::string_view name) {
            const auto* given = static_cast<const std::set<std::string, std::less<>>*>(ctx);
            return given->find(name) != given->end();
          },
          &seen);
  }

  // Reads one key's value into its member of `owner`.
  void value(const Key& k, const YAML::Node& v, const std::string& p, void* owner) {
    switch (k.kind) {
      case Kind::kSection: section(v, p, *k.sub, k.acc.at(owner)); return;
      case Kind::kList:
        if (!list(v, p, k) || v.IsNull()) return;
        for (size_t i = 0; i < v.size(); ++i) {
          void* item = k.acc.append(owner);
          noteLine(index(p, i), v[i]);
          section(v[i], index(p, i), *k.sub, item);
        }
        return;
      case Kind::kUint: integer(k, v, p, owner); return;
      case Kind::kSeconds: seconds(k, v, p, owner); return;
      case Kind::kMillis: millis(k, v, p, owner); return;
      case Kind::kBool:
        if (const std::string* s = scalar(v, p, "true or false")) {
          if (*s == "true" || *s == "false") k.acc.set(owner, *s == "true");
          else fail(p, quote(*s) + " is not true or false");
        }
        return;
      case Kind::kString:
        if (const std::string* s = scalar(v, p, std::string(k.what))) {
          *static_cast<std::string*>(k.acc.at(owner)) = *s;
          if (k.check) written_[p] = *s;  // its check may tell "" written from "" by default
        }
        return;
      case Kind::kEnum:
        if (const std::string* s = scalar(v, p, std::string(k.enm->what))) {
          if (auto e = k.enm->parse(*s)) k.acc.set(owner, *e);
          else fail(p, quote(*s) + std::string(k.enm->bad));
        }
        return;
      case Kind::kIpv4:
      case Kind::kIp: {
        IpAddr a;
        if (!ipv4(v, p, a)) {
          // An optional address written but unreadable is still there (family
          // 0, its error said): rules that need it absent stay silent.
          if (k.acc.has) *static_cast<std::optional<IpAddr>*>(k.acc.at(owner)) = IpAddr{};
          return;
        }
        if (k.acc.has) *static_cast<std::optional<IpAddr>*>(k.acc.at(owner)) = a;
        else *static_cast<IpAddr*>(k.acc.at(owner)) = a;
        return;
      }
      case Kind::kMac: {
        MacAddr m;
        if (!mac(v, p, m)) return;
        if (k.acc.has) *static_cast<std::optional<MacAddr>*>(k.acc.at(owner)) = m;
        else *static_cast<MacAddr*>(k.acc.at(owner)) = m;
        return;
      }
      case Kind::kStrings: {
        auto& out = *static_cast<std::vector<std::string>*>(k.acc.at(owner));
        out.clear();  // replaces a default list (http_codes)
        if (!list(v, p, k) || v.IsNull()) return;
        // Failed items stay as "" so that later items keep their index.
        for (size_t i = 0; i < v.size(); ++i) {
          noteLine(index(p, i), v[i]);
          if (const std::string* s = scalar(v[i], index(p, i), std::string(k.item_what))) out.push_back(*s);
          else out.emplace_back();
        }
        return;
      }
      case Kind::kIpv6List: {
        auto& out = *static_cast<std::vector<IpAddr>*>(k.acc.at(owner));
        if (!list(v, p, k) || v.IsNull()) return;
        for (size_t i = 0; i < v.size(); ++i) {
          const std::string ip = index(p, i);
          noteLine(ip, v[i]);
          out.emplace_back();
          const std::string* s = scalar(v[i], ip, std::string(k.item_what));
          if (!s) continue;
          if (auto a = IpAddr::parse(*s)) out.back() = *a;
          else fail(ip, quote(*s) + " is not an IP address; expected IPv6 like 2001:db8::1");
        }
        return;
      }
      case Kind::kItems: {
        if (!list(v, p, k) || v.IsNull()) return;
        // Failed items stay default so that later items keep their index.
        for (size_t i = 0; i < v.size(); ++i) {
          const std::string ip = index(p, i);
          noteLine(ip, v[i]);
          void* item = k.acc.append(owner);
          const std::string* s = scalar(v[i], ip, std::string(k.item_what));
          if (!s) continue;
          std::string err;
          // Kept only when the value reads back otherwise (0x1000): a list
          // of a million prefixes (YAML anchors) must not make a map of them.
          if (k.item->parse(*s, item, err)) {
            if (k.item->text(item) != *s) written_[ip] = *s;
          } else {
            fail(ip, quote(*s) + err);
          }
        }
        return;
      }
      case Kind::kOctalMode:
        if (const std::string* s = scalar(v, p, "an octal file mode like 0660")) {
          bool octal = !s->empty() && s->size() <= 4 &&
                       std::all_of(s->begin(), s->end(), [](char ch) { return ch >= '0' && ch <= '7'; });
          if (octal) k.acc.set(owner, std::stoul(*s, nullptr, 8));
          else fail(p, quote(*s) + " is not an octal file mode; use e.g. 0660 (0..0777)");
        }
        return;
    }
  }

  // Returns the scalar text, or nullptr after reporting a wrong node kind.
  const std::string* scalar(const YAML::Node& n, const std::string& path, const std::string& what) {
    if (n.IsScalar()) {
      if (schema::validUtf8(n.Scalar())) return &n.Scalar();
      fail(path, quote(n.Scalar()) + " is not valid UTF-8 text; expected " + what);
      return nullptr;
    }
    if (n.IsNull()) fail(path, "has no value; expected " + what);
    else fail(path, "expected " + what + ", got " + kindOf(n));
    return nullptr;
  }

  // Accepts a list or null (an empty list) of at most the key's limit of
  // items; reports anything else.
  bool list(const YAML::Node& n, const std::string& path, const Key& k) {
    if (n.IsSequence() && n.size() > k.range.hi) {
      fail(path, schema::tooMany(n.size(), k.range.hi, k.items, k.needs_one));
      return false;
    }
    if (n.IsNull() || n.IsSequence()) return true;
    fail(path, "expected " + std::string(k.what) + ", got " + kindOf(n) +
                   (n.IsScalar() ? " " + quote(n.Scalar()) : std::string()));
    return false;
  }

  // Stores a number the parser read; the validator checks its range.
  void store(const Key& k, const std::string& path, const std::string& text, void* owner, uint64_t v) {
    k.acc.set(owner, v);
    written_[path] = text;
  }

  // Decimal or 0x-hex text.
  void integer(const Key& k, const YAML::Node& n, const std::string& path, void* owner) {
    const Range& r = k.range;
    const std::string* s = scalar(n, path, "an integer in " + rangeText(r));
    if (!s) return;
    const std::string expect = "expected an integer in " + rangeText(r) + " (decimal or 0x hex)";
    std::string_view t = *s;
    if (!t.empty() && t[0] == '-') {
      fail(path, quote(*s) + (allDigits(t.substr(1)) ? " is negative; allowed " + rangeText(r)
                                                      : " is not a number; " + expect));
      return;
    }
    unsigned base = 10;
    if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
      base = 16;
      t.remove_prefix(2);
    }
    if (t.empty()) {
      fail(path, quote(*s) + " is not a number; " + expect);
      return;
    }
    uint64_t acc = 0;
    bool overflow = false;
    for (char c : t) {
      unsigned d;
      if (c >= '0' && c <= '9') d = unsigned(c - '0');
      else if (base == 16 && c >= 'a' && c <= 'f') d = unsigned(c - 'a' + 10);
      else if (base == 16 && c >= 'A' && c <= 'F') d = unsigned(c - 'A' + 10);
      else {
        fail(path, quote(*s) + " is not " + (base == 16 ? "a hex number; " : "a number; ") + expect);
        return;
      }
      if (acc > (std::numeric_limits<uint64_t>::max() - d) / base) overflow = true;
      else acc = acc * base + d;
    }
    if (overflow || acc > k.acc.max) return fail(path, schema::uintOutOfRange(s, acc, r));
    store(k, path, *s, owner, acc);
  }

  // Integer seconds, or a number followed by s, m or h.
  void seconds(const Key& k, const YAML::Node& n, const std::string& path, void* owner) {
    const Range& r = k.range;
    const std::string range_text = rangeText(r) + " seconds";
    const std::string* s = scalar(n, path, "a duration in " + range_text);
    if (!s) return;
    std::string_view t = *s;
    uint64_t mult = 1;
    if (!t.empty()) {
      switch (t.back()) {
        case 's': mult = 1; t.remove_suffix(1); break;
        case 'm': mult = 60; t.remove_suffix(1); break;
        case 'h': mult = 3600; t.remove_suffix(1); break;
        default: break;
      }
    }
    if (!allDigits(t)) {
      bool neg = !t.empty() && t[0] == '-';
      fail(path, quote(*s) + (neg ? " is negative" : " is not a duration") +
                     "; use seconds (350) or a number with unit s, m or h (350s, 6m, 1h) in " +
                     range_text);
      return;
    }
    if (t.size() > 9) return fail(path, quote(*s) + " is out of range; allowed " + range_text);
    uint64_t v = std::stoull(std::string(t)) * mult;
    if (v > k.acc.max) return fail(path, schema::secondsOutOfRange(s, v, r));
    store(k, path, *s, owner, v);
  }

  // "2s", "200ms", "1m" or a bare number of seconds, into milliseconds.
  void millis(const Key& k, const YAML::Node& n, const std::string& path, void* owner) {
    const Range& r = k.range;
    const std::string what = "a duration from " + schema::millisRangeText(r) + " (e.g. 2s, 200ms)";
    const std::string* s = scalar(n, path, what);
    if (!s) return;
    std::string t = *s;
    uint64_t mult = 1000;
    if (t.size() > 2 && t.compare(t.size() - 2, 2, "ms") == 0) mult = 1, t.resize(t.size() - 2);
    else if (!t.empty() && t.back() == 's') t.pop_back();
    else if (!t.empty() && t.back() == 'm') mult = 60000, t.pop_back();
    if (!allDigits(t)) {
      fail(path, quote(*s) + (!t.empty() && t[0] == '-' ? " is negative; expected " : " is not ") +
                     what);
      return;
    }
    if (t.size() > 9) return fail(path, schema::millisOutOfRange(s, 0, r));
    uint64_t v = std::stoull(t) * mult;
    if (v > k.acc.max) return fail(path, schema::millisOutOfRange(s, v, r));
    store(k, path, *s, owner, v);
  }

  bool ipv4(const YAML::Node& n, const std::string& path, IpAddr& out) {
    const std::string* s = scalar(n, path, "an IPv4 address");
    if (!s) return false;
    if (auto a = IpAddr::parse(*s)) {
      out = *a;
      return true;
    }
    if (MacAddr::parse(*s))
      fail(path, quote(*s) + " is a MAC address; expected an IPv4 address like 192.0.2.10");
    else
      fail(path, quote(*s) + " is not an IP address; expected IPv4 like 192.0.2.10");
    return false;
  }

  bool mac(const YAML::Node& n, const std::string& path, MacAddr& out) {
    const std::string* s = scalar(n, path, "a MAC address");
    if (!s) return false;
    if (auto m = MacAddr::parse(*s)) {
      out = *m;
      return true;
    }
    if (IpAddr::parse(*s))
      fail(path, quote(*s) + " is an IP address; expected a MAC address like 02:00:00:00:00:01");
    else
      fail(path, quote(*s) + " is not a MAC address; expected six hex bytes like 02:00:00:00:00:01");
    return false;
  }

  void noteLine(const std::string& path, const YAML::Node& n) {
    const YAML::Mark m = n.Mark();
    if (!m.is_null()) lines_.emplace(path, std::make_pair(m.line, m.column));
  }

  std::vector<ConfigError>& errs_;
  std::vector<std::string> suppressed_;
  std::map<std::string, std::pair<int, int>> lines_;  // key path -> (line, column)
  std::map<std::string, std::string> written_;        // key path -> number as written
};

// yaml-cpp 0.7 (Debian 12) never returns from LoadAll when the next token
// cannot start a node, e.g. a stray ',' at the top level: each round yields
// another empty document without consuming the token, allocating until the
// process dies (yaml-cpp issue 1040, fixed upstream after 0.7). Found by
// fuzzing (tests/fuzz/regressions/config/). Walks the documents first with a
// handler that only notes where each starts, and throws a ParserException
// when one starts where the previous one did (no progress), so LoadAll is only
// called on streams it finishes.
void checkDocumentsAdvance(const std::string& text) {
  struct Starts : YAML::EventHandler {
    YAML::Mark start;
    void OnDocumentStart(const YAML::Mark& m) override { start = m; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  } h;
  std::istringstream in(text);
  YAML::Parser parser(in);
  bool first = true;
  YAML::Mark prev;
  while (parser.HandleNextDocument(h)) {
    if (!first && h.start.pos == prev.pos)
      throw YAML::ParserException(h.start, "unexpected character here (a ',' outside [ ] or { }?)");
    first = false;
    prev = h.start;
  }
}

}  // namespace

bool parseConfig(const std::string& yaml_text, Config& out, std::vector<ConfigError>& errors,
                 const std::string& base_dir) {
  const size_t before = errors.size();
  try {
    out = Config{};
    std::vector<YAML::Node> docs;
    try {
      checkDocumentsAdvance(yaml_text);
      docs = YAML::LoadAll(yaml_text);
    } catch (const YAML::DeepRecursion& e) {
      errors.push_back({"", "YAML nests deeper than the parser allows (line " +
                                std::to_string(e.mark.line + 1) + "); a configuration is a few "
                                "levels deep"});
      return false;
    } catch (const YAML::Exception& e) {
      std::string msg = "YAML syntax error";
      if (!e.mark.is_null()) {
        msg += " at line " + std::to_string(e.mark.line + 1) + ", column " +
               std::to_string(e.mark.column + 1);
      }
      errors.push_back({"", msg + ": " + e.msg});
      return false;
    }
    if (docs.empty() || (docs.size() == 1 && docs[0].IsNull())) {
      errors.push_back({"", "the configuration is empty; expected a map with at least the keys "
                            "node and server_groups"});
      return false;
    }
    if (docs.size() > 1) {
      errors.push_back({"", "found " + std::to_string(docs.size()) +
                                " YAML documents (separated by '---'); a configuration is exactly "
                                "one document"});
      return false;
    }
    Parser parser(errors);
    parser.root(docs[0], out);
    loadPrefixFiles(out, base_dir, errors);
    std::vector<ConfigError> semantic;
    schema::Report report(semantic, &parser.written());
    schema::checkKeys(out, report);
    schema::checkCrossFields(out, report, parser.unknownNames());
    for (ConfigError& e : semantic) {
      if (!parser.suppressed(e.path)) errors.push_back(std::move(e));
    }
    parser.sortByLine(errors, before);
    if (errors.size() - before > kMaxErrors) {
      const size_t more = errors.size() - before - kMaxErrors;
      errors.resize(before + kMaxErrors);
      errors.push_back({"", "... and " + std::to_string(more) + " more error" +
                                (more == 1 ? "" : "s") + " (the first " +
                                std::to_string(kMaxErrors) + " are shown)"});
    }
  } catch (const std::exception& e) {
    errors.push_back({"", std::string("internal error while reading the configuration: ") + e.what()});
  } catch (...) {
    errors.push_back({"", "internal error while reading the configuration"});
  }
  return errors.size() == before;
}

bool loadConfigFile(const std::string& path, Config& out, std::vector<ConfigError>& errors) {
  std::string text;
  try {
    const std::string where = "config file " + quote(path);
    auto sysError = [&](const char* what, int e) {
      errors.push_back({"", std::string("cannot ") + what + " " + where + ": " +
                                std::error_code(e, std::generic_category()).message()});
      return false;
    };
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return sysError("open", errno);
    struct FdCloser {
      int fd;
      ~FdCloser() { ::close(fd); }
    } closer{fd};
    struct stat st{};
    if (::fstat(fd, &st) != 0) return sysError("read", errno);
    if (S_ISDIR(st.st_mode)) {
      errors.push_back({"", "cannot read " + where + ": it is a directory"});
      return false;
    }
    // Whatever it is (a file, a pipe, /dev/zero), read at most the limit.
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return sysError("read", errno);
      if (n == 0) break;
      if (text.size() + size_t(n) > kMaxConfigBytes) {
        errors.push_back({"", where + " is larger than " + std::to_string(kMaxConfigBytes >> 20) +
                                  " MiB; a configuration is at most that long (large prefix sets "
                                  "go in prefix files: traffic_classes[].match.prefixes_file)"});
        return false;
      }
      text.append(buf, size_t(n));
    }
  } catch (const std::exception& e) {
    errors.push_back({"", "cannot read config file " + quote(path) + ": " + e.what()});
    return false;
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  bool ok = parseConfig(text, out, errors, dir);
  try {
    out.source_path = path;
  } catch (...) {
    // Out of memory copying a path: leave source_path empty.
  }
  return ok;
}

}  // namespace gwlb::ctl
