// gwlbd's log lines under systemd (issue 18 item 8): JOURNAL_STREAM names the
// journal's stream; lines written there start with their syslog priority.
#include "control/daemon/log_setup.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>
#include <string>

namespace gwlb::ctl {
namespace {

TEST(LogSetup, JournalStreamIsRecognisedOnlyForTheFileItNames) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  struct stat st {};
  ASSERT_EQ(fstat(fds[1], &st), 0);
  std::string env = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  EXPECT_TRUE(isJournalStream(fds[1], env.c_str()));
  EXPECT_FALSE(isJournalStream(fds[1], nullptr));
  EXPECT_FALSE(isJournalStream(fds[1], ""));
  EXPECT_FALSE(isJournalStream(fds[1], (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1)).c_str()));
  EXPECT_FALSE(isJournalStream(fds[1], (env + "x").c_str()));
  EXPECT_FALSE(isJournalStream(fds[1], "junk"));
  EXPECT_FALSE(isJournalStream(-1, env.c_str()));
  close(fds[0]);
  close(fds[1]);
}

TEST(LogSetup, EachLevelGetsItsSyslogPriority) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::logger lg("t", sink);
  lg.set_level(spdlog::level::trace);
  setLogPattern(lg, true);
  lg.critical("c");
  lg.error("e");
  lg.warn("w");
  lg.info("i");
  lg.debug("d");
  lg.flush();
  EXPECT_EQ(out.str(), "<2>[critical] c\n<3>[error] e\n<4>[warning] w\n<6>[info] i\n<7>[debug] d\n");

  std::ostringstream plain;
  spdlog::logger lg2("t2", std::make_shared<spdlog::sinks::ostream_sink_mt>(plain));
  setLogPattern(lg2, false);  // not the journal: the usual "[time] [level] message"
  lg2.warn("w");
  lg2.flush();
  EXPECT_NE(plain.str().find("[warning] w"), std::string::npos) << plain.str();
  EXPECT_NE(plain.str()[0], '<');
}

}  // namespace
}  // namespace gwlb::ctl
