// What the health-probe benchmarks (probe_scale: bare probes on gwlbd's
// schedule; probe_fleet: gwlbd's own HealthChecker) share: the stand-in
// appliances they probe on loopback (ProbeTargets), and how they measure a
// run: the CPU of a thread, the machine's load, a raised file limit; and
// their comma-separated options.
#pragma once

#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace gwlb::bench {

// "<program>: <what>: <errno's text>" on stderr, exit 1.
[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what.c_str(), std::strerror(errno));
  std::exit(1);
}

// Pins the calling thread alone (not the threads it started before).
inline void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// 1-minute load average: how busy the (shared) machine was around a run.
inline double loadAvg() {
  double l = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

struct CpuTimes {
  double user = 0, sys = 0;
  long involuntary = 0;  // context switches: preempted (noise on a shared machine)
};
// The calling thread's CPU so far.
inline CpuTimes threadCpu() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return {double(ru.ru_utime.tv_sec) + double(ru.ru_utime.tv_usec) / 1e6,
          double(ru.ru_stime.tv_sec) + double(ru.ru_stime.tv_usec) / 1e6, ru.ru_nivcsw};
}

// CPU seconds (user + sys) of another thread of this process, 10 ms resolution.
inline double taskCpuSeconds(pid_t tid) {
  std::string path = "/proc/self/task/" + std::to_string(tid) + "/stat";
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');  // fields after the command name
  unsigned long long ut = 0, st = 0;
  if (!p || std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
    return 0;
  return double(ut + st) / double(sysconf(_SC_CLK_TCK));
}

// Every probe holds one socket while in flight, and with keep_alive each
// appliance one more at each end: the soft file limit raised to the hard one,
// and the hard one to 65,536 when the process may (root). Returns the limit now.
inline rlimit raiseFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max < 65536) {
    rlimit more{65536, 65536};
    setrlimit(RLIMIT_NOFILE, &more);  // fails without the privilege: then as it was
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  getrlimit(RLIMIT_NOFILE, &rl);
  return rl;
}

// The non-empty items of a comma-separated list, each through conv.
template <class T, class F>
std::vector<T> splitList(const std::string& s, F conv) {
  std::vector<T> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t c = s.find(',', pos);
    if (c == std::string::npos) c = s.size();
    if (c > pos) out.push_back(conv(s.substr(pos, c - pos)));
    pos = c + 1;
  }
  return out;
}

// A TLS server context with a self-signed P-256 certificate made now (valid
// a day, CN probe-fleet): the stand-in appliances' HTTPS. It keeps the
// server's defaults for resumption (TLS 1.3 tickets, TLS 1.2 session cache),
// as an appliance's web server would. Exits with a message when OpenSSL fails.
inline SSL_CTX* selfSignedServerContext() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!key || !cert || !ctx) die("TLS context");
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("probe-fleet"), -1,
                             -1, 0);
  X509_set_issuer_name(cert, name);
  if (X509_sign(cert, key, EVP_sha256()) == 0 || SSL_CTX_use_certificate(ctx, cert) != 1 ||
      SSL_CTX_use_PrivateKey(ctx, key) != 1)
    die("self-signed certificate");
  X509_free(cert);  // the context holds its own references
  EVP_PKEY_free(key);
  return ctx;
}

// Listening sockets (kernel-chosen ports) standing in for appliances, served
// by one thread that accepts everything and keeps each connection like a real
// server until the prober resets it (abortively: no TIME_WAIT on either side).
class ProbeTargets {
 public:
  struct Options {
    std::vector<uint32_t> addresses;  // one listener each (host order; INADDR_ANY: every local address)
    int backlog = 4096;
    int pin_cpu = -1;               // the serving thread's cpu (-1: not pinned)
    bool batch = false;             // the serving thread under SCHED_BATCH
    bool reads = false;             // read what a connection sends (else: any event on it closes it)
    int events_per_wait = 64;
    size_t windows = 0;             // count arrivals per 10 ms window, for this many windows
  };

  explicit ProbeTargets(Options o) : o_(std::move(o)), arrivals_(o_.windows) {
    // OpenSSL writes with write(2): a connection the prober has reset must
    // not kill the process.
    signal(SIGPIPE, SIG_IGN);
    efd_ = epoll_create1(EPOLL_CLOEXEC);
    stop_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd_ < 0 || stop_ < 0) die("epoll/eventfd");
    add(stop_);
    for (uint32_t addr : o_.addresses) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) die("socket");
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      sockaddr_in a = address(addr, 0);
      if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0) die("bind listener");
      if (listen(fd, o_.backlog) < 0) die("listen");
      socklen_t len = sizeof(a);
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
      ports_.push_back(ntohs(a.sin_port));
      fds_.push_back(fd);
      add(fd);
    }
    t0_ = std::chrono::steady_clock::now();
    thread_ = std::thread([this] {
      if (o_.pin_cpu >= 0) pinTo(o_.pin_cpu);
      // Stand-in for remote appliances: batch policy so that it does not preempt
      // the prober each time a connection lands (wake-up preemption), at the same
      // nice level so that it keeps up (a starved listener drops SYNs once its
      // accept queue is full, and probes then time out).
      sched_param sp{};
      if (o_.batch) pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
      tid_.store(pid_t(syscall(SYS_gettid)));
      run();
    });
    while (tid_.load() == 0) std::this_thread::yield();
  }
  ~ProbeTargets() {
    uint64_t one = 1;
    [[maybe_unused]] auto n = write(stop_, &one, sizeof(one));
    thread_.join();
    for (int fd : fds_) close(fd);
    for (size_t fd = 0; fd < ssl_.size(); ++fd)
      if (ssl_[fd]) dropTls(int(fd));
    close(stop_);
    close(efd_);
    if (tls_ctx_) SSL_CTX_free(tls_ctx_);
  }
  static sockaddr_in address(uint32_t addr, uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(addr);
    a.sin_port = htons(port);
    return a;
  }
  uint16_t port(size_t k = 0) const { return ports_[k]; }
  uint64_t accepted() const { return accepted_.load(); }
  // Answer each request with "HTTP/1.1 200 OK" (with Options::reads).
  void setHttp(bool on) { http_.store(on); }
  // Connections accepted from now on speak TLS first (with Options::reads and
  // setHttp: HTTPS), with a certificate made on the first call. Call between
  // runs, with no probe in flight.
  void setTls(bool on) {
    if (on && !tls_ctx_) tls_ctx_ = selfSignedServerContext();
    tls_.store(on);
  }
  // TLS handshakes completed so far, and how many of them resumed a session.
  uint64_t handshakes() const { return handshakes_.load(); }
  uint64_t resumed() const { return resumed_.load(); }
  pid_t tid() const { return tid_.load(); }
  // CPU seconds (user + sys) the serving thread used so far, 10 ms resolution.
  double cpuSeconds() const { return taskCpuSeconds(tid_.load()); }
  std::chrono::steady_clock::time_point t0() const { return t0_; }
  // Arrivals per 10 ms window from `from` to `to` (ms since t0()).
  std::vector<uint32_t> arrivals(uint64_t from_ms, uint64_t to_ms) const {
    std::vector<uint32_t> out;
    for (uint64_t w = from_ms / 10; w < to_ms / 10 && w < arrivals_.size(); ++w) out.push_back(arrivals_[w].load());
    return out;
  }

 private:
  void add(int fd, uint32_t events = EPOLLIN) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    if (epoll_ctl(efd_, EPOLL_CTL_ADD, fd, &ev) < 0) close(fd);
  }
  void run() {
    std::vector<epoll_event> evs(size_t(o_.events_per_wait));
    linger lg{1, 0};
    static constexpr char kOk[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    char buf[2048];
    for (;;) {
      int n = epoll_wait(efd_, evs.data(), o_.events_per_wait, -1);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) die("epoll_wait");
      for (int i = 0; i < n; ++i) {
        const int fd = evs[size_t(i)].data.fd;
        if (fd == stop_) return;
        if (std::find(fds_.begin(), fds_.end(), fd) != fds_.end()) {
          accept(fd, lg);
          continue;
        }
        if (!o_.reads) {
          close(fd);  // an accepted connection the prober closed (RST): done
          continue;
        }
        if (size_t(fd) < ssl_.size() && ssl_[size_t(fd)]) {
          serveTls(fd, buf, sizeof buf, kOk, sizeof kOk - 1);
          continue;
        }
        // A request (http: answer it) or the prober's reset (close).
        ssize_t got = read(fd, buf, sizeof buf);
        if (got > 0 && http_.load()) {
          if (write(fd, kOk, sizeof kOk - 1) < 0) close(fd);
          continue;
        }
        if (got > 0) continue;
        close(fd);
      }
    }
  }
  void accept(int lfd, const linger& lg) {
    for (;;) {
      int c = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c < 0) break;  // EAGAIN, or the peer already reset it
      accepted_.fetch_add(1, std::memory_order_relaxed);
      if (!arrivals_.empty()) {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0_)
                            .count();
        if (size_t(ms / 10) < arrivals_.size()) arrivals_[size_t(ms / 10)].fetch_add(1, std::memory_order_relaxed);
      }
      // Keep it open like a real server until the prober closes it: closing
      // here first could reset it before the prober saw its connect succeed.
      setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
      if (tls_.load() && o_.reads) {
        SSL* s = SSL_new(tls_ctx_);
        if (!s) {
          close(c);
          continue;
        }
        SSL_set_fd(s, c);
        SSL_set_accept_state(s);
        if (ssl_.size() <= size_t(c)) ssl_.resize(size_t(c) + 1, nullptr);
        ssl_[size_t(c)] = s;
      }
      add(c, EPOLLIN | EPOLLRDHUP);
    }
  }
  // One readable TLS connection: the handshake's next step, then the request
  // (answered) or the prober's reset (dropped).
  void serveTls(int fd, char* buf, size_t len, const char* resp, size_t resp_len) {
    SSL* s = ssl_[size_t(fd)];
    if (!SSL_is_init_finished(s)) {
      const int r = SSL_do_handshake(s);
      if (r != 1) {
        const int e = SSL_get_error(s, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) dropTls(fd);
        return;
      }
      handshakes_.fetch_add(1, std::memory_order_relaxed);
      if (SSL_session_reused(s)) resumed_.fetch_add(1, std::memory_order_relaxed);
    }
    const int got = SSL_read(s, buf, int(len));
    if (got > 0) {
      if (http_.load() && SSL_write(s, resp, int(resp_len)) <= 0) dropTls(fd);
      return;
    }
    const int e = SSL_get_error(s, got);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) dropTls(fd);
  }
  void dropTls(int fd) {
    SSL* s = ssl_[size_t(fd)];
    ssl_[size_t(fd)] = nullptr;
    // The prober resets rather than closing cleanly, as it always does: its
    // session stays good all the same (a reset is no attack on it).
    SSL_set_shutdown(s, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_free(s);
    close(fd);
  }
  Options o_;
  int efd_ = -1, stop_ = -1;
  std::vector<int> fds_;
  std::vector<uint16_t> ports_;
  std::atomic<bool> http_{false};
  std::atomic<bool> tls_{false};
  SSL_CTX* tls_ctx_ = nullptr;
  std::vector<SSL*> ssl_;  // by fd: the TLS state of an accepted connection (serving thread only)
  std::atomic<uint64_t> handshakes_{0}, resumed_{0};
  std::vector<std::atomic<uint32_t>> arrivals_;
  std::chrono::steady_clock::time_point t0_;
  std::thread thread_;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<pid_t> tid_{0};
};

}  // namespace gwlb::bench
