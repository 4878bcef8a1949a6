#include "infer/sampling.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <vector>

#include "core/check.h"
#include "core/hash.h"

namespace pw {
namespace {

std::vector<float> ToVector(const at::Tensor& logits) {
  PW_CHECK(logits.defined() && logits.dim() == 1 && logits.numel() > 0,
           "sampling: logits must be a non-empty 1-D tensor");
  at::Tensor t = logits.detach().to(at::kCPU, at::kFloat).contiguous();
  return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
}

// Ranking order: larger logit first, lower id first on ties, NaN last.
bool Before(const std::vector<float>& l, int64_t a, int64_t b) {
  const bool na = std::isnan(l[a]), nb = std::isnan(l[b]);
  if (na != nb) return nb;
  if (!na && l[a] != l[b]) return l[a] > l[b];
  return a < b;
}

// A uniform double in [0, 1) from the generator's 64-bit stream.
double Uniform(at::Generator& gen) {
  auto* impl = at::check_generator<at::CPUGeneratorImpl>(gen);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return static_cast<double>(impl->random64() >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace

int64_t GreedyToken(const at::Tensor& logits) {
  const std::vector<float> l = ToVector(logits);
  int64_t best = 0;
  for (int64_t i = 1; i < static_cast<int64_t>(l.size()); ++i) {
    if (Before(l, i, best)) best = i;
  }
  return best;
}

at::Generator RequestGenerator(uint64_t seed, uint64_t request_key) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + (request_key + 1) * 0xD1B54A32D192ED03ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return at::make_generator<at::CPUGeneratorImpl>(z ^ (z >> 31));
}

uint64_t RequestKey(const std::string& id) { return Fnv1a64(id.data(), id.size()); }

int64_t SampleToken(const at::Tensor& logits, const SamplingOptions& options,
                    at::Generator& gen) {
  if (!(options.temperature > 0)) return GreedyToken(logits);
  const std::vector<float> l = ToVector(logits);
  const int64_t vocab = static_cast<int64_t>(l.size());
  const int64_t k = options.top_k > 0 ? std::min<int64_t>(options.top_k, vocab) : vocab;
  std::vector<int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int64_t a, int64_t b) { return Before(l, a, b); });
  order.resize(k);

  // Softmax of logits / temperature over the top-k candidates.
  std::vector<double> p(k);
  const double top = static_cast<double>(l[order[0]]) / options.temperature;
  double total = 0;
  for (int64_t i = 0; i < k; ++i) {
    const double z = static_cast<double>(l[order[i]]) / options.temperature;
    p[i] = std::isnan(z) ? 0.0 : std::exp(z - top);
    total += p[i];
  }
  // Nucleus: the shortest prefix whose probability reaches top_p.
  int64_t keep = k;
  if (options.top_p < 1.0) {
    double cumulative = 0;
    for (int64_t i = 0; i < k; ++i) {
      cumulative += p[i] / total;
      if (cumulative >= options.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept = 0;
  for (int64_t i = 0; i < keep; ++i) kept += p[i];
  const double u = Uniform(gen) * kept;
  double cumulative = 0;
  for (int64_t i = 0; i < keep; ++i) {
    cumulative += p[i];
    if (u < cumulative) return order[i];
  }
  // u rounded onto the last boundary: the last candidate that can be drawn
  // (never one at probability 0, such as a token structured output masked).
  for (int64_t i = keep - 1; i > 0; --i) {
    if (p[i] > 0) return order[i];
  }
  return order[0];
}

TokenLogprobs ScoreToken(const at::Tensor& logits, int64_t token, int top_k) {
  const std::vector<float> l = ToVector(logits);
  const int64_t v = static_cast<int64_t>(l.size());
  PW_CHECK(token >= 0 && token < v, "ScoreToken: token outside the logits");
  // log_softmax with the max subtracted: exact for any finite logits.
  double max = -INFINITY;
  for (float x : l) max = std::max(max, static_cast<double>(x));
  double sum = 0;
  for (float x : l) sum += std::exp(static_cast<double>(x) - max);
  const double log_z = max + std::log(sum);
  TokenLogprobs scored;
  scored.token = token;
  scored.logprob = static_cast<double>(l[token]) - log_z;
  const int64_t k = std::clamp<int64_t>(top_k, 0, v);
  std::vector<int64_t> ids(v);
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int64_t a, int64_t b) { return Before(l, a, b); });
  for (int64_t i = 0; i < k; ++i) scored.top.push_back({ids[i], static_cast<double>(l[ids[i]]) - log_z});
  return scored;
}

}  // namespace pw
