// The offload engine (model/activation_offload.h) on small graphs: LibTorch
// 1.13 calls its saved-tensor hooks inside a CaptureScope and only there;
// the store holds one entry per storage, leaves parameters and kept
// storages in place; OFFLOAD really copies to a fresh host buffer and lets
// the device copy go; RELOAD gives gradients equal bit for bit; a backward
// while offloaded fails with a message that says to RELOAD.
#include "model/activation_offload.h"

#include <ATen/ATen.h>
#include <ATen/SavedTensorHooks.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <unordered_set>

namespace pw {
namespace {

class ActivationOffloadTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(InstallOffloadEngine()); }
};

// y = sum(sigmoid(h * h)), h = tanh(x @ w): saves x (mm), h twice (mul),
// tanh's and sigmoid's results; w (a leaf that requires grad) is not saved
// by mm when x needs no gradient, so it is saved explicitly via w * h.
at::Tensor Loss(const at::Tensor& x, const at::Tensor& w) {
  at::Tensor h = at::tanh(at::matmul(x, w));
  return (at::sigmoid(h * h) + (w.sum(0) * h)).sum();
}

TEST_F(ActivationOffloadTest, HooksRunOnlyInsideAScopeAndDedupeStorages) {
  EXPECT_TRUE(at::SavedTensorDefaultHooks::is_enabled());
  at::Tensor w = at::randn({8, 8}).requires_grad_(true);
  at::Tensor x = at::randn({4, 8});
  OffloadStore outside({});
  at::Tensor plain = Loss(x, w);  // no scope: nothing registered
  EXPECT_EQ(outside.storages(), 0);
  EXPECT_EQ(outside.kept_tensors(), 0);

  OffloadStore store({x.storage().unsafeGetStorageImpl()});  // x stays: its owner holds it
  at::Tensor loss;
  {
    CaptureScope scope(store);
    loss = Loss(x, w);
  }
  // tanh's result h (saved by tanh, both sides of h * h, and the product
  // with w's row sums), sigmoid's result, w.sum(0): 3 storages; x is kept.
  EXPECT_EQ(store.storages(), 3);
  EXPECT_GE(store.kept_tensors(), 1);
  EXPECT_EQ(store.bytes(), (4 * 8 + 4 * 8 + 8) * 4);
}

TEST_F(ActivationOffloadTest, OffloadCopiesOutAndReloadGivesTheSameGradients) {
  at::Tensor w = at::randn({16, 16}).requires_grad_(true);
  at::Tensor x = at::randn({32, 16});
  Loss(x, w).backward();
  const at::Tensor plain = w.grad().clone();
  w.mutable_grad() = at::Tensor();

  OffloadStore store({});
  at::Tensor loss;
  c10::Storage h_storage;
  {
    CaptureScope scope(store);
    at::Tensor h = at::tanh(at::matmul(x, w));
    h_storage = h.storage();
    loss = (at::sigmoid(h * h) + (w.sum(0) * h)).sum();
  }
  EXPECT_GT(h_storage.use_count(), 1);  // the store holds it
  const int64_t bytes = store.bytes();
  EXPECT_EQ(store.Offload(c10::kCPU), bytes);
  EXPECT_TRUE(store.offloaded());
  EXPECT_EQ(h_storage.use_count(), 1);  // only this test holds the device copy now
  EXPECT_EQ(store.Reload(), bytes);
  EXPECT_FALSE(store.offloaded());
  loss.backward();
  EXPECT_TRUE(at::equal(plain, w.grad()));
}

TEST_F(ActivationOffloadTest, BackwardWhileOffloadedSaysToReload) {
  at::Tensor w = at::randn({8, 8}).requires_grad_(true);
  at::Tensor x = at::randn({4, 8});
  OffloadStore store({});
  at::Tensor loss;
  {
    CaptureScope scope(store);
    loss = Loss(x, w);
  }
  store.Offload(c10::kCPU);
  try {
    loss.backward();
    ADD_FAILURE() << "the backward ran on offloaded activations";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("run RELOAD"), std::string::npos) << e.what();
  }
}

TEST_F(ActivationOffloadTest, ScopesNestAndRestore) {
  at::Tensor x = at::randn({4, 4}).requires_grad_(true);
  OffloadStore outer({}), inner({});
  at::Tensor a, b, c;
  {
    CaptureScope s1(outer);
    a = at::tanh(x * 2);
    {
      CaptureScope s2(inner);
      b = at::sigmoid(x * 3);
    }
    c = at::exp(x * 4);
  }
  EXPECT_EQ(inner.storages(), 1);  // sigmoid's result (x * 3 saves a scalar, not a tensor)
  EXPECT_EQ(outer.storages(), 2);  // tanh's and exp's results
}

}  // namespace
}  // namespace pw
