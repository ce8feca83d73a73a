// The running config as YAML that gwlbd loads (gwlbctl config dump): a walk
// of the key table (config_schema.cc), so every key the loader accepts is
// written the way the loader reads it, and a new key needs nothing here.
#include <cstdio>

#include "control/config/config.h"
#include "control/config/config_schema.h"

namespace gwlb::ctl {

using schema::Key;
using schema::Kind;
using schema::Section;

namespace {

// A YAML double-quoted scalar: always quoted, so "on", "0x10", "1e3" or a
// leading "-" stay strings.
std::string yamlString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (ch < 0x20 || ch == 0x7F) {
          char b[8];
          std::snprintf(b, sizeof b, "\\x%02X", ch);
          out += b;
        } else {
          out += char(ch);
        }
    }
  }
  return out + "\"";
}

std::string millisText(uint64_t ms) {
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

struct Writer {
  const DumpOptions& opt;
  std::string out;
  std::vector<std::string> hidden;  // paths of secrets left out

  void line(int indent, const std::string& text) { out += std::string(size_t(indent), ' ') + text + "\n"; }

  static bool present(const Section& s, const void* obj) { return !s.checked || s.checked(obj); }

  // The scalar text of a leaf key, or nullopt when it has no value (an
  // optional member that is empty).
  std::optional<std::string> scalar(const Key& k, const void* owner) {
    const void* v = k.acc.cat(owner);
    if (k.acc.has && !k.acc.has(owner)) return std::nullopt;
    switch (k.kind) {
      case Kind::kUint: return schema::numStr(k.acc.get(owner), k.range.hex);
      case Kind::kSeconds: return std::to_string(k.acc.get(owner)) + "s";
      case Kind::kMillis: return millisText(k.acc.get(owner));
      case Kind::kBool: return std::string(k.acc.get(owner) ? "true" : "false");
      case Kind::kEnum: return std::string(k.enm->nameOf(k.acc.get(owner)));
      case Kind::kString: return yamlString(*static_cast<const std::string*>(v));
      case Kind::kOctalMode: {
        char b[16];
        std::snprintf(b, sizeof b, "0%o", unsigned(k.acc.get(owner)));
        return yamlString(b);
      }
      case Kind::kIpv4:
        if (k.acc.has) return (*static_cast<const std::optional<IpAddr>*>(v))->str();
        return static_cast<const IpAddr*>(v)->str();
      case Kind::kIp: {  // IPv6 quoted: it may start with ':'
        const IpAddr& a = k.acc.has ? **static_cast<const std::optional<IpAddr>*>(v)
                                    : *static_cast<const IpAddr*>(v);
        return a.isV6() ? yamlString(a.str()) : a.str();
      }
      case Kind::kMac:
        if (k.acc.has) return (*static_cast<const std::optional<MacAddr>*>(v))->str();
        return static_cast<const MacAddr*>(v)->str();
      default: return std::nullopt;
    }
  }

  void section(const Section& s, const void* obj, int indent, const std::string& path) {
    for (const Key& k : s.keys) {
      if (k.applies && !k.applies(obj)) continue;  // e.g. http-only keys of a tcp check
      const std::string p = path.empty() ? std::string(k.name) : path + "." + std::string(k.name);
      const std::string name(k.name);
      switch (k.kind) {
        case Kind::kSection: {
          const void* sub = k.acc.cat(obj);
          if (!present(*k.sub, sub)) continue;
          line(indent, name + ":");
          size_t at = out.size();
          section(*k.sub, sub, indent + 2, p);
          if (out.size() == at) out.back() = ' ', out += "{}\n";
          break;
        }
        case Kind::kList: {
          size_t n = k.acc.count(obj);
          if (n == 0) continue;
          line(indent, name + ":");
          for (size_t i = 0; i < n; ++i) {
            size_t at = out.size();
            section(*k.sub, k.acc.citem(obj, i), indent + 4, p + "[" + std::to_string(i) + "]");
            if (out.size() == at) {
              line(indent + 2, "- {}");
            } else {
              // The item's first key opens the list item.
              out[at + size_t(indent) + 2] = '-';
            }
          }
          break;
        }
        case Kind::kStrings: {
          const auto& l = *static_cast<const std::vector<std::string>*>(k.acc.cat(obj));
          if (l.empty()) continue;
          line(indent, name + ":");
          for (const std::string& s2 : l) line(indent + 2, "- " + yamlString(s2));
          break;
        }
        case Kind::kIpv6List: {
          const auto& l = *static_cast<const std::vector<IpAddr>*>(k.acc.cat(obj));
          if (l.empty()) continue;
          line(indent, name + ":");
          for (const IpAddr& a : l) line(indent + 2, "- " + yamlString(a.str()));
          break;
        }
        case Kind::kItems: {
          size_t n = k.acc.count(obj);
          if (n == 0) continue;
          std::string items;
          for (size_t i = 0; i < n; ++i) {
            // Numbers and port ranges plain, the rest (tcp, prefixes) quoted.
            std::string t = k.item->text(k.acc.citem(obj, i));
            bool plain = !t.empty() && t.find_first_not_of("0123456789-") == std::string::npos;
            items += (i ? ", " : "") + (plain ? t : yamlString(t));
          }
          line(indent, name + ": [" + items + "]");
          break;
        }
        default: {
          std::optional<std::string> v = scalar(k, obj);
          if (!v) continue;
          if (k.kind == Kind::kString && v->size() == 2) continue;  // "" = not set
          if (k.secret && k.secret(*static_cast<const std::string*>(k.acc.cat(obj))) && !opt.secrets) {
            hidden.push_back(p);
            line(indent, "# " + name + ": (a secret, not shown; gwlbctl config dump --secrets shows it)");
            continue;
          }
          line(indent, name + ": " + *v + (k.note ? "  # " + k.note(obj) : std::string()));
        }
      }
    }
  }
};

}  // namespace

std::string dumpConfig(const Config& c, const DumpOptions& opt, std::vector<std::string>* hidden) {
  Writer w{opt, {}, {}};
  w.line(0, "# The configuration gwlbd runs" +
                (c.source_path.empty() ? std::string() : " (loaded from " + c.source_path + ")") +
                ", with the changes made through");
  w.line(0, "# the control API since (server add, remove, set). Every key is written,");
  w.line(0, "# defaults included; gwlbd loads this file as it is.");
  w.section(schema::rootSection(), &c, 0, "");
  if (hidden) *hidden = w.hidden;
  return w.out;
}

}  // namespace gwlb::ctl
