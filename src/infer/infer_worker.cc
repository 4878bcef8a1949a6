#include "infer/infer_worker.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "infer/infer_session.h"
#include "model/checkpoint_manifest.h"
#include "text/tokenizer_loader.h"

namespace pw {

int64_t KvBlocksWanted(const std::vector<PromptRecord>& prompts, const InferJob& job, const ModelConfig& config) {
  const int64_t block = std::max(job.block_size, 1);
  std::vector<int64_t> blocks;  // one per sample
  for (const PromptRecord& p : prompts) {
    const int64_t tokens = p.prompt_ids.empty() ? static_cast<int64_t>(p.prompt.size()) + 2
                                                : static_cast<int64_t>(p.prompt_ids.size());
    const int64_t positions = std::min<int64_t>(config.seq_len, tokens + (p.max_tokens > 0 ? p.max_tokens : job.max_tokens));
    const int samples = p.n > 0 ? p.n : job.n;
    for (int s = 0; s < samples; ++s) blocks.push_back((positions + block - 1) / block);
  }
  const size_t at_once = std::min(blocks.size(), static_cast<size_t>(std::max(job.max_sequences, 1)));
  std::partial_sort(blocks.begin(), blocks.begin() + at_once, blocks.end(), std::greater<>());
  int64_t wanted = 0;
  for (size_t i = 0; i < at_once; ++i) wanted += blocks[i];
  return wanted;
}

Result<MemoryPlan> PlanForRank(const InferJob& job, const InferSettings& settings, const ModelConfig& config,
                               const std::vector<PromptRecord>& prompts, int rank, int world) {
  MemoryPlanInput in;
  if (job.kv_cache == "prompts") in.kv_blocks_wanted = KvBlocksWanted(prompts, job, config);
  in.config = config;
  in.pool = settings.pool;
  in.rank = rank;
  in.world = world;
  in.budget_bytes = settings.budget_bytes;
  in.block_size = job.block_size;
  in.kv_dtype = settings.kv_dtype;
  in.max_batch_tokens = job.max_batch_tokens;
  return PlanMemory(in);
}

EngineOptions EngineOptionsFor(const InferJob& job, const InferSettings& settings) {
  EngineOptions options;
  options.sampling = settings.sampling;
  options.logprobs = job.logprobs;
  options.max_batch_tokens = job.max_batch_tokens;
  options.max_sequences = job.max_sequences;
  options.prefix_caching = job.prefix_cache == "on";
  return options;
}

std::string TokenizerDirOf(const std::string& model_dir, const std::string& checkpoint) {
  if (!model_dir.empty() || checkpoint.empty()) return model_dir;
  const std::string carried = (std::filesystem::path(checkpoint) / kCheckpointSourceDir).string();
  return HasTokenizerFiles(carried) ? carried : std::string();
}

bool EveryPromptIsIds(const std::vector<PromptRecord>& prompts) {
  return !prompts.empty() &&
         std::all_of(prompts.begin(), prompts.end(), [](const PromptRecord& p) { return !p.prompt_ids.empty(); });
}

Result<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& tokenizer_path, const std::string& model_dir,
                                                      const ModelConfig& config, bool ids_only) {
  const std::string& path = !tokenizer_path.empty() ? tokenizer_path : model_dir;
  // A model directory without tokenizer files: a byte-level model exported
  // by `pipewright export` (its ids are bytes), or one served from ids.
  const bool no_tokenizer_files = tokenizer_path.empty() && !model_dir.empty() && !HasTokenizerFiles(model_dir);
  if (path.empty() || no_tokenizer_files) {
    if (config.vocab_size == 256) return MakeByteTokenizer();
    if (ids_only) return MakeIdsOnlyTokenizer(config.vocab_size, model_dir);
    return Status::InvalidArgument("the model's vocabulary has " + std::to_string(config.vocab_size) +
                                   " tokens, not 256 bytes, and " +
                                   (model_dir.empty() ? std::string("no tokenizer was given")
                                                      : model_dir + " holds no tokenizer files") +
                                   ": give its tokenizer with --tokenizer PATH (tokenizer.json, tokenizer.model or "
                                   "their directory), or every prompt as \"prompt_ids\"");
  }
  Result<std::unique_ptr<Tokenizer>> tokenizer = LoadTokenizer(path);
  if (!tokenizer.ok()) return tokenizer.status().WithContext("tokenizer");
  // Checkpoints often pad the embedding past the tokenizer (Qwen2: 151,936
  // rows for 151,665 tokens); a tokenizer larger than the model is another model's.
  if ((*tokenizer)->vocab_size() > config.vocab_size) {
    return Status::InvalidArgument("tokenizer " + path + " has " + std::to_string((*tokenizer)->vocab_size()) +
                                   " tokens but the model's vocabulary has " + std::to_string(config.vocab_size) +
                                   "; give the model's own tokenizer with --tokenizer");
  }
  return tokenizer;
}

ResultRecord ToResultRecord(const GenerationResult& g, int rank, bool logprobs, const Tokenizer& tokenizer) {
  ResultRecord r;
  r.id = g.id;
  r.index = g.index;
  r.sample = g.sample;
  r.samples = g.samples;
  r.tokens = g.tokens;
  std::vector<int32_t> ids(g.tokens.begin(), g.tokens.end());
  // A sampled id the tokenizer lacks (a padded embedding row) decodes to nothing.
  std::erase_if(ids, [&](int32_t id) { return id < 0 || id >= tokenizer.vocab_size(); });
  Result<std::string> text = tokenizer.Decode(ids, /*skip_special=*/true);
  if (!text.ok()) {
    // An id the vocabulary has no token for (a gap): decode the rest one by one.
    std::string pieces;
    for (int32_t id : ids) {
      Result<std::string> piece = tokenizer.Decode(std::vector<int32_t>{id}, /*skip_special=*/true);
      if (piece.ok()) pieces += *piece;
    }
    text = std::move(pieces);
  }
  r.text = *text;
  r.finish_reason = g.finish_reason;
  r.error = g.error;
  r.prompt_tokens = g.prompt_tokens;
  r.rank = rank;
  r.seconds = g.seconds;
  r.has_logprobs = logprobs;
  r.logprobs = g.logprobs;
  return r;
}

int64_t QueueChunk(int requested, int64_t prompts, int ranks) {
  if (requested > 0) return requested;
  return std::clamp<int64_t>(prompts / (8 * std::max(1, ranks)), 1, 16);
}

std::vector<GenerationRequest> BuildRequests(const std::vector<PromptRecord>& share,
                                             const DoneSet& done, const InferJob& job,
                                             const ModelConfig& config, const Tokenizer& tokenizer,
                                             std::vector<ResultRecord>* rejected, int64_t* skipped_done,
                                             ConstraintCache* constraints) {
  std::vector<int64_t> stops;
  if (job.end_byte >= 0 && tokenizer.kind() == "byte") stops.push_back(job.end_byte);
  if (!job.ignore_eos) stops.insert(stops.end(), tokenizer.special().stop_ids.begin(), tokenizer.special().stop_ids.end());
  std::vector<GenerationRequest> requests;
  for (const PromptRecord& p : share) {
    const int samples = SamplesOf(p, job);
    // The samples not in the results file yet (resume).
    std::vector<int> todo;
    for (int k = 0; k < samples; ++k) {
      if (done.ids.count(SampleKey(p.id, k, samples)) == 0) todo.push_back(k);
    }
    if (skipped_done != nullptr) *skipped_done += samples - static_cast<int64_t>(todo.size());
    if (todo.empty()) continue;
    GenerationRequest r;
    r.id = p.id;
    r.index = p.index;
    r.samples = samples;
    r.max_new_tokens = p.max_tokens > 0 ? p.max_tokens : job.max_tokens;
    r.stop_tokens = stops;
    std::string problem;
    if (!p.prompt_ids.empty()) {
      r.prompt = p.prompt_ids;
    } else if (Result<std::vector<int32_t>> ids = tokenizer.Encode(p.prompt); !ids.ok()) {
      problem = ids.status().message();
    } else {
      if (tokenizer.special().add_bos && tokenizer.special().bos) r.prompt.push_back(*tokenizer.special().bos);
      r.prompt.insert(r.prompt.end(), ids->begin(), ids->end());
    }
    if (problem.empty() && static_cast<int64_t>(r.prompt.size()) > config.seq_len) {
      problem = "prompt of " + std::to_string(r.prompt.size()) + " tokens exceeds the model's context of " +
                std::to_string(config.seq_len) + " tokens; shorten it";
    }
    if (problem.empty() && (!p.json_schema.empty() || !p.regex.empty())) {
      if (constraints == nullptr) {
        problem = "structured output (\"json_schema\" / \"regex\") is not available here";
      } else if (Result<std::shared_ptr<const TokenConstraint>> c = constraints->Get(p.json_schema, p.regex); !c.ok()) {
        problem = c.status().message();
      } else {
        r.constraint = *c;
      }
    }
    for (size_t i = 0; problem.empty() && i < r.prompt.size(); ++i) {
      if (r.prompt[i] >= config.vocab_size) {
        problem = "prompt token " + std::to_string(i) + " is " + std::to_string(r.prompt[i]) +
                  ", outside the model's vocabulary of " + std::to_string(config.vocab_size) +
                  (tokenizer.kind() == "byte" ? "; use a byte-level model (vocab_size = 256)" : "");
      }
    }
    for (int k : todo) {
      if (!problem.empty()) {
        ResultRecord bad;
        bad.id = p.id;
        bad.index = p.index;
        bad.sample = k;
        bad.samples = samples;
        bad.finish_reason = FinishReason::kError;
        bad.error = "line " + std::to_string(p.line) + ": " + problem;
        bad.prompt_tokens = static_cast<int>(r.prompt.size());
        bad.has_logprobs = job.logprobs >= 0;
        if (rejected != nullptr) rejected->push_back(std::move(bad));
        continue;
      }
      GenerationRequest sample = r;
      sample.sample = k;
      requests.push_back(std::move(sample));
    }
  }
  return requests;
}

Status ApplyJobSchema(const InferJob& job, std::vector<PromptRecord>& prompts) {
  if (job.json_schema.empty()) return Status::Ok();
  Result<std::string> text = ReadTextFile(job.json_schema);
  if (!text.ok()) return text.status().WithContext("--json-schema");
  const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(*text, nullptr, false);
  if (schema.is_discarded() || !(schema.is_object() || schema.is_boolean())) {
    return Status::InvalidArgument("--json-schema " + job.json_schema + ": not a JSON Schema (a JSON object)");
  }
  const std::string compact = schema.dump();
  PW_RETURN_IF_ERROR(TokenConstraint::Check(compact, "").WithContext("--json-schema " + job.json_schema));
  for (PromptRecord& p : prompts) {
    if (p.json_schema.empty() && p.regex.empty()) p.json_schema = compact;
  }
  return Status::Ok();
}

int SamplesOf(const PromptRecord& prompt, const InferJob& job) { return prompt.n > 0 ? prompt.n : job.n; }

int64_t PendingSamples(const std::vector<PromptRecord>& prompts, const DoneSet& done, const InferJob& job) {
  int64_t pending = 0;
  for (const PromptRecord& p : prompts) {
    const int samples = SamplesOf(p, job);
    for (int k = 0; k < samples; ++k) pending += done.ids.count(SampleKey(p.id, k, samples)) == 0 ? 1 : 0;
  }
  return pending;
}

Status RunInferRank(const InferJob& job, const InferSettings& settings, const WorldInfo& world,
                    bool report_bad_lines) {
  PW_ASSIGN_OR_RETURN(std::unique_ptr<InferSession> session,
                      InferSession::Create(job, settings, world, report_bad_lines));
  PW_RETURN_IF_ERROR(session->Load());
  PW_RETURN_IF_ERROR(session->BuildPool());
  PW_RETURN_IF_ERROR(session->Generate());
  return session->Finish();
}

}  // namespace pw
