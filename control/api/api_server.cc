#include "control/api/api_server.h"

#include <fcntl.h>
#include <grp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <system_error>
#include <vector>

namespace gwlb::ctl {

using boost::asio::local::stream_protocol;
using nlohmann::json;

json apiError(const json& id, const std::string& code, const std::string& message) {
  json r = {{"ok", false}, {"error", {{"code", code}, {"message", message}}}};
  if (!id.is_null()) r["id"] = id;
  return r;
}

int jsonDepth(const std::string& text, int limit) {
  int depth = 0, max = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > max) max = depth;
      if (max > limit) return max;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max;
}

namespace {

// One request line, checked: its method, params and id, or the error reply.
struct Request {
  json error;  // not null: the reply, the line is no request
  std::string method;
  json params, id;
};

Request parseRequest(const std::string& line) {
  Request r;
  if (jsonDepth(line, kApiMaxDepth) > kApiMaxDepth) {
    r.error = apiError(nullptr, "bad_request",
                       "JSON nested deeper than " + std::to_string(kApiMaxDepth) + " levels");
    return r;
  }
  json req = json::parse(line, nullptr, false);
  if (req.is_discarded()) r.error = apiError(nullptr, "bad_request", "request is not valid JSON");
  else if (!req.is_object()) r.error = apiError(nullptr, "bad_request", "request must be a JSON object");
  if (!r.error.is_null()) return r;
  r.id = req.contains("id") ? req["id"] : json();
  for (auto& [k, v] : req.items())
    if (k != "id" && k != "method" && k != "params") {
      r.error = apiError(r.id, "bad_request", "unknown request key '" + k + "' (id, method, params)");
      return r;
    }
  if (!req.contains("method") || !req["method"].is_string()) {
    r.error = apiError(r.id, "bad_request", "\"method\" must be a string");
    return r;
  }
  r.params = req.contains("params") ? req["params"] : json::object();
  if (!r.params.is_object()) {
    r.error = apiError(r.id, "bad_request", "\"params\" must be an object");
    return r;
  }
  r.method = req["method"].get<std::string>();
  return r;
}

json dispatch(const Request& req, const ApiHandler& handler) {
  try {
    json r = handler(req.method, req.params, req.id);
    if (!req.id.is_null()) r["id"] = req.id;
    return r;
  } catch (const std::exception& e) {
    return apiError(req.id, "internal", e.what());
  }
}

}  // namespace

json dispatchLine(const std::string& line, const ApiHandler& handler) {
  Request req = parseRequest(line);
  if (!req.error.is_null()) return req.error;
  return dispatch(req, handler);
}

namespace {

// A reply as one line. Strings that are not valid UTF-8 (a config value quoted
// in an error, say) are replaced, never a reason to throw.
std::string encodeReply(const json& r) {
  return r.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

// One connection. Requests are served one at a time: the next line is read
// only once the previous reply is written, so a client that does not read its
// replies stops being read (its requests back up in its own socket buffer)
// instead of growing a queue here. One timer bounds every wait: for a complete
// request line, or for the client to take its reply.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(stream_protocol::socket s, const ApiHandler& h,
          std::shared_ptr<const std::vector<ApiDeferredMethod>> deferred, std::shared_ptr<size_t> live,
          std::shared_ptr<uint64_t> requests)
      : sock_(std::move(s)),
        timer_(sock_.get_executor()),
        buf_(kApiMaxLine + 1),
        handler_(h),
        deferred_(std::move(deferred)),
        live_(std::move(live)),
        requests_(std::move(requests)) {
    ++*live_;
  }
  ~Session() { --*live_; }

  void start() {
    armTimer();
    read();
  }

  // Sends one reply and closes (used for `busy` and `too_large`).
  void refuse(const json& reply) {
    closing_ = true;
    armTimer();
    send(encodeReply(reply));
  }

 private:
  void armTimer() {
    timer_.expires_after(kApiIdleTimeout);
    auto self = shared_from_this();
    timer_.async_wait([self](const boost::system::error_code& ec) {
      if (ec) return;
      self->close();  // idle, slow drip, or a client that does not read
    });
  }

  void close() {
    boost::system::error_code ignored;
    sock_.shutdown(stream_protocol::socket::shutdown_both, ignored);
    sock_.close(ignored);
    timer_.cancel();
  }

  void read() {
    auto self = shared_from_this();
    boost::asio::async_read_until(
        sock_, buf_, '\n', [self](const boost::system::error_code& ec, size_t n) {
          if (ec == boost::asio::error::not_found) {
            self->refuse(apiError(nullptr, "too_large",
                                  "request line longer than " + std::to_string(kApiMaxLine) +
                                      " bytes"));
            return;
          }
          if (ec == boost::asio::error::eof && self->buf_.size() > 0) {
            n = self->buf_.size();  // the client's last request, without its newline
            self->closing_ = true;
          } else if (ec) {
            self->close();
            return;
          }
          std::string line(boost::asio::buffers_begin(self->buf_.data()),
                           boost::asio::buffers_begin(self->buf_.data()) + std::ptrdiff_t(n));
          self->buf_.consume(n);
          while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
          if (line.empty()) {  // a blank line is no request and does not renew the timer
            if (self->closing_) self->close();
            else self->read();
            return;
          }
          ++*self->requests_;
          Request req = parseRequest(line);
          if (req.error.is_null() && self->deferred_)
            for (const ApiDeferredMethod& d : *self->deferred_)
              if (d.method == req.method) return self->startDeferred(d, std::move(req));
          self->armTimer();  // now for the client to take the reply
          self->send(encodeReply(!req.error.is_null() ? req.error : dispatch(req, self->handler_)));
        });
  }

  // The reply comes later (ApiDeferredMethod): the timer now bounds the
  // wait for it.
  void startDeferred(const ApiDeferredMethod& d, Request req) {
    auto answered = std::make_shared<bool>(false);
    std::weak_ptr<Session> weak = shared_from_this();
    ApiReply reply = [weak, answered, id = req.id](json r) {
      auto self = weak.lock();
      if (!self || *answered) return;
      *answered = true;
      if (!id.is_null()) r["id"] = id;
      self->armTimer();  // for the client to take the reply
      self->send(encodeReply(r));
    };
    ApiDeferral wait;
    try {
      wait = d.start(req.params, reply);
    } catch (const std::exception& e) {
      reply(apiError(nullptr, "internal", e.what()));
      return;
    }
    if (*answered) return;
    timer_.expires_after(wait.timeout);
    // The timer's handler holds the session while it waits (the reply
    // function does not).
    timer_.async_wait([self = shared_from_this(), reply, msg = wait.on_timeout](
                          const boost::system::error_code& ec) {
      if (ec) return;
      reply(apiError(nullptr, "timeout", msg));
    });
  }

  void send(std::string s) {
    out_ = std::move(s);
    auto self = shared_from_this();
    boost::asio::async_write(sock_, boost::asio::buffer(out_),
                             [self](const boost::system::error_code& ec, size_t) {
                               self->out_.clear();
                               if (ec || self->closing_) {
                                 self->close();
                                 return;
                               }
                               self->armTimer();  // for the next request line
                               self->read();
                             });
  }

  stream_protocol::socket sock_;
  boost::asio::steady_timer timer_;
  boost::asio::streambuf buf_;
  ApiHandler handler_;
  std::shared_ptr<const std::vector<ApiDeferredMethod>> deferred_;
  std::string out_;  // the reply being written (at most one)
  bool closing_ = false;
  std::shared_ptr<size_t> live_;
  std::shared_ptr<uint64_t> requests_;
};

// True when something accepts connections on `path`.
bool socketAnswers(boost::asio::io_context& io, const std::string& path) {
  stream_protocol::socket probe(io);
  boost::system::error_code ec;
  probe.connect(stream_protocol::endpoint(path), ec);
  return !ec;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("control socket " + path + ": " + what);
}

std::string errnoText(int e) { return std::error_code(e, std::generic_category()).message(); }

const char* fileKind(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  return "not a socket";
}

// Creates the missing components of `dir` with mode 0755 (less under the
// umask), then checks that it is a directory other users cannot tamper with.
void prepareDirectory(const std::string& sock, const std::filesystem::path& dir) {
  std::filesystem::path p;
  for (const auto& part : dir) {
    p /= part;
    if (::mkdir(p.c_str(), 0755) != 0 && errno != EEXIST)
      fail(sock, "cannot create directory " + p.string() + ": " + errnoText(errno));
  }
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) fail(sock, dir.string() + ": " + errnoText(errno));
  if (!S_ISDIR(st.st_mode)) fail(sock, dir.string() + " is not a directory");
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    char m[8];
    std::snprintf(m, sizeof m, "%04o", unsigned(st.st_mode & 07777));
    fail(sock, "directory " + dir.string() + " (mode " + m +
                   ") may be written by every user and is not sticky: anyone could replace "
                   "the socket; use a directory only gwlbd's user can write (e.g. /run/gwlbd)");
  }
}

// Clears the way for bind(): nothing there, or a stale socket (removed). A
// socket someone answers on, a symlink or any other file is an error: it is
// never followed, chmod'ed or removed.
void clearSocketPath(boost::asio::io_context& io, const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    fail(path, errnoText(errno));
  }
  if (!S_ISSOCK(st.st_mode))
    fail(path, std::string("the path exists and is ") + fileKind(st.st_mode) +
                   ", not a socket; refusing to replace it (remove it yourself or choose "
                   "another control.socket)");
  if (socketAnswers(io, path)) fail(path, "is in use by a running gwlbd");
  if (::unlink(path.c_str()) != 0) fail(path, "cannot remove the stale socket: " + errnoText(errno));
  spdlog::info("control socket {}: replaced a stale socket", path);
}

// "" = no change; digits = a gid; else a group name.
std::optional<gid_t> resolveGroup(const std::string& sock, const std::string& group) {
  if (group.empty()) return std::nullopt;
  if (group.find_first_not_of("0123456789") == std::string::npos && group.size() <= 10) {
    unsigned long long g = std::stoull(group);
    if (g < 0xFFFFFFFFull) return gid_t(g);
  }
  struct group gr{}, *res = nullptr;
  std::vector<char> buf(16384);
  int e = ::getgrnam_r(group.c_str(), &gr, buf.data(), buf.size(), &res);
  if (e != 0) fail(sock, "looking up control.socket_group '" + group + "': " + errnoText(e));
  if (!res) fail(sock, "control.socket_group: there is no group '" + group + "'");
  return gr.gr_gid;
}

}  // namespace

ApiServer::ApiServer(boost::asio::io_context& io, const std::string& path, unsigned mode,
                     const std::string& group, ApiHandler handler,
                     std::vector<ApiDeferredMethod> deferred)
    : io_(io),
      acceptor_(io),
      accept_retry_(io),
      path_(path),
      handler_(std::move(handler)),
      deferred_(std::make_shared<const std::vector<ApiDeferredMethod>>(std::move(deferred))) {
  std::optional<gid_t> gid = resolveGroup(path, group);
  prepareDirectory(path, std::filesystem::path(path).parent_path());
  clearSocketPath(io, path);
  // The socket is bound and made ready under a staging name, then renamed into
  // place: whoever sees `path` can connect (a client that polls for the file
  // never meets a bound socket that does not listen yet). The staging name has
  // the same length, so it fits wherever `path` fits.
  std::string staging = path;
  staging.back() = staging.back() == '~' ? '#' : '~';
  clearSocketPath(io, staging);
  boost::system::error_code ec;
  acceptor_.open(stream_protocol(), ec);
  if (ec) fail(path, ec.message());
  // bind() creates the file with 0777 & ~umask: under this umask it has exactly
  // `mode` from its first instant, so there is no moment at which more users
  // may connect. umask is per process; no other thread creates files while
  // gwlbd starts its control loop.
  mode_t old = ::umask(mode_t(~mode & 0777));
  acceptor_.bind(stream_protocol::endpoint(staging), ec);
  ::umask(old);
  if (ec) fail(path, ec.message());
  // Group and (only if a default ACL overrode the umask) mode, through a
  // descriptor of what we bound: a symlink swapped in is not followed.
  int fd = ::open(staging.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
  struct stat st{};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    int e = errno;
    if (fd >= 0) ::close(fd);
    fail(path, "cannot open the socket just bound: " + errnoText(e));
  }
  auto cleanup = [&](const std::string& what) {
    ::close(fd);
    ::unlink(staging.c_str());
    fail(path, what);
  };
  if (!S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid())
    cleanup("the path was replaced while binding; refusing to touch it");
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  if (gid && ::fchownat(fd, "", uid_t(-1), *gid, AT_EMPTY_PATH) != 0)
    cleanup("cannot give the socket group " + group + ": " + errnoText(errno));
  if ((st.st_mode & 07777) != mode) {
    std::string proc = "/proc/self/fd/" + std::to_string(fd);
    if (::chmod(proc.c_str(), mode_t(mode)) != 0)
      cleanup("cannot set mode: " + errnoText(errno));
  }
  ::close(fd);
  acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) {
    ::unlink(staging.c_str());
    fail(path, ec.message());
  }
  // RENAME_NOREPLACE: whatever appeared at `path` since it was cleared stays.
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
    int e = errno;
    ::unlink(staging.c_str());
    fail(path, "cannot move the socket into place from " + staging + ": " + errnoText(e));
  }
  accept();
}

ApiServer::~ApiServer() {
  boost::system::error_code ec;
  acceptor_.close(ec);
  accept_retry_.cancel();
  // Only the socket we bound: never whatever has since been put at the path.
  struct stat st{};
  if (::lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev_ &&
      st.st_ino == ino_)
    ::unlink(path_.c_str());
}

void ApiServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, stream_protocol::socket s) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors, say: the pending connection stays queued, so an
      // immediate retry would spin. Wait a little and say so once.
      if (!accept_failing_)
        spdlog::warn("control socket {}: accept failed ({}); retrying every {} ms", path_,
                     ec.message(), kApiAcceptRetry.count());
      accept_failing_ = true;
      accept_retry_.expires_after(kApiAcceptRetry);
      accept_retry_.async_wait([this](const boost::system::error_code& tec) {
        if (!tec) accept();
      });
      return;
    }
    accept_failing_ = false;
    bool busy = *live_ >= kApiMaxConnections;
    auto session = std::make_shared<Session>(std::move(s), handler_, deferred_, live_, requests_);
    if (busy) {
      session->refuse(apiError(nullptr, "busy",
                               "too many control connections (" +
                                   std::to_string(kApiMaxConnections) + ")"));
    } else {
      session->start();
    }
    accept();
  });
}

}  // namespace gwlb::ctl
