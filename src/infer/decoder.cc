#include "infer/decoder.h"

#include <ATen/ATen.h>

#include <chrono>
#include <string>

#include "infer/layer_math.h"
#include "infer/paged_attention.h"
#include "model/gpt_math.h"

namespace pw {
namespace {

Status CheckChunks(const ModelConfig& config, const PagedKvCache& cache,
                   const std::vector<SequenceChunk>& chunks) {
  if (chunks.empty()) return Status::InvalidArgument("forward pass: no sequence chunks");
  for (size_t c = 0; c < chunks.size(); ++c) {
    const SequenceChunk& chunk = chunks[c];
    const int64_t n = static_cast<int64_t>(chunk.tokens.size());
    const std::string where = "forward pass: chunk " + std::to_string(c) + " (sequence " +
                              std::to_string(chunk.seq) + ")";
    if (n == 0) return Status::InvalidArgument(where + " has no tokens");
    if (chunk.start < 0 || chunk.start + n > config.seq_len) {
      return Status::InvalidArgument(where + " covers positions [" + std::to_string(chunk.start) +
                                     ", " + std::to_string(chunk.start + n) +
                                     ") outside the model's context of " +
                                     std::to_string(config.seq_len));
    }
    if (chunk.start + n > cache.reserved_tokens(chunk.seq)) {
      return Status::InvalidArgument(where + " reaches position " +
                                     std::to_string(chunk.start + n) + " but the KV cache has " +
                                     std::to_string(cache.reserved_tokens(chunk.seq)) +
                                     " positions reserved for it");
    }
    for (int64_t t : chunk.tokens) {
      if (t < 0 || t >= config.vocab_size) {
        return Status::InvalidArgument(where + " has token " + std::to_string(t) +
                                       " outside the vocabulary [0, " +
                                       std::to_string(config.vocab_size) + ")");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

double PassFlops(const ModelConfig& config, const std::vector<SequenceChunk>& chunks) {
  const double d = config.d_model, h = config.ffn_width();
  // q|k|v, output, MLP up (and gate) and down.
  const double block_macs = d * config.qkv_width() + d * d + d * config.mlp_up_width() + h * d;
  double rows = 0, attention_macs = 0;
  for (const SequenceChunk& chunk : chunks) {
    const double n = static_cast<double>(chunk.tokens.size()), s = static_cast<double>(chunk.start);
    rows += n;
    // Row i sees s + i + 1 keys; QK^T and AV take d MACs per key each.
    attention_macs += 2.0 * d * (n * s + n * (n + 1) / 2);
  }
  const double head_macs = static_cast<double>(chunks.size()) * d * config.vocab_size;
  return 2.0 * (config.n_layers * (rows * block_macs + attention_macs) + head_macs);
}

Result<at::Tensor> ForwardChunks(const ModelWeights& weights, WeightPool& pool,
                                 PagedKvCache& cache, const std::vector<SequenceChunk>& chunks,
                                 double* attention_seconds) {
  const ModelConfig& config = weights.config;
  PW_RETURN_IF_ERROR(CheckChunks(config, cache, chunks));
  c10::NoGradGuard no_grad;
  std::vector<int64_t> tokens, positions, offsets, last_rows;
  for (const SequenceChunk& chunk : chunks) {
    offsets.push_back(static_cast<int64_t>(tokens.size()));
    for (size_t i = 0; i < chunk.tokens.size(); ++i) {
      tokens.push_back(chunk.tokens[i]);
      positions.push_back(chunk.start + static_cast<int64_t>(i));
    }
    last_rows.push_back(static_cast<int64_t>(tokens.size()) - 1);
  }
  const int64_t rows = static_cast<int64_t>(tokens.size()), d = config.d_model, kv = config.kv_width();
  const int64_t width = config.qkv_width();
  std::vector<PagedChunk> paged;
  paged.reserve(chunks.size());
  for (size_t c = 0; c < chunks.size(); ++c) {
    paged.push_back({cache.blocks(chunks[c].seq).data(), chunks[c].start,
                     static_cast<int64_t>(chunks[c].tokens.size()), offsets[c]});
  }
  try {
    PW_RETURN_IF_ERROR(pool.BeginPass(rows));
    const at::Tensor position_ids = at::tensor(positions, at::kLong);
    at::Tensor x = Embed(weights, at::tensor(tokens, at::kLong), position_ids);
    // Rope: every row's angles, once per pass (the same for every layer).
    RotaryAngles angles;
    if (config.rope()) angles = RotaryAnglesAt(weights.rotary_frequencies, position_ids);
    // Per block the pool runs PreAttention and PostAttention wherever its
    // mode says; the attention in between runs here, over this rank's cache.
    auto attend = [&](int layer, const at::Tensor& qkv_in) -> Result<at::Tensor> {
      at::Tensor qkv = qkv_in.contiguous();
      PW_CHECK(qkv.dim() == 2 && qkv.size(0) == rows && qkv.size(1) == width,
               "forward pass: PreAttention returned the wrong shape");
      if (config.rope()) {
        // q and k rotated by their rows' positions before k is cached.
        qkv = at::cat({ApplyRotary(qkv.narrow(1, 0, d), config.n_heads, angles),
                       ApplyRotary(qkv.narrow(1, d, kv), config.kv_heads(), angles), qkv.narrow(1, d + kv, kv)},
                      1);
      }
      // Every chunk's new keys and values into its blocks, then one
      // attention call for all rows, reading the cache in place.
      const auto start = std::chrono::steady_clock::now();
      const float* qkv_data = qkv.data_ptr<float>();
      for (size_t c = 0; c < chunks.size(); ++c) {
        const float* row = qkv_data + offsets[c] * width;
        cache.WriteRows(chunks[c].seq, layer, chunks[c].start, paged[c].n, row + d, row + d + kv, width);
      }
      at::Tensor attended = PagedAttention(qkv.narrow(1, 0, d), cache.keys(layer), cache.values(layer), paged,
                                           config.n_heads, cache.key_scales(layer), cache.value_scales(layer));
      if (attention_seconds != nullptr) {
        *attention_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      return attended;
    };
    PW_ASSIGN_OR_RETURN(x, pool.RunBlocks(x, attend));
    PW_RETURN_IF_ERROR(pool.EndPass());
    return HeadLogits(weights, x.index_select(0, at::tensor(last_rows, at::kLong)));
  } catch (const c10::Error& e) {
    return Status::Internal("forward pass over " + std::to_string(chunks.size()) +
                            " sequences (" + std::to_string(rows) +
                            " rows): " + e.what_without_backtrace());
  }
}

}  // namespace pw
