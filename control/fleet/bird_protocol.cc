#include "control/fleet/bird_protocol.h"

#include <cctype>

namespace gwlb::ctl::bird {

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Printable text for an error message: at most 40 bytes, others as '?'.
std::string shown(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f) ? char(c) : '?';
  }
  if (s.size() > 40) out += "...";
  return out;
}

}  // namespace

std::string Reply::text() const {
  std::string out;
  for (const ReplyLine& l : lines) {
    if (l.text.empty()) continue;
    if (!out.empty()) out += "; ";
    out += l.text;
  }
  return out;
}

void ReplyParser::reset() {
  partial_.clear();
  cur_ = {};
  cur_code_ = -1;
  done_.clear();
  error_.clear();
  async_ = 0;
}

bool ReplyParser::feed(std::string_view bytes) {
  if (failed()) return false;
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    std::string_view piece = bytes.substr(0, nl);
    if (partial_.size() + piece.size() > kBirdMaxLine) {
      error_ = "a line longer than " + std::to_string(kBirdMaxLine) + " bytes";
      return false;
    }
    if (nl == std::string_view::npos) {
      partial_.append(piece);
      return true;
    }
    bool ok;
    if (partial_.empty()) {
      ok = line(piece);
    } else {
      partial_.append(piece);
      std::string whole = std::move(partial_);
      partial_.clear();
      ok = line(whole);
    }
    if (!ok) return false;
    bytes.remove_prefix(nl + 1);
  }
  return true;
}

bool ReplyParser::line(std::string_view l) {
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  if (!l.empty() && l[0] == '+') {  // asynchronous message, not part of a reply
    ++async_;
    return true;
  }
  int code;
  bool last;
  std::string_view text;
  if (l.size() >= 5 && isDigit(l[0]) && isDigit(l[1]) && isDigit(l[2]) && isDigit(l[3]) &&
      (l[4] == ' ' || l[4] == '-')) {
    code = (l[0] - '0') * 1000 + (l[1] - '0') * 100 + (l[2] - '0') * 10 + (l[3] - '0');
    last = l[4] == ' ';
    text = l.substr(5);
  } else if (l.size() == 4 && isDigit(l[0]) && isDigit(l[1]) && isDigit(l[2]) && isDigit(l[3])) {
    // "0000" alone: BIRD ends a table with a bare code.
    code = (l[0] - '0') * 1000 + (l[1] - '0') * 100 + (l[2] - '0') * 10 + (l[3] - '0');
    last = true;
  } else if (!l.empty() && l[0] == ' ' && cur_code_ >= 0) {
    code = cur_code_;
    last = false;
    text = l.substr(1);
  } else {
    error_ = "not a BIRD reply line: '" + shown(l) + "'";
    return false;
  }
  if (cur_.lines.size() >= kBirdMaxReplyLines) {
    error_ = "a reply of more than " + std::to_string(kBirdMaxReplyLines) + " lines";
    return false;
  }
  cur_.lines.push_back({code, std::string(text)});
  cur_code_ = code;
  if (last) {
    cur_.code = code;
    done_.push_back(std::move(cur_));
    cur_ = {};
    cur_code_ = -1;
  }
  return true;
}

std::optional<Reply> ReplyParser::next() {
  if (done_.empty()) return std::nullopt;
  Reply r = std::move(done_.front());
  done_.pop_front();
  return r;
}

std::optional<std::string> protocolState(const Reply& r, std::string_view name) {
  for (const ReplyLine& l : r.lines) {
    if (l.code != 1002) continue;
    // Columns separated by runs of spaces: name, protocol, table, state, ...
    std::vector<std::string_view> cols;
    std::string_view t = l.text;
    while (cols.size() < 4) {
      size_t b = t.find_first_not_of(' ');
      if (b == std::string_view::npos) break;
      t.remove_prefix(b);
      size_t e = t.find(' ');
      cols.push_back(t.substr(0, e));
      if (e == std::string_view::npos) break;
      t.remove_prefix(e);
    }
    if (cols.size() == 4 && cols[0] == name) return std::string(cols[3]);
  }
  return std::nullopt;
}

bool validProtocolName(std::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  if (!(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace gwlb::ctl::bird
