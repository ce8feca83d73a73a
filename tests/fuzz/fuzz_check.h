// Shared by the fuzz targets in tests/fuzz/: FUZZ_CHECK, which stops the run
// with a message when an invariant breaks. Under libFuzzer (scripts/fuzz.sh)
// the abort makes it save the input as a crash; under the replay driver
// (replay_main.cc, meson suite 'fuzz') it fails the test, after the driver has
// printed which input it was running.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, ...)                                                   \
  do {                                                                          \
    if (!(cond)) {                                                              \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n  ", __FILE__,     \
                   __LINE__, #cond);                                            \
      std::fprintf(stderr, __VA_ARGS__);                                        \
      std::fprintf(stderr, "\n");                                               \
      std::abort();                                                             \
    }                                                                           \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
