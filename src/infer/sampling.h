// Choosing the next token from a sequence's logits: greedy (argmax, lowest
// id on ties) or seeded sampling (temperature, then top-k, then top-p over
// the softmax). Each request draws from its own generator seeded by
// (seed, RequestKey of its id), one draw per generated token, so its output
// does not depend on the rank, the batch, the other requests or where its
// line sits in the prompt file.
//
// Thread-safety: pure functions; a generator is used by one thread.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "infer/token_logprobs.h"

namespace pw {

struct SamplingOptions {
  double temperature = 0;   // 0: greedy
  int top_k = 0;            // 0: no limit
  double top_p = 1.0;       // 1: no nucleus cut
  uint64_t seed = 0;
};

// The index of the largest of `logits` (float [V]); the lowest index among
// equal maxima. NaN entries never win (all NaN: 0).
int64_t GreedyToken(const at::Tensor& logits);

// The generator of the request keyed `request_key` under `seed` (a CPU
// generator seeded with SplitMix64 of both).
at::Generator RequestGenerator(uint64_t seed, uint64_t request_key);
// A request's key: FNV-1a (64-bit) of its id, unique in a prompt file.
uint64_t RequestKey(const std::string& id);

// The next token: GreedyToken when options.temperature <= 0 (the generator
// is not used); otherwise one uniform draw from `gen` over the candidates
// that survive top-k (ranked by logit, lower id first on ties) and top-p
// (the shortest prefix of that ranking whose probability reaches top_p,
// at least one token), with probabilities softmax(logits / temperature)
// renormalised over them (in double precision).
int64_t SampleToken(const at::Tensor& logits, const SamplingOptions& options, at::Generator& gen);

// The log-probability of `token` and the `top_k` most likely tokens under
// the model's own distribution, log_softmax(logits) at temperature 1 before
// any top-k or top-p cut, so that scores compare checkpoints whatever the
// sampling settings (as OpenAI's and vLLM's logprobs). Computed in double
// precision from float `logits` [V]; ties ranked by lower id; top_k is
// capped at V. Pure.
TokenLogprobs ScoreToken(const at::Tensor& logits, int64_t token, int top_k);

}  // namespace pw
