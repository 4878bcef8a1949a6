// Claims (b) and (e): the model split into S stages and run stage by stage
// (detached inputs that require grad at the boundaries, split backward I then
// W, or fused B) gives the loss and the parameter gradients of the whole
// model run as one module with plain autograd; a microbatch's saved state is
// freed after its W (or B).
//
// Tolerance (fp32): both sides evaluate the same ops on the same data; they
// differ only in the order of a few sums — dW accumulated into .grad after
// instead of during backward, the residual stream's gradient summed across a
// stage boundary, matmul vs mm kernels picking another order. Each
// reordering changes a result by a few ulps (fp32 eps = 1.2e-7) relative to
// the magnitude of the summands, and gradients pass through at most ~20 such
// sums here, so we allow rtol = 1e-4 with atol = 1e-6 for entries near zero
// (gradients here are ~1e-4..1e-1). Measured on this machine (OpenBLAS, one
// thread): max |diff| = 0, bit-identical; the test prints it per case.
#include "model/stage_module.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>

#include <cmath>
#include <map>
#include <memory>

#include "model/gpt.h"

namespace pw {
namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-6;
constexpr uint64_t kSeed = 42;
constexpr int kBatch = 2, kMicrobatches = 2;

ModelConfig TestConfig() {
  ModelConfig config;
  config.d_model = 32;
  config.n_layers = 4;
  config.n_heads = 4;
  config.seq_len = 16;
  return config;
}

struct Microbatch {
  at::Tensor tokens, targets;  // int64 [B, T]; targets are tokens shifted by one
};

std::vector<Microbatch> MakeData(const ModelConfig& config, int count, uint64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<Microbatch> data;
  for (int i = 0; i < count; ++i) {
    at::Tensor bytes = at::randint(config.vocab_size, {kBatch, config.seq_len + 1}, gen,
                                   at::TensorOptions().dtype(at::kLong));
    data.push_back({bytes.narrow(1, 0, config.seq_len).contiguous(),
                    bytes.narrow(1, 1, config.seq_len).contiguous()});
  }
  return data;
}

struct Outcome {
  std::vector<double> losses;
  std::map<std::string, at::Tensor> grads;
};

// The whole model as one module, plain autograd (no store: torch's linear),
// the objective being the mean of the microbatch losses.
Outcome RunReference(const ModelConfig& config, const std::vector<Microbatch>& data) {
  GptSegment model(config, WholeModelSpan(config), kSeed);
  Outcome outcome;
  for (const Microbatch& mb : data) {
    at::Tensor loss = model.Forward(mb.tokens, mb.targets, ForwardContext{});
    outcome.losses.push_back(loss.item<double>());
    (loss / static_cast<double>(data.size())).backward();
  }
  for (const auto& item : model.named_parameters()) outcome.grads[item.key()] = item.value().grad();
  return outcome;
}

std::vector<std::unique_ptr<StageModule>> BuildStages(const ModelConfig& config,
                                                      const ModelPartition& partition,
                                                      uint64_t dropout_seed = 0) {
  std::vector<std::unique_ptr<StageModule>> stages;
  for (const StageSpan& span : partition.stages) {
    stages.push_back(std::make_unique<StageModule>(config, span, kSeed, dropout_seed + span.stage));
  }
  return stages;
}

// Runs every microbatch through the stages: all forwards, then backwards in
// microbatch order (split: I, then the W's in reverse order; fused: B).
Outcome RunPipelined(const ModelConfig& config, const ModelPartition& partition,
                     const std::vector<Microbatch>& data, bool split) {
  auto stages = BuildStages(config, partition);
  const int num_stages = static_cast<int>(stages.size());
  Outcome outcome;
  for (int mb = 0; mb < static_cast<int>(data.size()); ++mb) {
    at::Tensor h = data[mb].tokens;
    for (auto& stage : stages) {
      Result<at::Tensor> out = stage->Forward(mb, h, data[mb].targets);
      EXPECT_TRUE(out.ok()) << out.status().ToString();
      h = *out;
    }
    outcome.losses.push_back(h.item<double>());
  }
  for (int mb = 0; mb < static_cast<int>(data.size()); ++mb) {
    at::Tensor grad = at::full({}, 1.0 / data.size());
    for (int s = num_stages - 1; s >= 0; --s) {
      Result<at::Tensor> g = split ? stages[s]->BackwardInput(mb, grad)
                                   : stages[s]->BackwardFull(mb, grad);
      EXPECT_TRUE(g.ok()) << g.status().ToString();
      grad = *g;
    }
    EXPECT_FALSE(grad.defined());  // stage 0's input is token ids
  }
  for (int mb = static_cast<int>(data.size()) - 1; mb >= 0; --mb) {
    for (auto& stage : stages) EXPECT_TRUE(stage->BackwardWeight(mb).ok());
  }
  for (auto& stage : stages) {
    EXPECT_EQ(stage->HeldMicrobatches(), 0);
    for (auto& [name, param] : stage->NamedParameters()) {
      EXPECT_EQ(outcome.grads.count(name), 0u) << name << " in two stages";
      outcome.grads[name] = param.grad();
    }
  }
  return outcome;
}

class StageModuleTest : public ::testing::Test {
 protected:
  void SetUp() override { at::set_num_threads(1); }
};

struct SplitCase {
  int num_stages;
  const char* layers_per_stage;  // "" = balanced
  bool split;
};

class StageEquivalenceTest : public StageModuleTest,
                             public ::testing::WithParamInterface<SplitCase> {};

TEST_P(StageEquivalenceTest, SameLossAndGradientsAsTheWholeModel) {
  const SplitCase c = GetParam();
  const ModelConfig config = TestConfig();
  const auto data = MakeData(config, kMicrobatches, 7);
  Result<ModelPartition> partition = PartitionModel(config, c.num_stages, c.layers_per_stage);
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();

  const Outcome expected = RunReference(config, data);
  const Outcome actual = RunPipelined(config, *partition, data, c.split);

  ASSERT_EQ(actual.losses.size(), expected.losses.size());
  for (size_t i = 0; i < expected.losses.size(); ++i) {
    EXPECT_NEAR(actual.losses[i], expected.losses[i], kRtol * std::abs(expected.losses[i]));
  }
  ASSERT_EQ(actual.grads.size(), expected.grads.size());
  double max_diff = 0;
  for (const auto& [name, grad] : expected.grads) {
    auto it = actual.grads.find(name);
    ASSERT_NE(it, actual.grads.end()) << name << " is in no stage";
    ASSERT_TRUE(grad.defined()) << name;
    ASSERT_TRUE(it->second.defined()) << name << " got no gradient";
    EXPECT_TRUE(at::allclose(it->second, grad, kRtol, kAtol))
        << name << ": max |diff| " << (it->second - grad).abs().max().item<double>();
    max_diff = std::max(max_diff, (it->second - grad).abs().max().item<double>());
  }
  std::cout << "stages " << partition->BlocksPerStageString() << (c.split ? " split" : " fused")
            << ": max |grad diff| = " << max_diff << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Partitions, StageEquivalenceTest,
    ::testing::Values(SplitCase{1, "", true}, SplitCase{2, "", true}, SplitCase{4, "", true},
                      SplitCase{3, "1,3,0", true}, SplitCase{2, "", false},
                      SplitCase{4, "", false}),
    [](const ::testing::TestParamInfo<SplitCase>& info) {
      std::string name = "S" + std::to_string(info.param.num_stages) +
                         (info.param.split ? "_split" : "_fused");
      if (*info.param.layers_per_stage != 0) name += "_explicit";
      return name;
    });

TEST_F(StageModuleTest, StagesHoldTheWholeModelsInitialParameters) {
  const ModelConfig config = TestConfig();
  GptSegment whole(config, WholeModelSpan(config), kSeed);
  std::map<std::string, at::Tensor> reference;
  for (const auto& item : whole.named_parameters()) reference[item.key()] = item.value();
  EXPECT_EQ(static_cast<long long>(
                std::accumulate(reference.begin(), reference.end(), 0LL,
                                [](long long n, const auto& kv) { return n + kv.second.numel(); })),
            CountParameters(config));
  auto stages = BuildStages(config, *PartitionBalanced(config, 3));
  size_t seen = 0;
  for (auto& stage : stages) {
    for (auto& [name, param] : stage->NamedParameters()) {
      ASSERT_EQ(reference.count(name), 1u) << name;
      EXPECT_TRUE(at::equal(param, reference[name])) << name;
      ++seen;
    }
    EXPECT_EQ(stage->Parameters().size(), stage->NamedParameters().size());
  }
  EXPECT_EQ(seen, reference.size());
  // A different seed gives different weights.
  GptSegment other(config, WholeModelSpan(config), kSeed + 1);
  EXPECT_FALSE(at::equal(other.named_parameters()["blocks.0.attn.qkv.weight"],
                         reference["blocks.0.attn.qkv.weight"]));
}

TEST_F(StageModuleTest, InitialLossIsNearUniformAndAttentionIsCausal) {
  const ModelConfig config = TestConfig();
  GptSegment model(config, WholeModelSpan(config), kSeed);
  const auto data = MakeData(config, 1, 3);
  at::NoGradGuard no_grad;
  const double loss = model.Forward(data[0].tokens, data[0].targets, {}).item<double>();
  EXPECT_NEAR(loss, std::log(256.0), 0.1);  // small init: near-uniform predictions
  // Changing the last 6 tokens must not change the logits of the first 10.
  at::Tensor changed = data[0].tokens.clone();
  changed.narrow(1, 10, 6).fill_(0);
  at::Tensor a = model.ForwardLogits(data[0].tokens, {}), b = model.ForwardLogits(changed, {});
  EXPECT_TRUE(at::allclose(a.narrow(1, 0, 10), b.narrow(1, 0, 10), 1e-6, 1e-6));
  EXPECT_FALSE(at::allclose(a.narrow(1, 10, 6), b.narrow(1, 10, 6), 1e-6, 1e-6));
}

TEST_F(StageModuleTest, SavedStateIsFreedAfterWeightBackward) {
  const ModelConfig config = TestConfig();
  auto stages = BuildStages(config, *PartitionExplicit(config, std::vector<int>{2, 2}));
  StageModule& first = *stages[0];
  StageModule& last = *stages[1];
  const auto data = MakeData(config, 3, 5);
  for (int mb = 0; mb < 3; ++mb) {
    at::Tensor h = *first.Forward(mb, data[mb].tokens);
    ASSERT_TRUE(last.Forward(mb, h, data[mb].targets).ok());
  }
  EXPECT_EQ(first.HeldMicrobatches(), 3);
  EXPECT_EQ(last.HeldMicrobatches(), 3);

  // I on microbatch 0: held until W; weight grads queued, LayerNorm grads computed.
  at::Tensor g = *last.BackwardInput(0, {});
  ASSERT_TRUE(first.BackwardInput(0, g).ok());
  EXPECT_EQ(last.HeldMicrobatches(), 3);
  EXPECT_TRUE(last.IsHeld(0));
  EXPECT_EQ(last.PendingWeightGradClosures(0), 2 * 4 + 1);  // 4 Linears per block + LM head
  std::map<std::string, at::Tensor> params;
  for (auto& [name, p] : last.NamedParameters()) params[name] = p;
  EXPECT_TRUE(params["blocks.2.ln1.weight"].grad().defined());
  EXPECT_TRUE(params["head.ln.bias"].grad().defined());
  EXPECT_FALSE(params["blocks.2.attn.qkv.weight"].grad().defined());
  EXPECT_FALSE(params["head.lm_head.weight"].grad().defined());

  ASSERT_TRUE(last.BackwardWeight(0).ok());
  ASSERT_TRUE(first.BackwardWeight(0).ok());
  EXPECT_EQ(last.HeldMicrobatches(), 2);
  EXPECT_EQ(first.HeldMicrobatches(), 2);
  EXPECT_FALSE(last.IsHeld(0));
  EXPECT_TRUE(params["blocks.2.attn.qkv.weight"].grad().defined());

  // B frees at once.
  g = *last.BackwardFull(1, {});
  ASSERT_TRUE(first.BackwardFull(1, g).ok());
  EXPECT_EQ(last.HeldMicrobatches(), 1);
  EXPECT_EQ(last.PendingWeightGradClosures(1), 0);
  EXPECT_TRUE(last.BackwardWeight(1).ok());  // nothing queued: a no-op

  last.DiscardAll();
  first.DiscardAll();
  EXPECT_EQ(last.HeldMicrobatches(), 0);
  EXPECT_EQ(first.HeldMicrobatches(), 0);
}

// The hook data-parallel buckets start on: B reports every parameter; I
// reports the LayerNorms (the Linears' weight gradients wait for W), W
// exactly the Linears' weights and biases; no callback, no report.
TEST_F(StageModuleTest, GradAccumulatedCallbackReportsWhereEachGradientLands) {
  const ModelConfig config = TestConfig();
  auto stages = BuildStages(config, *PartitionExplicit(config, std::vector<int>{2, 2}));
  StageModule& last = *stages[1];
  const auto data = MakeData(config, 2, 5);
  at::Tensor h0 = *stages[0]->Forward(0, data[0].tokens);
  at::Tensor h1 = *stages[0]->Forward(1, data[1].tokens);
  ASSERT_TRUE(last.Forward(0, h0.detach(), data[0].targets).ok());
  ASSERT_TRUE(last.Forward(1, h1.detach(), data[1].targets).ok());
  const auto named = last.NamedParameters();

  std::map<size_t, int> seen;
  last.SetGradAccumulatedCallback([&](size_t i) { ++seen[i]; });
  ASSERT_TRUE(last.BackwardFull(0, {}).ok());
  ASSERT_EQ(seen.size(), named.size()) << "B reports every parameter";
  for (const auto& [i, n] : seen) EXPECT_EQ(n, 1) << named[i].first;

  seen.clear();
  ASSERT_TRUE(last.BackwardInput(1, {}).ok());
  std::map<size_t, int> seen_in_w;
  last.SetGradAccumulatedCallback([&](size_t i) { ++seen_in_w[i]; });
  ASSERT_TRUE(last.BackwardWeight(1).ok());
  last.SetGradAccumulatedCallback({});
  for (size_t i = 0; i < named.size(); ++i) {
    const std::string& name = named[i].first;
    const bool layer_norm = name.find(".ln") != std::string::npos;  // blocks.*.ln1/ln2, head.ln
    EXPECT_EQ(seen.count(i), layer_norm ? 1u : 0u) << name << " in I";
    EXPECT_EQ(seen_in_w.count(i), layer_norm ? 0u : 1u) << name << " in W";
  }
  // Off: nothing reported.
  seen.clear();
  ASSERT_TRUE(last.Forward(2, h0.detach(), data[0].targets).ok());
  ASSERT_TRUE(last.BackwardFull(2, {}).ok());
  EXPECT_TRUE(seen.empty());
}

TEST_F(StageModuleTest, MisuseReturnsStatusesThatNameStageActionAndMicrobatch) {
  const ModelConfig config = TestConfig();
  auto stages = BuildStages(config, *PartitionExplicit(config, std::vector<int>{2, 2}));
  StageModule& first = *stages[0];
  StageModule& last = *stages[1];
  const auto data = MakeData(config, 1, 5);

  Result<at::Tensor> r = first.BackwardInput(5, at::zeros({kBatch, 16, 32}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("stage 0, action 0I5: no forward state for microbatch 5"),
            std::string::npos) << r.status().message();

  at::Tensor h = *first.Forward(0, data[0].tokens);
  r = first.Forward(0, data[0].tokens);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stage 0, action 0F0"), std::string::npos);
  EXPECT_EQ(first.BackwardWeight(0).code(), StatusCode::kFailedPrecondition);

  r = first.BackwardInput(0, at::zeros({kBatch, 16, 8}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("grad_output is"), std::string::npos);
  EXPECT_TRUE(first.IsHeld(0));  // a rejected backward keeps the state

  r = last.Forward(0, h);  // no targets
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the last stage needs int64 targets"), std::string::npos);
  r = last.Forward(0, data[0].tokens, data[0].targets);  // tokens into a middle input
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("expected float [B, T, 32]"), std::string::npos);
  r = first.Forward(1, data[0].tokens + 256);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("vocab_size is 256"), std::string::npos);
  EXPECT_FALSE(last.IsHeld(0));
}

TEST_F(StageModuleTest, EvaluateMatchesForwardAndKeepsNoState) {
  const ModelConfig config = TestConfig();
  auto stages = BuildStages(config, *PartitionBalanced(config, 1));
  const auto data = MakeData(config, 1, 9);
  Result<at::Tensor> eval = stages[0]->Evaluate(data[0].tokens, data[0].targets);
  ASSERT_TRUE(eval.ok());
  EXPECT_FALSE(eval->requires_grad());
  EXPECT_EQ(stages[0]->HeldMicrobatches(), 0);
  at::Tensor loss = *stages[0]->Forward(0, data[0].tokens, data[0].targets);
  EXPECT_NEAR(loss.item<double>(), eval->item<double>(), 1e-6);
}

TEST_F(StageModuleTest, DropoutIsSeededPerStageAndOffInEvaluation) {
  ModelConfig config = TestConfig();
  config.dropout = 0.2;
  const StageSpan span = WholeModelSpan(config);
  StageModule a(config, span, kSeed, /*dropout_seed=*/11), b(config, span, kSeed, 11);
  const auto data = MakeData(config, 1, 9);
  const double la = a.Forward(0, data[0].tokens, data[0].targets)->item<double>();
  const double lb = b.Forward(0, data[0].tokens, data[0].targets)->item<double>();
  EXPECT_EQ(la, lb);
  const double eval = a.Evaluate(data[0].tokens, data[0].targets)->item<double>();
  EXPECT_NE(la, eval);
  a.SetTraining(false);
  a.DiscardAll();
  EXPECT_DOUBLE_EQ(a.Forward(0, data[0].tokens, data[0].targets)->item<double>(), eval);
}

// DROP then RECOMPUTE (activation recomputation) gives the gradients of
// plain F and B bit for bit, with dropout on (its masks are replayed), and
// leaves the dropout generator where plain training leaves it.
TEST_F(StageModuleTest, RecomputedActivationsGiveTheSameGradientsBitForBit) {
  ModelConfig config = TestConfig();
  config.dropout = 0.2;
  const ModelPartition partition = *PartitionExplicit(config, std::vector<int>{2, 2});
  const auto data = MakeData(config, 3, 5);
  auto run = [&](bool recompute, bool split) {
    auto stages = BuildStages(config, partition, /*dropout_seed=*/7);
    for (int mb = 0; mb < 3; ++mb) {
      at::Tensor h = *stages[0]->Forward(mb, data[mb].tokens);
      EXPECT_TRUE(stages[1]->Forward(mb, h, data[mb].targets).ok());
      if (recompute) {
        for (auto& stage : stages) EXPECT_TRUE(stage->DropActivations(mb).ok());
      }
    }
    for (int mb = 0; mb < 3; ++mb) {
      if (recompute) {
        for (auto& stage : stages) EXPECT_TRUE(stage->Recompute(mb).ok());
      }
      at::Tensor g = split ? *stages[1]->BackwardInput(mb, {}) : *stages[1]->BackwardFull(mb, {});
      EXPECT_TRUE((split ? stages[0]->BackwardInput(mb, g) : stages[0]->BackwardFull(mb, g)).ok());
      if (split) {
        for (auto& stage : stages) EXPECT_TRUE(stage->BackwardWeight(mb).ok());
      }
    }
    std::vector<at::Tensor> grads;
    for (auto& stage : stages) {
      for (auto& p : stage->Parameters()) grads.push_back(p.grad().clone());
    }
    // The next forward draws the same dropout masks either way.
    grads.push_back(stages[0]->Forward(9, data[0].tokens)->clone());
    return grads;
  };
  for (bool split : {false, true}) {
    const std::vector<at::Tensor> plain = run(false, split), recomputed = run(true, split);
    ASSERT_EQ(plain.size(), recomputed.size());
    for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(at::equal(plain[i], recomputed[i])) << i;
  }
}

TEST_F(StageModuleTest, DropAndRecomputeOutOfOrderAreRefused) {
  const ModelConfig config = TestConfig();
  auto stages = BuildStages(config, *PartitionExplicit(config, std::vector<int>{2, 2}));
  const auto data = MakeData(config, 1, 5);
  StageModule& first = *stages[0];
  EXPECT_EQ(first.DropActivations(0).code(), StatusCode::kFailedPrecondition);  // no F yet
  at::Tensor h = *first.Forward(0, data[0].tokens);
  EXPECT_EQ(first.Recompute(0).code(), StatusCode::kFailedPrecondition);  // nothing dropped
  ASSERT_TRUE(first.DropActivations(0).ok());
  EXPECT_EQ(first.DropActivations(0).code(), StatusCode::kFailedPrecondition);  // twice
  Result<at::Tensor> g = first.BackwardFull(0, at::ones_like(h));
  EXPECT_EQ(g.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(g.status().message().find("RECOMPUTE must run before its backward"), std::string::npos);
  EXPECT_TRUE(first.IsHeld(0));
  ASSERT_TRUE(first.Recompute(0).ok());
  EXPECT_TRUE(first.BackwardFull(0, at::ones_like(h)).ok());
  EXPECT_FALSE(first.IsHeld(0));
}

// OFFLOAD after F and RELOAD before the backward give the gradients of
// plain F and B (or I and W) bit for bit, with dropout on; OFFLOAD really
// moves bytes (a fresh host copy each time) and RELOAD moves them back.
TEST_F(StageModuleTest, OffloadedActivationsGiveTheSameGradientsBitForBit) {
  ModelConfig config = TestConfig();
  config.dropout = 0.2;
  const ModelPartition partition = *PartitionExplicit(config, std::vector<int>{2, 2});
  const auto data = MakeData(config, 3, 5);
  auto run = [&](bool offload, bool split, std::vector<int64_t>* moved) {
    auto stages = BuildStages(config, partition, /*dropout_seed=*/7);
    if (offload) {
      for (auto& stage : stages) stage->SetOffloadedMicrobatches({0, 1, 2});
    }
    for (int mb = 0; mb < 3; ++mb) {
      at::Tensor h = *stages[0]->Forward(mb, data[mb].tokens);
      EXPECT_TRUE(stages[1]->Forward(mb, h, data[mb].targets).ok());
      if (offload) {
        for (auto& stage : stages) EXPECT_TRUE(stage->OffloadActivations(mb).ok());
      }
    }
    for (int mb = 0; mb < 3; ++mb) {
      if (offload) {
        for (auto& stage : stages) EXPECT_TRUE(stage->ReloadActivations(mb).ok());
      }
      at::Tensor g = split ? *stages[1]->BackwardInput(mb, {}) : *stages[1]->BackwardFull(mb, {});
      EXPECT_TRUE((split ? stages[0]->BackwardInput(mb, g) : stages[0]->BackwardFull(mb, g)).ok());
      if (split) {
        for (auto& stage : stages) EXPECT_TRUE(stage->BackwardWeight(mb).ok());
      }
    }
    std::vector<at::Tensor> grads;
    for (auto& stage : stages) {
      for (auto& [name, p] : stage->NamedParameters()) {
        EXPECT_TRUE(p.grad().defined()) << name << (offload ? " with" : " without") << " offload";
        grads.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
      }
      if (moved != nullptr) {
        const StageModule::OffloadCounters& c = stage->offload_counters();
        EXPECT_EQ(c.offloads, 3);
        EXPECT_EQ(c.reloads, 3);
        EXPECT_EQ(c.bytes_offloaded, c.bytes_reloaded);
        moved->push_back(c.bytes_offloaded);
      }
      EXPECT_EQ(stage->HeldMicrobatches(), 0);
    }
    return grads;
  };
  for (bool split : {false, true}) {
    std::vector<int64_t> moved;
    const std::vector<at::Tensor> plain = run(false, split, nullptr), offloaded = run(true, split, &moved);
    ASSERT_EQ(plain.size(), offloaded.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_TRUE(plain[i].defined() && offloaded[i].defined() && at::equal(plain[i], offloaded[i])) << i;
    }
    // At least one [B, T, d_model] fp32 activation per layer and microbatch.
    const int64_t one = int64_t{kBatch} * config.seq_len * config.d_model * 4;
    for (int64_t bytes : moved) EXPECT_GT(bytes, 3 * 2 * one) << "split " << split;
  }
}

TEST_F(StageModuleTest, OffloadAndReloadOutOfOrderAreRefused) {
  const ModelConfig config = TestConfig();
  auto stages = BuildStages(config, *PartitionExplicit(config, std::vector<int>{2, 2}));
  const auto data = MakeData(config, 2, 5);
  StageModule& first = *stages[0];
  auto refused = [](const Status& status, const std::string& why) {
    EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition) << status.message();
    EXPECT_NE(status.message().find(why), std::string::npos) << status.message();
  };
  // The memory actions name themselves, not a forward ('F') of the microbatch.
  const Status early = first.OffloadActivations(0);
  EXPECT_EQ(early.message().rfind("stage 0: OFFLOAD of microbatch 0", 0), 0u) << early.message();
  EXPECT_EQ(first.DropActivations(0).message().rfind("stage 0: DROP of microbatch 0", 0), 0u);
  first.SetOffloadedMicrobatches({0, 1});
  refused(first.OffloadActivations(0), "needs its F to have run first");
  at::Tensor h = *first.Forward(0, data[0].tokens);
  refused(first.ReloadActivations(0), "needs an OFFLOAD after its F first");  // RELOAD without OFFLOAD
  ASSERT_TRUE(first.OffloadActivations(0).ok());
  refused(first.OffloadActivations(0), "already offloaded");                  // twice
  refused(first.DropActivations(0), "after its OFFLOAD");                     // DROP of offloaded data
  refused(first.BackwardFull(0, at::ones_like(h)).status(), "RELOAD must run before its backward");
  EXPECT_TRUE(first.IsHeld(0));
  ASSERT_TRUE(first.ReloadActivations(0).ok());
  refused(first.ReloadActivations(0), "needs an OFFLOAD");                    // reload twice
  EXPECT_TRUE(first.BackwardFull(0, at::ones_like(h)).ok());
  // OFFLOAD after DROP: the activations are gone.
  at::Tensor h1 = *first.Forward(1, data[1].tokens);
  ASSERT_TRUE(first.DropActivations(1).ok());
  refused(first.OffloadActivations(1), "after its DROP");
  ASSERT_TRUE(first.Recompute(1).ok());
  ASSERT_TRUE(first.OffloadActivations(1).ok());  // the recomputed graph registered its tensors again
  ASSERT_TRUE(first.ReloadActivations(1).ok());
  EXPECT_TRUE(first.BackwardFull(1, at::ones_like(h1)).ok());
  // A microbatch that SetOffloadedMicrobatches did not name saved nothing to move.
  first.SetOffloadedMicrobatches({});
  at::Tensor h0 = *first.Forward(0, data[0].tokens);
  refused(first.OffloadActivations(0), "call SetOffloadedMicrobatches");
  EXPECT_TRUE(first.BackwardFull(0, at::ones_like(h0)).ok());
}

}  // namespace
}  // namespace pw
