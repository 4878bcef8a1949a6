// Hugging Face checkpoints: a tiny random model written here in the Hugging
// Face layout by hand (its own tensor names and conventions: separate
// q/k/v and gate/up projections, GPT-2's [in, out] Conv1D weights), in one
// file, sharded with an index, and in bf16, loads into a model whose logits
// equal a forward pass written here over the Hugging Face tensors
// themselves; export writes back what the loader reads bit for bit; and bad
// directories get errors that name the file and the tensor.
#include "model/hf_checkpoint.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "model/gpt.h"
#include "model/hf_config.h"
#include "model/safetensors.h"

namespace pw {
namespace {

namespace fs = std::filesystem;
using Tensors = std::map<std::string, at::Tensor>;

class HfCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pw_hf_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Dir(const std::string& sub) const { return (dir_ / sub).string(); }
  fs::path dir_;
};

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

const char* kLlamaConfig = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 40, "hidden_size": 32,
  "intermediate_size": 24, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "max_position_embeddings": 16, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "hidden_act": "silu",
  "tie_word_embeddings": false, "attention_bias": false, "mlp_bias": false, "torch_dtype": "bfloat16",
  "rope_scaling": {"factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8, "rope_type": "llama3"}})";

const char* kGpt2Config = R"({
  "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 40, "n_embd": 32, "n_layer": 2,
  "n_head": 4, "n_positions": 16, "n_ctx": 16, "n_inner": null, "layer_norm_epsilon": 1e-05,
  "activation_function": "gelu_new", "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1})";

at::Tensor Rand(std::vector<int64_t> shape) { return at::randn(shape) * 0.3; }

// Hugging Face's own tensors for a llama config (qwen2: with q/k/v biases).
Tensors MakeLlamaTensors(const ModelConfig& c, bool qwen2) {
  const int64_t d = c.d_model, kv = c.kv_width(), h = c.ffn_width();
  Tensors t;
  t["model.embed_tokens.weight"] = Rand({c.vocab_size, d});
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t[p + "input_layernorm.weight"] = 1 + Rand({d});
    t[p + "post_attention_layernorm.weight"] = 1 + Rand({d});
    t[p + "self_attn.q_proj.weight"] = Rand({d, d});
    t[p + "self_attn.k_proj.weight"] = Rand({kv, d});
    t[p + "self_attn.v_proj.weight"] = Rand({kv, d});
    t[p + "self_attn.o_proj.weight"] = Rand({d, d});
    if (qwen2) {
      t[p + "self_attn.q_proj.bias"] = Rand({d});
      t[p + "self_attn.k_proj.bias"] = Rand({kv});
      t[p + "self_attn.v_proj.bias"] = Rand({kv});
    }
    t[p + "mlp.gate_proj.weight"] = Rand({h, d});
    t[p + "mlp.up_proj.weight"] = Rand({h, d});
    t[p + "mlp.down_proj.weight"] = Rand({d, h});
  }
  t["model.norm.weight"] = 1 + Rand({d});
  if (!c.tie_embeddings) t["lm_head.weight"] = Rand({c.vocab_size, d});
  return t;
}

Tensors MakeGpt2Tensors(const ModelConfig& c) {
  const int64_t d = c.d_model, h = c.ffn_width();
  Tensors t;
  t["wte.weight"] = Rand({c.vocab_size, d});
  t["wpe.weight"] = Rand({c.seq_len, d});
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    for (const char* ln : {"ln_1", "ln_2"}) {
      t[p + ln + ".weight"] = 1 + Rand({d});
      t[p + ln + ".bias"] = Rand({d});
    }
    t[p + "attn.c_attn.weight"] = Rand({d, 3 * d});  // Conv1D: [in, out]
    t[p + "attn.c_attn.bias"] = Rand({3 * d});
    t[p + "attn.c_proj.weight"] = Rand({d, d});
    t[p + "attn.c_proj.bias"] = Rand({d});
    t[p + "mlp.c_fc.weight"] = Rand({d, h});
    t[p + "mlp.c_fc.bias"] = Rand({h});
    t[p + "mlp.c_proj.weight"] = Rand({h, d});
    t[p + "mlp.c_proj.bias"] = Rand({d});
  }
  t["ln_f.weight"] = 1 + Rand({d});
  t["ln_f.bias"] = Rand({d});
  return t;
}

// ---- forward passes over the Hugging Face tensors, written from the
// families' definitions ----

at::Tensor Rms(const at::Tensor& x, const at::Tensor& w, double eps) {
  return x / at::sqrt((x * x).mean(-1, true) + eps) * w;
}

at::Tensor Ln(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, double eps) {
  at::Tensor mean = x.mean(-1, true), centred = x - mean;
  return centred / at::sqrt((centred * centred).mean(-1, true) + eps) * w + b;
}

// Heads [T, H, hd] of rows at positions 0..T-1, rotated HF-style:
// x * cos + rotate_half(x) * sin with cos, sin of cat(freqs, freqs).
at::Tensor Rope(const at::Tensor& x, const ModelConfig& c) {
  const int64_t t_len = x.size(0), hd = x.size(2);
  std::vector<float> inv(hd / 2);
  for (int64_t i = 0; i < hd / 2; ++i) {
    double f = 1.0 / std::pow(c.rope_theta, 2.0 * i / hd);
    if (c.rope_scaling == RopeScaling::kLlama3) {
      const double wl = 2 * M_PI / f, lo = c.rope_original_context / c.rope_low_freq_factor,
                   hi = c.rope_original_context / c.rope_high_freq_factor;
      if (wl > lo) {
        f /= c.rope_factor;
      } else if (wl >= hi) {
        const double s = (c.rope_original_context / wl - c.rope_low_freq_factor) /
                         (c.rope_high_freq_factor - c.rope_low_freq_factor);
        f = (1 - s) * f / c.rope_factor + s * f;
      }
    }
    inv[i] = static_cast<float>(f);
  }
  at::Tensor freqs = at::outer(at::arange(t_len, at::kFloat), at::tensor(inv));
  at::Tensor emb = at::cat({freqs, freqs}, -1).unsqueeze(1);  // [T, 1, hd]
  at::Tensor rotated = at::cat({-x.narrow(-1, hd / 2, hd / 2), x.narrow(-1, 0, hd / 2)}, -1);
  return x * emb.cos() + rotated * emb.sin();
}

at::Tensor Attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t hd) {
  // q [T, H, hd]; k, v [T, H, hd] (already repeated per group).
  const int64_t t_len = q.size(0);
  at::Tensor scores = at::einsum("thd,shd->hts", {q, k}) / std::sqrt(static_cast<double>(hd));
  scores = scores.masked_fill(at::ones({t_len, t_len}, at::kBool).triu(1), -INFINITY);
  return at::einsum("hts,shd->thd", {at::softmax(scores, -1), v}).reshape({t_len, -1});
}

at::Tensor LlamaLogits(const ModelConfig& c, const Tensors& t, const at::Tensor& tokens) {
  const int64_t len = tokens.size(0), hd = c.head_dim(), group = c.n_heads / c.kv_heads();
  at::Tensor x = t.at("model.embed_tokens.weight").index_select(0, tokens);
  auto lin = [&](const at::Tensor& in, const std::string& name) {
    at::Tensor y = at::matmul(in, t.at(name + ".weight").t());
    auto b = t.find(name + ".bias");
    return b == t.end() ? y : y + b->second;
  };
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    at::Tensor n = Rms(x, t.at(p + "input_layernorm.weight"), c.norm_eps);
    at::Tensor q = Rope(lin(n, p + "self_attn.q_proj").view({len, c.n_heads, hd}), c);
    at::Tensor k = Rope(lin(n, p + "self_attn.k_proj").view({len, c.kv_heads(), hd}), c);
    at::Tensor v = lin(n, p + "self_attn.v_proj").view({len, c.kv_heads(), hd});
    k = k.repeat_interleave(group, 1);
    v = v.repeat_interleave(group, 1);
    x = x + lin(Attend(q, k, v, hd), p + "self_attn.o_proj");
    n = Rms(x, t.at(p + "post_attention_layernorm.weight"), c.norm_eps);
    at::Tensor gate = lin(n, p + "mlp.gate_proj");
    x = x + lin(gate * at::sigmoid(gate) * lin(n, p + "mlp.up_proj"), p + "mlp.down_proj");
  }
  const at::Tensor& head = c.tie_embeddings ? t.at("model.embed_tokens.weight") : t.at("lm_head.weight");
  return at::matmul(Rms(x, t.at("model.norm.weight"), c.norm_eps), head.t());
}

at::Tensor Gpt2Logits(const ModelConfig& c, const Tensors& t, const at::Tensor& tokens) {
  const int64_t len = tokens.size(0), d = c.d_model, hd = c.head_dim();
  at::Tensor x = t.at("wte.weight").index_select(0, tokens) + t.at("wpe.weight").narrow(0, 0, len);
  auto conv = [&](const at::Tensor& in, const std::string& name) {  // Conv1D: x @ W + b
    return at::matmul(in, t.at(name + ".weight")) + t.at(name + ".bias");
  };
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    at::Tensor qkv = conv(Ln(x, t.at(p + "ln_1.weight"), t.at(p + "ln_1.bias"), c.norm_eps), p + "attn.c_attn");
    auto heads = [&](int part) { return qkv.narrow(1, part * d, d).view({len, c.n_heads, hd}); };
    x = x + conv(Attend(heads(0), heads(1), heads(2), hd), p + "attn.c_proj");
    at::Tensor a = conv(Ln(x, t.at(p + "ln_2.weight"), t.at(p + "ln_2.bias"), c.norm_eps), p + "mlp.c_fc");
    at::Tensor g = 0.5 * a * (1 + at::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a.pow(3))));
    x = x + conv(g, p + "mlp.c_proj");
  }
  return at::matmul(Ln(x, t.at("ln_f.weight"), t.at("ln_f.bias"), c.norm_eps), t.at("wte.weight").t());
}

std::vector<std::pair<std::string, at::Tensor>> AsList(const Tensors& t) { return {t.begin(), t.end()}; }

// Logits of pipewright's model holding `params`.
at::Tensor OurLogits(const ModelConfig& c, const HfNamedTensors& params, const at::Tensor& tokens) {
  GptSegment model(c, WholeModelSpan(c), 1);
  auto mine = model.named_parameters();
  EXPECT_EQ(mine.size(), params.size());
  c10::NoGradGuard no_grad;
  for (const auto& [name, t] : params) mine[name].copy_(t);
  return model.ForwardLogits(tokens.unsqueeze(0), ForwardContext{})[0];
}

TEST_F(HfCheckpointTest, LlamaFromOneFileEqualsTheHuggingFaceForward) {
  WriteText(Dir("config.json"), kLlamaConfig);
  Result<ModelConfig> c = ReadHfConfig(dir_.string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kv_heads(), 2);
  EXPECT_EQ(c->rope_scaling, RopeScaling::kLlama3);
  at::manual_seed(1);
  const Tensors hf = MakeLlamaTensors(*c, false);
  ASSERT_TRUE(WriteSafetensors(Dir("model.safetensors"), AsList(hf)).ok());
  Result<HfNamedTensors> params = LoadHfParameters(dir_.string(), *c, [](std::string_view) { return true; });
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  at::Tensor tokens = at::randint(c->vocab_size, {c->seq_len}, at::kLong);
  const double diff = (OurLogits(*c, *params, tokens) - LlamaLogits(*c, hf, tokens)).abs().max().item<double>();
  EXPECT_LE(diff, 1e-4);
}

TEST_F(HfCheckpointTest, Qwen2ShardedAndTiedEqualsTheHuggingFaceForward) {
  std::string text = kLlamaConfig;
  text.replace(text.find("\"llama\""), 7, "\"qwen2\"");
  text.replace(text.find("\"tie_word_embeddings\": false"), 28, "\"tie_word_embeddings\": true");
  WriteText(Dir("config.json"), text);
  Result<ModelConfig> c = ReadHfConfig(dir_.string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(c->qkv_bias && c->tie_embeddings);
  at::manual_seed(2);
  const Tensors hf = MakeLlamaTensors(*c, true);
  // Two shards and the index that maps every tensor to its file.
  std::vector<std::pair<std::string, at::Tensor>> a, b;
  nlohmann::json index;
  for (const auto& [name, t] : hf) {
    const bool first = name.find("layers.1.") == std::string::npos;
    (first ? a : b).emplace_back(name, t);
    index["weight_map"][name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  ASSERT_TRUE(WriteSafetensors(Dir("model-00001-of-00002.safetensors"), a).ok());
  ASSERT_TRUE(WriteSafetensors(Dir("model-00002-of-00002.safetensors"), b).ok());
  WriteText(Dir("model.safetensors.index.json"), index.dump());
  Result<HfNamedTensors> params = LoadHfParameters(dir_.string(), *c, [](std::string_view) { return true; });
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  at::Tensor tokens = at::randint(c->vocab_size, {c->seq_len}, at::kLong);
  const double diff = (OurLogits(*c, *params, tokens) - LlamaLogits(*c, hf, tokens)).abs().max().item<double>();
  EXPECT_LE(diff, 1e-4);
  // A stage's load reads its own tensors only: with the second shard gone,
  // layer 0 still loads, layer 1 names the missing file.
  fs::remove(Dir("model-00002-of-00002.safetensors"));
  auto first_layer = [](std::string_view name) { return name.rfind("blocks.0.", 0) == 0; };
  Result<HfNamedTensors> stage = LoadHfParameters(dir_.string(), *c, first_layer);
  ASSERT_TRUE(stage.ok()) << stage.status().ToString();
  for (const auto& [name, t] : *stage) EXPECT_EQ(name.rfind("blocks.0.", 0), 0u) << name;
  Result<HfNamedTensors> all = LoadHfParameters(dir_.string(), *c, [](std::string_view) { return true; });
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("model-00002-of-00002.safetensors is missing"), std::string::npos)
      << all.status().ToString();
}

TEST_F(HfCheckpointTest, Gpt2InBf16EqualsTheHuggingFaceForward) {
  WriteText(Dir("config.json"), kGpt2Config);
  Result<ModelConfig> c = ReadHfConfig(dir_.string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->mlp, MlpKind::kGeluTanh);
  EXPECT_TRUE(c->tie_embeddings);
  EXPECT_EQ(c->dropout, 0.0);
  at::manual_seed(3);
  Tensors hf = MakeGpt2Tensors(*c);
  std::vector<std::pair<std::string, at::Tensor>> bf16;
  for (auto& [name, t] : hf) {
    t = t.to(at::kBFloat16).to(at::kFloat);  // the values bf16 can hold
    bf16.emplace_back(name, t.to(at::kBFloat16));
  }
  ASSERT_TRUE(WriteSafetensors(Dir("model.safetensors"), bf16).ok());
  Result<HfNamedTensors> params = LoadHfParameters(dir_.string(), *c, [](std::string_view) { return true; });
  ASSERT_TRUE(params.ok()) << params.status().ToString();
  at::Tensor tokens = at::randint(c->vocab_size, {c->seq_len}, at::kLong);
  const double diff = (OurLogits(*c, *params, tokens) - Gpt2Logits(*c, hf, tokens)).abs().max().item<double>();
  EXPECT_LE(diff, 1e-4);
}

TEST_F(HfCheckpointTest, ExportThenLoadIsBitExact) {
  for (const char* config_text : {kLlamaConfig, kGpt2Config}) {
    Result<ModelConfig> c = ParseHfConfig(config_text, "config.json");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    GptSegment model(*c, WholeModelSpan(*c), 5);
    HfNamedTensors params;
    for (const auto& item : model.named_parameters()) params.emplace_back(item.key(), item.value().detach());
    const std::string out = Dir(c->position == PositionKind::kRope ? "llama_out" : "gpt2_out");
    ASSERT_TRUE(ExportHfModel(out, *c, params).ok());
    Result<ModelConfig> back_config = ReadHfConfig(out);
    ASSERT_TRUE(back_config.ok()) << back_config.status().ToString();
    EXPECT_EQ(FormatModelConfig(*back_config), FormatModelConfig(*c));
    Result<HfNamedTensors> back = LoadHfParameters(out, *back_config, [](std::string_view) { return true; });
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    std::map<std::string, at::Tensor> by_name(back->begin(), back->end());
    ASSERT_EQ(by_name.size(), params.size());
    for (const auto& [name, t] : params) EXPECT_TRUE(at::equal(by_name.at(name), t)) << name;
  }
}

// A GPT-2 context capped below the file's (model.seq_len 16 of 32
// positions) reads the first rows of the learned position table; a longer
// one is refused with the limit, not blamed on config.json.
TEST_F(HfCheckpointTest, ACappedLearnedContextReadsTheFirstPositions) {
  Result<ModelConfig> c = ParseHfConfig(kGpt2Config, "config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  GptSegment model(*c, WholeModelSpan(*c), 5);
  HfNamedTensors params;
  at::Tensor table;
  for (const auto& item : model.named_parameters()) {
    params.emplace_back(item.key(), item.value().detach());
    if (item.key() == "embed.pos_emb") table = item.value().detach();
  }
  ASSERT_TRUE(table.defined());
  const std::string out = Dir("gpt2_capped");
  ASSERT_TRUE(ExportHfModel(out, *c, params).ok());
  ModelConfig capped = *c;
  capped.seq_len = c->seq_len / 2;
  Result<HfNamedTensors> back = LoadHfParameters(out, capped, [](std::string_view n) { return n == "embed.pos_emb"; });
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_TRUE(at::equal(back->front().second, table.narrow(0, 0, capped.seq_len)));
  ModelConfig longer = *c;
  longer.seq_len = c->seq_len * 2;
  back = LoadHfParameters(out, longer, [](std::string_view n) { return n == "embed.pos_emb"; });
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("cannot grow: give model.seq_len <= " + std::to_string(c->seq_len)),
            std::string::npos)
      << back.status().ToString();
}

TEST_F(HfCheckpointTest, BadDirectoriesNameTheFileAndTensor) {
  WriteText(Dir("config.json"), kLlamaConfig);
  ModelConfig c = *ReadHfConfig(dir_.string());
  auto all = [](std::string_view) { return true; };
  // No weights at all.
  Result<HfNamedTensors> r = LoadHfParameters(dir_.string(), c, all);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("no model.safetensors"), std::string::npos) << r.status().ToString();
  // A missing tensor.
  Tensors hf = MakeLlamaTensors(c, false);
  hf.erase("model.layers.1.mlp.up_proj.weight");
  ASSERT_TRUE(WriteSafetensors(Dir("model.safetensors"), AsList(hf)).ok());
  r = LoadHfParameters(dir_.string(), c, all);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("model.layers.1.mlp.up_proj.weight"), std::string::npos) << r.status().ToString();
  // A tensor of the wrong shape.
  hf = MakeLlamaTensors(c, false);
  hf["model.layers.0.self_attn.k_proj.weight"] = Rand({c.d_model, c.d_model});  // as if num_key_value_heads were 4
  ASSERT_TRUE(WriteSafetensors(Dir("model.safetensors"), AsList(hf)).ok());
  r = LoadHfParameters(dir_.string(), c, all);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the model config (config.json with any --set) makes it [64, 32]"), std::string::npos) << r.status().ToString();
  // A truncated file.
  hf = MakeLlamaTensors(c, false);
  ASSERT_TRUE(WriteSafetensors(Dir("model.safetensors"), AsList(hf)).ok());
  fs::resize_file(Dir("model.safetensors"), fs::file_size(Dir("model.safetensors")) - 100);
  r = LoadHfParameters(dir_.string(), c, all);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("model.safetensors: not a valid safetensors file"), std::string::npos)
      << r.status().ToString();
}

TEST_F(HfCheckpointTest, AMistralConfigIsLlamaWithItsContextCappedAtTheSlidingWindow) {
  auto as_mistral = [](const std::string& window) {
    std::string text = kLlamaConfig;
    text.replace(text.find("\"llama\""), 7, "\"mistral\"");
    text.replace(text.find("\"torch_dtype\""), 0, "\"sliding_window\": " + window + ", ");
    return text;
  };
  const ModelConfig llama = ParseHfConfig(kLlamaConfig, "dir/config.json").value();
  // No window (Mistral v0.2 and later) or one at least the context: the
  // same model as Llama's config gives.
  for (const char* window : {"null", "16", "4096"}) {
    Result<ModelConfig> c = ParseHfConfig(as_mistral(window), "dir/config.json");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->seq_len, 16) << window;
    EXPECT_EQ(c->n_kv_heads, llama.n_kv_heads);
    EXPECT_EQ(c->rope_theta, llama.rope_theta);
  }
  // A window shorter than the context: within it, full attention is exact.
  EXPECT_EQ(ParseHfConfig(as_mistral("8"), "dir/config.json").value().seq_len, 8);
  Result<ModelConfig> bad = ParseHfConfig(as_mistral("\"wide\""), "dir/config.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sliding_window must be a non-negative integer"), std::string::npos)
      << bad.status().ToString();
}

TEST_F(HfCheckpointTest, ConfigsPipewrightCannotRunAreRefusedByKey) {
  struct Case {
    std::string from, to, words;
  };
  for (const Case& k : std::vector<Case>{
           {"\"llama\"", "\"gemma\"", "model_type \"gemma\" is not supported"},
           {"\"llama3\"", "\"yarn\"", "rope_scaling of type \"yarn\" is not supported"},
           {"\"silu\"", "\"gelu\"", "hidden_act = \"gelu\" is not supported"},
           {"\"attention_bias\": false", "\"attention_bias\": true", "attention_bias = true is not supported"},
           {"\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3", "model.n_kv_heads"},
           {"\"hidden_size\": 32", "\"hidden_size\": \"32\"", "hidden_size must be a non-negative integer"},
       }) {
    std::string text = kLlamaConfig;
    ASSERT_NE(text.find(k.from), std::string::npos) << k.from;
    text.replace(text.find(k.from), k.from.size(), k.to);
    Result<ModelConfig> c = ParseHfConfig(text, "dir/config.json");
    ASSERT_FALSE(c.ok()) << k.to;
    EXPECT_NE(c.status().message().find("dir/config.json"), std::string::npos) << c.status().ToString();
    EXPECT_NE(c.status().message().find(k.words), std::string::npos) << c.status().ToString();
  }
  EXPECT_EQ(ReadHfConfig(Dir("nothing")).status().code(), StatusCode::kNotFound);
  // The byte-level GPT exports as GPT-2 with the exact GELU and its own head.
  ModelConfig byte;
  Result<std::string> type = HfModelType(byte);
  ASSERT_TRUE(type.ok());
  EXPECT_EQ(*type, "gpt2");
  Result<std::string> text = FormatHfConfig(byte);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("\"activation_function\": \"gelu\""), std::string::npos) << *text;
  EXPECT_NE(text->find("\"tie_word_embeddings\": false"), std::string::npos) << *text;
}

}  // namespace
}  // namespace pw
