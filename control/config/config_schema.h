// The config's key table (internal to the config library). Every key the
// loader accepts is one Key: its name, where it lives in Config, how its text
// is read (Kind), its range, whether a reload applies it, its default and one
// line of doc. One table drives the parser (config_parse.cc), the per-key
// checks (config_validate.cc), configKeyPaths(), the reload diff and the key
// table in docs/config.md (config_reload.cc). Rules between keys (names,
// references, duplicates, overlaps) are hand-written in config_cross.cc
// (traffic classes: config_classes.cc).
//
// Adding a key: add the member (with its default) to the struct in config.h
// and one Key to its section in config_schema*.cc (config_schema_parts.h
// lists the parts); then a bad-value case in
// tests/unit/config/test_config.cc and `gen-config-doc docs/config.md`.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "control/config/config.h"

namespace gwlb::ctl::schema {

// Allowed values of a number (bounds included).
struct Range {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool hex = false;  // print bounds in hex
  bool contains(uint64_t v) const { return v >= lo && v <= hi; }
};

// How a key's text is read and what its member is.
enum class Kind : uint8_t {
  kSection,   // a map of keys (sub); null = empty map
  kList,      // a list of maps (sub describes an item); null = empty list
  kUint,      // unsigned integer, decimal or 0x hex
  kSeconds,   // duration in whole seconds: 350, 350s, 6m, 1h
  kMillis,    // duration kept in milliseconds: 2s, 200ms, 1m, or bare seconds
  kBool,      // true | false
  kString,    // any UTF-8 text (rules in `check`)
  kEnum,      // one of `enm`'s names
  kIpv4,      // IpAddr (or optional): an IPv4 unicast address once validated
  kIp,        // IpAddr (or optional): an IPv4 or IPv6 unicast address once validated
  kMac,       // MacAddr (or optional): unicast, non-zero
  kStrings,   // list of strings
  kIpv6List,  // list of IPv6 addresses
  kOctalMode, // file mode as octal text ("0660"), at most 0777
  kItems,     // list of scalars, each read by Key::item into a vector's item (traffic classes)
};

// Whether a changed value takes effect on reload or at the next restart.
enum class Reload : uint8_t { kApplies, kRestart };

struct EnumName {
  std::string_view name;
  uint64_t value;
};
// The grammar of one enum: its names and the texts of its errors.
struct EnumDesc {
  std::span<const EnumName> names;
  std::string_view what;  // "expected <what>" when the value is not a scalar
  std::string_view bad;   // after the quoted value when it is not a name
  const char* nameOf(uint64_t v) const;
  std::optional<uint64_t> parse(std::string_view s) const;
};

// Type-erased access to one member of a section's struct. `owner` points to
// the struct (NodeConfig, ApplianceGroupConfig, ...). Built by member<&S::m>().
struct Access {
  void* (*at)(void* owner) = nullptr;
  const void* (*cat)(const void* owner) = nullptr;
  bool (*same)(const void* a, const void* b) = nullptr;  // leaf members: equal in both owners
  void (*copy)(void* dst, const void* src) = nullptr;    // dst owner's member = src owner's
  uint64_t (*get)(const void* owner) = nullptr;          // integers, bools, enums
  void (*set)(void* owner, uint64_t v) = nullptr;
  uint64_t max = 0;                                      // largest value the member holds
  bool (*has)(const void* owner) = nullptr;              // optional members: has a value
  size_t (*count)(const void* owner) = nullptr;          // lists (vectors)
  const void* (*citem)(const void* owner, size_t i) = nullptr;
  void* (*append)(void* owner) = nullptr;                // appends a default item, returns it
  void (*clear)(void* owner) = nullptr;
};

// The grammars of the enum keys (config_schema.cc); toString() of the enums
// in config.h reads their names from here.
extern const EnumDesc kStickiness, kGeneveFormat, kEncapsulation, kHealthProtocol, kPortRole, kWhenAllUnhealthy,
    kFailoverMode, kLogLevel, kClassAction;

class Report;
struct Section;

// An extra rule on one key's value (never on other keys): `value` points to
// the member. Runs after the range check, and only if that passed.
using Check = void (*)(const void* value, const std::string& path, Report& r);

// kItems: reads one item's text into `item` (a default item the parser just
// appended); false with `err` (the text after the quoted value) when it is not
// one. Like the number kinds it checks syntax and that the value fits its
// member, not ranges (Key::check does, on the typed list).
struct ItemKind {
  bool (*parse)(const std::string& text, void* item, std::string& err);
  std::string (*text)(const void* item);  // the item as the parser reads it back
};

struct Key {
  std::string_view name;
  Kind kind;
  Access acc;
  std::string_view doc;               // one line for docs/config.md
  Range range{};                      // numbers: allowed values; lists: hi = most items
  Reload reload = Reload::kApplies;
  bool required = false;              // must be present in the file
  // kString, kStrings, kList: what the value must be ("a group name");
  // kIpv4: what the address is, for "is required: set <what>".
  std::string_view what = {};
  std::string_view item_what = {};    // kStrings: what each item must be
  std::string_view items = "items";   // lists: the items' name in "has N <items>"
  bool needs_one = false;             // lists: the limit reads "1..N", not "at most N"
  const Section* sub = nullptr;       // kSection, kList
  const EnumDesc* enm = nullptr;      // kEnum
  const ItemKind* item = nullptr;     // kItems
  Check check = nullptr;
  // Per-key checks apply only when this holds for the owner (e.g. http-only keys).
  bool (*applies)(const void* owner) = nullptr;
  // Errors at this key are not reported when one of these sibling keys failed
  // to parse (they would only restate that failure).
  std::span<const std::string_view> after = {};
  // docs/config.md: type, range and default columns when not derived.
  std::string_view type_doc = {};
  std::string_view range_doc = {};
  std::string_view default_doc = {};
  // kString: true when this value is a secret (gwlbctl config dump leaves it
  // out unless asked).
  bool (*secret)(const std::string& value) = nullptr;
  // gwlbctl config dump: a comment after the key's value (owner: its struct).
  std::string (*note)(const void* owner) = nullptr;
};

struct Section {
  std::string_view path;  // "server_groups[]"; "" for the top level
  std::span<const Key> keys;
  void (*begin)(void* obj) = nullptr;  // the section is present (before its keys)
  // After its keys: `given(name)` tells whether a key was in the file.
  void (*finish)(void* obj, bool (*given)(const void* ctx, std::string_view), const void* ctx) =
      nullptr;
  bool (*checked)(const void* obj) = nullptr;  // per-key checks run only when this holds
};

const Section& rootSection();

// ---------------------------------------------------------------------------
// member<&S::m>(): the Access for one member.

template <class>
struct MemberOf;
template <class S, class T>
struct MemberOf<T S::*> {
  using Owner = S;
  using Type = T;
};
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
template <class T>
constexpr bool kLeaf = std::is_arithmetic_v<T> || std::is_enum_v<T> ||
                       std::is_same_v<T, std::string> || std::is_same_v<T, IpAddr> ||
                       std::is_same_v<T, MacAddr>;
template <class T>
constexpr bool comparable() {
  if constexpr (IsOptional<T>::value || IsVector<T>::value) return kLeaf<typename T::value_type>;
  else return kLeaf<T>;
}

template <auto M>
constexpr Access member() {
  using S = typename MemberOf<decltype(M)>::Owner;
  using T = typename MemberOf<decltype(M)>::Type;
  Access a;
  a.at = [](void* o) -> void* { return &(static_cast<S*>(o)->*M); };
  a.cat = [](const void* o) -> const void* { return &(static_cast<const S*>(o)->*M); };
  a.copy = [](void* d, const void* s) { static_cast<S*>(d)->*M = static_cast<const S*>(s)->*M; };
  if constexpr (comparable<T>())
    a.same = [](const void* x, const void* y) {
      return static_cast<const S*>(x)->*M == static_cast<const S*>(y)->*M;
    };
  if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    a.get = [](const void* o) { return uint64_t(static_cast<const S*>(o)->*M); };
    a.set = [](void* o, uint64_t v) { static_cast<S*>(o)->*M = static_cast<T>(v); };
    if constexpr (std::is_integral_v<T>) a.max = uint64_t(std::numeric_limits<T>::max());
  }
  if constexpr (IsOptional<T>::value) {
    using V = typename T::value_type;
    a.has = [](const void* o) { return (static_cast<const S*>(o)->*M).has_value(); };
    if constexpr (std::is_enum_v<V>) {
      a.get = [](const void* o) {
        const T& v = static_cast<const S*>(o)->*M;
        return v ? uint64_t(*v) : 0;
      };
      a.set = [](void* o, uint64_t v) { static_cast<S*>(o)->*M = static_cast<V>(v); };
    }
  }
  if constexpr (IsVector<T>::value) {
    a.count = [](const void* o) { return (static_cast<const S*>(o)->*M).size(); };
    a.citem = [](const void* o, size_t i) -> const void* { return &(static_cast<const S*>(o)->*M)[i]; };
    a.append = [](void* o) -> void* { return &(static_cast<S*>(o)->*M).emplace_back(); };
    a.clear = [](void* o) { (static_cast<S*>(o)->*M).clear(); };
  }
  return a;
}

// ---------------------------------------------------------------------------
// Errors and their texts (config_text.cc).

// Collects errors of the validator. `written` (may be null) holds the text a
// number was written as in the file, by key path, so that a range error
// quotes it as written ('2h' (7200 s)) rather than as stored; and the text of
// string keys that have a Key::check (null: the key was not in the file).
class Report {
 public:
  explicit Report(std::vector<ConfigError>& e,
                  const std::map<std::string, std::string>* written = nullptr)
      : errs_(e), written_(written) {}
  void add(std::string path, std::string msg) { errs_.push_back({std::move(path), std::move(msg)}); }
  const std::string* written(const std::string& path) const;

 private:
  std::vector<ConfigError>& errs_;
  const std::map<std::string, std::string>* written_;
};

std::string numStr(uint64_t v, bool hex);
std::string rangeText(const Range& r);
std::string quote(std::string_view s);
bool validUtf8(std::string_view s);
size_t editDistance(std::string_view a, std::string_view b);
// "has 65 ports; allowed at most 64" / "has 0 groups; allowed 1..64".
std::string tooMany(size_t n, size_t max, std::string_view items, bool needs_one);

// Out-of-range messages of the number kinds; `written` is the text as written
// in the file, or null for a value set in code.
std::string uintOutOfRange(const std::string* written, uint64_t v, const Range& r);
std::string secondsOutOfRange(const std::string* written, uint64_t v, const Range& r);
std::string millisOutOfRange(const std::string* written, uint64_t v, const Range& r);
std::string millisRangeText(const Range& r);  // "10 ms to 300 s"

// ---------------------------------------------------------------------------
// Validation (config_validate.cc, config_cross.cc).

// Kinds of named things whose names are not all known because part of them
// failed to parse: references to them are not checked (the parse error says
// what is wrong; "no such group" as well would only mislead).
struct UnknownNames {
  bool groups = false, policies = false, sources = false, listeners = false;
};

// Every per-key rule of the table (ranges, kinds, Key::check) on a typed Config.
void checkKeys(const Config& c, Report& r);
// The rules between keys (config_cross.cc).
void checkCrossFields(const Config& c, Report& r, UnknownNames unknown);

// Traffic classes (config_classes.cc): the item kinds and per-key checks of
// traffic_classes[].match and the rules between classes and listeners.
extern const ItemKind kPortItem, kVlanItem, kPrefixItem, kProtocolItem, kL4PortItem;
void checkIngressPorts(const void* v, const std::string& path, Report& r);
void checkVlans(const void* v, const std::string& path, Report& r);
void checkPrefixes(const void* v, const std::string& path, Report& r);
void checkProtocols(const void* v, const std::string& path, Report& r);
void checkL4Ports(const void* v, const std::string& path, Report& r);
void checkClassCount(const void* v, const std::string& path, Report& r);
void checkClasses(const Config& c, Report& r, UnknownNames unknown);
// The rules of IPv6 appliances (config_ipv6.cc): what they need of the node
// (node.underlay_ipv6, a MAC) and what does not work over IPv6 yet.
void checkIpv6Underlay(const Config& c, Report& r);
// config_class_warnings.cc; `ports` as configWarnings's.
void classWarnings(const Config& c, std::vector<ConfigError>& out, unsigned ports);
inline constexpr size_t kMaxClasses = 1000;

// Shared by the table's checks and the cross-field rules.
bool validName(const std::string& n);      // [A-Za-z0-9_.-]{1,63}
bool validGroupRef(const std::string& g);  // a Unix group name or number
inline constexpr Range kMaglevRange{251, 1000003};
inline constexpr size_t kMaxNameLen = 63;
inline constexpr size_t kMaxGroups = 64;
inline constexpr size_t kMaxAppliances = 4096;
inline constexpr size_t kMaxRegionItems = 16;  // listeners, names in a listener or composite
inline constexpr size_t kMaxPortEntries = 64;
inline constexpr size_t kMaxIpv6Addresses = 16;

}  // namespace gwlb::ctl::schema
