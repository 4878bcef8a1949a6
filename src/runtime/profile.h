// MeasuredProfile: the measured per-(stage, kind) compute costs of a
// training run, in the cost-model format (sim/cost_model_json.h) that
// `pipewright schedule sim --cost-file` and `pipewright plan --cost-file`
// read — so a plan or a schedule can be checked against real timings.
//
// Each stage entry holds the mean duration in milliseconds of its F, and of
// its B or its I and W (whichever the schedule ran), over every microbatch
// of the steps after the first `skip_steps` recorded ones (warm-up: the
// first step allocates and is slow; with no later step, all steps count),
// and output_bytes (the activation one F sends: microbatch_size x seq_len x
// d_model x 4). In a run that recomputes (ProfileOptions::recompute_kind),
// a stage's backward of a microbatch it recomputed in that step counts
// apart, as its after-recompute B, I or W, beside the mean RECOMPUTE
// (StageCost): the plain times come from the other backwards, or from
// these where every microbatch was recomputed. Besides compute, the same
// steps give the per-action overheads and the link latency (runtime/action_overheads.h: kind_costs
// for SEND/RECV/REDUCE_GRAD/OPT, comm_latency with unlimited bandwidth; 0
// latency when no receive waited). activation_bytes stays 0: time only.
//
// Given the model and its partition, the profile also describes the model:
// "n_layers" and one "layers" entry per block, the stage times shared
// among the pieces each stage holds by their estimated FLOPs
// (search/layer_split.h). `plan --cost-file` then splits the model between
// blocks, and every plan it writes can be trained as is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model_config.h"
#include "model/partitioner.h"
#include "runtime/timeline.h"
#include "sim/cost_model.h"
#include "sim/cost_model_json.h"

namespace pw {

class CommGroup;
class Executor;

struct ProfileOptions {
  int64_t skip_steps = 1;   // warm-up steps left out (counted from the first recorded step)
  double output_bytes = 0;  // per F, every stage
  // The schedule's RECOMPUTE kind (schedule/kind_registry.h), if it has
  // one: recomputation's own times are then measured apart (above).
  std::optional<ActionKind> recompute_kind;
  // The trained model and its split into the schedule's stages (the
  // session's partition). Empty partition: the profile has stages only.
  ModelConfig model;
  ModelPartition partition;
  // Memory the profile reports (the model's estimates, not measured):
  // activation bytes per stage and static bytes per rank; empty: none
  // (the profile then counts memory in microbatches).
  std::vector<double> activation_bytes;
  std::vector<double> static_bytes;
};

// `ranks[r]`: rank r's spans (GatherTimelines). FailedPrecondition when a
// stage of 0..num_stages-1 has no measured F or no measured backward.
Result<CostModel> MeasuredProfile(const std::vector<std::vector<TimelineSpan>>& ranks, int num_stages,
                                  const ProfileOptions& options = {});

struct MeasuredOutputs {
  std::string trace_path;    // --trace FILE; empty: none
  std::string profile_path;  // --profile-out FILE; empty: none
  ProfileOptions profile;
  MeasuredTraceOptions trace;
};

// The profile file: MeasuredProfile's stages and, when `options.partition`
// is set, the model's per-layer costs. FailedPrecondition as
// MeasuredProfile; InvalidArgument when the partition does not match the
// stages or the model.
Result<CostFile> MeasuredProfileFile(const std::vector<std::vector<TimelineSpan>>& ranks, int num_stages,
                                     const ProfileOptions& options);

// After training with ExecutorOptions::record_timeline: gathers the
// executor's timeline over `pipeline` (collective: every rank of the group
// calls it), and where `write` is true (one rank of the job, e.g. world
// rank 0) writes the trace and the profile. IoError for an unwritable file.
Status WriteMeasuredOutputs(const Executor& executor, CommGroup* pipeline, bool write,
                            const MeasuredOutputs& outputs);

}  // namespace pw
