// gen-config-doc: writes the key table of docs/config.md from the config's key
// table (control/config/config_schema.cc), between the two marker lines below.
//
// usage: gen-config-doc [--check] docs/config.md
//   --check: exit 1, changing nothing, when the file differs from what the
//            table generates (meson test config_doc).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "control/config/config.h"

namespace {

constexpr const char* kBegin =
    "<!-- key table: generated from control/config/config_schema.cc by gen-config-doc; do not edit -->\n";
constexpr const char* kEnd = "<!-- end of key table -->\n";

}  // namespace

int main(int argc, char** argv) {
  bool check = argc == 3 && std::strcmp(argv[1], "--check") == 0;
  if (argc != 2 && !check) {
    std::fprintf(stderr, "usage: gen-config-doc [--check] docs/config.md\n");
    return 2;
  }
  const std::string path = argv[argc - 1];
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "gen-config-doc: cannot read %s\n", path.c_str());
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t b = doc.find(kBegin), e = doc.find(kEnd);
  if (b == std::string::npos || e == std::string::npos || e < b) {
    std::fprintf(stderr, "gen-config-doc: %s lacks the marker lines\n%s%s", path.c_str(), kBegin, kEnd);
    return 2;
  }
  const size_t from = b + std::strlen(kBegin);
  const std::string out = doc.substr(0, from) + gwlb::ctl::configKeyTable() + doc.substr(e);
  const size_t keys = gwlb::ctl::configKeyPaths().size();
  if (check) {
    if (out != doc) {
      std::fprintf(stderr, "%s: the key table is stale: run gen-config-doc %s (build/tools/)\n",
                   path.c_str(), path.c_str());
      return 1;
    }
    std::printf("%s: the key table matches the config's (%zu keys)\n", path.c_str(), keys);
    return 0;
  }
  std::ofstream(path) << out;
  std::printf("wrote the key table of %s (%zu keys)\n", path.c_str(), keys);
  return 0;
}
