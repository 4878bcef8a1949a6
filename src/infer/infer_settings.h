// The typed settings an inference rank works with, derived from an InferJob
// (job/infer_job.h): where the weights come from, the weight pool's
// options, the memory budget in bytes and the sampling. Deriving them also
// checks what a user can get wrong, so `pipewright infer` fails before any
// rank starts.
//
// Thread-safety: pure, except that ResolveInferJob looks at the file system
// (the --out directory) and reads --config.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "infer/kv_cache.h"
#include "infer/model_weights.h"
#include "infer/sampling.h"
#include "infer/weight_pool.h"
#include "job/infer_job.h"

namespace pw {

struct InferSettings {
  WeightSource source;
  PoolOptions pool;
  int64_t budget_bytes = 0;   // per rank
  SamplingOptions sampling;
  bool shared_queue = true;   // --split queue (false: round-robin)
  KvDtype kv_dtype = KvDtype::kFp32;
  // --weights-layout resolved against --batch-invariant: kPanels, kPlain,
  // or kOneDnn where the CPU and the mode allow it, else fallback_layout.
  LinearLayout weights_layout = LinearLayout::kPanels;
  LinearLayout fallback_layout = LinearLayout::kPlain;
  // --weights resolved (auto: the checkpoint's own precision); also
  // pool.blocks_format. Not fp32 only with weights_layout kPanels.
  WeightFormat weight_format = WeightFormat::kFp32;
  std::string source_note;    // one line: where the weights come from
  std::string budget_note;    // --memory-budget auto: how the budget was found ("" otherwise)
};

// --memory-budget auto: this share of the host's available memory
// (MemAvailable), divided among the local ranks — as vLLM's
// gpu_memory_utilization; the rest is left to the OS and other processes.
inline constexpr double kAutoBudgetShare = 0.8;

// The per-rank budget of --memory-budget `text` for `local_ranks` ranks:
// bytes as given, or auto from `available_bytes`. `note` gets how auto
// found it. InvalidArgument for text that is neither.
Result<int64_t> ResolveMemoryBudget(const std::string& text, int local_ranks, int64_t available_bytes,
                                    std::string* note);

// The layout of --weights-layout under --batch-invariant (the job's
// fields), and what stands in where oneDNN's is not possible. InvalidArgument
// for a layout that cannot keep an asked guarantee (prepacked or plain with
// batch invariance on), saying what to give instead.
Status ResolveWeightsLayout(const std::string& weights_layout, const std::string& batch_invariant,
                            LinearLayout* layout, LinearLayout* fallback);

// --weights (auto, fp32, bf16, int8) for weights from `source`, with the
// layout ResolveWeightsLayout gave for `weights_layout`: auto is bf16 for a
// Hugging Face directory stored in 16 bits where the layout may be panels,
// else fp32; bf16 and int8 make an auto layout panels. InvalidArgument
// naming the flag for an unknown name, or bf16/int8 with a layout given as
// prepacked or plain. Reads the checkpoint's header for auto.
Status ResolveWeightFormat(const std::string& weights, const std::string& weights_layout, const WeightSource& source,
                           LinearLayout* layout, WeightFormat* format);

// The weights a job names: --checkpoint, --model (a Hugging Face directory,
// its config.json adjusted by --set), else a random init (seed) of the
// --config TOML or, without one, of the built-in tiny model, with --set
// model.KEY=VALUE overrides; `note` gets one line saying which
// ("checkpoint DIR", "random init (seed 7) of FILE", ...).
// InvalidArgument naming the flag: two of --checkpoint, --model and
// --config, --set with --checkpoint or outside model.*; the config files'
// errors. Reads the config files.
Result<WeightSource> ResolveWeightSource(const std::string& checkpoint, const std::string& model_dir,
                                         const std::string& config, const std::vector<std::string>& set,
                                         uint64_t seed, std::string* note);

// InvalidArgument / NotFound naming the flag: no --prompts or --out, both
// --checkpoint and --config, --set with --checkpoint or outside model.*, a
// bad --mode, --split, --kv-dtype, --weights-layout, --memory-budget, --cache-slots/--prefetch-depth, --top-p, an
// --out directory that does not exist.
Result<InferSettings> ResolveInferJob(const InferJob& job);

}  // namespace pw
