// What `infer --logprobs K` records per generated token: its log-probability
// under the model and the K most likely tokens with theirs. Plain data,
// torch-free: the engine fills it, the results file's writer
// (infer/prompts_io.h, also built into the torch-free fuzz targets) writes it.
#pragma once

#include <cstdint>
#include <vector>

namespace pw {

struct TokenAlternative {
  int64_t token = 0;
  double logprob = 0;
};

struct TokenLogprobs {
  int64_t token = 0;                   // the token generated
  double logprob = 0;                  // its log-probability
  std::vector<TokenAlternative> top;   // the K most likely, most likely first (lower id first on ties)
};

}  // namespace pw
