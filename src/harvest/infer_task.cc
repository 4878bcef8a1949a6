// Inference side task: `pipewright infer`'s engine (infer/engine.h) in a
// training rank's bubbles. It generates the prompts of a JSONL file into a
// results file exactly as a one-rank `pipewright infer --mode replicate`
// with the same settings would — same engine, same sampling seeds per
// prompt, same results format — one forward pass per step, so the pipeline's
// idle time generates text. Work unit: generated tokens.
//
// Options are InferJob's own fields (job/infer_job.h) under the same names
// (checkpoint, config, seed, prompts, out, max_tokens, temperature, …), so
// the two cannot drift apart; the pool options and the rank count are not
// options here (one process, every block held).
//
// Resumable: each finished prompt is appended to `out` at once (one locked
// write, infer/prompts_io.h), and Setup skips the ids already there, so a
// task stopped with its training run goes on where it stopped when the
// next run starts it with the same `out`. A pass cut off by a stop is lost
// and recomputed, never half-written.
#include <cstdlib>
#include <memory>
#include <set>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "harvest/builtin_tasks.h"
#include "infer/engine.h"
#include "infer/infer_worker.h"
#include "infer/layer_math.h"
#include "job/fields_json.h"
#include "os/environment.h"

namespace pw {
namespace {

// InferJob fields a side task takes: the weights, the files, the cache and
// the sampling. Ranks, the pool and the job's plumbing are fixed here.
const std::set<std::string>& TaskFields() {
  static const std::set<std::string> fields = {
      "checkpoint",  "config",      "seed",      "prompts",       "out",        "memory_budget",
      "block_size",  "kv_dtype",    "max_batch_tokens", "max_sequences", "max_tokens", "temperature", "top_k",
      "top_p",       "sampling_seed",    "end_byte",      "logprobs",
      "tokenizer",   "ignore_eos",  "model",     "n",          "prefix_cache", "batch_invariant",
      "json_schema", "weights", "weights_layout"};
  return fields;
}

// Without memory_budget=, a quarter of what the task was told it may use
// (PIPEWRIGHT_TASK_MEMORY_BYTES: the rest is LibTorch and the weights'
// loading), at most kSideTaskBudget.
// (A side task never takes infer's auto budget: the host's memory is the
// training's.)
constexpr const char* kSideTaskBudget = "256MiB";

std::string DefaultBudget() {
  const std::optional<std::string> told = EnvironmentVariable("PIPEWRIGHT_TASK_MEMORY_BYTES");
  Result<double> fallback = ParseByteSize(kSideTaskBudget);
  if (!told || !fallback.ok()) return kSideTaskBudget;
  const double quarter = std::strtod(told->c_str(), nullptr) / 4;
  if (!(quarter > 0) || quarter >= *fallback) return kSideTaskBudget;
  return std::to_string(static_cast<int64_t>(quarter));
}

class InferTask : public SideTask {
 public:
  // `settings`: ResolveInferJob(job), done once by the factory.
  InferTask(InferJob job, InferSettings settings) : job_(std::move(job)), settings_(std::move(settings)) {}
  std::string name() const override { return "infer"; }
  std::string unit() const override { return "tokens"; }

  Status Setup() override {
    at::set_num_threads(1);
    torch::NoGradGuard no_grad;
    PW_ASSIGN_OR_RETURN(ModelConfig config, SourceConfig(settings_.source));
    PW_ASSIGN_OR_RETURN(PromptFile prompts, ReadPromptFile(job_.prompts));
    PW_ASSIGN_OR_RETURN(tokenizer_, LoadModelTokenizer(job_.tokenizer, TokenizerDirOf(job_.model_dir, job_.checkpoint),
                                                       config, EveryPromptIsIds(prompts.prompts)));
    PW_ASSIGN_OR_RETURN(MemoryPlan plan, PlanForRank(job_, settings_, config, prompts.prompts, 0, 1));
    for (const std::string& problem : prompts.problems) std::fprintf(stderr, "infer: %s (skipped)\n", problem.c_str());
    PW_RETURN_IF_ERROR(ApplyJobSchema(job_, prompts.prompts));
    constraints_ = std::make_unique<ConstraintCache>(*tokenizer_, config.vocab_size);
    PW_ASSIGN_OR_RETURN(ResultWriter writer, ResultWriter::Open(job_.out));  // cuts a torn tail first
    writer_ = std::make_unique<ResultWriter>(std::move(writer));
    PW_ASSIGN_OR_RETURN(DoneSet done, ReadDoneIds(job_.out));
    std::vector<ResultRecord> rejected;
    skipped_ = 0;
    std::vector<GenerationRequest> requests =
        BuildRequests(prompts.prompts, done, job_, config, *tokenizer_, &rejected, &skipped_, constraints_.get());
    for (const ResultRecord& r : rejected) PW_RETURN_IF_ERROR(writer_->Append(r));
    pending_ = static_cast<int64_t>(requests.size());
    if (requests.empty()) return Status::Ok();  // Done() at once: nothing left to generate

    // One process: oneDNN's layout wherever this CPU has it (as `infer`
    // computes blocks where they are held), panels for the guarantee.
    LinearLayout layout = settings_.weights_layout;
    if (layout == LinearLayout::kOneDnn && !BlockPrepackable(config)) layout = settings_.fallback_layout;
    const WeightFormat format = settings_.weight_format;
    LoadFinishers finish;
    finish.block = [&](BlockWeights& b) { PrepackBlock(b, config, layout, format); };
    finish.shared = [&](ModelWeights& w) { PackWeights(w, layout, format); };
    PW_ASSIGN_OR_RETURN(ModelWeights weights,
                        LoadModelWeights(settings_.source, OwnedBlocks(0, 1, config.n_layers), /*keep_all=*/true,
                                         finish));
    weights_ = std::make_unique<ModelWeights>(std::move(weights));
    PW_ASSIGN_OR_RETURN(pool_, CreateWeightPool(settings_.pool, *weights_, /*groups=*/nullptr));
    cache_ = std::make_unique<PagedKvCache>(config, plan.kv_blocks, plan.block_size, plan.kv_swap_blocks,
                                            plan.kv_dtype);
    engine_ = std::make_unique<InferenceEngine>(*weights_, *pool_, *cache_, EngineOptionsFor(job_, settings_));
    return engine_->Start(std::move(requests), [this](const GenerationResult& g) {
      if (append_status_.ok()) append_status_ = writer_->Append(ToResultRecord(g, 0, job_.logprobs >= 0, *tokenizer_));
      ++finished_;
    });
  }

  Result<double> Step() override {
    if (Done()) return 0.0;
    if (!engine_) return Status::FailedPrecondition("infer: Step before Setup");
    torch::NoGradGuard no_grad;
    const int64_t before = engine_->stats().generated_tokens;
    Result<bool> over = engine_->Step();
    if (!over.ok()) return over.status().WithContext("infer");
    PW_RETURN_IF_ERROR(append_status_.WithContext("infer: writing " + job_.out));
    engine_done_ = *over;
    return static_cast<double>(engine_->stats().generated_tokens - before);
  }

  bool Done() const override { return engine_done_ || pending_ == 0; }

  std::vector<std::pair<std::string, double>> Metrics() const override {
    const double tokens = engine_ ? static_cast<double>(engine_->stats().generated_tokens) : 0;
    return {{"prompts_finished", static_cast<double>(finished_)},
            {"prompts_left", static_cast<double>(pending_ - finished_)},
            {"prompts_done_before", static_cast<double>(skipped_)},
            {"generated_tokens", tokens}};
  }

 private:
  InferJob job_;
  InferSettings settings_;
  std::unique_ptr<ResultWriter> writer_;
  std::unique_ptr<Tokenizer> tokenizer_;  // prompts in, results' text out
  std::unique_ptr<ConstraintCache> constraints_;  // structured output
  std::unique_ptr<ModelWeights> weights_;
  std::unique_ptr<WeightPool> pool_;
  std::unique_ptr<PagedKvCache> cache_;
  std::unique_ptr<InferenceEngine> engine_;  // declared last: destroyed before what it points to
  Status append_status_;
  int64_t pending_ = 0, finished_ = 0, skipped_ = 0;
  bool engine_done_ = false;
};

}  // namespace

BuiltinSideTaskInfo InferTaskInfo() {
  BuiltinSideTaskInfo info{"infer", "tokens",
                           "generate text for a JSONL prompt file with pipewright infer's engine (one process, "
                           "every block held), appending to a results file it resumes from",
                           {}};
  const nlohmann::json defaults = FieldsToJson(InferJob{});
  auto visit = [&](const auto&, const FieldInfo& field) {
    const std::string key(field.name);
    if (TaskFields().count(key) == 0) return;
    const nlohmann::json& value = defaults.at(key);
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    std::string help(field.help);
    if (key == "memory_budget") {
      text = kSideTaskBudget;
      help += " (default: a quarter of the task's memory limit, at most " + text + ")";
    }
    if (key == "prompts" || key == "out") help += " (required)";
    info.options.push_back({key, text, help});
  };
  InferJob{}.VisitFields(visit);
  return info;
}

Result<std::unique_ptr<SideTask>> MakeInferTask(const TaskOptions& options) {
  InferJob job;
  job.ranks = 1;
  job.mode = "replicate";
  job.memory_budget = DefaultBudget();
  for (const std::string& key : TaskFields()) {
    if (!options.Given(key)) continue;
    const std::string value = options.String(key);
    PW_RETURN_IF_ERROR(SetFieldFromText(job, "infer", key, value, "side task infer: option " + key + "=" + value));
  }
  if (job.prompts.empty() || job.out.empty()) {
    return Status::InvalidArgument(
        "side task infer: prompts= and out= are required, e.g. "
        "infer:checkpoint=out/ckpt,prompts=examples/prompts.jsonl,out=side.jsonl");
  }
  MakePathsAbsolute(job);
  // The settings' own checks (a missing --out directory, both checkpoint
  // and config, a bad budget) fail here, before any rank starts.
  Result<InferSettings> settings = ResolveInferJob(job);
  if (!settings.ok()) return settings.status().WithContext("side task infer");
  return std::unique_ptr<SideTask>(std::make_unique<InferTask>(std::move(job), std::move(settings).value()));
}

}  // namespace pw
