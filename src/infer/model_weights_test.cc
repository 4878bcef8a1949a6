// model_weights: sizes, packing, the random init (equal to the whole
// model's), a training checkpoint written by model/checkpoint.h loaded
// back tensor for tensor, and bad checkpoints reported by file and tensor.
#include "infer/model_weights.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "infer/engine.h"
#include "infer/local_pool.h"
#include "infer/infer_test_util.h"
#include "model/gpt.h"
#include "model/stage_module.h"
#include "model/checkpoint.h"
#include "model/safetensors.h"

namespace pw {
namespace {

ModelConfig SmallConfig(bool bias = true) { return SmallTestConfig(32, 4, 48, bias); }

std::string TempDir(const std::string& name) {
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            ("pw_infer_weights_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

// Writes a checkpoint of `config` split into `stages` stages, as the trainer
// does, with parameters perturbed away from the init of `seed` (so loading
// the init by mistake cannot pass). Returns every parameter by name.
std::map<std::string, at::Tensor> WriteCheckpoint(const std::string& dir, const ModelConfig& config,
                                                  uint64_t seed, int stages) {
  Result<ModelPartition> partition = PartitionBalanced(config, stages);
  PW_CHECK(partition.ok(), partition.status().ToString());
  CheckpointManifest manifest;
  manifest.model_config = FormatModelConfig(config);
  manifest.schedule = "1f1b";
  manifest.pp = stages;
  manifest.dp = 1;
  manifest.microbatches = 4;
  manifest.microbatch_size = 1;
  manifest.seed = seed;
  std::map<std::string, at::Tensor> params;
  at::manual_seed(17);
  for (const StageSpan& span : partition->stages) {
    StageModule stage(config, span, seed);
    c10::NoGradGuard no_grad;
    for (auto& [name, p] : stage.NamedParameters()) {
      p.add_(at::randn(p.sizes()) * 0.05);
      params[name] = p.detach().clone();
    }
    PW_CHECK(WriteCheckpointStage(dir, stage, AdamWState{}).ok(), "write stage");
    manifest.stages.push_back({span.stage, span.first_block, span.num_blocks, span.has_embedding,
                               span.has_head, CheckpointStageFile(span.stage)});
  }
  PW_CHECK(WriteCheckpointManifest(dir, manifest).ok(), "write manifest");
  return params;
}

TEST(ModelWeightsTest, BlockParamCountMatchesCountParameters) {
  for (bool bias : {true, false}) {
    ModelConfig c = SmallConfig(bias);
    const long long shared = 2LL * c.vocab_size * c.d_model + 1LL * c.seq_len * c.d_model +
                             2LL * c.d_model;
    EXPECT_EQ(shared + c.n_layers * BlockParamCount(c), CountParameters(c)) << "bias " << bias;
    // Each field starts on a 64-byte boundary: at most 63 bytes of padding per field.
    EXPECT_GE(BlockBytes(c), 4 * BlockParamCount(c));
    EXPECT_LT(BlockBytes(c), 4 * BlockParamCount(c) + 16 * 64);
    EXPECT_EQ(BlockBytes(c) % 64, 0);
    // bf16 and int8 linears: 2 and 1 bytes per weight (+ int8's fp32 scale per output).
    EXPECT_LT(BlockBytes(c, WeightFormat::kBf16), BlockBytes(c) * 0.6);
    EXPECT_LT(BlockBytes(c, WeightFormat::kInt8), BlockBytes(c) * 0.4);
  }
}

TEST(ModelWeightsTest, PackUnpackRoundTripIsViews) {
  for (bool bias : {true, false}) {
    ModelConfig c = SmallConfig(bias);
    Result<ModelWeights> w = LoadModelWeights({"", c, 3}, {2});
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    const BlockWeights& b = w->blocks[2];
    ASSERT_TRUE(b.defined());
    EXPECT_EQ(b.qkv_bias.defined(), bias);
    EXPECT_TRUE(b.ln1_bias.defined());  // LayerNorms always have biases
    at::Tensor flat = PackBlock(b, c);
    EXPECT_TRUE(flat.is_same(b.flat)) << "a loaded block is a view of its flat form: no copy";
    ASSERT_EQ(flat.numel(), BlockBytes(c));
    flat = flat.clone();
    BlockWeights u = UnpackBlock(flat, c);
    EXPECT_TRUE(at::equal(u.qkv_weight, b.qkv_weight));
    EXPECT_TRUE(at::equal(u.mlp_weight, b.mlp_weight));
    EXPECT_TRUE(at::equal(u.ln2_bias, b.ln2_bias));
    EXPECT_EQ(u.fc_bias.defined(), bias);
    // Views: writing the flat tensor changes the unpacked fields.
    flat.zero_();
    EXPECT_EQ(u.proj_weight[3][4].item<float>(), 0.0f);
    EXPECT_TRUE(PackBlock(u, c).is_same(flat));
    BlockWeights copy = u;
    copy.flat = at::Tensor();  // fields only: packed into a new tensor
    EXPECT_TRUE(at::equal(PackBlock(copy, c), flat));
  }
}

TEST(ModelWeightsTest, RandomInitEqualsWholeModel) {
  c10::NoGradGuard no_grad;
  const ModelConfig c = SmallConfig();
  GptSegment model(c, WholeModelSpan(c), 1234);
  Result<ModelWeights> w = LoadModelWeights({"", c, 1234}, {}, /*keep_all=*/true);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::map<std::string, at::Tensor> got;
  for (auto& [name, t] : NamedWeights(*w)) got[name] = t;
  ASSERT_EQ(got.size(), model.named_parameters().size());
  for (const auto& item : model.named_parameters()) {
    ASSERT_TRUE(got.count(item.key())) << item.key();
    EXPECT_TRUE(at::equal(got[item.key()], item.value())) << item.key();
  }
  EXPECT_EQ(w->HeldBytes(), 4 * (CountParameters(c) - c.n_layers * BlockParamCount(c)) + c.n_layers * BlockBytes(c));
}

TEST(ModelWeightsTest, KeepsOnlyTheRequestedBlocks) {
  const ModelConfig c = SmallConfig();
  Result<ModelWeights> w = LoadModelWeights({"", c, 9}, {1, 3});
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->blocks.size(), 4u);
  EXPECT_FALSE(w->blocks[0].defined());
  EXPECT_TRUE(w->blocks[1].defined());
  EXPECT_FALSE(w->blocks[2].defined());
  EXPECT_TRUE(w->blocks[3].defined());
  const int64_t shared = 4LL * (2 * c.vocab_size * c.d_model + c.seq_len * c.d_model + 2 * c.d_model);
  EXPECT_EQ(w->SharedBytes(), shared);
  EXPECT_EQ(w->HeldBytes(), shared + 2 * BlockBytes(c));
  // The same block is identical whichever others are kept.
  Result<ModelWeights> all = LoadModelWeights({"", c, 9}, {}, true);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(at::equal(PackBlock(w->blocks[3], c), PackBlock(all->blocks[3], c)));

  Result<ModelWeights> bad = LoadModelWeights({"", c, 9}, {4});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("block 4"), std::string::npos);
}

TEST(ModelWeightsTest, CheckpointRoundTrip) {
  const ModelConfig c = SmallConfig();
  const std::string dir = TempDir("roundtrip");
  std::map<std::string, at::Tensor> params = WriteCheckpoint(dir, c, 77, /*stages=*/3);
  WeightSource source{dir, ModelConfig{}, 1234};
  Result<ModelConfig> config = SourceConfig(source);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(*config, c);

  Result<ModelWeights> all = LoadModelWeights(source, {}, true);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<std::pair<std::string, at::Tensor>> named = NamedWeights(*all);
  ASSERT_EQ(named.size(), params.size());
  for (auto& [name, t] : named) {
    ASSERT_TRUE(params.count(name)) << name;
    EXPECT_TRUE(at::equal(t, params[name])) << name;
  }
  Result<ModelWeights> some = LoadModelWeights(source, {2});
  ASSERT_TRUE(some.ok());
  EXPECT_FALSE(some->blocks[0].defined());
  EXPECT_TRUE(at::equal(some->blocks[2].fc_weight, params["blocks.2.mlp.fc.weight"]));
  std::filesystem::remove_all(dir);
}

TEST(ModelWeightsTest, BadCheckpointsNameFileAndTensor) {
  const ModelConfig c = SmallConfig();
  Result<ModelWeights> missing = LoadModelWeights({"/nonexistent/pw_ckpt", c, 1}, {}, true);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  const std::string dir = TempDir("bad");
  WriteCheckpoint(dir, c, 5, /*stages=*/1);
  const std::string file = dir + "/" + CheckpointStageFile(0);
  Result<SafetensorsContents> contents = ReadSafetensors(file);
  ASSERT_TRUE(contents.ok());
  // A tensor with the wrong shape.
  std::vector<std::pair<std::string, at::Tensor>> tensors = contents->tensors;
  for (auto& [name, t] : tensors) {
    if (name == "param/blocks.1.attn.proj.weight") t = at::zeros({3, 3});
  }
  ASSERT_TRUE(WriteSafetensors(file, tensors).ok());
  Result<ModelWeights> shape = LoadModelWeights({dir, c, 1}, {1});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shape.status().message().find("blocks.1.attn.proj.weight"), std::string::npos);
  EXPECT_NE(shape.status().message().find(file), std::string::npos);
  // Not kept, not read: the other blocks still load.
  EXPECT_TRUE(LoadModelWeights({dir, c, 1}, {0, 2, 3}).ok());
  // A missing tensor.
  std::erase_if(tensors, [](const auto& e) { return e.first == "param/head.ln.bias"; });
  ASSERT_TRUE(WriteSafetensors(file, tensors).ok());
  Result<ModelWeights> gone = LoadModelWeights({dir, c, 1}, {0});
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find("head.ln.bias"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Generation from a checkpoint: the engine over the loaded weights and the
// reference over the checkpoint agree, and differ from the untrained init.
TEST(ModelWeightsTest, EngineOnCheckpointMatchesReference) {
  const ModelConfig c = SmallConfig();
  const std::string dir = TempDir("engine");
  WriteCheckpoint(dir, c, 1234, /*stages=*/2);
  WeightSource source{dir, ModelConfig{}, 1234};
  Result<ModelWeights> w = LoadModelWeights(source, {}, true);
  ASSERT_TRUE(w.ok());
  std::unique_ptr<WeightPool> pool = MakeLocalPool(*w);
  PagedKvCache cache(c, 16, 8);
  InferenceEngine engine(*w, *pool, cache, EngineOptions{});
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest r;
    r.id = "r" + std::to_string(i);
    r.index = i;
    for (int j = 0; j < 4 + 5 * i; ++j) r.prompt.push_back((37 * j + 11 * i) % 256);
    r.max_new_tokens = 12;
    requests.push_back(r);
  }
  std::map<std::string, std::vector<int64_t>> out;
  ASSERT_TRUE(engine.Run(requests, [&](const GenerationResult& r) { out[r.id] = r.tokens; }).ok());
  bool differs_from_init = false;
  for (const GenerationRequest& r : requests) {
    EXPECT_EQ(out[r.id], ReferenceGreedy(source, r)) << r.id;
    differs_from_init |= out[r.id] != ReferenceGreedy({"", c, 1234}, r);
  }
  EXPECT_TRUE(differs_from_init);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pw
