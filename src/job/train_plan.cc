#include "job/train_plan.h"

#include "job/fields_json.h"

namespace pw {
namespace {

// The settings a plan decides, each paired with the job's field of the
// same name: one list for both directions.
template <class Job, class Plan, class Copy>
void PairPlannedFields(Job& job, Plan& plan, Copy copy) {
  copy(job.schedule, plan.schedule);
  copy(job.pp, plan.pp);
  copy(job.microbatches, plan.microbatches);
  copy(job.chunks, plan.chunks);
  copy(job.layers_per_stage, plan.layers_per_stage);
  copy(job.schedule_costs, plan.schedule_costs);
}

}  // namespace

ResolvedTrainPlan PlanOf(const TrainJob& job) {
  ResolvedTrainPlan plan;
  PairPlannedFields(job, plan, [](const auto& from_job, auto& to_plan) { to_plan = from_job; });
  plan.why = job.plan_why;
  return plan;
}

TrainJob ApplyPlan(const TrainJob& request, const ResolvedTrainPlan& plan) {
  TrainJob job = request;
  PairPlannedFields(job, plan, [](auto& to_job, const auto& from_plan) { to_job = from_plan; });
  job.plan_why = plan.why;
  // A request already applied once (a worker's job file) keeps the original.
  if (job.request_json.empty()) job.request_json = FieldsToJson(request).dump();
  return job;
}

}  // namespace pw
