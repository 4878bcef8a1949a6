#include "os/signals.h"

#include <signal.h>

#include <cstring>

namespace pw {

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  if (abbrev == nullptr) return "signal " + std::to_string(signal);
  return std::string("SIG") + abbrev;
}

std::string SignalDescription(int signal) {
  const char* description = sigdescr_np(signal);
  return description != nullptr ? description : "";
}

bool SignalProcessGroup(pid_t leader, int signal) {
  if (leader <= 0) return false;
  return kill(-leader, signal) == 0 || kill(leader, signal) == 0;
}

bool SignalProcessGroupOnly(pid_t group, int signal) { return group > 0 && ::kill(-group, signal) == 0; }

}  // namespace pw
