// Fuzz target: gwlb-appliance's reading of gwlb's own Geneve options and its
// mirror sink's frame (tools/appliance_options.cc).
// Input: byte 0 picks the Geneve protocol for the sink (0: 0x0800, 1: 0x86DD,
// 2: 0x6558, else 0x1234); byte 1: how many of the rest are options; then the
// options, then the inner packet.
//  - Never reads past the input (ASan, heap copies of exact size), never throws.
//  - readGwlbOptions agrees with a second walk written here: true exactly when
//    every option's length stays inside and ours (0xFF01 types 2 and 3) and
//    the nsi format's (0x0132 types 1 and 3) have their defined lengths; the
//    last mirror, tag, network and profile ID option's fields are the ones reported.
//  - sinkFrame: empty exactly for an unknown protocol or an empty inner packet;
//    else the inner bytes unchanged (ethernet) or behind 14 bytes with the EtherType.
#include <cstring>
#include <vector>

#include "tests/fuzz/fuzz_check.h"
#include "tools/appliance_options.h"

using namespace gwlb::appliance;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint16_t protos[] = {0x0800, 0x86DD, 0x6558, 0x1234};
  const uint16_t proto = protos[data[0] & 3];
  size_t optlen = data[1];
  if (optlen > size - 2) optlen = size - 2;
  std::vector<uint8_t> opts(data + 2, data + 2 + optlen);
  std::vector<uint8_t> inner(data + 2 + optlen, data + size);

  GwlbOptions got;
  const bool ok = readGwlbOptions(opts.data(), opts.size(), 0xFF01, got);
  // The oracle: the same walk, written differently.
  bool want_ok = true;
  GwlbOptions want;
  for (size_t at = 0; at < opts.size();) {
    if (at + 4 > opts.size()) { want_ok = false; break; }
    const size_t data_len = size_t(opts[at + 3] % 32) * 4;
    if (at + 4 + data_len > opts.size()) { want_ok = false; break; }
    const bool ours = opts[at] == 0xFF && opts[at + 1] == 0x01;
    const bool google = opts[at] == 0x01 && opts[at + 1] == 0x32;
    const unsigned type = opts[at + 2] % 128;
    if (google && type == 1) {
      if (data_len != 4) { want_ok = false; break; }
      want.nsi = true;
      want.nsi_egress = (opts[at + 7] % 2) == 1;
    } else if (google && type == 3) {
      if (data_len != 8) { want_ok = false; break; }
      want.nsi_profile = 0;
      for (size_t i = 0; i < 8; ++i) want.nsi_profile = want.nsi_profile * 256 + opts[at + 4 + i];
    } else if (ours && type == 2) {
      if (data_len != 4) { want_ok = false; break; }
      want.mirror = true;
      want.mirror_reverse = (opts[at + 4] % 2) == 1;
      want.mirror_class = uint16_t(opts[at + 6] * 256 + opts[at + 7]);
    } else if (ours && type == 3) {
      if (data_len != 8) { want_ok = false; break; }
      want.tag = true;
      want.tag_reverse = (opts[at + 4] % 2) == 1;
      want.tag_value = ((uint32_t(opts[at + 8]) * 256 + opts[at + 9]) * 256 + opts[at + 10]) * 256 + opts[at + 11];
    }
    at += 4 + data_len;
  }
  FUZZ_CHECK(ok == want_ok, "readGwlbOptions said %d, the walk %d", ok, want_ok);
  if (ok) {
    FUZZ_CHECK(got.mirror == want.mirror && got.tag == want.tag, "options present differ");
    FUZZ_CHECK(!got.mirror || (got.mirror_reverse == want.mirror_reverse && got.mirror_class == want.mirror_class),
               "mirror option fields differ");
    FUZZ_CHECK(!got.tag || (got.tag_reverse == want.tag_reverse && got.tag_value == want.tag_value),
               "tag option fields differ");
    FUZZ_CHECK(got.nsi == want.nsi && (!got.nsi || got.nsi_egress == want.nsi_egress) &&
                   got.nsi_profile == want.nsi_profile,
               "nsi options differ");
  }

  const std::vector<uint8_t> f = sinkFrame(proto, inner.data(), inner.size());
  if (proto == 0x1234 || inner.empty()) {
    FUZZ_CHECK(f.empty(), "a frame for protocol %04x, %zu inner bytes", proto, inner.size());
  } else if (proto == 0x6558) {
    FUZZ_CHECK(f == inner, "the ethernet frame changed");
  } else {
    FUZZ_CHECK(f.size() == inner.size() + 14 && f[12] == proto >> 8 && f[13] == (proto & 0xFF) &&
                   std::memcmp(f.data() + 14, inner.data(), inner.size()) == 0,
               "the aws frame is not 14 bytes + the inner packet");
  }
  return 0;
}
