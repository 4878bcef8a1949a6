#include "infer/local_pool.h"

#include <c10/util/Exception.h>

#include <string>

#include "infer/layer_math.h"

namespace pw {
namespace {

class LocalPool : public WeightPool {
 public:
  LocalPool(const ModelWeights& weights, const char* name) : weights_(weights), name_(name) {
    for (const BlockWeights& b : weights.blocks) {
      if (b.defined()) held_bytes_ += BlockBytes(weights.config, b.format);
    }
  }

  Status BeginPass(int64_t /*rows*/) override {
    ++stats_.passes_local;
    return Status::Ok();
  }

  Result<at::Tensor> PreAttention(int layer, const at::Tensor& x) override {
    PW_ASSIGN_OR_RETURN(const BlockWeights* block, FindBlock(layer));
    try {
      return pw::PreAttention(*block, x);
    } catch (const c10::Error& e) {
      return Failure("PreAttention", layer, e);
    }
  }

  Result<at::Tensor> PostAttention(int layer, const at::Tensor& x,
                                   const at::Tensor& attended) override {
    PW_ASSIGN_OR_RETURN(const BlockWeights* block, FindBlock(layer));
    try {
      return pw::PostAttention(*block, x, attended);
    } catch (const c10::Error& e) {
      return Failure("PostAttention", layer, e);
    }
  }

  Status EndPass() override { return Status::Ok(); }
  int64_t HeldBytes() const override { return held_bytes_; }
  PoolStats stats() const override { return stats_; }
  PoolMode mode() const override { return PoolMode::kReplicate; }
  int n_layers() const override { return weights_.config.n_layers; }
  Status Finish() override { return Status::Ok(); }

 private:
  Result<const BlockWeights*> FindBlock(int layer) const {
    if (layer < 0 || layer >= static_cast<int>(weights_.blocks.size()) ||
        !weights_.blocks[layer].defined()) {
      return Status::InvalidArgument(name_ + " pool: block " + std::to_string(layer) +
                                     " is not held on this rank (load every block for "
                                     "--mode replicate)");
    }
    return &weights_.blocks[layer];
  }

  Status Failure(const char* part, int layer, const c10::Error& e) const {
    return Status::Internal(name_ + " pool: " + part + " of block " +
                            std::to_string(layer) + ": " + e.what_without_backtrace());
  }

  const ModelWeights& weights_;
  const std::string name_;
  int64_t held_bytes_ = 0;
  PoolStats stats_;
};

}  // namespace

std::unique_ptr<WeightPool> MakeLocalPool(const ModelWeights& weights, const char* name) {
  return std::make_unique<LocalPool>(weights, name);
}

}  // namespace pw
