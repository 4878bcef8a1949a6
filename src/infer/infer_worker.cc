#include "infer/infer_worker.h"

#include <algorithm>
#include <memory>

#include "infer/infer_session.h"

namespace pw {

Result<MemoryPlan> PlanForRank(const InferJob& job, const InferSettings& settings, const ModelConfig& config,
                               int rank, int world) {
  MemoryPlanInput in;
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
  return options;
}

ResultRecord ToResultRecord(const GenerationResult& g, int rank, bool logprobs) {
  ResultRecord r;
  r.id = g.id;
  r.index = g.index;
  r.tokens = g.tokens;
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
                                             const ModelConfig& config,
                                             std::vector<ResultRecord>* rejected) {
  std::vector<GenerationRequest> requests;
  for (const PromptRecord& p : share) {
    if (done.ids.count(p.id) != 0) continue;
    GenerationRequest r;
    r.id = p.id;
    r.index = p.index;
    r.max_new_tokens = p.max_tokens > 0 ? p.max_tokens : job.max_tokens;
    r.end_token = job.end_byte;
    bool in_vocab = true;
    for (unsigned char c : p.prompt) {
      in_vocab = in_vocab && c < config.vocab_size;
      r.prompt.push_back(c);
    }
    if (!in_vocab) {
      ResultRecord bad;
      bad.id = p.id;
      bad.index = p.index;
      bad.finish_reason = "error";
      bad.error = "line " + std::to_string(p.line) + ": the prompt has bytes >= the model's vocab_size " +
                  std::to_string(config.vocab_size) + "; use a byte-level model (vocab_size = 256)";
      bad.prompt_tokens = static_cast<int>(p.prompt.size());
      bad.has_logprobs = job.logprobs >= 0;
      if (rejected != nullptr) rejected->push_back(std::move(bad));
      continue;
    }
    requests.push_back(std::move(r));
  }
  return requests;
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
