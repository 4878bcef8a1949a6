// Side tasks: work that runs in a training rank's bubbles.
//
// Iterative side tasks implement SideTask (cooperative, C++): the host
// process (harvest/task_host.h) drives one through its states
//
//   SUBMITTED -> CREATED -> PAUSED <-> RUNNING -> FINISHED
//                      (any state) -> STOPPED  (removed, or failed)
//
// calling Setup (CREATED -> PAUSED: allocate, load data/state), then, while
// the manager lets it run, Step() repeatedly (each a bounded unit of work;
// the host times each step and only starts one when the bubble's remaining
// time exceeds the measured step time with a margin), Pause/Resume on the
// edges, Finish at the end (FINISHED) — Stop on removal or failure.
//
// Imperative side tasks are any command line: the host starts it and
// pauses it with SIGSTOP, resumes it with SIGCONT (harvest/task_process.h).
//
// Built-ins (MakeBuiltinSideTask): "cnn" (a small convolutional classifier
// trained with LibTorch on synthetic images), "pagerank" (PageRank on a
// generated R-MAT graph or an edge-list file), "image" (batch resize and
// filter with OpenCV), "infer" (`pipewright infer`'s engine over a prompt
// file, appending to a results file it resumes from). Each reports work in its own unit (images, edges,
// pixels) so throughput compares with the same task run alone.
//
// Thread-safety: a SideTask is driven by one thread of its host process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pw {

enum class SideTaskState { kSubmitted, kCreated, kPaused, kRunning, kFinished, kStopped };
const char* SideTaskStateName(SideTaskState state);

struct SideTaskProgress {
  int64_t steps = 0;
  double work = 0;          // in the task's unit, cumulative
  std::string unit;         // "images", "edges", "pixels", "tokens"
};

class SideTask {
 public:
  virtual ~SideTask() = default;
  virtual std::string name() const = 0;
  // CREATED -> PAUSED: allocate and load (data, a checkpoint). May take long.
  virtual Status Setup() = 0;
  // One bounded unit of work (milliseconds). Returns the work it did, in
  // the task's unit. Errors end the task (STOPPED, reported). Called only
  // between steps (never after a StepPart that left a step unfinished).
  virtual Result<double> Step() = 0;
  // Step granularity. A task whose step can be cut (a minibatch into
  // smaller ones whose gradients accumulate, a batch of images into fewer)
  // returns into how many equal parts; the host then runs part of a step
  // when a whole one does not fit the time left in the bubble, rather than
  // leave that time unused (a whole step is cheaper per unit of work, so it
  // runs whole when it fits). 1, the default: indivisible.
  virtual int StepParts() const { return 1; }
  // Runs the next `parts` parts of the current step, 1 <= parts <= the
  // parts it has left; a step's parts run in order, may spread over calls
  // and bubbles, and its effect (an optimizer update) comes with its last
  // part. Returns the work done. Called only when StepParts() > 1.
  virtual Result<double> StepPart(int parts) {
    (void)parts;
    return Step();
  }
  virtual void Pause() {}
  virtual void Resume() {}
  // True when the task has nothing left to do (FINISHED).
  virtual bool Done() const { return false; }
  virtual Status Finish() { return Status::Ok(); }
  virtual std::string unit() const = 0;
  // Task-specific figures for reports and tests ("loss", "iterations",
  // "checksum"); cheap, called between steps.
  virtual std::vector<std::pair<std::string, double>> Metrics() const { return {}; }
};

struct SideTaskSpec {
  std::string name;        // built-in name, or "cmd" for an imperative task
  std::string command;     // imperative: the shell command line
  std::vector<std::string> args;  // built-in options "key=value" (e.g. "graph=FILE", "scale=14")
  int pinned_rank = -1;    // "@rank=N"; -1: the manager places it
  int64_t memory_limit_bytes = 0;  // "@mem=SIZE"; 0: the rank's free memory decides
  double step_ms = 0;      // "@step=MS": the task's step time, for placement; 0: not given
};

// Parses "--side-task" values: "pagerank", "cnn@rank=1", "pagerank:scale=16@rank=0",
// "image@mem=3GiB@rank=1", "cnn:batch=256@step=15ms" (suffixes in any order).
// InvalidArgument naming the bad part and listing the built-ins.
Result<SideTaskSpec> ParseSideTaskSpec(const std::string& text);

// Parses "--side-task-cmd" values: "CMD", "CMD@rank=N", "CMD@mem=SIZE", "CMD@step=MS" (the
// command runs with sh -c). Only trailing @rank= / @mem= / @step= suffixes
// are taken, so a command may contain '@' of its own. InvalidArgument for a bad
// suffix value or an empty command.
Result<SideTaskSpec> ParseSideTaskCommand(const std::string& text);

// A command task (spec.name "cmd" or a non-empty spec.command) rather than a
// built-in task in a side-task host: the one rule every layer asks.
bool IsCommandTask(const SideTaskSpec& spec);
std::vector<std::string> BuiltinSideTaskNames();
// Fails (InvalidArgument) on an unknown name or option, or a bad value;
// the task is not Setup yet. Besides each task's own options, every
// built-in takes fault-injection options (harvest/side_task.cc):
// fail_after=N (step N+1 returns an error), crash_after=N (step N+1
// aborts the process), hang_after=N (step N+1 sleeps forever), spin_after=N (step N+1 burns CPU
// forever, ignoring every pause), alloc=BYTES (step alloc_after+1, default the first,
// allocates and touches BYTES) — for testing how failures are contained.
Result<std::unique_ptr<SideTask>> MakeBuiltinSideTask(const SideTaskSpec& spec);

// What `pipewright side-task list` prints: each built-in, its unit and options.
struct SideTaskOptionInfo {
  std::string name, default_value, help;
};
struct BuiltinSideTaskInfo {
  std::string name, unit, description;
  std::vector<SideTaskOptionInfo> options;
};
std::vector<BuiltinSideTaskInfo> BuiltinSideTaskInfos();

// The inverse of ParseSideTaskSpec for built-ins ("name:k=v,k=v"; the
// "@rank" part is left out): the text a host process is started with.
std::string FormatSideTaskSpec(const SideTaskSpec& spec);

}  // namespace pw
