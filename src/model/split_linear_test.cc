// Claim (a): SplitLinear's dX, dW and db equal plain autograd through
// torch::nn::functional::linear, fused or split (I then W), and split mode
// really leaves dW/db for W.
//
// Tolerance: both sides run the same fp32 GEMMs on the same data (dX = dY·W,
// dW = dYᵀ·X, db = Σ dY); only BLAS's choice of kernel for transposed
// operands may reorder a dot product's sum. A sum of K = 48 products, each
// term <= |dY|·|X| ~ 10, has rounding error <= K·eps·Σ|terms| ~ 48 · 6e-8 ·
// 48 · 10 ≈ 1.4e-3 in the worst case and ~1e-5 typically; we allow
// rtol = 1e-5, atol = 1e-5. Measured on this machine: bit-identical, except
// where the test itself sums in another order (2.4e-7 in the accumulation test).
#include "model/split_linear.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <iostream>
#include <torch/nn/functional/linear.h>

#include "model/weight_grad_store.h"

namespace pw {
namespace {

constexpr double kRtol = 1e-5, kAtol = 1e-5;

class SplitLinearTest : public ::testing::Test {
 protected:
  void SetUp() override {
    at::set_num_threads(1);
    gen_ = at::make_generator<at::CPUGeneratorImpl>(1234);
    x_ = at::empty({3, 5, 48}).normal_(0, 1, gen_);
    w_ = at::empty({32, 48}).normal_(0, 0.2, gen_);
    b_ = at::empty({32}).normal_(0, 0.2, gen_);
    g_ = at::empty({3, 5, 32}).normal_(0, 1, gen_);
  }

  struct Grads {
    at::Tensor dx, dw, db;
  };

  // Plain autograd through torch::nn::functional::linear.
  Grads Reference(const at::Tensor& g, bool with_bias = true) {
    at::Tensor x = x_.clone().requires_grad_(true);
    at::Tensor w = w_.clone().requires_grad_(true);
    at::Tensor b = with_bias ? b_.clone().requires_grad_(true) : at::Tensor();
    torch::nn::functional::linear(x, w, b).backward(g);
    return {x.grad(), w.grad(), with_bias ? b.grad() : at::Tensor()};
  }

  static void ExpectClose(const at::Tensor& actual, const at::Tensor& expected) {
    ASSERT_TRUE(actual.defined());
    ASSERT_TRUE(expected.defined());
    EXPECT_TRUE(at::allclose(actual, expected, kRtol, kAtol))
        << "max |diff| = " << (actual - expected).abs().max().item<double>();
    if (!at::equal(actual, expected)) {
      std::cout << "note: within tolerance but not bit-identical, max |diff| = "
                << (actual - expected).abs().max().item<double>() << "\n";
    }
  }

  at::Generator gen_;
  at::Tensor x_, w_, b_, g_;
};

TEST_F(SplitLinearTest, ForwardMatchesLinear) {
  WeightGradStore store;
  EXPECT_TRUE(at::allclose(SplitLinear(x_, w_, b_, &store),
                           torch::nn::functional::linear(x_, w_, b_), kRtol, kAtol));
  EXPECT_TRUE(at::allclose(SplitLinear(x_, w_, at::Tensor(), nullptr),
                           torch::nn::functional::linear(x_, w_, at::Tensor()), kRtol, kAtol));
}

TEST_F(SplitLinearTest, FusedBackwardMatchesPlainAutograd) {
  Grads expected = Reference(g_);
  for (bool with_store : {false, true}) {
    WeightGradStore store;  // present but not deferring: fused B
    at::Tensor x = x_.clone().requires_grad_(true);
    at::Tensor w = w_.clone().requires_grad_(true);
    at::Tensor b = b_.clone().requires_grad_(true);
    SplitLinear(x, w, b, with_store ? &store : nullptr).backward(g_);
    ExpectClose(x.grad(), expected.dx);
    ExpectClose(w.grad(), expected.dw);
    ExpectClose(b.grad(), expected.db);
    EXPECT_TRUE(store.PendingMicrobatches().empty());
  }
}

TEST_F(SplitLinearTest, SplitBackwardDefersWeightGradsUntilRun) {
  Grads expected = Reference(g_);
  WeightGradStore store;
  at::Tensor x = x_.clone().requires_grad_(true);
  at::Tensor w = w_.clone().requires_grad_(true);
  at::Tensor b = b_.clone().requires_grad_(true);
  at::Tensor y = SplitLinear(x, w, b, &store);
  {
    WeightGradStore::DeferScope scope(store, /*microbatch=*/3);
    y.backward(g_);  // I
  }
  ExpectClose(x.grad(), expected.dx);
  EXPECT_FALSE(w.grad().defined()) << "I must not compute dW";
  EXPECT_FALSE(b.grad().defined()) << "I must not compute db";
  EXPECT_EQ(store.PendingClosures(3), 1);
  EXPECT_EQ(store.Run(3), 1);  // W
  ExpectClose(w.grad(), expected.dw);
  ExpectClose(b.grad(), expected.db);
  EXPECT_FALSE(store.HasPending(3));
  EXPECT_EQ(store.Run(3), 0);
}

TEST_F(SplitLinearTest, DeferredGradsAccumulateAcrossMicrobatchesInAnyOrder) {
  Grads expected = Reference(g_);
  Grads expected2 = Reference(g_ * -0.5);
  WeightGradStore store;
  at::Tensor w = w_.clone().requires_grad_(true);
  at::Tensor b = b_.clone().requires_grad_(true);
  w.mutable_grad() = at::ones_like(w);  // an earlier step's leftover is added to
  for (int mb : {0, 1}) {
    at::Tensor x = x_.clone().requires_grad_(true);
    at::Tensor y = SplitLinear(x, w, b, &store);
    WeightGradStore::DeferScope scope(store, mb);
    y.backward(mb == 0 ? g_ : g_ * -0.5);
  }
  EXPECT_EQ(store.PendingMicrobatches(), (std::vector<MicrobatchId>{0, 1}));
  store.Run(1);
  store.Run(0);
  ExpectClose(w.grad(), at::ones_like(w) + expected.dw + expected2.dw);
  ExpectClose(b.grad(), expected.db + expected2.db);
}

TEST_F(SplitLinearTest, NoBiasAndInputWithoutGrad) {
  Grads expected = Reference(g_, /*with_bias=*/false);
  WeightGradStore store;
  at::Tensor x = x_.clone();  // token-like input: no gradient wanted
  at::Tensor w = w_.clone().requires_grad_(true);
  at::Tensor y = SplitLinear(x, w, at::Tensor(), &store);
  {
    WeightGradStore::DeferScope scope(store, 0);
    y.backward(g_);
  }
  EXPECT_FALSE(x.grad().defined());
  store.Run(0);
  ExpectClose(w.grad(), expected.dw);
}

TEST_F(SplitLinearTest, ChainOfLayersSplitMatchesPlainAutograd) {
  at::Tensor w2_init = at::empty({16, 32}).normal_(0, 0.2, gen_);
  at::Tensor g = at::empty({3, 5, 16}).normal_(0, 1, gen_);
  // Reference: linear -> gelu -> linear with plain autograd.
  at::Tensor rx = x_.clone().requires_grad_(true), rw1 = w_.clone().requires_grad_(true);
  at::Tensor rb1 = b_.clone().requires_grad_(true), rw2 = w2_init.clone().requires_grad_(true);
  namespace F = torch::nn::functional;
  F::linear(at::gelu(F::linear(rx, rw1, rb1)), rw2).backward(g);

  WeightGradStore store;
  at::Tensor x = x_.clone().requires_grad_(true), w1 = w_.clone().requires_grad_(true);
  at::Tensor b1 = b_.clone().requires_grad_(true), w2 = w2_init.clone().requires_grad_(true);
  at::Tensor y = SplitLinear(at::gelu(SplitLinear(x, w1, b1, &store)), w2, at::Tensor(), &store);
  {
    WeightGradStore::DeferScope scope(store, 7);
    y.backward(g);
  }
  ExpectClose(x.grad(), rx.grad());
  EXPECT_EQ(store.PendingClosures(7), 2);
  EXPECT_EQ(store.Run(7), 2);
  ExpectClose(w1.grad(), rw1.grad());
  ExpectClose(b1.grad(), rb1.grad());
  ExpectClose(w2.grad(), rw2.grad());
}

TEST(WeightGradStoreTest, RunsInQueueOrderAndDiscards) {
  WeightGradStore store;
  std::vector<int> ran;
  {
    WeightGradStore::DeferScope scope(store, 2);
    EXPECT_EQ(store.deferring(), 2);
    store.Enqueue([&] { ran.push_back(1); });
    store.Enqueue([&] { ran.push_back(2); });
  }
  EXPECT_FALSE(store.deferring().has_value());
  {
    WeightGradStore::DeferScope scope(store, 5);
    store.Enqueue([&] { ran.push_back(3); });
  }
  EXPECT_EQ(store.PendingClosures(2), 2);
  store.Discard(5);
  EXPECT_FALSE(store.HasPending(5));
  EXPECT_EQ(store.Run(2), 2);
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_TRUE(store.PendingMicrobatches().empty());
}

}  // namespace
}  // namespace pw
