// Prefix-list files (traffic_classes[].match.prefixes_file, docs/config.md
// "Prefix files"): a class's large prefix sets kept beside the config, as
// ipset, nftables sets and HAProxy's ACL files keep theirs. YAML costs about
// a quarter of a second per MiB to load; this format is read by hand in one
// pass, so a class set the schema allows loads in a fraction of that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "control/config/config.h"

namespace gwlb::ctl {

// A class's prefixes, `prefixes` and its file's together, are at most this
// many: the bound the class compiler and the shadow check are built for.
inline constexpr size_t kMaxClassPrefixes = 1024;
// One prefix file, and every prefix file of a config together (a file named
// by several classes counted once), at most this many bytes: a file of 1,024
// prefixes with a comment on each line fits, and reading all of them stays
// well under the time a config check may take.
inline constexpr size_t kMaxPrefixFileBytes = 1u << 20;
inline constexpr size_t kMaxPrefixFilesBytes = 64u << 20;
// The prefix files of a config together hold at most this many prefixes (a
// file named by several classes counted once): the class compile's cost grows
// with the distinct prefixes of all classes (faster than linearly), and at
// this many, spread over 1,000 classes, checking and compiling them takes
// well under a second (bench/class_check_bench, docs/performance.md).
inline constexpr size_t kMaxFilePrefixes = 256u << 10;
// Errors reported per file; the parse stops at the next one.
inline constexpr size_t kMaxPrefixListErrors = 20;

struct PrefixListError {
  size_t line = 0;       // 1-based
  std::string message;   // what is wrong, quoting the text (printable ASCII, at most 64 bytes)
};

// Parses a prefix list. Grammar, per line ('\n', an optional '\r' before it):
// '#' starts a comment that runs to the end of the line; spaces and tabs
// around the text are ignored; a blank line is skipped; anything else is one
// prefix: an IPv4 or IPv6 address (as `prefixes` reads them), then '/' and
// its length in decimal, or no length for one address (/32, /128). Each
// prefix is checked as `prefixes` checks its items: length in range, no host
// bits set, no repeat. Appends the prefixes to `out` and their 1-based line
// numbers to `lines`, at most `max` of them (one more is an error). Returns
// true when there was no error; after kMaxPrefixListErrors errors it stops.
// Pure: never throws but bad_alloc. Thread: any.
bool parsePrefixList(std::string_view text, size_t max, std::vector<PrefixConfig>& out,
                     std::vector<uint32_t>& lines, std::vector<PrefixListError>& errors);

// Reads every class's prefixes_file (config_prefix_files.cc): a relative
// path is taken relative to `base_dir` (the config file's directory; "" = the
// current directory) and kept absolute in `prefixes_file`; the file's prefixes
// are appended to the class's `prefixes` (`file_prefixes` counts them) and
// the SHA-256 of its bytes kept for gwlbctl config dump. A file named by
// several classes is read once. Errors go to `errors` under the key's path,
// each message starting "FILE:LINE: " when it is about a line. Never throws
// but bad_alloc. Thread: any (reads files).
void loadPrefixFiles(Config& c, const std::string& base_dir, std::vector<ConfigError>& errors);

}  // namespace gwlb::ctl
