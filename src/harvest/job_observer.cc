#include "harvest/job_observer.h"

#include <memory>
#include <string>

#include "harvest/manager.h"
#include "harvest/side_task.h"

namespace pw {

Result<TrainObserverHooks> HarvestHooksFor(const TrainJob& job) {
  TrainObserverHooks hooks;
  if (!WantsHarvest(job)) return hooks;
  HarvestOptions options;
  options.policy = HarvestPolicy::kGated;
  if (!job.harvest_policy.empty()) {
    PW_ASSIGN_OR_RETURN(options.policy, ParseHarvestPolicy(job.harvest_policy));
  }
  if (!(job.harvest_step_margin >= 0)) {
    return Status::InvalidArgument("--harvest-step-margin must be >= 0 (1.2: a step starts only when the "
                                   "bubble's remaining time exceeds 1.2 x the task's step time)");
  }
  options.step_margin = job.harvest_step_margin;
  options.paired_block_steps = job.harvest_paired;
  options.paired_seed = job.seed;
  for (const std::string& text : job.side_task) {
    PW_ASSIGN_OR_RETURN(SideTaskSpec spec, ParseSideTaskSpec(text));
    options.tasks.push_back(spec);
  }
  for (const std::string& text : job.side_task_cmd) {
    PW_ASSIGN_OR_RETURN(SideTaskSpec spec, ParseSideTaskCommand(text));
    options.tasks.push_back(spec);
  }
  for (const SideTaskSpec& spec : options.tasks) {
    if (spec.pinned_rank >= job.pp * job.dp) {
      return Status::InvalidArgument("side task '" + spec.name + "' is pinned to rank " +
                                     std::to_string(spec.pinned_rank) + " but the job has ranks 0.." +
                                     std::to_string(job.pp * job.dp - 1) + "; change @rank=");
    }
  }
  hooks.make = [options](const RankContext& context) -> Result<std::unique_ptr<RankObserver>> {
    PW_ASSIGN_OR_RETURN(std::unique_ptr<HarvestManager> manager, HarvestManager::Create(context, options));
    return std::unique_ptr<RankObserver>(std::move(manager));
  };
  const int profile_steps = hooks.profile_steps;
  hooks.summarize = [profile_steps](const std::vector<std::string>& reports,
                                    const std::vector<double>& step_seconds) {
    return FormatHarvestSummary(reports, step_seconds, profile_steps);
  };
  return hooks;
}

}  // namespace pw
