// What the key table says about the keys as a whole: their paths, which of
// them a reload cannot apply, and the key table of docs/config.md; and which
// runtime changes of appliances a reload reverts.
#include <cstdio>

#include "control/config/config.h"
#include "control/config/config_schema.h"

namespace gwlb::ctl {

using schema::Key;
using schema::Kind;
using schema::Reload;
using schema::Section;

namespace {

std::string join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : std::string(path) + "." + std::string(key);
}

void paths(const Section& s, std::vector<std::string>& out) {
  for (const Key& k : s.keys) {
    out.push_back(join(s.path, k.name));
    if (k.sub) paths(*k.sub, out);
  }
}

// Every key of the section (and of its sections) needs a restart: a change is
// reported as the section's path ("dataplane"), not key by key.
bool allRestart(const Section& s) {
  for (const Key& k : s.keys) {
    if (k.kind == Kind::kSection ? !allRestart(*k.sub) : k.reload != Reload::kRestart) return false;
  }
  return true;
}

bool sameRestartKeys(const Section& s, const void* a, const void* b) {
  for (const Key& k : s.keys) {
    if (k.kind == Kind::kSection) {
      if (!sameRestartKeys(*k.sub, k.acc.cat(a), k.acc.cat(b))) return false;
    } else if (k.reload == Reload::kRestart && !k.acc.same(a, b)) {
      return false;
    }
  }
  return true;
}

// Lists are not walked: no key inside a list needs a restart (the unit tests
// hold the table to that).
void diff(const Section& s, const void* a, const void* b, std::vector<std::string>& out) {
  for (const Key& k : s.keys) {
    const std::string p = join(s.path, k.name);
    if (k.kind == Kind::kSection) {
      if (!allRestart(*k.sub)) diff(*k.sub, k.acc.cat(a), k.acc.cat(b), out);
      else if (!sameRestartKeys(*k.sub, k.acc.cat(a), k.acc.cat(b))) out.push_back(p);
    } else if (k.kind != Kind::kList && k.reload == Reload::kRestart && !k.acc.same(a, b)) {
      out.push_back(p);
    }
  }
}

// Every name diff() can report, in the same walk.
void restartNames(const Section& s, std::vector<std::string>& out) {
  for (const Key& k : s.keys) {
    const std::string p = join(s.path, k.name);
    if (k.kind == Kind::kSection) {
      if (allRestart(*k.sub)) out.push_back(p);
      else restartNames(*k.sub, out);
    } else if (k.kind != Kind::kList && k.reload == Reload::kRestart) {
      out.push_back(p);
    }
  }
}

void hold(const Section& s, const void* running, void* next) {
  for (const Key& k : s.keys) {
    if (k.kind == Kind::kSection) hold(*k.sub, k.acc.cat(running), k.acc.at(next));
    else if (k.kind != Kind::kList && k.reload == Reload::kRestart) k.acc.copy(next, running);
  }
}

// ---------------------------------------------------------------------------
// docs/config.md

std::string code(std::string_view s) { return "`" + std::string(s) + "`"; }

std::string millisText(uint64_t ms) {
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

std::string typeOf(const Key& k) {
  if (!k.type_doc.empty()) return std::string(k.type_doc);
  switch (k.kind) {
    case Kind::kSection: return "map";
    case Kind::kList: return "list of maps";
    case Kind::kUint: return "integer";
    case Kind::kSeconds:
    case Kind::kMillis: return "duration";
    case Kind::kBool: return "bool";
    case Kind::kString:
    case Kind::kEnum: return "string";
    case Kind::kIpv4: return "IPv4 address";
    case Kind::kIp: return "IP address";
    case Kind::kMac: return "MAC address";
    case Kind::kStrings: return "list of strings";
    case Kind::kIpv6List: return "list of IPv6 addresses";
    case Kind::kOctalMode: return "octal string";
    case Kind::kItems: return "list";
  }
  return "?";
}

std::string rangeOf(const Key& k) {
  if (!k.range_doc.empty()) return std::string(k.range_doc);
  switch (k.kind) {
    case Kind::kUint:
      if (k.range.lo == 0 && k.range.hi == UINT64_MAX) return "64-bit";
      return schema::rangeText(k.range);
    case Kind::kSeconds: return schema::rangeText(k.range) + " s";
    case Kind::kMillis: return schema::millisRangeText(k.range);
    case Kind::kEnum: {
      std::string out;
      for (const schema::EnumName& n : k.enm->names) out += (out.empty() ? "" : ", ") + code(n.name);
      return out;
    }
    case Kind::kIpv4: return "unicast IPv4";
    case Kind::kIp: return "unicast IPv4 or IPv6";
    case Kind::kMac: return "unicast, non-zero";
    case Kind::kOctalMode: return "`0`..`0777`";
    case Kind::kList:
    case Kind::kStrings:
    case Kind::kIpv6List:
    case Kind::kItems:
      return (k.needs_one ? "1.." : "at most ") + std::to_string(k.range.hi);
    default: return "";
  }
}

// `owner` is a default-constructed struct: the default is the member's
// initializer in config.h, never restated here.
std::string defaultOf(const Key& k, const void* owner) {
  if (!k.default_doc.empty()) return std::string(k.default_doc);
  if (k.required) return "required";
  const void* v = k.acc.cat(owner);
  switch (k.kind) {
    case Kind::kSection: return "all defaults";
    case Kind::kList:
    case Kind::kIpv6List:
    case Kind::kItems: return "empty";
    case Kind::kUint: return code(schema::numStr(k.acc.get(owner), k.range.hex));
    case Kind::kSeconds: return code(std::to_string(k.acc.get(owner)) + "s");
    case Kind::kMillis: return code(millisText(k.acc.get(owner)));
    case Kind::kBool: return code(k.acc.get(owner) ? "true" : "false");
    case Kind::kString: {
      const auto& s = *static_cast<const std::string*>(v);
      return s.empty() ? "empty" : code(s);
    }
    case Kind::kEnum:
      if (k.acc.has && !k.acc.has(owner)) return "none";
      return code(k.enm->nameOf(k.acc.get(owner)));
    case Kind::kIpv4:
    case Kind::kIp:
    case Kind::kMac: return "none";
    case Kind::kStrings: {
      const auto& l = *static_cast<const std::vector<std::string>*>(v);
      if (l.empty()) return "empty";
      std::string out;
      for (const std::string& s : l) out += (out.empty() ? "" : ", ") + s;
      return code("[" + out + "]");
    }
    case Kind::kOctalMode: {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\"%04llo\"", static_cast<unsigned long long>(k.acc.get(owner)));
      return code(buf);
    }
  }
  return "";
}

void rows(const Section& s, void* owner, std::string& out) {
  for (const Key& k : s.keys) {
    const bool restart = k.kind == Kind::kSection ? allRestart(*k.sub) : k.reload == Reload::kRestart;
    const char* reload = restart ? "restart" : k.kind == Kind::kSection ? "per key" : "applies";
    out += "| " + code(join(s.path, k.name)) + " | " + typeOf(k) + " | " + defaultOf(k, owner) +
           " | " + rangeOf(k) + " | " + reload + " | " + std::string(k.doc) + " |\n";
    if (k.kind == Kind::kSection) rows(*k.sub, k.acc.at(owner), out);
    if (k.kind == Kind::kList) rows(*k.sub, k.acc.append(owner), out);  // a default item
  }
}

}  // namespace

std::vector<std::string> configKeyPaths() {
  std::vector<std::string> out;
  paths(schema::rootSection(), out);
  return out;
}

std::vector<std::string> restartNeeded(const Config& running, const Config& next) {
  std::vector<std::string> out;
  diff(schema::rootSection(), &running, &next, out);
  return out;
}

std::vector<std::string> restartKeyNames() {
  std::vector<std::string> out;
  restartNames(schema::rootSection(), out);
  return out;
}

std::vector<std::string> holdRestartKeys(const Config& running, Config& next) {
  std::vector<std::string> out = restartNeeded(running, next);
  hold(schema::rootSection(), &running, &next);
  return out;
}

namespace {

// An appliance's weight in a config, by group name and address; -1 when the
// group does not list it.
int64_t weightIn(const Config& c, const std::string& group, const IpAddr& a) {
  for (const auto& g : c.server_groups)
    if (g.name == group)
      for (const auto& sc : g.appliances)
        if (sc.address == a) return sc.weight;
  return -1;
}

}  // namespace

const char* RuntimeChange::change() const {
  return file_weight < 0 ? "added" : running_weight < 0 ? "removed" : "weight";
}

std::string RuntimeChange::text() const {
  const std::string a = address.str() + " (group " + group + ")";
  if (file_weight < 0) return a + ": added at runtime, not in the file";
  if (running_weight < 0) return a + ": removed at runtime, still in the file";
  return a + ": weight " + std::to_string(running_weight) + " at runtime, " +
         std::to_string(file_weight) + " in the file";
}

std::vector<RuntimeChange> runtimeChanges(const Config& file, const Config& running) {
  std::vector<RuntimeChange> out;
  auto entry = [&](const std::string& group, const IpAddr& a) {
    int64_t f = weightIn(file, group, a), r = weightIn(running, group, a);
    if (f == r) return;
    RuntimeChange c;
    c.group = group;
    c.address = a;
    c.file_weight = f;
    c.running_weight = r;
    out.push_back(std::move(c));
  };
  for (const auto& g : running.server_groups)
    for (const auto& sc : g.appliances) entry(g.name, sc.address);
  for (const auto& g : file.server_groups)
    for (const auto& sc : g.appliances)
      if (weightIn(running, g.name, sc.address) < 0) entry(g.name, sc.address);
  return out;
}

std::vector<RuntimeChange> revertedByReload(const Config& file, const Config& running,
                                            const Config& next) {
  std::vector<RuntimeChange> out;
  for (RuntimeChange& c : runtimeChanges(file, running)) {
    c.after_reload = weightIn(next, c.group, c.address);
    if (c.after_reload == c.running_weight) continue;  // the file now says the same
    out.push_back(std::move(c));
  }
  return out;
}

std::string configKeyTable() {
  std::string out =
      "| Key | Type | Default | Range | Reload | Meaning |\n"
      "|---|---|---|---|---|---|\n";
  Config defaults;
  rows(schema::rootSection(), &defaults, out);
  return out;
}

}  // namespace gwlb::ctl
