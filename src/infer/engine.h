// InferenceEngine: one rank's offline generation loop — continuous batching
// over a paged KV cache, with the blocks' weights reached through a
// WeightPool.
//
// A step: give every running sequence the KV blocks for the rows it feeds
// this pass (blocks are taken on demand as sequences grow), preempting the
// youngest running sequence when the cache runs out (its blocks freed, it is
// recomputed later from its tokens so far, ahead of new requests); admit
// waiting sequences, in order, while the pass has rows left within
// max_batch_tokens and the cache holds their first chunk plus a headroom of
// about one decode step of growth; one forward pass over every running
// sequence (decoding sequences contribute one token; new prompts their
// prompt — prefill — in chunks of the rows left when a prompt is longer);
// sample one token per sequence whose prompt is complete; retire sequences
// that reached max_new_tokens, the end byte, or seq_len ("context": no
// position left for the next token), releasing their blocks. Running
// sequences are at most min(max_sequences, max_batch_tokens). Requests that
// can never run (empty, a token outside the vocabulary, longer than seq_len,
// more blocks than the whole cache for their full length: prompt +
// max_new_tokens - 1, capped at seq_len) fail alone with finish_reason
// "error", never the job. Outputs do not depend on batching or preemption,
// bit for bit while the weights are held in panels (infer/layer_math.h
// PackWeights with kPanels; `infer --batch-invariant on`, the default): every
// kernel computes a row from that row alone, in one order, and sampling
// generators travel with their sequences.
//
// Prefix caching (EngineOptions::prefix_caching, on by default): a
// sequence being admitted maps the cached full KV blocks its tokens start
// with (infer/kv_blocks.h: content-addressed, exact, reference-counted)
// and prefills only the rest — always at least its last token, whose
// logits choose the first generated one. A sequence's full blocks are
// indexed as the pass that fills them is planned, so prompts admitted in
// the same pass share them already (the n samples of a prompt, prompts
// behind a common system prompt); blocks nobody holds stay cached until
// the cache needs them (least recently released first). A preempted
// sequence maps what is left of its own blocks when it comes back. The
// mapped keys and values are the ones the sequence would have computed
// (the same tokens at the same positions), so outputs are those of a run
// without caching (bit for bit under batch invariance).
//
// Structured output (GenerationRequest::constraint): before each token is
// chosen, every token that would leave the constraint's language gets
// logit -inf (stop tokens too, until the text is a whole match), so greedy
// and sampled choices are made among the allowed ones; a sequence whose
// text is a whole match that nothing may extend ends ("end"). Logprobs
// stay the model's own (unmasked) distribution. A sequence for which no
// token of the vocabulary fits fails alone ("error").
//
// Sampling: temperature 0 is greedy (argmax, lowest id on ties); otherwise
// top-k then top-p over softmax(logits / temperature), drawn from a
// generator seeded by (seed, the request's id), so a request's output does not
// depend on which rank or batch ran it.
//
// Thread-safety: one thread. Failure: Status from the pool (a peer died),
// InvalidArgument for non-positive max_batch_tokens / max_sequences.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "infer/kv_cache.h"
#include "infer/model_weights.h"
#include "infer/finish_reason.h"
#include "infer/sampling.h"  // SamplingOptions
#include "infer/weight_pool.h"
#include "constrain/token_constraint.h"

namespace pw {

struct GenerationRequest {
  std::string id;               // from the prompt file
  int64_t index = 0;            // position in the prompt file
  std::vector<int64_t> prompt;  // token ids
  int max_new_tokens = 64;
  std::vector<int64_t> stop_tokens;  // stop after generating any of these (EOS, --end-byte)
  // Sample `sample` of the prompt's `samples`: drawn with sampling seed
  // seed + sample, so sample k is what a one-sample run with seed + k draws.
  int sample = 0;
  int samples = 1;
  // Structured output: every generated token keeps the text a prefix of a
  // match (constrain/token_constraint.h); null: unconstrained.
  std::shared_ptr<const TokenConstraint> constraint;
};

struct GenerationResult {
  std::string id;
  int64_t index = 0;
  int sample = 0, samples = 1;  // as the request's
  std::vector<int64_t> tokens;  // generated tokens only
  FinishReason finish_reason = FinishReason::kNone;
  std::string error;            // when finish_reason is kError
  std::vector<TokenLogprobs> logprobs;  // one per generated token when EngineOptions::logprobs >= 0
  int prompt_tokens = 0;
  double seconds = 0;           // admission to finish
};

struct EngineOptions {
  SamplingOptions sampling;
  int64_t max_batch_tokens = 256;  // rows of one forward pass
  int max_sequences = 256;         // running sequences at most
  int logprobs = -1;               // >= 0: score each generated token (ScoreToken) with this many alternatives
  // Map the cached full KV blocks a new sequence's tokens start with
  // instead of computing them (see the class comment).
  bool prefix_caching = true;
  // Called (on the engine's thread, between passes) after the pool handed
  // memory to the KV cache — a weight cache or serving reserve given up —
  // with the blocks added; the worker shrinks its scratch budget to match.
  std::function<void(int64_t kv_blocks)> on_kv_grown;
};

struct EngineStats {
  int64_t steps = 0, generated_tokens = 0, prompt_tokens = 0;
  int peak_sequences = 0;
  int64_t preemptions = 0;       // sequences sent back to be recomputed
  int64_t recomputed_tokens = 0; // cached positions those preemptions dropped
  // Prompt positions (and recomputed ones after a preemption) computed by
  // the model, and those mapped from the prefix cache instead.
  int64_t prefill_tokens = 0, prefix_hit_tokens = 0;
  double seconds = 0;            // inside Run / Step (not between Steps)
  // Model arithmetic (decoder.h PassFlops) of every pass, and the passes
  // that only decode (one row per sequence, no prompt rows): their count,
  // rows, FLOPs and time from the pass's start to its tokens sampled — the
  // steady state of a batch, without prefill and scheduling between passes.
  // Of decode_seconds, the time in attention (decoder.h ForwardChunks):
  // the rest is the blocks' matmuls and norms, the head and sampling.
  double flops = 0;
  int64_t decode_passes = 0, decode_rows = 0;
  double decode_flops = 0, decode_seconds = 0, decode_attention_seconds = 0;
};

class InferenceEngine {
 public:
  // Not owned; must outlive the engine. `weights` holds embedding and head.
  InferenceEngine(const ModelWeights& weights, WeightPool& pool, PagedKvCache& cache,
                  const EngineOptions& options);
  ~InferenceEngine();
  InferenceEngine(const InferenceEngine&) = delete;
  InferenceEngine& operator=(const InferenceEngine&) = delete;

  // More requests on demand (a queue shared by ranks): called whenever the
  // engine has room for another sequence and nothing waits. It returns the
  // next requests — none for "not now" (asked again after the next pass) —
  // and `last` once there will be no more (it is not called again). When
  // the engine is idle it must hand out requests or say `last`. An error
  // ends Run with it.
  struct RequestBatch {
    std::vector<GenerationRequest> requests;
    bool last = false;
  };
  using RequestSource = std::function<Result<RequestBatch>()>;

  // Generates every request — those given and, with `more`, those it hands
  // out — calling `on_result` as each finishes (in finish order). Blocks
  // until all are done. Errors only from the pool or `more`.
  Status Run(std::vector<GenerationRequest> requests,
             const std::function<void(const GenerationResult&)>& on_result,
             const RequestSource& more = nullptr);

  // The same, one pass at a time, for callers that interleave passes with
  // other work (a side task in a training rank's bubbles, harvest/).
  // Start queues `requests` (those that can never run are answered at once
  // through `on_result`); FailedPrecondition while a run is in progress,
  // InvalidArgument for bad options. Each Step runs one forward pass and
  // returns true once every request is done; then, or after an error, the
  // run is over (its KV blocks released) and Start may be called again.
  // Between Steps the engine holds its state and does nothing.
  Status Start(std::vector<GenerationRequest> requests,
               std::function<void(const GenerationResult&)> on_result,
               RequestSource more = nullptr);
  Result<bool> Step();

  const EngineStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pw
