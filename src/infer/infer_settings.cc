#include "infer/infer_settings.h"

#include <filesystem>

#include "core/units.h"
#include "os/memory.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"
#include "model/model_config.h"

namespace pw {

Result<WeightSource> ResolveWeightSource(const std::string& checkpoint, const std::string& model_dir,
                                         const std::string& config, const std::vector<std::string>& set,
                                         uint64_t seed, std::string* note) {
  WeightSource source;
  if (int(!checkpoint.empty()) + int(!model_dir.empty()) + int(!config.empty()) > 1) {
    return Status::InvalidArgument("give one of --checkpoint, --model and --config: each describes the model "
                                   "(a checkpoint and a Hugging Face directory carry their own config)");
  }
  if (!model_dir.empty()) {
    source.hf_dir = AbsolutePath(model_dir);
    PW_ASSIGN_OR_RETURN(source.config, ReadHfConfig(model_dir));
    // --set adjusts what the weights leave free, e.g. a shorter model.seq_len.
    PW_RETURN_IF_ERROR(ApplyOverrides(source.config, set));
    *note = "Hugging Face model " + model_dir;
    return source;
  }
  if (!checkpoint.empty() && !set.empty()) {
    return Status::InvalidArgument("--set " + set.front() + " with --checkpoint: the checkpoint fixes the "
                                   "model's shape; use --config (random init) to change it");
  }
  if (!checkpoint.empty()) {
    source.checkpoint_dir = AbsolutePath(checkpoint);
    *note = "checkpoint " + checkpoint;
    return source;
  }
  if (!config.empty()) {
    PW_ASSIGN_OR_RETURN(source.config, LoadModelConfig(config));
  }
  for (const std::string& s : set) {
    if (s.rfind("model.", 0) != 0) {
      return Status::InvalidArgument("--set " + s + ": use model.<key>=<value> (keys of the [model] table)");
    }
  }
  PW_RETURN_IF_ERROR(ApplyOverrides(source.config, set));
  source.seed = seed;
  *note = config.empty() ? "no --checkpoint or --config given, so a random init (seed " + std::to_string(seed) +
                               ") of the built-in tiny model (examples/tiny.toml): outputs are noise, for "
                               "throughput studies"
                         : "random init (seed " + std::to_string(seed) + ") of " + config;
  return source;
}

Result<int64_t> ResolveMemoryBudget(const std::string& text, int local_ranks, int64_t available_bytes,
                                    std::string* note) {
  if (text == "auto") {
    const int ranks = std::max(local_ranks, 1);
    const auto bytes = static_cast<int64_t>(kAutoBudgetShare * static_cast<double>(available_bytes) / ranks);
    *note = "auto: 80 % of the " + FormatBytes(static_cast<double>(available_bytes)) + " this host has available" +
            (ranks > 1 ? ", over " + std::to_string(ranks) + " ranks" : std::string());
    if (bytes <= 0) {
      return Status::FailedPrecondition("--memory-budget auto: this host reports no available memory; give a size");
    }
    return bytes;
  }
  Result<double> budget = ParseByteSize(text);
  if (!budget.ok()) return budget.status().WithContext("--memory-budget " + text + " (a size such as 6GiB, or auto)");
  note->clear();
  return static_cast<int64_t>(*budget);
}

Status ResolveWeightsLayout(const std::string& weights_layout, const std::string& batch_invariant,
                            LinearLayout* layout, LinearLayout* fallback) {
  const bool invariant = batch_invariant == "on";
  *fallback = LinearLayout::kPlain;
  if (weights_layout == "auto") {
    // Panels carry the guarantee; without it oneDNN's prepacked kernels
    // (AVX-512 only) are a little faster at many rows, and panels beat
    // OpenBLAS at every row count measured (docs/inference.md).
    *layout = invariant ? LinearLayout::kPanels : LinearLayout::kOneDnn;
    *fallback = LinearLayout::kPanels;
  } else if (weights_layout == "panels") {
    *layout = LinearLayout::kPanels;
  } else if (weights_layout == "prepacked" || weights_layout == "plain") {
    if (invariant) {
      return Status::InvalidArgument("--weights-layout " + weights_layout +
                                     " cannot keep --batch-invariant on: its kernels choose their summation order "
                                     "by the batch's shape; give --weights-layout panels (or auto), or "
                                     "--batch-invariant off");
    }
    *layout = weights_layout == "plain" ? LinearLayout::kPlain : LinearLayout::kOneDnn;
  } else {
    return Status::InvalidArgument("--weights-layout '" + weights_layout +
                                   "': give auto, panels, prepacked or plain");
  }
  return Status::Ok();
}

Status ResolveWeightFormat(const std::string& weights, const std::string& weights_layout, const WeightSource& source,
                           LinearLayout* layout, WeightFormat* format) {
  const bool layout_free = weights_layout == "auto" || weights_layout == "panels";
  if (weights == "auto") {
    *format = WeightFormat::kFp32;
    if (source.hf_dir.empty() || !layout_free) return Status::Ok();
    Result<at::ScalarType> stored = HfStoredDtype(source.hf_dir);
    if (!stored.ok()) return stored.status().WithContext("--weights auto (reading the checkpoint's precision)");
    if (*stored == at::kBFloat16 || *stored == at::kHalf) *format = WeightFormat::kBf16;
  } else {
    Result<WeightFormat> parsed = ParseWeightFormat(weights);
    if (!parsed.ok()) return Status::InvalidArgument("--weights '" + weights + "': give auto, fp32, bf16 or int8");
    *format = *parsed;
    if (*format != WeightFormat::kFp32 && !layout_free) {
      return Status::InvalidArgument("--weights " + weights + " is held in panels only; give --weights-layout "
                                     "panels (or auto) instead of " + weights_layout + ", or --weights fp32");
    }
  }
  if (*format != WeightFormat::kFp32) *layout = LinearLayout::kPanels;
  return Status::Ok();
}

Result<InferSettings> ResolveInferJob(const InferJob& job) {
  InferSettings s;
  if (job.prompts.empty()) return Status::InvalidArgument("--prompts FILE.jsonl is required (one {\"prompt\": ...} per line)");
  if (job.out.empty()) return Status::InvalidArgument("--out FILE.jsonl is required (results are appended there)");
  PW_ASSIGN_OR_RETURN(s.source, ResolveWeightSource(job.checkpoint, job.model_dir, job.config, job.set, job.seed, &s.source_note));
  s.source_note = "model: " + s.source_note;
  // Ranges and choices (mode, split, kv_dtype, weights_layout) first: a job
  // file bypasses the flags' checks.
  PW_RETURN_IF_ERROR(CheckFieldRanges(job));
  PW_ASSIGN_OR_RETURN(s.pool.mode, ParsePoolMode(job.mode));
  s.shared_queue = job.split == "queue";
  Result<KvDtype> kv_dtype = ParseKvDtype(job.kv_dtype);
  if (!kv_dtype.ok()) return kv_dtype.status().WithContext("--kv-dtype");
  s.kv_dtype = *kv_dtype;
  PW_RETURN_IF_ERROR(ResolveWeightsLayout(job.weights_layout, job.batch_invariant, &s.weights_layout,
                                           &s.fallback_layout));
  PW_RETURN_IF_ERROR(
      ResolveWeightFormat(job.weights, job.weights_layout, s.source, &s.weights_layout, &s.weight_format));
  s.pool.blocks_format = s.weight_format;
  s.pool.cache_slots = job.cache_slots;
  s.pool.prefetch_depth = job.prefetch_depth;
  if (job.cache_slots < 2 || job.prefetch_depth < 1 || job.prefetch_depth >= job.cache_slots) {
    return Status::InvalidArgument("--cache-slots " + std::to_string(job.cache_slots) + " --prefetch-depth " +
                                   std::to_string(job.prefetch_depth) +
                                   ": need cache-slots >= 2 and 1 <= prefetch-depth < cache-slots");
  }
  int64_t available = 0;
  if (job.memory_budget == "auto") {
    Result<MemoryInfo> memory = ReadMemoryInfo();
    if (!memory.ok()) {
      return memory.status().WithContext("--memory-budget auto (reading what the host has; give a size instead)");
    }
    available = memory->available_bytes;
  }
  PW_ASSIGN_OR_RETURN(s.budget_bytes, ResolveMemoryBudget(job.memory_budget, job.ranks, available, &s.budget_note));
  if (!(job.top_p > 0 && job.top_p <= 1)) return Status::InvalidArgument("--top-p must be in (0, 1] (1: no cut)");
  s.sampling = {job.temperature, job.top_k, job.top_p, job.sampling_seed};
  const std::filesystem::path out_dir = std::filesystem::path(AbsolutePath(job.out)).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(out_dir, ec)) {
    return Status::NotFound("--out " + job.out + ": directory " + out_dir.string() +
                            " does not exist; create it first");
  }
  return s;
}

}  // namespace pw
