#include "cli/memory_check.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace gwlb::cli {

namespace {

bool executable(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string findGwlbd(const std::string& self_dir, const char* path) {
  if (!self_dir.empty() && executable(self_dir + "/gwlbd")) return self_dir + "/gwlbd";
  std::string dirs = path ? path : "";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    size_t end = dirs.find(':', pos);
    if (end == std::string::npos) end = dirs.size();
    std::string d = dirs.substr(pos, end - pos);
    if (!d.empty() && executable(d + "/gwlbd")) return d + "/gwlbd";
    pos = end + 1;
  }
  return "";
}

GwlbdCheck runGwlbdCheck(const std::string& gwlbd, const std::string& file) {
  GwlbdCheck c;
  c.gwlbd = gwlbd;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    c.why = std::string("cannot run ") + gwlbd + ": " + std::strerror(errno);
    return c;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);  // the memory report
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  std::string opt = "--check-config";
  char* argv[] = {const_cast<char*>(gwlbd.c_str()), opt.data(), const_cast<char*>(file.c_str()),
                  nullptr};
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, gwlbd.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    c.why = "cannot run " + gwlbd + ": " + std::strerror(rc);
    return c;
  }
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  c.ran = true;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return c;
  // gwlbd's lines: "FILE: message", "gwlbd: message", or (after a header
  // line) "key.path: message".
  const std::string head = file + ": ";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    if (line.rfind(head, 0) == 0) line = line.substr(head.size());
    else if (line.rfind("gwlbd: ", 0) == 0) line = line.substr(7);
    if (line.rfind("warning: ", 0) == 0 || line.rfind("invalid configuration (", 0) == 0) continue;
    c.errors.push_back({"", line});
  }
  if (c.errors.empty())
    c.errors.push_back({"", gwlbd + " --check-config refused the file (exit status " +
                                std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")"});
  return c;
}

}  // namespace gwlb::cli
