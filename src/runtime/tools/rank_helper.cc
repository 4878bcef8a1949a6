// Rank body for src/runtime's multi-process tests. Run under LaunchLocalRanks:
//   pw_runtime_rank_helper key=value...
// keys: the train job's settings by name (job/train_job.h: schedule pp dp
// chunks steps seed data lr grad_clip warmup eval_every decay_steps
// checkpoint_dir checkpoint_every resume ...), the short forms m, mbs,
// clip, wd, ckpt_dir, ckpt_every, total_steps, model.<key> (ModelConfig
// overrides) and params=1 (print parameter summaries). Prints what
// RunWorker prints; exits 1 with the error on stderr.
#include <ATen/Parallel.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "runtime/train_worker.h"
#include "runtime/trainer.h"

int main(int argc, char** argv) {
  at::set_num_threads(1);
  const std::map<std::string, std::string> short_forms = {
      {"m", "microbatches"},   {"mbs", "microbatch_size"},       {"clip", "grad_clip"},
      {"wd", "weight_decay"},  {"ckpt_dir", "checkpoint_dir"},   {"ckpt_every", "checkpoint_every"},
      {"total_steps", "decay_steps"}};
  pw::TrainJob job;
  job.steps = 10;
  std::vector<std::string> overrides;
  bool params = false;
  pw::Status status;
  for (int i = 1; i < argc && status.ok(); ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "bad argument '%s' (want key=value)\n", argv[i]);
      return 2;
    }
    std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
    if (auto it = short_forms.find(key); it != short_forms.end()) key = it->second;
    if (key.rfind("model.", 0) == 0) {
      overrides.push_back(arg);
    } else if (key == "params") {
      params = value == "1";
    } else {
      status = pw::SetFieldFromText(job, "train", key, value);
    }
  }
  if (status.ok()) status = pw::ApplyOverrides(job.model, overrides);
  if (status.ok()) {
    pw::Result<pw::Schedule> schedule = pw::GenerateTrainingSchedule(job);
    status = schedule.ok() ? pw::RunWorker(job, *schedule, params) : schedule.status();
  }
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
