#include "infer/kv_cache.h"

#include <ATen/ATen.h>

// GCC 12's AVX headers trip -Wmaybe-uninitialized on their own builtins
// (GCC bug 105593), as in model/fused_row_kernels.cc.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/check.h"

namespace pw {
namespace {

// dst[0, n) = src[0, n) rounded to fp16 (round to nearest even, as
// c10::Half's conversion): F16C eight at a time where the CPU has it.
__attribute__((target("avx,f16c"))) void ToHalfF16c(const float* src, c10::Half* dst,
                                                    int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = c10::Half(src[i]);
}

void ToHalf(const float* src, c10::Half* dst, int64_t n) {
  static const bool f16c = __builtin_cpu_supports("f16c");
  if (f16c) {
    ToHalfF16c(src, dst, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = c10::Half(src[i]);
}

// One row of `heads` heads of `hd` values as int8 with one scale per head:
// scale = max |x| / 127 (0 for an all-zero head), q = x / scale rounded to
// nearest, so |x - q * scale| <= scale / 2. (A division, not a multiply by
// 1 / scale: that reciprocal overflows for subnormal scales.) A head with
// a NaN or an infinity gets a NaN scale and zeros, so attention carries
// the model's failure into its output as an fp32 cache would, and no
// non-finite value is ever converted to an integer.
void ToInt8(const float* src, int8_t* dst, float* scales, int64_t heads, int64_t hd) {
  for (int64_t h = 0; h < heads; ++h) {
    const float* x = src + h * hd;
    int8_t* q = dst + h * hd;
    float amax = 0.0f;
    bool finite = true;
    for (int64_t c = 0; c < hd; ++c) {
      finite = finite && std::isfinite(x[c]);
      amax = std::max(amax, std::fabs(x[c]));
    }
    if (!finite) {
      scales[h] = std::numeric_limits<float>::quiet_NaN();
      std::fill(q, q + hd, int8_t{0});
      continue;
    }
    const float scale = amax / 127.0f;
    scales[h] = scale;
    for (int64_t c = 0; c < hd; ++c) {
      q[c] = scale > 0.0f ? static_cast<int8_t>(std::clamp(std::nearbyint(x[c] / scale), -127.0f, 127.0f)) : 0;
    }
  }
}

at::ScalarType StoreType(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kFp16: return at::kHalf;
    case KvDtype::kInt8: return at::kChar;
    case KvDtype::kFp32: break;
  }
  return at::kFloat;
}

}  // namespace

int64_t KvElementBytes(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kFp16: return 2;
    case KvDtype::kInt8: return 1;
    case KvDtype::kFp32: break;
  }
  return 4;
}

const char* KvDtypeName(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kFp16: return "fp16";
    case KvDtype::kInt8: return "int8";
    case KvDtype::kFp32: break;
  }
  return "fp32";
}

Result<KvDtype> ParseKvDtype(const std::string& name) {
  if (name == "fp32") return KvDtype::kFp32;
  if (name == "fp16") return KvDtype::kFp16;
  if (name == "int8") return KvDtype::kInt8;
  return Status::InvalidArgument("KV cache type '" + name +
                                 "': expected fp32 (the model's precision), fp16 (half the "
                                 "bytes per cached token; keys and values rounded to fp16) or int8 "
                                 "(about a quarter; int8 with one scale per position and head)");
}

int64_t PagedKvCache::BlockBytes(const ModelConfig& config, int block_size, KvDtype dtype) {
  const int64_t scales = dtype == KvDtype::kInt8 ? int64_t{4} * config.kv_heads() : 0;
  return int64_t{2} * config.n_layers * block_size * (config.kv_width() * KvElementBytes(dtype) + scales);
}

PagedKvCache::PagedKvCache(const ModelConfig& config, int64_t num_blocks, int block_size,
                           int64_t held_back, KvDtype dtype)
    : config_(config), block_size_(block_size), dtype_(dtype), held_back_(held_back),
      blocks_(num_blocks, block_size) {
  PW_CHECK(num_blocks >= 0 && block_size > 0 && held_back >= 0,
           "PagedKvCache: num_blocks >= 0, block_size > 0, held_back >= 0");
  for (int layer = 0; layer < config.n_layers; ++layer) {
    // Usable blocks zeroed (resident from the start, as the plan charges
    // them); held-back ones left untouched until released and written.
    for (std::vector<at::Tensor>* store : {&k_, &v_}) {
      store->push_back(at::empty({num_blocks + held_back, block_size, config.kv_width()}, StoreType(dtype)));
      store->back().narrow(0, 0, num_blocks).zero_();
    }
    for (std::vector<at::Tensor>* scales : {&k_scales_, &v_scales_}) {
      if (dtype != KvDtype::kInt8) {
        scales->emplace_back();
        continue;
      }
      scales->push_back(at::empty({num_blocks + held_back, block_size, config.kv_heads()}, at::kFloat));
      scales->back().narrow(0, 0, num_blocks).zero_();
    }
  }
}

void PagedKvCache::ReleaseHeldBack(int64_t count) {
  const int64_t n = std::clamp<int64_t>(count, 0, held_back_);
  // Blocks already free (and resident) go out first; the new ones after
  // them. Block ids stay dense: the usable ones are [0, num_blocks).
  blocks_.AddBlocks(n);
  held_back_ -= n;
}

int64_t PagedKvCache::num_blocks() const { return blocks_.num_blocks(); }
int64_t PagedKvCache::free_blocks() const { return blocks_.available_blocks(); }
int PagedKvCache::block_size() const { return block_size_; }
int64_t PagedKvCache::bytes() const {
  return BytesFor(config_, num_blocks(), block_size_, dtype_);
}

int64_t PagedKvCache::BlocksFor(int64_t tokens) const { return blocks_.BlocksFor(tokens); }

bool PagedKvCache::Reserve(int64_t seq, int64_t tokens) { return blocks_.Reserve(seq, tokens); }

void PagedKvCache::Release(int64_t seq) { blocks_.Release(seq); }

int64_t PagedKvCache::reserved_tokens(int64_t seq) const {
  return blocks_.Has(seq) ? static_cast<int64_t>(blocks_.blocks(seq).size()) * block_size_ : 0;
}

void PagedKvCache::Write(int64_t seq, int layer, int64_t start, const at::Tensor& k,
                         const at::Tensor& v) {
  PW_CHECK(k.dim() == 2 && k.sizes() == v.sizes() && k.size(1) == config_.kv_width() &&
               k.scalar_type() == at::kFloat && v.scalar_type() == at::kFloat,
           "PagedKvCache::Write: k and v must be fp32 [n, kv_width]");
  const at::Tensor kc = k.contiguous(), vc = v.contiguous();
  WriteRows(seq, layer, start, k.size(0), kc.data_ptr<float>(), vc.data_ptr<float>(),
            config_.kv_width());
}

void PagedKvCache::WriteRows(int64_t seq, int layer, int64_t start, int64_t n, const float* k,
                             const float* v, int64_t row_stride) {
  const std::vector<int64_t>& table = blocks_.blocks(seq);
  PW_CHECK(layer >= 0 && layer < config_.n_layers, "PagedKvCache::Write: bad layer");
  PW_CHECK(start >= 0 && n >= 0 &&
               start + n <= static_cast<int64_t>(table.size()) * block_size_,
           "PagedKvCache::Write: positions [" + std::to_string(start) + ", " +
               std::to_string(start + n) + ") of sequence " + std::to_string(seq) +
               " exceed its reservation");
  const int64_t d = config_.kv_width();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pos = start + i;
    const int64_t slot = table[static_cast<size_t>(pos / block_size_)] * block_size_ + pos % block_size_;
    if (dtype_ == KvDtype::kFp16) {
      ToHalf(k + i * row_stride, k_[layer].data_ptr<c10::Half>() + slot * d, d);
      ToHalf(v + i * row_stride, v_[layer].data_ptr<c10::Half>() + slot * d, d);
    } else if (dtype_ == KvDtype::kInt8) {
      const int64_t heads = config_.kv_heads(), hd = d / heads;
      ToInt8(k + i * row_stride, k_[layer].data_ptr<int8_t>() + slot * d,
             k_scales_[layer].data_ptr<float>() + slot * heads, heads, hd);
      ToInt8(v + i * row_stride, v_[layer].data_ptr<int8_t>() + slot * d,
             v_scales_[layer].data_ptr<float>() + slot * heads, heads, hd);
    } else {
      std::memcpy(k_[layer].data_ptr<float>() + slot * d, k + i * row_stride, sizeof(float) * d);
      std::memcpy(v_[layer].data_ptr<float>() + slot * d, v + i * row_stride, sizeof(float) * d);
    }
  }
}

const std::vector<int64_t>& PagedKvCache::blocks(int64_t seq) const { return blocks_.blocks(seq); }

int64_t PagedKvCache::MapCachedPrefix(int64_t seq, const std::vector<int64_t>& tokens, int64_t max_tokens) {
  return blocks_.MapCachedPrefix(seq, tokens, max_tokens);
}

void PagedKvCache::CommitPrefix(int64_t seq, const std::vector<int64_t>& tokens, int64_t n) {
  blocks_.Commit(seq, tokens, n);
}

std::pair<at::Tensor, at::Tensor> PagedKvCache::Read(int64_t seq, int layer,
                                                     int64_t length) const {
  const std::vector<int64_t>& table = blocks_.blocks(seq);
  PW_CHECK(layer >= 0 && layer < config_.n_layers, "PagedKvCache::Read: bad layer");
  const int64_t blocks = BlocksFor(length);
  PW_CHECK(length >= 0 && blocks <= static_cast<int64_t>(table.size()),
           "PagedKvCache::Read: length exceeds the reservation");
  at::Tensor ids = at::tensor(std::vector<int64_t>(table.begin(), table.begin() + blocks),
                              at::kLong);
  auto gather = [&](const at::Tensor& store, const at::Tensor& scales) {
    at::Tensor rows = store.index_select(0, ids)
                          .reshape({blocks * block_size_, config_.kv_width()})
                          .narrow(0, 0, length)
                          .to(at::kFloat);
    if (!scales.defined()) return rows;
    const int64_t heads = config_.kv_heads(), width = config_.kv_width();
    at::Tensor per_head = scales.index_select(0, ids).reshape({blocks * block_size_, heads, 1}).narrow(0, 0, length);
    return (rows.reshape({length, heads, width / heads}) * per_head).reshape({length, width});
  };
  return {gather(k_[layer], k_scales_[layer]), gather(v_[layer], v_scales_[layer])};
}

}  // namespace pw
