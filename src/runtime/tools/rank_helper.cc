// Rank body for src/runtime's multi-process tests. Run under LaunchLocalRanks:
//   pw_runtime_rank_helper key=value...
// keys: schedule pp dp chunks m mbs steps seed data lr clip wd warmup eval_every
// total_steps ckpt_dir ckpt_every resume
// params=1 (print parameter summaries), and model.<key> (ModelConfig
// overrides). Prints what RunWorker prints; exits 1 with the error on stderr.
#include <ATen/Parallel.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/trainer.h"

int main(int argc, char** argv) {
  at::set_num_threads(1);
  pw::TrainConfig config;
  std::vector<std::string> overrides;
  bool params = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "bad argument '%s' (want key=value)\n", argv[i]);
      return 2;
    }
    std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
    if (key.rfind("model.", 0) == 0) overrides.push_back(arg);
    else if (key == "schedule") config.schedule = value;
    else if (key == "pp") config.pp = std::atoi(value.c_str());
    else if (key == "dp") config.dp = std::atoi(value.c_str());
    else if (key == "chunks") config.chunks = std::atoi(value.c_str());
    else if (key == "m") config.microbatches = std::atoi(value.c_str());
    else if (key == "mbs") config.microbatch_size = std::atoi(value.c_str());
    else if (key == "steps") config.steps = std::atoi(value.c_str());
    else if (key == "seed") config.seed = std::strtoull(value.c_str(), nullptr, 10);
    else if (key == "data") config.data = value;
    else if (key == "lr") config.optimizer.lr = std::atof(value.c_str());
    else if (key == "clip") config.optimizer.grad_clip = std::atof(value.c_str());
    else if (key == "wd") config.optimizer.weight_decay = std::atof(value.c_str());
    else if (key == "warmup") config.optimizer.warmup_steps = std::atoi(value.c_str());
    else if (key == "params") params = value == "1";
    else if (key == "eval_every") config.eval_every = std::atoi(value.c_str());
    else if (key == "total_steps") config.optimizer.total_steps = std::atoi(value.c_str());
    else if (key == "ckpt_dir") config.checkpoint_dir = value;
    else if (key == "ckpt_every") config.checkpoint_every = std::atoi(value.c_str());
    else if (key == "resume") config.resume_dir = value;
    else {
      std::fprintf(stderr, "unknown key '%s'\n", key.c_str());
      return 2;
    }
  }
  pw::Status status = pw::ApplyOverrides(config.model, overrides);
  if (status.ok()) {
    pw::Result<pw::Schedule> schedule = pw::GenerateTrainingSchedule(config);
    status = schedule.ok() ? pw::RunWorker(config, *schedule, params) : schedule.status();
  }
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
