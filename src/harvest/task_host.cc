// The side-task host process body (harvest/task_host.h): Setup, one
// calibration step, then a control loop over the rank's socket that runs
// bounded steps only while resumed and within the budget.
#include "harvest/task_host.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>

#include <ATen/Parallel.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <opencv2/core.hpp>

#include "core/units.h"
#include "os/poll.h"
#include "os/process.h"
#include "os/socket.h"

namespace pw {

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {
// CPU time of the calling thread (the host's only thread runs the steps).
int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

void SetMessageText(HostMessage& m, const std::string& text) {
  const size_t n = std::min(text.size(), sizeof(m.text) - 1);
  std::memcpy(m.text, text.data(), n);
  m.text[n] = '\0';
}

std::vector<std::string> SideTaskHostArgv(const SideTaskHostArgs& args) {
  char margin[32];
  std::snprintf(margin, sizeof(margin), "%.17g", args.margin);
  return {"side-task", "host", "--spec", args.spec, "--control-fd", std::to_string(args.control_fd), "--margin",
          margin};
}

Result<SideTaskHostArgs> ParseSideTaskHostArgv(const std::vector<std::string>& argv) {
  const std::string usage = "usage: side-task host --spec TEXT --control-fd N --margin X";
  if (argv.size() < 2 || argv[0] != "side-task" || argv[1] != "host") return Status::InvalidArgument(usage);
  SideTaskHostArgs args;
  bool have_spec = false;
  for (size_t i = 2; i < argv.size(); i += 2) {
    if (i + 1 >= argv.size()) return Status::InvalidArgument(argv[i] + " needs a value; " + usage);
    const std::string& key = argv[i];
    const std::string& value = argv[i + 1];
    char* end = nullptr;
    if (key == "--spec") {
      args.spec = value, have_spec = true;
    } else if (key == "--control-fd") {
      const long fd = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || fd < 0 || fd > 1 << 20) {
        return Status::InvalidArgument("--control-fd " + value + ": not a file descriptor; " + usage);
      }
      args.control_fd = static_cast<int>(fd);
    } else if (key == "--margin") {
      args.margin = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(args.margin >= 0 && args.margin < 1e6)) {
        return Status::InvalidArgument("--margin " + value + ": not a non-negative number; " + usage);
      }
    } else {
      return Status::InvalidArgument("unknown argument " + key + "; " + usage);
    }
  }
  if (!have_spec) return Status::InvalidArgument("--spec is required; " + usage);
  return args;
}

namespace {

// LibTorch's CPU allocator reports a failed allocation as a plain
// c10::Error, which only its text would tell apart from any other error.
// This allocator makes the failure typed at its source: whatever the
// allocator it wraps throws from allocate() is an allocation failure by
// definition, so it becomes std::bad_alloc. Memory is the wrapped
// allocator's: its DataPtr (and so its deleter) is returned as it is.
class TypedOutOfMemoryAllocator final : public c10::Allocator {
 public:
  explicit TypedOutOfMemoryAllocator(c10::Allocator* wrapped) : wrapped_(wrapped) {}
  c10::DataPtr allocate(size_t nbytes) const override {
    try {
      return wrapped_->allocate(nbytes);
    } catch (...) {
      throw std::bad_alloc();
    }
  }
  c10::DeleterFnPtr raw_deleter() const override { return wrapped_->raw_deleter(); }

 private:
  c10::Allocator* wrapped_;
};

// Wraps LibTorch's current CPU allocator unless it is wrapped already. At
// priority 1, the project's own allocators' (runtime/allocator_stats.h,
// infer/reusing_allocator.h): a task that installs its own in Setup still
// gets it, and the host wraps that one after Setup. Called on the host's
// main thread only; the wrappers are never destroyed (tensors may outlive
// every scope that could own them).
void TypeAllocationFailures() {
  c10::Allocator* current = c10::GetCPUAllocator();
  if (dynamic_cast<TypedOutOfMemoryAllocator*>(current) != nullptr) return;
  c10::SetCPUAllocator(new TypedOutOfMemoryAllocator(current), /*priority=*/1);
}

std::string OutOfMemoryText() {
  rlimit limit{};
  getrlimit(RLIMIT_AS, &limit);
  if (limit.rlim_cur == RLIM_INFINITY) return "out of memory (no address-space limit set)";
  return "out of memory: limit " + std::to_string(static_cast<unsigned long long>(limit.rlim_cur)) + " bytes (" +
         FormatBytes(static_cast<double>(limit.rlim_cur)) + ")";
}

constexpr int kCalibrationSteps = 2;

class Host {
 public:
  explicit Host(const SideTaskHostArgs& args) : fd_(args.control_fd), margin_(args.margin) {}

  int Run(const std::string& spec_text) {
    Result<SideTaskSpec> spec = ParseSideTaskSpec(spec_text);
    if (!spec.ok()) return Fail(HostFailure::kSetup, spec.status().message());
    Result<std::unique_ptr<SideTask>> made = MakeBuiltinSideTask(*spec);
    if (!made.ok()) return Fail(HostFailure::kSetup, made.status().message());
    task_ = std::move(made).value();
    parts_ = std::max(1, task_->StepParts());
    where_ = "in Setup";
    if (Status s = task_->Setup(); !s.ok()) {
      return Fail(HostFailure::kSetup, task_->name() + " Setup failed: " + s.message());
    }
    TypeAllocationFailures();  // Setup may have installed an allocator of its own
    // Two calibration steps, so the first budget check has a step time; the
    // first (allocations, caches) is usually slower than the rest, so the
    // estimate starts from the second.
    for (int i = 0; i < kCalibrationSteps && !task_->Done(); ++i) {
      if (i == kCalibrationSteps - 1) ewma_ns_ = 0;
      if (int code = DoStep(); code != 0) return code;
    }
    if (!Send(MakeMessage(HostMessageType::kReady, task_->unit()), /*droppable=*/false)) return 0;
    return Loop();
  }

  // Sends FAILED with `kind` and `why`; returns the exit code for `kind`.
  // The rank turns it into STOPPED.
  int Fail(HostFailure kind, const std::string& why) {
    HostMessage m = MakeMessage(HostMessageType::kFailed, why);
    m.failure = kind;
    Send(m, /*droppable=*/false);
    return static_cast<int>(kind);
  }
  const std::string& where() const { return where_; }

 private:
  HostMessage MakeMessage(HostMessageType type, const std::string& text = "") {
    HostMessage m;
    m.type = type;
    m.time_ns = MonotonicNs();
    m.steps = steps_;
    m.partial_steps = partial_steps_;
    m.work = work_;
    m.run_seconds = static_cast<double>(step_ns_total_) * 1e-9;
    m.step_us = ewma_ns_ * 1e-3;
    SetMessageText(m, text);
    return m;
  }

  // False when the rank's end is gone.
  bool Send(const HostMessage& m, bool droppable) {
    const MessageSent sent = SendMessage(fd_, &m, sizeof(m), /*block=*/!droppable);
    return sent == MessageSent::kSent || (droppable && sent == MessageSent::kWouldBlock);
  }

  // Runs `parts` parts of the task's step: the whole step when none of it
  // has run and `parts` is all of it, else StepPart. 0 is a whole step too.
  int DoStep(int parts = 0) {
    const bool whole = parts == 0 || (part_ == 0 && parts == parts_);
    where_ = (whole ? "at step " : "at a part of step ") + std::to_string(steps_ + 1);
    const int64_t t0 = MonotonicNs();
    const int64_t cpu0 = ThreadCpuNs();
    Result<double> work = whole ? task_->Step() : task_->StepPart(parts);
    const int64_t dt = MonotonicNs() - t0;
    const double cpu = static_cast<double>(ThreadCpuNs() - cpu0);
    if (!work.ok()) return Fail(HostFailure::kStep, task_->name() + " failed " + where_ + ": " + work.status().message());
    ++steps_;
    work_ += *work;
    step_ns_total_ += dt;
    // The step's cost is its CPU time, not its wall time: at SCHED_IDLE a
    // step that the rank preempts takes longer on the clock, and a wall-time
    // average would inflate until no step fits a bubble and the task stalls
    // (nothing would then bring the average back down). Inside a bubble the
    // task has the core, so CPU time is what the next step will take there.
    auto learn = [](double& ewma, double x) { ewma = ewma == 0 ? x : 0.8 * ewma + 0.2 * x; };
    if (whole) {
      learn(ewma_ns_, cpu);
    } else {
      ++partial_steps_;
      part_ = (part_ + parts) % parts_;
      learn(part_ewma_ns_, cpu / parts);
    }
    return 0;
  }

  // How many parts of a step fit the time left in the bubble: all of a
  // step when it fits whole (or there is no deadline), else as many parts
  // as fit, each costed at the measured part time; 0 when nothing fits.
  // Before any part was timed, a part is costed at its share of a whole
  // step (parts cost more each: the first one run corrects it).
  int PartsThatFit() const {
    if (!running_ || finished_) return 0;
    const int left = parts_ - part_;
    if (deadline_ns_ == 0) return left;
    const double time_left = static_cast<double>(deadline_ns_ - MonotonicNs());
    if (part_ == 0 && time_left > margin_ * ewma_ns_) return left;
    if (parts_ == 1) return 0;
    const double part_ns = part_ewma_ns_ > 0 ? part_ewma_ns_ : ewma_ns_ / parts_;
    if (!(part_ns > 0)) return 0;
    const double fit = std::floor(time_left / (margin_ * part_ns));
    // A whole step runs only through the branch above, costed as a whole.
    const int most = part_ == 0 ? parts_ - 1 : left;
    return fit < 1 ? 0 : static_cast<int>(std::min<double>(fit, most));
  }

  // Handles every queued message. Returns -1 to continue, or an exit code.
  int Drain(int timeout_ms) {
    if (!WaitReadable(fd_, timeout_ms)) return -1;  // timeout or EINTR
    while (true) {
      HostMessage m;
      const MessageReceived got = ReceiveMessage(fd_, &m, sizeof(m));
      if (got == MessageReceived::kClosed) return 0;  // the rank closed its end (it exited or stopped us)
      if (got == MessageReceived::kNone) return -1;
      if (got == MessageReceived::kOtherSize) continue;  // not ours; ignore
      switch (m.type) {
        case HostMessageType::kResume:
          if (!running_ && !finished_) task_->Resume();
          running_ = !finished_;
          deadline_ns_ = m.budget_us > 0 ? m.time_ns + static_cast<int64_t>(m.budget_us * 1e3) : 0;
          if (!Send(MakeMessage(HostMessageType::kResumed), false)) return 0;
          break;
        case HostMessageType::kPause: {
          if (running_) task_->Pause();
          running_ = false;
          HostMessage ack = MakeMessage(HostMessageType::kPaused);
          ack.seq = m.seq;
          ack.echo_ns = m.time_ns;
          if (!Send(ack, false)) return 0;
          break;
        }
        case HostMessageType::kStop: {
          where_ = "in Finish";
          if (!finished_) {
            if (Status s = task_->Finish(); !s.ok()) {
              return Fail(HostFailure::kStep, task_->name() + " Finish failed: " + s.message());
            }
          }
          Send(MakeMessage(HostMessageType::kExiting), false);
          return 0;
        }
        default:
          break;
      }
    }
  }

  int Loop() {
    int64_t last_progress_ns = MonotonicNs();
    while (true) {
      // Blocks only when there is nothing to run; otherwise just peeks.
      if (int code = Drain(PartsThatFit() > 0 ? 0 : -1); code >= 0) return code;
      const int parts = PartsThatFit();
      if (parts == 0) continue;
      if (int code = DoStep(parts); code != 0) return code;
      if (task_->Done()) {
        where_ = "in Finish";
        if (Status s = task_->Finish(); !s.ok()) {
          return Fail(HostFailure::kStep, task_->name() + " Finish failed: " + s.message());
        }
        finished_ = true;
        running_ = false;
        if (!Send(MakeMessage(HostMessageType::kFinished), false)) return 0;
      }
      const int64_t now = MonotonicNs();
      if (now - last_progress_ns > 20'000'000) {
        Send(MakeMessage(HostMessageType::kProgress), /*droppable=*/true);
        last_progress_ns = now;
      }
    }
  }

  int fd_;
  double margin_;
  std::unique_ptr<SideTask> task_;
  std::string where_ = "starting";
  bool running_ = false, finished_ = false;
  int64_t deadline_ns_ = 0;  // 0: unbounded
  int64_t steps_ = 0, partial_steps_ = 0, step_ns_total_ = 0;
  double work_ = 0;
  double ewma_ns_ = 0;       // CPU time of a whole step
  double part_ewma_ns_ = 0;  // CPU time of one part, when run as parts
  int parts_ = 1;            // SideTask::StepParts()
  int part_ = 0;             // parts of the current step already run
};

}  // namespace

int RunSideTaskHost(const SideTaskHostArgs& args) {
  IgnoreBrokenPipes();
  at::set_num_threads(1);  // the side task gets one core
  TypeAllocationFailures();
  Host host(args);
  auto out_of_memory = [&host] { return host.Fail(HostFailure::kOutOfMemory, OutOfMemoryText() + " " + host.where()); };
  auto step_failure = [&host](const std::exception& e) {
    std::string what = e.what();
    if (what.size() > 160) what = what.substr(0, 160) + "...";
    return host.Fail(HostFailure::kStep, "exception " + host.where() + ": " + what);
  };
  // Out of memory is told by the exception's type, never by its text:
  // std::bad_alloc (LibTorch's CPU allocations too, TypeAllocationFailures),
  // c10::OutOfMemoryError, and OpenCV's StsNoMem.
  try {
    return host.Run(args.spec);
  } catch (const std::bad_alloc&) {
    return out_of_memory();
  } catch (const c10::OutOfMemoryError&) {
    return out_of_memory();
  } catch (const cv::Exception& e) {
    return e.code == cv::Error::StsNoMem ? out_of_memory() : step_failure(e);
  } catch (const std::exception& e) {
    return step_failure(e);
  }
}

}  // namespace pw
