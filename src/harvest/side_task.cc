// Side-task specs ("pagerank:scale=16@rank=0"), the built-in registry and
// the fault-injection wrapper every built-in accepts (fail_after,
// crash_after, alloc) so tests can show that failures stay contained.
#include "harvest/side_task.h"

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <thread>

#include "core/text.h"
#include "core/units.h"
#include "harvest/builtin_tasks.h"

namespace pw {
namespace {

std::vector<BuiltinSideTaskInfo> Infos() {
  return {CnnTaskInfo(), ImageTaskInfo(), InferTaskInfo(), PageRankTaskInfo()};
}

std::string JoinNames() {
  std::string out;
  for (const std::string& n : BuiltinSideTaskNames()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

bool ParseInt64(std::string_view text, int64_t& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Wraps a built-in with the testing options. Each fault happens at a
// chosen step so a test can first see the task make progress.
class FaultInjectingTask : public SideTask {
 public:
  FaultInjectingTask(std::unique_ptr<SideTask> inner, int64_t fail_after, int64_t crash_after, int64_t hang_after,
                     int64_t spin_after, int64_t alloc, int64_t alloc_after)
      : inner_(std::move(inner)), fail_after_(fail_after), crash_after_(crash_after), hang_after_(hang_after),
        spin_after_(spin_after), alloc_(alloc), alloc_after_(alloc_after) {}
  std::string name() const override { return inner_->name(); }
  Status Setup() override { return inner_->Setup(); }
  Result<double> Step() override {
    PW_RETURN_IF_ERROR(BeforeStep());
    return inner_->Step();
  }
  int StepParts() const override { return inner_->StepParts(); }
  Result<double> StepPart(int parts) override {
    PW_RETURN_IF_ERROR(BeforeStep());
    return inner_->StepPart(parts);
  }
  void Pause() override { inner_->Pause(); }
  void Resume() override { inner_->Resume(); }
  bool Done() const override { return inner_->Done(); }
  Status Finish() override { return inner_->Finish(); }
  std::string unit() const override { return inner_->unit(); }
  std::vector<std::pair<std::string, double>> Metrics() const override { return inner_->Metrics(); }

 private:
  // The injected fault of call N+1 (a step or part of one), if any.
  Status BeforeStep() {
    if (fail_after_ >= 0 && steps_ >= fail_after_) {
      return Status::Internal(name() + ": injected failure at step " + std::to_string(steps_ + 1) +
                              " (fail_after=" + std::to_string(fail_after_) + ")");
    }
    if (crash_after_ >= 0 && steps_ >= crash_after_) std::abort();
    while (hang_after_ >= 0 && steps_ >= hang_after_) std::this_thread::sleep_for(std::chrono::hours(1));
    // A step that burns CPU forever: it ignores every pause.
    for (volatile uint64_t spin = 0; spin_after_ >= 0 && steps_ >= spin_after_;) spin = spin + 1;
    if (alloc_ > 0 && !allocated_ && steps_ >= alloc_after_) {
      allocated_ = true;
      // Throws std::bad_alloc beyond RLIMIT_AS; touching every page makes
      // the memory real when there is no limit.
      hog_.reset(new char[static_cast<size_t>(alloc_)]);
      for (int64_t i = 0; i < alloc_; i += 4096) hog_[i] = static_cast<char>(i);
    }
    ++steps_;
    return Status::Ok();
  }

  std::unique_ptr<SideTask> inner_;
  int64_t fail_after_, crash_after_, hang_after_, spin_after_, alloc_, alloc_after_;
  int64_t steps_ = 0;
  bool allocated_ = false;
  std::unique_ptr<char[]> hog_;
};

}  // namespace

const char* SideTaskStateName(SideTaskState state) {
  switch (state) {
    case SideTaskState::kSubmitted: return "SUBMITTED";
    case SideTaskState::kCreated: return "CREATED";
    case SideTaskState::kPaused: return "PAUSED";
    case SideTaskState::kRunning: return "RUNNING";
    case SideTaskState::kFinished: return "FINISHED";
    case SideTaskState::kStopped: return "STOPPED";
  }
  return "UNKNOWN";
}

std::vector<std::string> BuiltinSideTaskNames() {
  std::vector<std::string> names;
  for (const BuiltinSideTaskInfo& info : Infos()) names.push_back(info.name);
  return names;
}

std::vector<BuiltinSideTaskInfo> BuiltinSideTaskInfos() { return Infos(); }

Result<TaskOptions> TaskOptions::Parse(const BuiltinSideTaskInfo& info, const std::vector<std::string>& args) {
  TaskOptions o;
  o.task_ = info.name;
  std::string valid;
  for (const SideTaskOptionInfo& opt : info.options) {
    o.values_[opt.name] = opt.default_value;
    valid += (valid.empty() ? "" : ", ") + opt.name;
  }
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("side task " + info.name + ": option '" + arg +
                                     "' is not key=value; options: " + valid);
    }
    const std::string key = arg.substr(0, eq);
    if (!o.values_.count(key)) {
      std::string hint;
      for (const SideTaskOptionInfo& opt : info.options) {
        if (EditDistance(key, opt.name) <= 2) hint = " (did you mean '" + opt.name + "'?)";
      }
      return Status::InvalidArgument("side task " + info.name + ": unknown option '" + key + "'" + hint +
                                     "; options: " + valid);
    }
    o.values_[key] = arg.substr(eq + 1);
    o.given_[key] = true;
  }
  return o;
}

Result<int64_t> TaskOptions::Int(const std::string& key, int64_t min, int64_t max) const {
  const std::string& text = values_.at(key);
  int64_t v = 0;
  if (!ParseInt64(text, v) || v < min || v > max) {
    return Status::InvalidArgument("side task " + task_ + ": option " + key + "=" + text +
                                   " must be an integer in [" + std::to_string(min) + ", " +
                                   std::to_string(max) + "]");
  }
  return v;
}

Result<double> TaskOptions::Double(const std::string& key, double min, double max) const {
  const std::string& text = values_.at(key);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v >= min && v <= max)) {
    return Status::InvalidArgument("side task " + task_ + ": option " + key + "=" + text +
                                   " must be a number in [" + std::to_string(min) + ", " +
                                   std::to_string(max) + "]");
  }
  return v;
}

std::string TaskOptions::String(const std::string& key) const { return values_.at(key); }

Result<std::unique_ptr<SideTask>> MakeBuiltinSideTask(const SideTaskSpec& spec) {
  // The fault-injection options are common to every built-in.
  int64_t fail_after = -1, crash_after = -1, hang_after = -1, spin_after = -1, alloc = 0, alloc_after = 0;
  std::vector<std::string> own;
  for (const std::string& arg : spec.args) {
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq), value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (key == "fail_after" || key == "crash_after" || key == "hang_after" || key == "spin_after" ||
        key == "alloc_after") {
      int64_t v = 0;
      if (!ParseInt64(value, v) || v < 0) {
        return Status::InvalidArgument("side task " + spec.name + ": option " + arg +
                                       " must be a non-negative step count");
      }
      (key == "fail_after"    ? fail_after
       : key == "crash_after" ? crash_after
       : key == "hang_after"  ? hang_after
       : key == "spin_after"  ? spin_after
                              : alloc_after) = v;
    } else if (key == "alloc") {
      Result<double> bytes = ParseByteSize(value);
      if (!bytes.ok() || *bytes < 1 || *bytes > 9e18) {
        return Status::InvalidArgument("side task " + spec.name + ": option " + arg +
                                       " must be a byte count such as 512MiB or 8GiB");
      }
      alloc = static_cast<int64_t>(*bytes);
    } else {
      own.push_back(arg);
    }
  }
  for (const BuiltinSideTaskInfo& info : Infos()) {
    if (info.name != spec.name) continue;
    PW_ASSIGN_OR_RETURN(TaskOptions options, TaskOptions::Parse(info, own));
    Result<std::unique_ptr<SideTask>> task = info.name == "cnn"        ? MakeCnnTask(options)
                                             : info.name == "pagerank" ? MakePageRankTask(options)
                                             : info.name == "infer"    ? MakeInferTask(options)
                                                                       : MakeImageTask(options);
    if (!task.ok()) return task.status();
    if (fail_after < 0 && crash_after < 0 && hang_after < 0 && spin_after < 0 && alloc == 0) return task;
    return std::unique_ptr<SideTask>(std::make_unique<FaultInjectingTask>(
        std::move(task).value(), fail_after, crash_after, hang_after, spin_after, alloc, alloc_after));
  }
  std::string hint;
  for (const std::string& n : BuiltinSideTaskNames()) {
    if (EditDistance(spec.name, n) <= 2) hint = " (did you mean '" + n + "'?)";
  }
  return Status::InvalidArgument("unknown side task '" + spec.name + "'" + hint + "; built-ins: " + JoinNames() +
                                 " (any other program: --side-task-cmd \"COMMAND\")");
}

namespace {

// Takes the trailing "@rank=N" and "@mem=SIZE" suffixes off `text` into
// `spec`; stops at the first '@' part that is neither.
Status TakePlacementSuffixes(std::string& text, SideTaskSpec& spec, const std::string& where) {
  while (true) {
    const size_t at = text.rfind('@');
    if (at == std::string::npos) return Status::Ok();
    const std::string tail = text.substr(at + 1);
    if (tail.rfind("rank=", 0) == 0) {
      int64_t rank = -1;
      if (!ParseInt64(std::string_view(tail).substr(5), rank) || rank < 0 || rank > std::numeric_limits<int>::max()) {
        return Status::InvalidArgument(where + "bad placement '@" + tail +
                                       "'; expected @rank=N with N a rank number, e.g. cnn@rank=1");
      }
      spec.pinned_rank = static_cast<int>(rank);
    } else if (tail.rfind("mem=", 0) == 0) {
      Result<double> bytes = ParseByteSize(tail.substr(4));
      if (!bytes.ok() || *bytes < (1 << 20) || *bytes > 9e18) {
        return Status::InvalidArgument(where + "bad memory limit '@" + tail +
                                       "'; expected @mem=SIZE of at least 1MiB, e.g. @mem=3GiB");
      }
      spec.memory_limit_bytes = static_cast<int64_t>(*bytes);
    } else if (tail.rfind("step=", 0) == 0) {
      std::string value = tail.substr(5);
      if (value.size() > 2 && value.compare(value.size() - 2, 2, "ms") == 0) value.resize(value.size() - 2);
      char* end = nullptr;
      const double ms = value.empty() ? 0 : std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(ms > 0 && ms <= 3.6e6)) {
        return Status::InvalidArgument(where + "bad step time '@" + tail +
                                       "'; expected @step=MS, milliseconds > 0, e.g. @step=15ms");
      }
      spec.step_ms = ms;
    } else {
      return Status::Ok();
    }
    text.resize(at);
  }
}

}  // namespace

Result<SideTaskSpec> ParseSideTaskSpec(const std::string& text) {
  const std::string where = "side task '" + text + "': ";
  SideTaskSpec spec;
  std::string head(TrimSpaces(text));
  PW_RETURN_IF_ERROR(TakePlacementSuffixes(head, spec, where));
  const size_t at = head.find('@');
  if (at != std::string::npos) {
    return Status::InvalidArgument(where + "bad placement '@" + head.substr(at + 1) +
                                   "'; expected @rank=N, @mem=SIZE or @step=MS, e.g. cnn@rank=1");
  }
  const size_t colon = head.find(':');
  spec.name = head.substr(0, colon);
  if (spec.name.empty()) {
    return Status::InvalidArgument(where + "missing the task name; built-ins: " + JoinNames());
  }
  if (colon != std::string::npos) {
    const std::string opts = head.substr(colon + 1);
    size_t start = 0;
    while (true) {
      const size_t comma = opts.find(',', start);
      const std::string part = opts.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const size_t eq = part.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == part.size()) {
        return Status::InvalidArgument(where + "bad option '" + part +
                                       "'; options are key=value separated by commas, e.g. pagerank:scale=16,iters=20");
      }
      spec.args.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  // Validates the name, the option names and their values now, so a typo
  // fails on the command line rather than inside a rank.
  Result<std::unique_ptr<SideTask>> task = MakeBuiltinSideTask(spec);
  if (!task.ok()) return Status::InvalidArgument(where + task.status().message());
  return spec;
}

Result<SideTaskSpec> ParseSideTaskCommand(const std::string& text) {
  SideTaskSpec spec;
  spec.name = "cmd";
  spec.command = text;
  PW_RETURN_IF_ERROR(TakePlacementSuffixes(spec.command, spec, "--side-task-cmd '" + text + "': "));
  if (spec.command.find_first_not_of(" \t") == std::string::npos) {
    return Status::InvalidArgument("--side-task-cmd '" + text + "': empty command");
  }
  return spec;
}

bool IsCommandTask(const SideTaskSpec& spec) { return spec.name == "cmd" || !spec.command.empty(); }

std::string FormatSideTaskSpec(const SideTaskSpec& spec) {
  std::string out = spec.name;
  for (size_t i = 0; i < spec.args.size(); ++i) out += (i == 0 ? ":" : ",") + spec.args[i];
  return out;
}

}  // namespace pw
