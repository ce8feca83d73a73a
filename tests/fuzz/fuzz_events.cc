// Fuzz target 9: gwlb-replay's --events file parser (control/engine/scripted_events.h,
// gwlb::ctl::parseEvents). Any bytes are the text of an events file. Its
// contract: a list of events, or an EventError whose text names what is wrong;
// nothing else. Invariants (docs/fuzzing.md):
//  - no exception but EventError escapes, and its text is not empty;
//  - accepted events are numbered 0..n-1 in file order, in time order, each
//    with an IPv4 server (a reload: a file), a line number, and the fields its action needs
//    (a group for add, a weight for weight, a timeout only for drain, from
//    1 s to 3600 s); every weight is at most 10000; force only on the
//    changes gwlbd's service guard judges (drain, remove, weight, reload);
//  - parsing the same text again gives the same events.
#include <string>
#include <vector>

#include "control/engine/scripted_events.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb::ctl;

namespace {

bool parse(const std::string& text, std::vector<ScriptedEvent>& out, std::string& err) {
  try {
    out = parseEvents(text, "events.yaml");
    return true;
  } catch (const EventError& e) {
    err = e.text;
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<ScriptedEvent> ev;
  std::string err;
  bool ok = parse(text, ev, err);
  if (!ok) {
    FUZZ_CHECK(!err.empty(), "EventError without a text");
    return 0;
  }
  for (size_t i = 0; i < ev.size(); ++i) {
    const ScriptedEvent& e = ev[i];
    FUZZ_CHECK(e.index == i, "event %zu has index %zu", i, e.index);
    FUZZ_CHECK(e.line >= 1, "event %zu has line %d", i, e.line);
    // A reload names a config file, no appliance.
    if (e.action == ScriptedEvent::Action::kReload)
      FUZZ_CHECK(!e.file.empty(), "event %zu: reload without a file", i);
    else
      FUZZ_CHECK(e.appliance.isV4(), "event %zu: server is not IPv4", i);
    FUZZ_CHECK(i == 0 || ev[i - 1].at_ns <= e.at_ns, "event %zu is before event %zu", i, i - 1);
    if (e.weight) FUZZ_CHECK(*e.weight <= 10000, "event %zu: weight %u", i, *e.weight);
    switch (e.action) {
      case ScriptedEvent::Action::kAdd:
        FUZZ_CHECK(!e.group.empty(), "event %zu: add without a group", i);
        break;
      case ScriptedEvent::Action::kWeight:
        FUZZ_CHECK(e.weight.has_value(), "event %zu: weight without a value", i);
        break;
      default:
        break;
    }
    if (e.timeout_s) {
      FUZZ_CHECK(e.action == ScriptedEvent::Action::kDrain, "event %zu: timeout without drain", i);
      FUZZ_CHECK(*e.timeout_s >= 1 && *e.timeout_s <= 3600, "event %zu: timeout %u", i,
                 *e.timeout_s);
    }
  }
  for (size_t i = 0; i < ev.size(); ++i) {
    using A = ScriptedEvent::Action;
    const A a = ev[i].action;
    if (ev[i].force)
      FUZZ_CHECK(a == A::kDrain || a == A::kRemove || a == A::kWeight || a == A::kReload,
                 "event %zu: force with %s", i, actionName(ev[i]));
  }
  std::vector<ScriptedEvent> again;
  std::string err2;
  FUZZ_CHECK(parse(text, again, err2), "second parse failed: %s", err2.c_str());
  FUZZ_CHECK(again.size() == ev.size(), "second parse: %zu events, first %zu", again.size(),
             ev.size());
  for (size_t i = 0; i < ev.size() && i < again.size(); ++i)
    FUZZ_CHECK(again[i].at_ns == ev[i].at_ns && again[i].appliance == ev[i].appliance &&
                   again[i].action == ev[i].action,
               "second parse differs at event %zu", i);
  return 0;
}
