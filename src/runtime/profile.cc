#include "runtime/profile.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "runtime/action_overheads.h"
#include "runtime/executor.h"
#include "search/layer_split.h"

namespace pw {
namespace {

struct Mean {
  double sum = 0;
  int64_t count = 0;
  void Add(double v) {
    sum += v;
    ++count;
  }
  double Value() const { return count > 0 ? sum / static_cast<double>(count) : 0; }
};

Status WriteText(const std::string& path, const std::string& text, const char* what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IoError(std::string("cannot write ") + what + " " + path);
  out << text;
  out.close();
  if (!out) return Status::IoError(std::string("cannot write ") + what + " " + path);
  return Status::Ok();
}

}  // namespace

Result<CostModel> MeasuredProfile(const std::vector<std::vector<TimelineSpan>>& ranks, int num_stages,
                                  const ProfileOptions& options) {
  bool any = false;
  int64_t first_step = 0, last_step = 0;
  for (const auto& spans : ranks) {
    for (const TimelineSpan& s : spans) {
      if (!IsCompute(s.kind)) continue;
      first_step = any ? std::min(first_step, s.step) : s.step;
      last_step = any ? std::max(last_step, s.step) : s.step;
      any = true;
    }
  }
  if (!any) return Status::FailedPrecondition("the timeline holds no F, B, I or W spans");
  // Leave out the warm-up steps unless nothing would remain.
  const int64_t from = last_step >= first_step + options.skip_steps ? first_step + options.skip_steps
                                                                     : first_step;
  // Per (stage, kind): the mean time; the backwards of microbatches that
  // the stage recomputed in the same step go to after_recompute, and the
  // RECOMPUTEs themselves to recomputes.
  std::map<std::pair<int, ActionKind>, Mean> means, after_recompute;
  std::map<int, Mean> recomputes;
  for (const auto& spans : ranks) {
    std::set<std::tuple<int64_t, int, int>> recomputed;  // (step, stage, microbatch)
    if (options.recompute_kind) {
      for (const TimelineSpan& s : spans) {
        if (s.kind != *options.recompute_kind || s.step < from) continue;
        recomputed.insert({s.step, s.stage, s.microbatch});
        recomputes[s.stage].Add(s.dur_us / 1000.0);
      }
    }
    for (const TimelineSpan& s : spans) {
      if (!IsCompute(s.kind) || s.step < from) continue;
      const bool after = s.kind != ActionKind::kForward && recomputed.count({s.step, s.stage, s.microbatch}) > 0;
      (after ? after_recompute : means)[{s.stage, s.kind}].Add(s.dur_us / 1000.0);
    }
  }
  CostModel costs;
  costs.stages.clear();
  for (int stage = 0; stage < num_stages; ++stage) {
    auto get = [&](const std::map<std::pair<int, ActionKind>, Mean>& in, ActionKind k) -> const Mean* {
      auto it = in.find({stage, k});
      return it == in.end() ? nullptr : &it->second;
    };
    StageCost c;
    c.output_bytes = options.output_bytes;
    const Mean* f = get(means, ActionKind::kForward);
    const Mean* b_after = get(after_recompute, ActionKind::kBackward);
    const Mean* i_after = get(after_recompute, ActionKind::kBackwardInput);
    const Mean* w_after = get(after_recompute, ActionKind::kBackwardWeight);
    // A stage that recomputed every microbatch measured only these.
    const Mean* b = get(means, ActionKind::kBackward);
    const Mean* i = get(means, ActionKind::kBackwardInput);
    const Mean* w = get(means, ActionKind::kBackwardWeight);
    if (b == nullptr) b = b_after;
    if (i == nullptr) i = i_after;
    if (w == nullptr) w = w_after;
    if (f == nullptr) {
      return Status::FailedPrecondition("no measured F for stage " + std::to_string(stage));
    }
    if (b == nullptr && (i == nullptr || w == nullptr)) {
      return Status::FailedPrecondition("no measured B (or I and W) for stage " + std::to_string(stage));
    }
    c.forward = f->Value();
    if (b != nullptr) c.backward = b->Value();
    if (i != nullptr && w != nullptr) {
      c.backward_input = i->Value();
      c.backward_weight = w->Value();
    }
    if (auto it = recomputes.find(stage); it != recomputes.end()) c.recompute = it->second.Value();
    if (b_after != nullptr) c.backward_after_recompute = b_after->Value();
    if (i_after != nullptr && w_after != nullptr) {
      c.backward_input_after_recompute = i_after->Value();
      c.backward_weight_after_recompute = w_after->Value();
    }
    costs.stages.push_back(c);
  }
  AddActionOverheads(MeasureActionOverheads(ranks, from), costs);
  return costs;
}

Result<CostFile> MeasuredProfileFile(const std::vector<std::vector<TimelineSpan>>& ranks, int num_stages,
                                     const ProfileOptions& options) {
  CostFile file;
  PW_ASSIGN_OR_RETURN(file.costs, MeasuredProfile(ranks, num_stages, options));
  if (options.activation_bytes.size() == file.costs.stages.size()) {
    for (size_t s = 0; s < options.activation_bytes.size(); ++s) {
      file.costs.stages[s].activation_bytes = options.activation_bytes[s];
    }
  }
  if (!options.static_bytes.empty()) file.costs.static_bytes = options.static_bytes;
  if (options.partition.stages.empty()) return file;
  Result<std::vector<StageCost>> layers = search::SplitStageCostsIntoLayers(
      file.costs.stages, options.partition, EstimateLayerCosts(options.model));
  if (!layers.ok()) return layers.status().WithContext("per-layer costs of the profile");
  file.layers = std::move(*layers);
  return file;
}

Status WriteMeasuredOutputs(const Executor& executor, CommGroup* pipeline, bool write,
                            const MeasuredOutputs& outputs) {
  if (outputs.trace_path.empty() && outputs.profile_path.empty()) return Status::Ok();
  const int rank = pipeline != nullptr ? pipeline->rank() : 0;
  PW_ASSIGN_OR_RETURN(auto ranks, GatherTimelines(pipeline, rank, executor.timeline()));
  if (!write) return Status::Ok();
  if (!outputs.trace_path.empty()) {
    PW_RETURN_IF_ERROR(WriteText(outputs.trace_path,
                                 RenderMeasuredTrace(executor.schedule(), ranks, outputs.trace), "--trace"));
  }
  if (!outputs.profile_path.empty()) {
    ProfileOptions options = outputs.profile;
    options.recompute_kind = executor.schedule().kinds.Find(kRecomputeKindName);
    PW_ASSIGN_OR_RETURN(CostFile file, MeasuredProfileFile(ranks, executor.schedule().num_stages(), options));
    PW_RETURN_IF_ERROR(WriteText(outputs.profile_path, FormatCostFileJson(file), "--profile-out"));
  }
  return Status::Ok();
}

}  // namespace pw
