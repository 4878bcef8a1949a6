// `pipewright side-task`: the built-in side tasks on their own.
//   list                 the built-ins, their units and options
//   run SPEC --seconds S runs one built-in alone in this process on one
//                        thread and prints its dedicated throughput — the
//                        yardstick of harvest efficiency (work done in
//                        bubbles / what the task does alone in that time)
//   host ...             (hidden) the side-task host process a training rank
//                        starts with host_binary=/proc/self/exe (harvest/task_host.h)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "harvest/side_task.h"
#include "harvest/task_host.h"

namespace pw::cli {
namespace {

struct SideTaskRunOptions {
  std::string spec;
  double seconds = 3;
  bool json = false;
};

Status RunList(bool json) {
  const std::vector<BuiltinSideTaskInfo> infos = BuiltinSideTaskInfos();
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const BuiltinSideTaskInfo& info : infos) {
      nlohmann::json opts = nlohmann::json::array();
      for (const SideTaskOptionInfo& o : info.options) {
        opts.push_back({{"name", o.name}, {"default", o.default_value}, {"help", o.help}});
      }
      out.push_back({{"name", info.name}, {"unit", info.unit}, {"description", info.description}, {"options", opts}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return Status::Ok();
  }
  std::printf("built-in side tasks (use as --side-task NAME[:key=value,...][@rank=N]):\n");
  for (const BuiltinSideTaskInfo& info : infos) {
    std::printf("\n%s  (work unit: %s)\n  %s\n", info.name.c_str(), info.unit.c_str(), info.description.c_str());
    for (const SideTaskOptionInfo& o : info.options) {
      const std::string key = o.name + "=" + (o.default_value.empty() ? "..." : o.default_value);
      std::printf("    %-22s %s\n", key.c_str(), o.help.c_str());
    }
  }
  std::printf("\nany built-in also takes fault-injection options for testing: fail_after=N, crash_after=N, hang_after=N, "
              "spin_after=N, alloc=BYTES[,alloc_after=N]\nany other program: --side-task-cmd \"COMMAND\" (paused with SIGSTOP, resumed with "
              "SIGCONT)\n");
  return Status::Ok();
}

Status RunAlone(const SideTaskRunOptions& o) {
  using Clock = std::chrono::steady_clock;
  PW_ASSIGN_OR_RETURN(SideTaskSpec spec, ParseSideTaskSpec(o.spec));
  PW_ASSIGN_OR_RETURN(std::unique_ptr<SideTask> task, MakeBuiltinSideTask(spec));
  at::set_num_threads(1);  // as in a side-task host: one core
  const Clock::time_point setup_start = Clock::now();
  PW_RETURN_IF_ERROR(task->Setup().WithContext(spec.name + " Setup"));
  const double setup_s = std::chrono::duration<double>(Clock::now() - setup_start).count();
  int64_t steps = 0;
  double work = 0, max_step_ms = 0;
  const Clock::time_point start = Clock::now();
  double elapsed = 0;
  while (elapsed < o.seconds && !task->Done()) {
    const Clock::time_point t0 = Clock::now();
    PW_ASSIGN_OR_RETURN(double w, task->Step());
    const Clock::time_point t1 = Clock::now();
    max_step_ms = std::max(max_step_ms, std::chrono::duration<double, std::milli>(t1 - t0).count());
    work += w;
    ++steps;
    elapsed = std::chrono::duration<double>(t1 - start).count();
  }
  PW_RETURN_IF_ERROR(task->Finish());
  const double per_s = elapsed > 0 ? work / elapsed : 0;
  const double steps_per_s = elapsed > 0 ? static_cast<double>(steps) / elapsed : 0;
  const double mean_step_ms = steps > 0 ? 1e3 * elapsed / static_cast<double>(steps) : 0;
  const std::string text = FormatSideTaskSpec(spec);
  if (o.json) {
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& [k, v] : task->Metrics()) metrics[k] = v;
    nlohmann::json out = {{"task", text},          {"unit", task->unit()},       {"seconds", elapsed},
                          {"setup_seconds", setup_s}, {"steps", steps},          {"work", work},
                          {"work_per_s", per_s},   {"steps_per_s", steps_per_s}, {"mean_step_ms", mean_step_ms},
                          {"max_step_ms", max_step_ms}, {"done", task->Done()},  {"metrics", metrics}};
    std::printf("%s\n", out.dump().c_str());
    return Status::Ok();
  }
  std::printf("side task %s alone on one thread: %.2f s (setup %.2f s)%s\n", text.c_str(), elapsed, setup_s,
              task->Done() ? ", finished" : "");
  std::printf("  %lld steps, %.4g %s\n", static_cast<long long>(steps), work, task->unit().c_str());
  std::printf("  dedicated throughput: %.4g %s/s, %.1f steps/s, mean step %.3f ms (max %.3f ms)\n", per_s,
              task->unit().c_str(), steps_per_s, mean_step_ms, max_step_ms);
  std::string metrics;
  for (const auto& [k, v] : task->Metrics()) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s%s=%.6g", metrics.empty() ? "" : ", ", k.c_str(), v);
    metrics += buf;
  }
  if (!metrics.empty()) std::printf("  %s\n", metrics.c_str());
  return Status::Ok();
}

}  // namespace

void AddSideTaskCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* cmd = app.add_subcommand("side-task", "Built-in side tasks for bubble harvesting: list them, run one alone");
  cmd->require_subcommand(1);

  auto list_json = std::make_shared<bool>(false);
  CLI::App* list = cmd->add_subcommand("list", "The built-in side tasks, their work units and options");
  list->add_flag("--json", *list_json, "Print JSON");
  list->callback([list_json, &ctx] { ctx.run = [list_json] { return RunList(*list_json); }; });

  auto run_o = std::make_shared<SideTaskRunOptions>();
  CLI::App* run = cmd->add_subcommand(
      "run", "Run a built-in alone on one thread and print its dedicated throughput (the harvest baseline)");
  run->add_option("task", run_o->spec, "NAME[:key=value,...], e.g. pagerank:scale=16")->required();
  run->add_option("--seconds", run_o->seconds, "How long to run")->capture_default_str()->check(CLI::Range(0.01, 86400.0));
  run->add_flag("--json", run_o->json, "Print one JSON object");
  run->callback([run_o, &ctx] { ctx.run = [run_o] { return RunAlone(*run_o); }; });

  // Hidden: the host body, so the pipewright binary itself hosts side tasks.
  auto host_o = std::make_shared<SideTaskHostArgs>();
  CLI::App* host = cmd->add_subcommand("host", "Side-task host process (started by a training rank)");
  host->group("");
  host->add_option("--spec", host_o->spec, "Task spec")->required();
  host->add_option("--control-fd", host_o->control_fd, "Control socket")->capture_default_str();
  host->add_option("--margin", host_o->margin, "Step margin")->capture_default_str();
  host->callback([host_o, &ctx] {
    ctx.run = [host_o]() -> Status {
      const int code = RunSideTaskHost(*host_o);
      std::fflush(stdout);
      // The exit code is the host's report to the rank (task_host.h); the
      // failure text already went over the socket.
      std::_Exit(code);
    };
  });
}

}  // namespace pw::cli
