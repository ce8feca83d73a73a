// BIRD's control-socket protocol (what `birdc` speaks), the parsing half:
// pure, no sockets, so that tests/fuzz/fuzz_bird.cc and the unit tests drive
// it directly. control/fleet/bird_client.h does the I/O.
//
// BIRD answers each command with lines ending in '\n':
//   "NNNN-text"  a line of the reply with 4-digit code NNNN, more follow
//   " text"      a further line with the code of the line before
//   "NNNN text"  the last line of the reply
//   "+text"      an asynchronous message between replies (ignored)
// Codes: 0xxx done (0000 = OK, the end of a table; 0001 the greeting
// "BIRD x.y ready."), 1xxx table rows, 2xxx table headings, 8xxx run-time
// errors, 9xxx parse errors. `show protocols NAME` gives a 2002 heading and a
// 1002 row "NAME PROTO TABLE STATE SINCE INFO"; STATE is up, down, start,
// stop or flush.
//
// Bounds: a line over kBirdMaxLine bytes or a reply over kBirdMaxReplyLines
// lines is a protocol error (the client drops the connection), never a
// growing buffer. Any thread; not thread-safe per object.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gwlb::ctl::bird {

inline constexpr size_t kBirdMaxLine = 16384;
inline constexpr size_t kBirdMaxReplyLines = 4096;

struct ReplyLine {
  int code = 0;
  std::string text;
};

struct Reply {
  int code = 0;                  // the last line's code
  std::vector<ReplyLine> lines;  // every line, the last included
  // 0xxx..2xxx: the command was done; 8xxx, 9xxx: BIRD refused it.
  bool ok() const { return code < 8000; }
  // The lines' texts joined with "; " (for logs and the API).
  std::string text() const;
};

class ReplyParser {
 public:
  // Takes the next bytes from the socket. False on a protocol error (then
  // error() says what; the parser stays failed until reset()).
  bool feed(std::string_view bytes);
  // The oldest complete reply not taken yet.
  std::optional<Reply> next();
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  size_t asyncMessages() const { return async_; }
  void reset();

 private:
  bool line(std::string_view l);

  std::string partial_;  // bytes of a line not ended yet
  Reply cur_;            // the reply being read
  int cur_code_ = -1;    // code of the line before (for " text" lines); -1: none
  std::deque<Reply> done_;
  std::string error_;
  size_t async_ = 0;
};

// The STATE column of protocol `name` in a `show protocols NAME` reply, if
// the reply has its row.
std::optional<std::string> protocolState(const Reply& r, std::string_view name);

// True for a name gwlbd may put in a command: a letter or _, then letters,
// digits and _ (1..64 bytes). The config allows nothing else.
bool validProtocolName(std::string_view name);

}  // namespace gwlb::ctl::bird
