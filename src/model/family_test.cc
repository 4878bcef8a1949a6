// Model families (model/gpt_math.h BlockSpec): the logits of a whole model
// of each family equal the same model rebuilt here from its raw parameter
// tensors with LibTorch ops written independently — per-head loops instead
// of batched heads, explicit rotation matrices instead of "rotate half",
// the norms and activations from their formulas, q/k/v and gate/up as
// separate slices — and inference's decomposition (projection, rotation of
// the new rows at their positions, attention over a growing K/V history of
// fewer heads, output) reproduces the training block.
//
// Tolerance: fp32 sums in other orders (the reference's matmuls per head
// and per position): rounding of a few hundred O(1) terms, under 1e-4.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/block_test_util.h"
#include "model/gpt.h"
#include "model/gpt_math.h"

namespace pw {
namespace {

struct Family {
  std::string name;
  std::vector<std::string> settings;  // [model] overrides of the byte-level GPT
};

std::vector<Family> Families() {
  return {
      {"gpt", {}},
      {"gpt2", {"mlp=gelu_tanh", "tie_embeddings=true"}},
      {"llama", {"position=rope", "norm=rmsnorm", "norm_eps=1e-6", "mlp=swiglu", "d_ff=40", "n_kv_heads=2",
                 "bias=false", "rope_theta=500000"}},
      {"llama3", {"position=rope", "norm=rmsnorm", "mlp=swiglu", "n_kv_heads=1", "bias=false", "rope_theta=500000",
                  "rope_scaling=llama3", "rope_original_context=8", "rope_factor=4", "tie_embeddings=true"}},
      {"qwen2", {"position=rope", "norm=rmsnorm", "mlp=swiglu", "bias=false", "qkv_bias=true", "n_kv_heads=2"}},
  };
}

ModelConfig ConfigOf(const Family& family) {
  ModelConfig c;
  c.vocab_size = 50;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.seq_len = 16;
  c.init_std = 0.2;  // logits far from flat, so differences show
  for (const std::string& s : family.settings) {
    Status set = ApplyOverride(c, "model." + s);
    EXPECT_TRUE(set.ok()) << set.ToString();
  }
  EXPECT_TRUE(ValidateModelConfig(c).ok()) << ValidateModelConfig(c).ToString();
  return c;
}

using Params = std::map<std::string, at::Tensor>;

Params NamedParams(const torch::nn::Module& m) {
  Params p;
  for (const auto& item : m.named_parameters()) p[item.key()] = item.value().detach();
  return p;
}

// ---- the independent reference ----

at::Tensor RefNorm(const ModelConfig& c, const at::Tensor& x, const Params& p, const std::string& name) {
  const at::Tensor& w = p.at(name + ".weight");
  if (c.norm == NormKind::kRmsNorm) return x / at::sqrt((x * x).mean(-1, true) + c.norm_eps) * w;
  at::Tensor mean = x.mean(-1, true);
  at::Tensor var = ((x - mean) * (x - mean)).mean(-1, true);
  return (x - mean) / at::sqrt(var + c.norm_eps) * w + p.at(name + ".bias");
}

at::Tensor Linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = at::Tensor()) {
  at::Tensor y = at::matmul(x, w.t());
  return b.defined() ? y + b : y;
}

// Frequency i of a head of width hd, Llama 3.1's scaling written out.
double RefFrequency(const ModelConfig& c, int i) {
  const double hd = c.head_dim();
  double f = 1.0 / std::pow(c.rope_theta, 2.0 * i / hd);
  if (c.rope_scaling != RopeScaling::kLlama3) return f;
  const double wavelength = 2 * M_PI / f;
  const double low_wavelength = c.rope_original_context / c.rope_low_freq_factor;
  const double high_wavelength = c.rope_original_context / c.rope_high_freq_factor;
  if (wavelength < high_wavelength) return f;
  if (wavelength > low_wavelength) return f / c.rope_factor;
  const double smooth =
      (c.rope_original_context / wavelength - c.rope_low_freq_factor) / (c.rope_high_freq_factor - c.rope_low_freq_factor);
  return (1 - smooth) * f / c.rope_factor + smooth * f;
}

// x [T, heads, hd] rotated: per position a dense rotation matrix that turns
// each pair (i, i + hd/2) by position x frequency i.
at::Tensor RefRotate(const ModelConfig& c, const at::Tensor& x) {
  const int64_t t_len = x.size(0), hd = x.size(2), half = hd / 2;
  std::vector<at::Tensor> rows;
  for (int64_t t = 0; t < t_len; ++t) {
    at::Tensor r = at::zeros({hd, hd}, at::kDouble);
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(t) * static_cast<float>(RefFrequency(c, static_cast<int>(i)));
      r[i][i] = std::cos(angle);
      r[i][i + half] = -std::sin(angle);
      r[i + half][i + half] = std::cos(angle);
      r[i + half][i] = std::sin(angle);
    }
    rows.push_back(at::matmul(x[t].to(at::kDouble), r.t()).to(at::kFloat));  // [heads, hd]
  }
  return at::stack(rows);
}

at::Tensor RefAttention(const ModelConfig& c, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  // q [T, H, hd]; k, v [T, KV, hd].
  const int64_t t_len = q.size(0), hd = c.head_dim(), group = c.n_heads / c.kv_heads();
  at::Tensor future = at::ones({t_len, t_len}, at::kBool).triu(1);
  std::vector<at::Tensor> heads;
  for (int h = 0; h < c.n_heads; ++h) {
    const int64_t kv = h / group;
    at::Tensor scores = at::matmul(q.select(1, h), k.select(1, kv).t()) / std::sqrt(static_cast<double>(hd));
    scores = scores.masked_fill(future, -INFINITY);
    heads.push_back(at::matmul(at::softmax(scores, -1), v.select(1, kv)));
  }
  return at::cat(heads, -1);  // [T, d]
}

at::Tensor RefMlp(const ModelConfig& c, const at::Tensor& x, const Params& p, const std::string& b) {
  const at::Tensor& fc = p.at(b + "mlp.fc.weight");
  const at::Tensor fc_bias = p.count(b + "mlp.fc.bias") ? p.at(b + "mlp.fc.bias") : at::Tensor();
  const at::Tensor out_bias = p.count(b + "mlp.proj.bias") ? p.at(b + "mlp.proj.bias") : at::Tensor();
  at::Tensor hidden;
  if (c.mlp == MlpKind::kSwiGlu) {
    const int64_t h = c.ffn_width();
    at::Tensor gate = Linear(x, fc.narrow(0, 0, h)), up = Linear(x, fc.narrow(0, h, h));
    hidden = gate * at::sigmoid(gate) * up;
  } else {
    at::Tensor a = Linear(x, fc, fc_bias);
    hidden = c.mlp == MlpKind::kGeluTanh
                 ? 0.5 * a * (1 + at::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)))
                 : 0.5 * a * (1 + at::erf(a / std::sqrt(2.0)));
  }
  return Linear(hidden, p.at(b + "mlp.proj.weight"), out_bias);
}

// Logits [T, vocab] of one sequence.
at::Tensor RefLogits(const ModelConfig& c, const Params& p, const at::Tensor& tokens) {
  const int64_t t_len = tokens.size(0), d = c.d_model, hd = c.head_dim(), kv = c.kv_width();
  at::Tensor x = p.at("embed.tok_emb").index_select(0, tokens);
  if (c.position == PositionKind::kLearned) x = x + p.at("embed.pos_emb").narrow(0, 0, t_len);
  for (int layer = 0; layer < c.n_layers; ++layer) {
    const std::string b = "blocks." + std::to_string(layer) + ".";
    const at::Tensor& w = p.at(b + "attn.qkv.weight");
    const at::Tensor bias = p.count(b + "attn.qkv.bias") ? p.at(b + "attn.qkv.bias") : at::Tensor();
    auto slice = [&](int64_t from, int64_t width) {
      return Linear(RefNorm(c, x, p, b + "ln1"), w.narrow(0, from, width),
                    bias.defined() ? bias.narrow(0, from, width) : at::Tensor());
    };
    at::Tensor q = slice(0, d).view({t_len, c.n_heads, hd});
    at::Tensor k = slice(d, kv).view({t_len, c.kv_heads(), hd});
    at::Tensor v = slice(d + kv, kv).view({t_len, c.kv_heads(), hd});
    if (c.position == PositionKind::kRope) {
      q = RefRotate(c, q);
      k = RefRotate(c, k);
    }
    const at::Tensor proj_bias = p.count(b + "attn.proj.bias") ? p.at(b + "attn.proj.bias") : at::Tensor();
    x = x + Linear(RefAttention(c, q, k, v), p.at(b + "attn.proj.weight"), proj_bias);
    x = x + RefMlp(c, RefNorm(c, x, p, b + "ln2"), p, b);
  }
  const at::Tensor& head = c.tie_embeddings ? p.at("embed.tok_emb") : p.at("head.lm_head.weight");
  return Linear(RefNorm(c, x, p, "head.ln"), head);
}

// ---- the tests ----

TEST(ModelFamilyTest, LogitsEqualAnIndependentImplementation) {
  c10::NoGradGuard no_grad;
  for (const Family& family : Families()) {
    SCOPED_TRACE(family.name);
    const ModelConfig c = ConfigOf(family);
    GptSegment model(c, WholeModelSpan(c), /*seed=*/7);
    const Params p = NamedParams(model);
    EXPECT_EQ(p.count("embed.pos_emb"), c.position == PositionKind::kLearned ? 1u : 0u);
    EXPECT_EQ(p.count("head.lm_head.weight"), c.tie_embeddings ? 0u : 1u);
    EXPECT_EQ(p.at("blocks.0.attn.qkv.weight").size(0), c.d_model + 2 * c.kv_width());
    int64_t count = 0;
    for (const auto& [name, t] : p) count += t.numel();
    EXPECT_EQ(count, CountParameters(c));
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(11);
    at::Tensor tokens = at::randint(c.vocab_size, {2, c.seq_len}, gen, at::kLong);
    at::Tensor logits = model.ForwardLogits(tokens, ForwardContext{});
    for (int64_t s = 0; s < 2; ++s) {
      at::Tensor want = RefLogits(c, p, tokens[s]);
      const double diff = (logits[s] - want).abs().max().item<double>();
      EXPECT_LE(diff, 1e-4) << "sequence " << s;
    }
  }
}

// A tied model's head gradient reaches the token embedding: one parameter,
// both uses.
TEST(ModelFamilyTest, TiedHeadTrainsTheEmbedding) {
  const ModelConfig c = ConfigOf(Families()[1]);
  ASSERT_TRUE(c.tie_embeddings);
  GptSegment model(c, WholeModelSpan(c), 7);
  at::Tensor tokens = at::randint(c.vocab_size, {1, 8}, at::kLong);
  model.Forward(tokens, tokens, ForwardContext{}).backward();
  const Params p = NamedParams(model);
  at::Tensor grad = model.named_parameters()["embed.tok_emb"].grad();
  ASSERT_TRUE(grad.defined());
  // Rows of tokens never seen get gradient only through the head.
  at::Tensor seen = at::zeros({c.vocab_size}, at::kBool).index_fill_(0, tokens.flatten(), true);
  const int64_t unseen = (~seen).nonzero().size(0);
  ASSERT_GT(unseen, 0);
  EXPECT_GT(grad.index_select(0, (~seen).nonzero().flatten()).abs().sum().item<double>(), 0.0);
}

// Inference's decomposition for rope and grouped-query models: rows of one
// sequence projected, rotated at their own positions, attending over the
// history of (fewer) rotated key/value heads, give the training block's rows.
TEST(ModelFamilyTest, RotatedPartsOverAHistoryMatchBlockForward) {
  c10::NoGradGuard no_grad;
  const ModelConfig c = ConfigOf(Families()[3]);  // llama3: rope scaling, one kv head, bias-free
  const BlockSpec spec = BlockSpecOf(c);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(3);
  Block module(c, gen);
  const Params p = NamedParams(module);
  const BlockTensors block = BlockTensorsOf(p);
  const int64_t t = 11, d = c.d_model, kv = c.kv_width();
  const at::Tensor freq = RotaryFrequencies(c);
  const RotaryAngles whole = RotaryAnglesAt(freq, at::arange(t, at::kLong));
  ForwardContext train_ctx;
  train_ctx.rotary = &whole;
  at::Tensor x = at::empty({1, t, d}).normal_(0.0, 1.0, gen);
  at::Tensor expected = module.Forward(x, train_ctx)[0];
  at::Tensor rows = x[0];
  at::Tensor qkv = BlockQkv(block, spec, rows, ForwardContext{});
  std::vector<at::Tensor> keys, values;
  for (auto [start, n] : {std::pair<int64_t, int64_t>{0, 7}, {7, 1}, {8, 3}}) {
    const RotaryAngles at_rows = RotaryAnglesAt(freq, at::arange(start, start + n, at::kLong));
    at::Tensor part = qkv.narrow(0, start, n);
    at::Tensor q = ApplyRotary(part.narrow(1, 0, d), c.n_heads, at_rows);
    keys.push_back(ApplyRotary(part.narrow(1, d, kv), c.kv_heads(), at_rows));
    values.push_back(part.narrow(1, d + kv, kv));
    at::Tensor attended = CausalAttention(q, at::cat(keys), at::cat(values), start, c.n_heads, 0.0, ForwardContext{});
    at::Tensor got = BlockOutput(block, spec, rows.narrow(0, start, n), attended, ForwardContext{});
    const double diff = (got - expected.narrow(0, start, n)).abs().max().item<double>();
    EXPECT_LE(diff, 1e-5) << "rows [" << start << ", " << start + n << ")";
  }
}

TEST(ModelFamilyTest, ConfigRulesNameTheKeys) {
  ModelConfig c;
  c.n_kv_heads = 3;  // 4 heads
  Status bad = ValidateModelConfig(c);
  EXPECT_NE(bad.message().find("model.n_kv_heads"), std::string::npos) << bad.ToString();
  c = ModelConfig{};
  c.position = PositionKind::kRope;
  c.d_model = 20;  // head width 5
  bad = ValidateModelConfig(c);
  EXPECT_NE(bad.message().find("must be even"), std::string::npos) << bad.ToString();
  c = ModelConfig{};
  bad = ApplyOverride(c, "model.mlp=swiglu2");
  EXPECT_NE(bad.message().find("did you mean 'swiglu'"), std::string::npos) << bad.ToString();
  // A family's settings survive the TOML text a checkpoint manifest keeps.
  const ModelConfig llama = ConfigOf(Families()[3]);
  Result<ModelConfig> back = ParseModelConfig(FormatModelConfig(llama), "manifest");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, llama);
  // The byte-level GPT's manifests, written before these keys existed, still read.
  Result<ModelConfig> old = ParseModelConfig("[model]\nvocab_size = 256\nd_model = 64\n", "old");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->position, PositionKind::kLearned);
  EXPECT_FALSE(old->tie_embeddings);
}

}  // namespace
}  // namespace pw
