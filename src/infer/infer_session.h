// InferSession: one rank of `pipewright infer`, in phases.
//   Create     checks the job: plans this rank's memory, reads the prompt
//              file and the results already written (a rerun resumes),
//              joins the process groups, and in auto mode probes whether
//              the ranks share memory (then the mode becomes shared);
//   Load       loads the blocks this rank holds and prepacks them for the
//              GEMMs where every reader has this rank's layout;
//   BuildPool  calibrates the cost model (auto, --predict-crossover),
//              builds the weight pool and the paged KV cache, and checks
//              that what is held equals what the plan charged;
//   Generate   runs the engine over this rank's prompts (its round-robin
//              share, or chunks claimed from the shared queue), appending
//              each result to the results file and showing progress;
//   Finish     finishes the pool, prints this rank's line, and gathers the
//              ranks' reports (InferRankReport) on world rank 0, which
//              prints the job summary and writes --summary-json.
// RunInferRank (infer/infer_worker.h) is these phases in order; the header
// there says how prompts reach the ranks.
//
// Memory: from Create on, large tensors come from the process's reusing
// allocator (infer/reusing_allocator.h); the measured peak is the
// process's own memory while generating, above what it held at Create
// (LibTorch's start-up is not the job's), loading's peak apart.
//
// Thread-safety: one thread drives a session, and one session runs per
// process (it installs the process's allocator). Every phase is collective
// over the job's ranks (all must call it, in the same order). Failure:
// Status naming the rank and the phase's step; results already appended
// stay in the file. After a failed phase the session must not be used.
#pragma once

#include <c10/core/GradMode.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/process_groups.h"
#include "comm/world_info.h"
#include "core/status.h"
#include "infer/engine.h"
#include "infer/infer_settings.h"
#include "infer/kv_cache.h"
#include "infer/memory_plan.h"
#include "infer/model_weights.h"
#include "infer/prompts_io.h"
#include "infer/rank_report.h"
#include "infer/reusing_allocator.h"
#include "infer/weight_pool.h"
#include "job/infer_job.h"
#include "text/tokenizer.h"
#include "os/memory.h"
#include "viz/progress.h"

namespace pw {

class InferSession {
 public:
  // The Create phase (see the header comment). Rank 0 prints the prompt
  // file's bad lines when `report_bad_lines` (no launcher did). Blocks for
  // the rendezvous and the shared-memory probe.
  static Result<std::unique_ptr<InferSession>> Create(const InferJob& job, const InferSettings& settings,
                                                      const WorldInfo& world, bool report_bad_lines);
  ~InferSession();
  InferSession(const InferSession&) = delete;
  InferSession& operator=(const InferSession&) = delete;

  // Loads and prepacks this rank's weights. Collective when world > 1 (the
  // ranks compare layouts).
  Status Load();

  // Builds the weight pool (calibrating first when needed) and the KV
  // cache. Collective: the pool's ranks meet. Precondition: Load.
  Status BuildPool();

  // Runs the engine until this rank has no more prompts. Blocks; with the
  // shared queue, claims chunks through the job's store. Precondition:
  // BuildPool.
  Status Generate();

  // Finishes the pool (waits for every rank to be done with it), prints
  // this rank's line and reports to world rank 0 (see the header comment).
  // Precondition: Generate.
  Status Finish();

 private:
  InferSession(const InferJob& job, const InferSettings& settings, const WorldInfo& world);
  Status PlanAndReadPrompts(bool report_bad_lines);
  Status JoinGroups();
  Status ProbeSharedMemory();
  PoolOptions PoolOptionsForPlan(LinearLayout layout) const;
  void CheckAccounting();
  // The requests among `part` not done yet; bad ones are answered now.
  Result<std::vector<GenerationRequest>> RequestsOf(const std::vector<PromptRecord>& part);
  InferenceEngine::RequestSource QueueSource();
  Result<InferenceEngine::RequestBatch> ClaimChunks(int64_t chunk, int64_t most_in_flight);
  void OnResult(const GenerationResult& result);
  void ShowProgress(int64_t job_finished);
  InferRankReport Report() const;
  std::optional<MeasuredMemoryReport> MeasuredMemory() const;
  Status ReportJob(const InferRankReport& mine);
  std::string Who() const { return "rank " + std::to_string(world_.rank) + ": "; }

  const InferJob job_;
  InferSettings settings_;  // auto may become shared (ProbeSharedMemory)
  const WorldInfo world_;
  c10::NoGradGuard no_grad_;
  const std::chrono::steady_clock::time_point start_;
  Result<ResidentMemory> at_start_ = Status::Internal("not measured");
  Result<ResidentMemory> after_load_ = Status::Internal("not measured");
  ReusingCpuAllocator* allocator_ = nullptr;  // the process's; lives as long as the process
  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;  // prompts in, results' text out
  std::unique_ptr<ConstraintCache> constraints_;  // structured output, one per pattern
  MemoryPlan plan_;
  PromptFile prompts_;
  std::optional<ResultWriter> writer_;
  DoneSet done_;
  bool queue_ = false;  // the shared queue (else fixed round-robin shares)
  std::vector<GenerationRequest> requests_;  // round-robin: this rank's share
  int64_t job_pending_ = 0;  // prompts of the whole job not done yet
  std::optional<ProcessGroups> groups_;
  std::optional<ModelWeights> weights_;
  LinearLayout layout_ = LinearLayout::kPlain;  // the blocks' (and, for panels, the head's)
  WeightFormat format_ = WeightFormat::kFp32;   // likewise
  double load_s_ = 0;
  PoolCalibration calibration_;  // the pool's options point here
  bool calibrated_ = false;
  std::unique_ptr<WeightPool> pool_;
  std::unique_ptr<PagedKvCache> cache_;
  int64_t held_weights_ = 0;
  bool accounting_exact_ = false;
  std::unique_ptr<InferenceEngine> engine_;
  // Generation's counters and progress.
  int64_t total_ = 0, skipped_done_ = 0, rejected_ = 0;
  int64_t finished_ = 0, generated_ = 0, errors_ = 0;
  bool own_chunk_claimed_ = false;
  Status append_status_;
  std::unique_ptr<ProgressPrinter> progress_;
  std::chrono::steady_clock::time_point run_start_, last_print_, last_report_;
  int64_t unreported_ = 0;  // queue: results not yet added to the job's counter
  double run_s_ = 0;
};

}  // namespace pw
