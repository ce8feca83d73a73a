// gwlbctl command line: the command table (names, arguments, options, help
// text) and a parser that turns argv into an Invocation. Pure code: no I/O.
// parseArgs() throws UsageError for anything the user typed wrong.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gwlb::cli {

inline constexpr const char* kDefaultSocket = "/run/gwlbd/gwlbd.sock";
inline constexpr double kDefaultTimeoutS = 5.0;
// `reload` waits for gwlbd to read, check and apply the file: by default as
// long as gwlbd waits for it (its `timeout_s` default), and a margin.
inline constexpr double kReloadTimeoutS = 60.0;

// Exit statuses (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitNotFound = 1;
inline constexpr int kExitError = 2;

// A mistake on the command line. `command` names the command whose --help
// would explain it ("" for the top level).
class UsageError : public std::runtime_error {
 public:
  UsageError(const std::string& msg, std::string command = {})
      : std::runtime_error(msg), command_(std::move(command)) {}
  const std::string& command() const { return command_; }

 private:
  std::string command_;
};

struct OptionSpec {
  std::string name;        // "--group"
  std::string value_name;  // "NAME"; empty for a flag
  std::string help;
};

struct CommandSpec {
  std::string name;        // "flows", "server add"
  std::string method;      // control API method; "" when no daemon is asked
  std::string args;        // positional synopsis, e.g. "SRC DST PROTO [SPORT DPORT]"
  std::vector<std::string> arg_names;  // e.g. {"SRC", "DST", "PROTO", "SPORT", "DPORT"}
  size_t min_args = 0;
  std::string summary;     // one line for `gwlbctl help`
  std::string description; // paragraphs for `gwlbctl CMD --help`
  std::vector<OptionSpec> options;
  std::vector<std::string> aliases;    // other names for the same command ("regions")
};

// Every command, in help order. Groups ("server", "config") are not listed:
// their subcommands are ("server add", ...).
const std::vector<CommandSpec>& commandTable();
// Options every command accepts (--socket, --timeout, --json, --help).
const std::vector<OptionSpec>& globalOptions();
// By name or alias.
const CommandSpec* findCommand(const std::string& name);
bool isCommandGroup(const std::string& word);  // "server", "config"

struct Invocation {
  const CommandSpec* command = nullptr;  // nullptr: top-level help
  std::string group;                     // "server" for `gwlbctl server --help`
  bool help = false;                     // --help / -h / `help CMD`
  std::vector<std::string> args;         // positionals
  std::map<std::string, std::string> options;  // "--group" -> "NAME"; flags -> ""
  std::string socket_path = kDefaultSocket;
  double timeout_s = kDefaultTimeoutS;
  bool timeout_set = false;  // --timeout given
  bool json = false;

  bool has(const std::string& opt) const { return options.count(opt) != 0; }
  std::string opt(const std::string& o) const {
    auto it = options.find(o);
    return it == options.end() ? std::string() : it->second;
  }
};

// `env_socket` is $GWLBCTL_SOCKET (nullptr or "" when unset); --socket wins.
// Options may come before or after positionals, as `--opt VALUE` or `--opt=VALUE`;
// `--` ends options. Throws UsageError.
Invocation parseArgs(const std::vector<std::string>& argv, const char* env_socket);

// Help texts (end with a newline).
std::string topLevelHelp();
std::string groupHelp(const std::string& group);
std::string commandHelp(const CommandSpec& cmd);

}  // namespace gwlb::cli
