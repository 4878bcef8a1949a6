// What `infer --logprobs K` records per generated token: its log-probability
// under the model and the K most likely tokens with theirs. Plain data,
// torch-free (the results file's reader and writer use it; so do the fuzz
// targets).
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
