#include "runtime/fault_injection.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "os/fault_seam.h"
#include "os/process.h"

namespace pw {
namespace {

constexpr char kFormat[] =
    "want kill:rank=R,step=N[,at=step|checkpoint|manifest], kill-job:… or disk-full:rank=R,step=N "
    "(docs/reliability.md, \"Faults\")";

Status Malformed(const std::string& spec, const std::string& why) {
  return Status::InvalidArgument("PIPEWRIGHT_FAULT='" + spec + "': " + why + "; " + kFormat);
}

bool ParseInt(const std::string& text, long long& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtoll(text.c_str(), &end, 10);
  return end != nullptr && *end == '\0' && out >= 0;
}

}  // namespace

Status MaybeInjectFault(const EnvGetter& env, std::string_view site, int rank, int64_t completed_steps) {
  const std::optional<std::string> spec = env("PIPEWRIGHT_FAULT");
  if (!spec || spec->empty()) return Status::Ok();
  const size_t colon = spec->find(':');
  const std::string action = spec->substr(0, colon);
  if (action != "kill" && action != "kill-job" && action != "disk-full") {
    return Malformed(*spec, "unknown action '" + action + "'");
  }
  if (colon == std::string::npos) return Malformed(*spec, "no rank and step");
  long long want_rank = -1, want_step = -1;
  std::string at = "step";
  std::string rest = spec->substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "rank" && ParseInt(value, want_rank)) continue;
    if (key == "step" && ParseInt(value, want_step)) continue;
    if (key == "at" && (value == "step" || value == "checkpoint" || value == "manifest")) {
      at = value;
      continue;
    }
    return Malformed(*spec, "bad item '" + item + "'");
  }
  if (want_rank < 0 || want_step < 0) return Malformed(*spec, "rank and step are required");
  if (action == "disk-full" && at != "step") return Malformed(*spec, "a disk fills up after a step (no at=)");
  // First attempt only: a restart by `train --max-restarts` or by torchrun.
  for (const char* name : {"PIPEWRIGHT_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT"}) {
    long long restart = 0;
    const std::optional<std::string> restarts = env(name);
    if (restarts && ParseInt(*restarts, restart) && restart > 0) return Status::Ok();
  }
  if (site != at || rank != want_rank || completed_steps != want_step) return Status::Ok();
  if (action == "disk-full") {
    std::fprintf(stderr, "PIPEWRIGHT_FAULT: rank %d's disk is full from step %lld on (test fault injection)\n",
                 rank, static_cast<long long>(completed_steps));
    std::fflush(stderr);
    FakeDiskFull();  // its next checkpoint write fails as on a full disk
    return Status::Ok();
  }
  std::fprintf(stderr, "PIPEWRIGHT_FAULT: rank %d kills %s at %s of step %lld (test fault injection)\n", rank,
               action == "kill" ? "itself" : "the whole job", at.c_str(), static_cast<long long>(completed_steps));
  std::fflush(stderr);
  if (action == "kill-job") KillParentAndSelf();
  KillSelf();
}

}  // namespace pw
