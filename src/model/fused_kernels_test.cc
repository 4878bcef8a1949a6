// The fused kernels against the plain LibTorch formulation, at every
// instruction-set level this CPU runs (scalar, AVX2, AVX-512), on sizes that
// are not multiples of the vector width or of the kernel's 32-row blocks.
//
// Tolerances (fp32):
//   - softmax / GELU values: the kernels' exp and erfc are polynomials with a
//     relative error of a few 1e-7 (LibTorch's own vectorised erf has an
//     absolute error of 1.5e-7), sums run in another order: rtol 1e-5,
//     atol 1e-6 on O(1) values.
//   - attention outputs and gradients: the same, plus GEMMs of other shapes
//     (row blocks, the 1/sqrt(hd) scale folded into the GEMM instead of a
//     multiply after it), so BLAS sums dot products of up to L terms in
//     another order: rtol 1e-4, atol 1e-5 on O(1) values (measured: ~1e-6).
#include "model/fused_kernels.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "model/fused_row_kernels.h"
#include "model/gpt.h"
#include "model/gpt_math.h"
#include "model/weight_grad_store.h"

namespace pw {
namespace {

std::vector<KernelIsa> SupportedIsas() {
  std::vector<KernelIsa> isas;
  for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (CpuSupportsIsa(isa)) isas.push_back(isa);
  }
  return isas;
}

std::string IsaName(KernelIsa isa) { return KernelIsaName(isa); }

// Runs the kernels at one level for the test's scope.
class FusedKernelsTest : public ::testing::TestWithParam<KernelIsa> {
 protected:
  void SetUp() override { previous_ = SetKernelIsaForTesting(GetParam()); }
  void TearDown() override { SetKernelIsaForTesting(previous_); }

 private:
  KernelIsa previous_ = KernelIsa::kScalar;
};

void ExpectClose(const at::Tensor& got, const at::Tensor& want, double rtol, double atol,
                 const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(at::allclose(got, want, rtol, atol))
      << what << ": max diff " << (got - want).abs().max().item<float>();
}

// The op-by-op formulation CausalAttention had before the fused kernel.
at::Tensor PlainAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          int64_t start, int n_heads) {
  auto split = [&](const at::Tensor& z) {
    std::vector<int64_t> shape = z.sizes().vec();
    const int64_t d = shape.back();
    shape.back() = n_heads;
    shape.push_back(d / n_heads);
    return z.reshape(shape).transpose(-3, -2);
  };
  const int64_t n = q.size(-2), length = k.size(-2), hd = q.size(-1) / n_heads;
  at::Tensor scores = at::matmul(split(q), split(k).transpose(-2, -1)) * (1.0 / std::sqrt(double(hd)));
  if (n > 1) {
    at::Tensor future = at::ones({n, length}, at::TensorOptions().dtype(at::kBool)).triu(start + 1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  }
  return at::matmul(at::softmax(scores, -1), split(v)).transpose(-3, -2).reshape(q.sizes());
}

TEST_P(FusedKernelsTest, SoftmaxRowsMatchLibTorch) {
  const fused::RowKernels& rows = fused::RowKernelsFor(GetParam());
  at::manual_seed(1);
  for (int64_t length : {1, 5, 15, 16, 17, 33, 128, 131}) {
    for (int64_t valid : {int64_t{1}, (length + 1) / 2, length}) {
      at::Tensor s = at::randn({length}) * 4;
      at::Tensor g = at::randn({length});
      at::Tensor want = at::softmax(s.narrow(0, 0, valid), 0);
      at::Tensor p = s.clone();
      rows.softmax(p.data_ptr<float>(), valid, length);
      const std::string what = "length " + std::to_string(length) + " valid " + std::to_string(valid);
      ExpectClose(p.narrow(0, 0, valid), want, 1e-5, 1e-6, what);
      EXPECT_TRUE(at::equal(p.narrow(0, valid, length - valid), at::zeros({length - valid}))) << what;
      // Backward: softmax's vector-Jacobian product from autograd.
      at::Tensor x = s.narrow(0, 0, valid).clone().requires_grad_(true);
      at::softmax(x, 0).backward(g.narrow(0, 0, valid));
      at::Tensor dg = g.clone();
      rows.softmax_backward(p.data_ptr<float>(), dg.data_ptr<float>(), valid, length);
      ExpectClose(dg.narrow(0, 0, valid), x.grad(), 1e-5, 1e-6, what + " backward");
      EXPECT_TRUE(at::equal(dg.narrow(0, valid, length - valid), at::zeros({length - valid})));
    }
  }
}

TEST_P(FusedKernelsTest, GeluMatchesLibTorchWithGradient) {
  at::manual_seed(2);
  // Odd size, values across the tails (|x| up to 12: erfc underflows).
  at::Tensor base = at::cat({at::randn({4099}) * 3, at::linspace(-12, 12, 97)});
  at::Tensor x = base.clone().requires_grad_(true);
  at::Tensor ref = base.clone().requires_grad_(true);
  at::Tensor g = at::randn({base.numel()});
  at::Tensor y = FusedGelu(x);
  at::Tensor want = at::gelu(ref);
  ExpectClose(y, want, 1e-5, 1e-6, "gelu");
  y.backward(g);
  want.backward(g);
  ExpectClose(x.grad(), ref.grad(), 1e-5, 1e-6, "gelu backward");
  // Without a gradient wanted: the same values, nothing saved.
  at::NoGradGuard no_grad;
  EXPECT_TRUE(at::equal(FusedGelu(base.view({4, 1049})).view(-1), y.detach()));
}

struct AttentionCase {
  int64_t batch, n, length, start, d;
  int heads;
};

TEST_P(FusedKernelsTest, CausalAttentionMatchesPlainWithGradients) {
  // Whole sequences, history offsets (a chunk after a prefill), a decode
  // step, rows across the 32-row blocks, odd head widths, no batch dim.
  const AttentionCase cases[] = {
      {2, 13, 13, 0, 32, 4}, {2, 5, 12, 7, 32, 4}, {1, 1, 9, 8, 32, 4},
      {2, 70, 70, 0, 30, 3}, {1, 37, 100, 63, 20, 2}, {0, 11, 11, 0, 24, 8},
  };
  at::manual_seed(3);
  for (const AttentionCase& c : cases) {
    auto shape = [&](int64_t rows) {
      return c.batch > 0 ? std::vector<int64_t>{c.batch, rows, c.d} : std::vector<int64_t>{rows, c.d};
    };
    at::Tensor q0 = at::randn(shape(c.n)), k0 = at::randn(shape(c.length)) * 2,
               v0 = at::randn(shape(c.length));
    at::Tensor g = at::randn(shape(c.n));
    at::Tensor q = q0.clone().requires_grad_(true), k = k0.clone().requires_grad_(true),
               v = v0.clone().requires_grad_(true);
    at::Tensor rq = q0.clone().requires_grad_(true), rk = k0.clone().requires_grad_(true),
               rv = v0.clone().requires_grad_(true);
    at::Tensor got = FusedCausalAttention(q, k, v, c.start, c.heads);
    at::Tensor want = PlainAttention(rq, rk, rv, c.start, c.heads);
    const std::string what = "n " + std::to_string(c.n) + " L " + std::to_string(c.length) +
                             " start " + std::to_string(c.start) + " d " + std::to_string(c.d);
    ExpectClose(got, want, 1e-4, 1e-5, what);
    got.backward(g);
    want.backward(g);
    ExpectClose(q.grad(), rq.grad(), 1e-4, 1e-5, what + " dq");
    ExpectClose(k.grad(), rk.grad(), 1e-4, 1e-5, what + " dk");
    ExpectClose(v.grad(), rv.grad(), 1e-4, 1e-5, what + " dv");
    // No gradient wanted: the inference path gives the same values.
    at::NoGradGuard no_grad;
    EXPECT_TRUE(at::equal(FusedCausalAttention(q0, k0, v0, c.start, c.heads), got.detach()))
        << what;
  }
}

TEST_P(FusedKernelsTest, SelfAttentionFromQkvMatchesPlain) {
  at::manual_seed(4);
  for (int64_t t : {1, 9, 32, 70}) {
    const int64_t d = 48;
    at::Tensor base = at::randn({3, t, 3 * d});
    at::Tensor g = at::randn({3, t, d});
    at::Tensor qkv = base.clone().requires_grad_(true);
    at::Tensor ref = base.clone().requires_grad_(true);
    at::Tensor got = FusedSelfAttention(qkv, 4);
    std::vector<at::Tensor> parts = ref.split(d, -1);
    at::Tensor want = PlainAttention(parts[0], parts[1], parts[2], 0, 4);
    const std::string what = "T " + std::to_string(t);
    ExpectClose(got, want, 1e-4, 1e-5, what);
    got.backward(g);
    want.backward(g);
    ExpectClose(qkv.grad(), ref.grad(), 1e-4, 1e-5, what + " dqkv");
    // The q/k/v-slices entry computes the same numbers bit for bit.
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> slices = base.split(d, -1);
    EXPECT_TRUE(at::equal(FusedCausalAttention(slices[0], slices[1], slices[2], 0, 4), got.detach()))
        << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, FusedKernelsTest, ::testing::ValuesIn(SupportedIsas()),
                         [](const auto& info) { return IsaName(info.param); });

// A whole block through gpt_math (fused kernels) against the same block
// written op by op, with the split linear: fused backward (B) and the
// deferred one (I, then W from the store) give the reference's gradients.
class FusedBlockTest : public ::testing::TestWithParam<bool> {};

TEST_P(FusedBlockTest, BlockForwardMatchesPlainBlockThroughSplitLinear) {
  ModelConfig config;
  config.d_model = 40;
  config.n_heads = 4;
  config.seq_len = 37;
  config.bias = true;
  config.init_std = 0.2;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(9);
  Block block(config, gen);
  std::map<std::string, at::Tensor> p;
  for (const auto& item : block.named_parameters()) p[item.key()] = item.value();
  at::Tensor x0 = at::empty({2, 37, 40}).normal_(0.0, 1.0, gen);
  at::Tensor g = at::empty({2, 37, 40}).normal_(0.0, 1.0, gen);

  // Reference: the plain formulation, autograd only.
  at::Tensor x_ref = x0.clone().requires_grad_(true);
  auto linear = [&](const at::Tensor& in, const std::string& name) {
    return at::linear(in, p[name + ".weight"], p[name + ".bias"]);
  };
  auto norm = [&](const at::Tensor& in, const std::string& name) {
    return at::layer_norm(in, {40}, p[name + ".weight"], p[name + ".bias"], 1e-5);
  };
  std::vector<at::Tensor> qkv = linear(norm(x_ref, "ln1"), "attn.qkv").split(40, -1);
  at::Tensor h = x_ref + linear(PlainAttention(qkv[0], qkv[1], qkv[2], 0, 4), "attn.proj");
  at::Tensor want = h + linear(at::gelu(linear(norm(h, "ln2"), "mlp.fc")), "mlp.proj");
  want.backward(g);
  std::map<std::string, at::Tensor> want_grads;
  for (auto& [name, t] : p) {
    want_grads[name] = t.grad().clone();
    t.mutable_grad() = at::Tensor();
  }

  const bool deferred = GetParam();
  WeightGradStore store;
  ForwardContext ctx;
  ctx.store = &store;
  at::Tensor x = x0.clone().requires_grad_(true);
  at::Tensor got = block.Forward(x, ctx);
  ExpectClose(got, want, 1e-4, 1e-5, "block output");
  if (deferred) {
    {
      WeightGradStore::DeferScope defer(store, 0);
      got.backward(g);
    }
    store.Run(0);
  } else {
    got.backward(g);
  }
  ExpectClose(x.grad(), x_ref.grad(), 1e-4, 1e-5, "dx");
  for (auto& [name, t] : p) {
    ASSERT_TRUE(t.grad().defined()) << name;
    ExpectClose(t.grad(), want_grads[name], 1e-4, 1e-5, name);
  }
}

INSTANTIATE_TEST_SUITE_P(Deferred, FusedBlockTest, ::testing::Bool());

}  // namespace
}  // namespace pw
