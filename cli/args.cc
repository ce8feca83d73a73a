#include "cli/args.h"

#include <algorithm>
#include <cctype>

#include "cli/table.h"
#include "cli/validate.h"
#include "control/config/config.h"

namespace gwlb::cli {

namespace {

const OptionSpec kOptGroup{"--group", "NAME", "only this server group"};
const OptionSpec kOptForce{"--force", "",
                           "do it even if a server group is left with no appliance in service"};
// The guard rail of the commands that take appliances out of service.
const std::string kNoServiceHelp =
    "A change that would leave a server group with no appliance in service (the\n"
    "others unhealthy, drained or weight 0) is refused with what would happen\n"
    "(new flows to appliances not in service, or dropped); exit status 2, nothing\n"
    "changes. --force does it anyway and prints the same as a warning. Flows are\n"
    "never moved to an appliance that is not in service.\n";

// The settings a reload cannot apply, from the list the reload itself
// compares (ctl::restartKeyNames), so the help names every one.
std::string restartSettingsHelp() {
  std::string out, line = "Settings that take effect only at the next restart are listed when they\nchanged:";
  const std::vector<std::string> names = ctl::restartKeyNames();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string word = " " + names[i] + (i + 1 < names.size() ? "," : ".");
    if (line.size() - line.rfind('\n') - 1 + word.size() > 78) {
      out += line + "\n";
      line = word.substr(1);
    } else {
      line += word;
    }
  }
  return out + line + "\nA new key written to the same secret file is such a change too.\n";
}

std::vector<CommandSpec> buildTable() {
  std::vector<CommandSpec> t;
  t.push_back({"status", "status", "", {}, 0, "daemon version, uptime, flows, workers and ports",
               "Shows what gwlbd runs: version, uptime, config file and when it was loaded,\n"
               "snapshot generation, flow table use, packet rates over the last second,\n"
               "every worker with its RX queues, its poll loops so far (LOOPS: stands still\n"
               "when the worker is stuck) and the longest gap between two of its loops since\n"
               "start and, in parentheses, over the last second (MAX GAP), and every port\n"
               "with its counters.\n",
               {}});
  t.push_back({"servers", "servers", "", {}, 0, "appliances with state, health, flows and traffic",
               "Lists every appliance: address, group, weight, state (active: receives new\n"
               "flows; idle: weight 0, keeps its flows; unresolved: no MAC yet, ARP/ND pending;\n"
               "initializing: health checks have no verdict yet; unhealthy: failed its\n"
               "checks; draining: removed or drained, its flows stay until the drain ends,\n"
               "with the time left in REASON/--json; drained: drain over, no new flows;\n"
               "removed: left the config, listed while flows still use it), when the state\n"
               "last changed, its health check state, how many\n"
               "results in a row of the last kind (3✓ = 3 successes, 2✗ = 2 failures), the\n"
               "last result, the failure and success windows (how long after the first\n"
               "failed / passed check it is declared unhealthy / healthy; a fault can start\n"
               "up to one interval before that check), active flows, and the packets and\n"
               "bytes the gateway\n"
               "sent to it. --wide adds why the state last changed, the MAC and the whole\n"
               "last result. With --watch, samples again every SECONDS and shows each\n"
               "appliance's rates from the last two samples: packets and bytes per second\n"
               "sent to it (SENT/S, SENT B/S) and returned from it toward the routers\n"
               "(RETURNED/S, RETURNED B/S); --count N stops after N refreshes. With --json\n"
               "and --watch, one JSON object per refresh: {\"interval_s\", \"rates\",\n"
               "\"servers\"}.\n",
               {kOptGroup, {"--wide", "", "also show REASON, MAC and the full last result"},
                {"--watch", "SECONDS", "refresh every SECONDS (0.1-86400) and show rates"},
                {"--count", "N", "with --watch: stop after N refreshes"}}});
  t.push_back({"health", "health", "ADDRESS", {"ADDRESS"}, 1,
               "an appliance's health check: settings, state, windows, history",
               "Shows the health check of one appliance: its group's check settings, the\n"
               "health state and since when, the consecutive results of the last kind, the\n"
               "failure and success windows, and the recent results and state changes,\n"
               "newest last. Exit status 1 when no appliance has that address.\n",
               {}});
  t.push_back({"health-destinations", "destinations", "[NAME]", {"NAME"}, 0,
               "aggregated health and region failover of each listener (alias: regions)",
               "Shows each health destination (a listener, or the implicit 'default' one\n"
               "when the config has none): whether it is HEALTHY or UNHEALTHY as the HTTP\n"
               "health endpoint answers it (200 / 503), which region (server group) new\n"
               "flows go to, since when and why, the failback hold and what happens when no\n"
               "region is healthy; then every region with its health, since when and what\n"
               "judges it: its composite health checks, or, for a group no acting composite\n"
               "covers, its own appliances; then every composite health check with its\n"
               "state and since when, and each of its health sources: group, policy,\n"
               "healthy/servers, what it needs and why. Dry-run composites are shown and\n"
               "marked; where they would change the answer, 'would be ... with dry run'\n"
               "says so. NAME: only that listener; exit status 1 when there is none of\n"
               "that name.\n",
               {},
               {"regions"}});
  t.push_back({"probe", "", "[ADDRESS]", {"ADDRESS"}, 0,
               "run one health probe now, from gwlbctl itself",
               "Runs one TCP, HTTP or HTTPS probe now, from this process (gwlbd is not\n"
               "asked and need not run), and prints the result on one line (with --json:\n"
               "{protocol, address, port, ok, reason, status, elapsed_us, detail}).\n"
               "With ADDRESS instead of --protocol/--address, gwlbctl asks gwlbd for that\n"
               "appliance's configured check and runs exactly that probe; probe options\n"
               "given as well override the configured ones.\n"
               "After 'probe', --timeout is the probe's timeout: milliseconds (1500) or\n"
               "with a unit (200ms, 2s), up to 600 s; the control socket timeout goes\n"
               "before the command (gwlbctl --timeout 2 probe ADDRESS).\n"
               "Exit status: 0 the probe succeeded, 1 it failed (or ADDRESS is unknown),\n"
               "2 bad usage or no answer from gwlbd.\n",
               {{"--protocol", "P", "tcp, http or https"},
                {"--address", "ADDR", "IPv4 or IPv6 address to probe"},
                {"--port", "N", "1-65535 (default 80; 443 for https)"},
                {"--path", "/P", "http(s): request path (default /)"},
                {"--domain", "NAME", "http(s): Host header and TLS SNI (default address:port)"},
                {"--timeout", "MS|2s", "whole probe: connect, TLS, response (default 5000 ms)"},
                {"--codes", "LIST", "http(s): success codes, e.g. http_2xx,302,200-299"},
                {"--source", "ADDR", "bind to this local address first"},
                {"--interface", "NAME", "leave by this interface only (gwlbd's data path: its tap)"},
                {"--verify", "", "https: verify the certificate (with --ca-file)"},
                {"--ca-file", "FILE", "https: CA bundle to verify against (implies --verify)"}}});
  t.push_back({"groups", "groups", "", {}, 0, "server groups and their settings",
               "Lists every server group: stickiness, Geneve format and IDs, Maglev table\n"
               "size, idle timeouts and how many of its appliances are in each state.\n",
               {}});
  t.push_back({"flows", "flows", "", {}, 0, "list or count flow table entries (filtered, paged)",
               "Lists flow table entries, at most --limit per request (default 100). When\n"
               "more remain, the last line gives the command for the next page; --all follows\n"
               "the pages to the end. --count counts the matching entries instead. Filters\n"
               "combine (all must match). SRC is the endpoint that sent the first packet.\n"
               "The listing never pauses the workers: entries created or removed meanwhile\n"
               "may or may not appear. --sort FIELD (age, idle, packets, src, dst or\n"
               "appliance; -FIELD or --reverse for descending) lists every matching entry\n"
               "(as --all) in that order: addresses numerically (IPv4 before IPv6), then\n"
               "ports.\n",
               {{"--server", "ADDR", "only flows sent to this appliance"},
                kOptGroup,
                {"--src", "CIDR", "source in this prefix (a bare address is a /32 or /128)"},
                {"--dst", "CIDR", "destination in this prefix"},
                {"--proto", "P", "tcp, udp, sctp, icmp, icmpv6 or a protocol number 0-255"},
                {"--port", "N", "either port equals N (0-65535)"},
                {"--limit", "N", "entries per request, 1-10000 (default 100)"},
                {"--cursor", "C", "continue a previous listing (its next cursor)"},
                {"--all", "", "follow the cursor until every entry is listed"},
                {"--count", "", "print how many entries match instead of listing them"},
                {"--sort", "FIELD", "age, idle, packets, src, dst or appliance (-FIELD: descending)"},
                {"--reverse", "", "with --sort: descending"}}});
  t.push_back({"explain", "explain", "SRC DST PROTO [SPORT DPORT] [--port N] [--vlan V]",
               {"SRC", "DST", "PROTO", "SPORT", "DPORT"}, 3,
               "which class and appliance a 5-tuple goes to, and why",
               "Shows how gwlbd handles a packet from SRC to DST. With traffic_classes,\n"
               "first the class it matches (first match wins) and why: the fields that\n"
               "matched, and for each earlier class the field that did not; or that no\n"
               "class matches (dropped as unclassified), or that the class bypasses or\n"
               "drops it. The classes look at the ingress port (--port, the DPDK port id)\n"
               "and the VLAN (--vlan, 0 = untagged, the default); without --port, classes\n"
               "that list ingress_ports are taken as not matching, and a note says so.\n"
               "Then its server group and stickiness, the canonical flow key and hash,\n"
               "whether the flow exists (then its appliance, cookie and age, and where it\n"
               "was before if it moved, and why; a flow keeps its listener and appliance\n"
               "when the classes change) and where the Maglev table would send a new flow\n"
               "now. PROTO is tcp, udp, sctp, icmp, icmpv6 or a number; give SPORT and\n"
               "DPORT for TCP, UDP, SCTP and UDP-Lite (136), the echo identifier as both\n"
               "for ICMP echo. Other protocols have no ports: gwlbd keys them on addresses\n"
               "and protocol, and ports given with them are refused.\n",
               {{"--port", "N", "ingress port (DPDK port id, 0-65535) the classes see"},
                {"--vlan", "V", "VLAN ID 0-4095 the classes see (0 = untagged, the default)"}}});
  t.push_back({"classes", "classes", "", {}, 0,
               "traffic classes in order: match, action, listener, packets, bytes",
               "Lists the traffic classes in their order (the first that matches a packet\n"
               "wins): index, name, what it matches, its action (inspect, bypass or drop),\n"
               "the listener an inspect class sends its flows to, and the packets and\n"
               "bytes (frames as received, both directions) it matched since its name\n"
               "appeared in the config: a class keeps its counts across reloads that move\n"
               "or change it, and a renamed one starts from zero. The last row, (none),\n"
               "counts the packets no class matched, dropped as unclassified. Without\n"
               "traffic_classes, says which listener takes every packet.\n",
               {}});
  t.push_back({"stats", "stats", "", {}, 0, "per-port and per-worker counters, drop reasons",
               "Prints the counters per worker and in total, the drop reasons with their\n"
               "count and meaning, and the port counters. Counters and drop reasons that\n"
               "are zero are hidden (the last line says how many); --all shows them (--json\n"
               "always has them all). With --watch, samples again every SECONDS and shows\n"
               "per-second rates computed from the last two samples; --count N stops after\n"
               "N refreshes (default: until interrupted). With --json and --watch, prints\n"
               "one JSON object per refresh: {\"interval_s\", \"rates\", \"stats\"}.\n",
               {{"--watch", "SECONDS", "refresh every SECONDS (0.1-86400) and show rates"},
                {"--count", "N", "with --watch: stop after N refreshes"},
                {"--all", "", "also show the counters and drop reasons that are zero"}}});
  t.push_back({"server add", "server.add", "GROUP ADDRESS", {"GROUP", "ADDRESS"}, 2,
               "add an appliance to a server group",
               "Adds the appliance to the running configuration and publishes a new\n"
               "snapshot. It is validated exactly as a config file: on error nothing changes.\n"
               "The change is not written to the config file: a reload or restart drops it.\n",
               {{"--weight", "N", "Maglev weight 0-10000 (default 100; 0 = idle)"},
                {"--mac", "MAC", "static MAC address (else node.gateway_mac, else ARP)"}}});
  t.push_back({"server remove", "server.remove", "ADDRESS", {"ADDRESS"}, 1,
               "remove an appliance (new flows stop going to it at once)",
               "Removes the appliance from the running configuration. New flows stop going\n"
               "to it at once. Existing flows follow the group's failover_mode and\n"
               "connection_draining (docs/config.md): with draining they stay until the\n"
               "drain timeout; then (or at once without draining) rebalance moves them to\n"
               "the remaining appliances on their next packet, no_rebalance keeps them on\n"
               "it. It stays listed (draining / removed) while flows use it. Removing a\n"
               "group's last appliance is refused. Exit status 1 when no appliance has\n"
               "that address.\n" + kNoServiceHelp,
               {kOptForce}});
  t.push_back({"server set", "server.set", "ADDRESS --weight N", {"ADDRESS"}, 1,
               "change an appliance's weight",
               "Changes the appliance's Maglev weight (0 = idle: keeps its existing flows,\n"
               "gets no new ones).\n" + kNoServiceHelp,
               {{"--weight", "N", "new weight 0-10000 (required)"}, kOptForce}});
  t.push_back({"server drain", "server.drain", "ADDRESS [--timeout SECONDS]", {"ADDRESS"}, 1,
               "drain an appliance without removing it",
               "Starts draining a configured appliance: new flows stop going to it at\n"
               "once, its existing flows stay until the timeout (default: its group's\n"
               "connection_draining.timeout) or until its last flow ends. Then rebalance\n"
               "moves the remaining flows on their next packet; no_rebalance keeps them.\n"
               "It stays drained (no new flows) until 'server undrain' or removal; the\n"
               "config line is not touched. Exit status 1 when no appliance has that\n"
               "address; 2 when it is already draining or drained.\n" + kNoServiceHelp,
               {{"--timeout", "SECONDS", "drain timeout 1-3600 s (default: the group's)"}, kOptForce}});
  t.push_back({"server undrain", "server.undrain", "ADDRESS", {"ADDRESS"}, 1,
               "end a drain: the appliance takes new flows again",
               "Ends an operator drain started by 'server drain': the appliance gets new\n"
               "flows again (flows already moved away stay where they are).\n",
               {}});
  t.push_back({"reload", "reload", "", {}, 0, "re-read the config file gwlbd was started with",
               "Re-reads and validates gwlbd's config file and publishes it. On error the\n"
               "running config stays and every error is printed.\n" + restartSettingsHelp() +
                   "The file is the source of truth: changes made with 'server add', 'server\n"
                   "remove' and 'server set' that the file does not carry are reverted, and each\n"
                   "one is listed (write them into the file first: 'gwlbctl config dump').\n"
                   "gwlbd answers once the reload is applied (the file is read and checked apart\n"
                   "from its control thread): this waits 60 s for it unless --timeout SECONDS\n"
                   "is given; past that, gwlbd answers a timeout error and the reload goes on.\n" +
                   kNoServiceHelp,
               {kOptForce}});
  t.push_back({"fleet show", "fleet", "", {}, 0,
               "this node in the fleet: routes announced or not and why, BIRD, peers",
               "Shows this gateway's fleet state (docs/fleet.md): its node name; whether its\n"
               "routes are announced (announced: BIRD has every protocol of\n"
               "fleet.bird.protocols up; announcing: gwlbd asked, BIRD not there yet;\n"
               "withdrawn), since when and why (not ready: ..., unhealthy: ..., left by\n"
               "operator, stopping); the grace period; BIRD's control socket, whether gwlbd\n"
               "is connected to it, and each protocol's state as BIRD reports it. Then the\n"
               "peers of flow state sync, when there are: address, reachable, last sync,\n"
               "flows received and sent, records refused for a bad secret (AUTH FAILURES),\n"
               "replayed or malformed. 'gwlbctl fleet' alone is 'fleet show'.\n",
               {}});
  t.push_back({"fleet leave", "fleet.leave", "", {}, 0,
               "withdraw this node's routes (maintenance); it keeps forwarding",
               "Withdraws this node's routes: gwlbd disables its BIRD protocols, the\n"
               "routers stop sending it new traffic (flows in progress move to other\n"
               "nodes), and it keeps forwarding whatever still arrives. It stays out until\n"
               "'fleet join' (a restart of gwlbd joins again). Exit status 2 when the\n"
               "config has no fleet.bird section.\n",
               {}});
  t.push_back({"fleet join", "fleet.join", "", {}, 0, "announce this node's routes again after 'fleet leave'",
               "Undoes 'fleet leave': the routes are announced again as soon as the node is\n"
               "ready (dataplane running, appliances in service, warm start done, a healthy\n"
               "destination).\n",
               {}});
  t.push_back({"capture stop", "capture.stop", "[DEVICE] [--queue Q]", {"DEVICE"}, 0,
               "detach packet captures (dpdk-dumpcap) by hand",
               "Detaches the packet captures attached to DEVICE (a data port's DPDK name, as\n"
               "'gwlbctl status' lists it; every port when omitted), on queue Q only with\n"
               "--queue: the workers stop copying its packets at once. For a capture tool\n"
               "that lives but no longer reads its ring (gwlbd detaches the captures of a\n"
               "tool that has died by itself, within a second or two). The tool gets no\n"
               "more packets and its own stop is then refused. Prints how many queue\n"
               "callbacks were detached (0 when none was attached). Exit status 1 when no\n"
               "port has that name or packet capture is off.\n",
               {{"--queue", "Q", "only this queue (0-65534)"}}});
  t.push_back({"config dump", "config", "", {}, 0,
               "print the running config as YAML gwlbd can load",
               "Prints the configuration gwlbd runs, as YAML that gwlbd and 'config check'\n"
               "load: the file it was started with (or last reloaded) plus the changes made\n"
               "since with 'server add', 'server remove' and 'server set', every key written\n"
               "with its value (defaults included). Those runtime changes last until the\n"
               "next reload or restart, which read the file again: to keep them, write this\n"
               "output to the config file. They are listed on stderr. A secret written in\n"
               "the config (fleet.secret, or node.flow_hash_secret as digits) is left out as\n"
               "a comment unless --secrets is given; a secret file's path is always shown.\n",
               {{"--secrets", "", "include secrets written in the config"}}});
  t.push_back({"config check", "", "FILE", {"FILE"}, 1,
               "validate a config file offline (no daemon needed)",
               "Loads and validates FILE exactly as gwlbd does, without asking the daemon.\n"
               "For the EAL memory it runs gwlbd's own check (`gwlbd --check-config FILE`,\n"
               "the gwlbd beside gwlbctl, else the first on PATH; without one, a warning\n"
               "says the memory was not checked). Prints every error as `key.path:\n"
               "message`. Exit status 0 when the file is valid, 2 when it is not (or\n"
               "cannot be read).\n",
               {}});
  t.push_back({"help", "", "[COMMAND]", {"COMMAND", "SUBCOMMAND"}, 0, "show help for gwlbctl or a command",
               "Shows the list of commands, or the help of one command.\n", {}});
  return t;
}

}  // namespace

const std::vector<CommandSpec>& commandTable() {
  static const std::vector<CommandSpec> kTable = buildTable();
  return kTable;
}

const std::vector<OptionSpec>& globalOptions() {
  static const std::vector<OptionSpec> kGlobal = {
      {"--socket", "PATH",
       std::string("control socket (default $GWLBCTL_SOCKET, else ") + kDefaultSocket + ")"},
      {"--timeout", "SECONDS", "connect and reply timeout, 0.1-3600 (default 5; reload: 60)"},
      {"--json", "", "print the daemon's result as JSON"},
      {"--help", "", "show help (also -h)"},
  };
  return kGlobal;
}

const CommandSpec* findCommand(const std::string& name) {
  for (const auto& c : commandTable()) {
    if (c.name == name) return &c;
  }
  for (const auto& c : commandTable()) {
    if (std::find(c.aliases.begin(), c.aliases.end(), name) != c.aliases.end()) return &c;
  }
  return nullptr;
}

bool isCommandGroup(const std::string& word) {
  return word == "server" || word == "config" || word == "fleet" || word == "capture";
}

namespace {

const OptionSpec* findOption(const std::vector<OptionSpec>& opts, const std::string& name) {
  for (const auto& o : opts) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

std::string subcommandsOf(const std::string& group) {
  std::string s;
  for (const auto& c : commandTable()) {
    if (c.name.rfind(group + " ", 0) == 0) {
      if (!s.empty()) s += ", ";
      s += c.name.substr(group.size() + 1);
    }
  }
  return s;
}

}  // namespace

Invocation parseArgs(const std::vector<std::string>& argv, const char* env_socket) {
  Invocation inv;
  if (env_socket != nullptr && *env_socket != '\0') inv.socket_path = env_socket;
  std::vector<std::string> words;  // command words and positionals, in order
  bool options_done = false;
  std::string cmd_name;            // as far as known
  auto current = [&]() -> std::string { return inv.command ? inv.command->name : cmd_name; };

  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      words.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    if (a == "-h") {
      inv.help = true;
      continue;
    }
    std::string name = a, value;
    bool inline_value = false;
    if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    // Options belong to the command named so far (words before this option);
    // a command's own option wins over a global one of the same name (probe --timeout).
    std::string so_far = words.empty() ? std::string() : words[0];
    if (words.size() >= 2 && isCommandGroup(words[0])) so_far = words[0] + " " + words[1];
    const CommandSpec* c = findCommand(so_far);
    const OptionSpec* spec = c != nullptr ? findOption(c->options, name) : nullptr;
    bool global = false;
    if (spec == nullptr) {
      spec = findOption(globalOptions(), name);
      global = spec != nullptr;
    }
    if (!global) {
      if (spec == nullptr) {
        std::string where = c != nullptr ? " for '" + c->name + "'" : "";
        throw UsageError("unknown option '" + name + "'" + where, c ? c->name : so_far);
      }
      cmd_name = c->name;
    }
    if (spec->value_name.empty()) {
      if (inline_value) throw UsageError("option " + name + " takes no value", current());
    } else if (!inline_value) {
      if (i + 1 >= argv.size())
        throw UsageError("option " + name + " needs a value (" + spec->value_name + ")", current());
      value = argv[++i];
    }
    if (!global) {
      if (inv.options.count(name)) throw UsageError("option " + name + " given twice", current());
      inv.options[name] = value;
    } else if (name == "--help") {
      inv.help = true;
    } else if (name == "--json") {
      inv.json = true;
    } else if (name == "--socket") {
      if (value.empty()) throw UsageError("--socket: empty path");
      inv.socket_path = value;
    } else if (name == "--timeout") {
      inv.timeout_s = parseSeconds("--timeout", value, 0.1, 3600.0);
      inv.timeout_set = true;
    } else {
      if (inv.options.count(name)) throw UsageError("option " + name + " given twice", current());
      inv.options[name] = value;
    }
  }

  if (words.empty()) {
    if (inv.help) return inv;
    throw UsageError("no command given");
  }
  size_t first_arg = 1;
  std::string name = words[0];
  if (name == "help") {
    inv.help = true;
    words.erase(words.begin());
    if (words.empty()) return inv;
    name = words[0];
  }
  if (name == "fleet" && words.size() < 2 && !inv.help) words.push_back("show");  // `gwlbctl fleet`
  if (isCommandGroup(name)) {
    if (words.size() < 2) {
      inv.group = name;
      if (inv.help) return inv;
      throw UsageError("'" + name + "' needs a subcommand: " + subcommandsOf(name), name);
    }
    name += " " + words[1];
    first_arg = 2;
  }
  inv.command = findCommand(name);
  if (inv.command == nullptr) {
    if (first_arg == 2) {
      throw UsageError("unknown subcommand '" + words[1] + "' (" + words[0] + " has: " +
                           subcommandsOf(words[0]) + ")",
                       words[0]);
    }
    throw UsageError("unknown command '" + name + "'");
  }
  if (inv.help) return inv;  // `gwlbctl help flows`, `gwlbctl flows --help`
  inv.args.assign(words.begin() + long(first_arg), words.end());
  const CommandSpec& c = *inv.command;
  if (inv.args.size() < c.min_args)
    throw UsageError("missing " + c.arg_names[inv.args.size()] + " (usage: gwlbctl " + c.name +
                         " " + c.args + ")",
                     c.name);
  if (inv.args.size() > c.arg_names.size())
    throw UsageError("unexpected argument '" + inv.args[c.arg_names.size()] + "'", c.name);
  return inv;
}

std::string topLevelHelp() {
  std::string s =
      "usage: gwlbctl [--socket PATH] [--timeout SECONDS] [--json] COMMAND [ARGS...]\n"
      "       gwlbctl --version\n"
      "\n"
      "Inspects and changes a running gwlbd over its control socket.\n"
      "\n"
      "commands:\n";
  Table t({{"", Align::kLeft}, {"", Align::kLeft}});
  for (const auto& c : commandTable()) {
    t.addRow({"  " + c.name + (c.args.empty() ? "" : " " + c.args), c.summary});
  }
  std::string table = t.render();
  s += table.substr(table.find('\n') + 1);  // drop the empty header line
  s += "\nglobal options (any command):\n";
  Table g({{"", Align::kLeft}, {"", Align::kLeft}});
  for (const auto& o : globalOptions()) {
    g.addRow({"  " + o.name + (o.value_name.empty() ? "" : " " + o.value_name), o.help});
  }
  table = g.render();
  s += table.substr(table.find('\n') + 1);
  s +=
      "\nexit status: 0 ok, 1 not found (server, group, flow or destination) or the\n"
      "probe failed, 2 error (bad usage, cannot connect, daemon error).\n"
      "Run 'gwlbctl COMMAND --help' for a command's options.\n";
  return s;
}

std::string groupHelp(const std::string& group) {
  std::string s = "usage: gwlbctl " + group + " SUBCOMMAND [ARGS...]\n\nsubcommands:\n";
  Table t({{"", Align::kLeft}, {"", Align::kLeft}});
  for (const auto& c : commandTable()) {
    if (c.name.rfind(group + " ", 0) == 0)
      t.addRow({"  " + c.name + (c.args.empty() ? "" : " " + c.args), c.summary});
  }
  std::string table = t.render();
  s += table.substr(table.find('\n') + 1);
  s += "\nRun 'gwlbctl " + group + " SUBCOMMAND --help' for its options.\n";
  return s;
}

std::string commandHelp(const CommandSpec& cmd) {
  std::string s = "usage: gwlbctl " + cmd.name;
  if (!cmd.args.empty()) s += " " + cmd.args;
  if (!cmd.options.empty()) s += " [OPTIONS]";
  std::string summary = cmd.summary;
  if (!summary.empty()) summary[0] = char(std::toupper(static_cast<unsigned char>(summary[0])));
  for (const auto& a : cmd.aliases)
    s += "\n   or: gwlbctl " + a + (cmd.args.empty() ? "" : " " + cmd.args);
  s += "\n\n" + summary + ".\n\n" + cmd.description;
  auto list = [&](const std::vector<OptionSpec>& opts) {
    Table t({{"", Align::kLeft}, {"", Align::kLeft}});
    for (const auto& o : opts)
      t.addRow({"  " + o.name + (o.value_name.empty() ? "" : " " + o.value_name), o.help});
    std::string table = t.render();
    return table.substr(table.find('\n') + 1);
  };
  if (!cmd.options.empty()) s += "\noptions:\n" + list(cmd.options);
  std::vector<OptionSpec> global = globalOptions();
  for (auto& g : global) {  // shadowed by the command's own option after its name
    if (findOption(cmd.options, g.name) != nullptr) g.help += " (before '" + cmd.name + "')";
  }
  s += "\nglobal options:\n" + list(global);
  return s;
}

}  // namespace gwlb::cli
