// One rank of `pipewright infer`: reads its share of the prompt file, plans
// its memory, loads the blocks it holds, builds the weight pool and the
// paged KV cache, runs the engine over the prompts not already in the
// results file, appends each result as it completes, and prints one summary
// line (kRankSummaryPrefix + JSON) that the launcher gathers.
//
// The world comes from the environment (comm/world_info.h), so the same
// code runs under `pipewright infer`'s local launcher, torchrun, mpirun or
// Slurm. Prompts are split round-robin by index (prompts_io.h ShareOfRank);
// each rank schedules its own batches.
//
// Thread-safety: one call per process. Failure: a Status naming the rank
// (bad budget, unreadable checkpoint, a peer that died); results already
// appended stay in the file, so a rerun resumes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comm/world_info.h"
#include "core/status.h"
#include "infer/engine.h"
#include "infer/memory_plan.h"
#include "infer/model_weights.h"
#include "infer/prompts_io.h"
#include "infer/weight_pool.h"
#include "runtime/progress.h"

namespace pw {

struct InferJobOptions {
  WeightSource source;
  PoolOptions pool;
  std::string prompts_path;   // JSONL (prompts_io.h)
  std::string out_path;       // results JSONL, appended and resumed
  int64_t budget_bytes = 0;   // per rank
  int block_size = 16;
  int64_t max_batch_tokens = 256;
  int max_sequences = 256;
  int max_tokens = 64;        // default per request
  int end_byte = -1;          // stop after this byte (-1: none)
  SamplingOptions sampling;
  ProgressMode progress = ProgressMode::kPlain;
  int comm_timeout_s = 300;   // bound on any wait for a peer
  // Also measure link latency/bandwidth and GEMM speed (ranks 0 and 1) and
  // report the cost model's crossover batch size (ChooseMode).
  bool predict_crossover = false;
  // Rank 0 prints the prompt file's bad lines (when no launcher did).
  bool report_bad_lines = false;
};

// Stdout prefix of the rank summary line (one JSON object after it).
inline constexpr std::string_view kRankSummaryPrefix = "infer-summary: ";

// The memory plan of `rank` for these options and config (MemoryPlanInput
// built the way the rank builds it). Pure.
Result<MemoryPlan> PlanForRank(const InferJobOptions& options, const ModelConfig& config, int rank,
                               int world);

// The requests of one rank: its share, minus `done`, with the job's defaults
// applied. Prompt bytes outside the vocabulary make the request fail alone:
// those come back in `rejected` as error results. Pure.
std::vector<GenerationRequest> BuildRequests(const std::vector<PromptRecord>& share,
                                             const DoneSet& done, const InferJobOptions& options,
                                             const ModelConfig& config,
                                             std::vector<ResultRecord>* rejected);

// Runs this process's rank of the job (see the header comment). Blocks
// until the rank is done and every rank has finished with the pool.
Status RunInferRank(const InferJobOptions& options, const WorldInfo& world);

}  // namespace pw
