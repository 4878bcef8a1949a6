#include "runtime/calibrate.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

namespace pw {
namespace {

void ExpectTimed(const StageCost& c, const char* unit) {
  for (const auto& t : {c.forward, c.backward, c.backward_input, c.backward_weight}) {
    ASSERT_TRUE(t.has_value()) << unit;
    EXPECT_GE(*t, 0) << unit;
    EXPECT_LT(*t, 10000) << unit;
  }
}

TEST(CalibrateTest, TimesEachUnitAndRestoresTheThreadCount) {
  ModelConfig model;
  model.d_model = 32;
  model.n_heads = 2;
  model.seq_len = 16;
  model.n_layers = 6;  // the copy that is timed holds one block
  const int threads = at::get_num_threads();
  Result<search::UnitTimings> t = CalibrateUnitTimings(model, 2, 7);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(at::get_num_threads(), threads);
  ExpectTimed(t->embedding, "embedding");
  ExpectTimed(t->block, "block");
  ExpectTimed(t->head, "head");
  EXPECT_GT(*t->block.forward, 0);
  EXPECT_FALSE(CalibrateUnitTimings(model, 0, 7).ok());
}

TEST(CalibrateTest, MeasuresTheLoopbackLink) {
  Result<LinkTimings> link = CalibrateLoopbackLink(1 << 20);
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  EXPECT_GT(link->latency_ms, 0);
  EXPECT_LT(link->latency_ms, 1000);
  EXPECT_GT(link->bytes_per_ms, 0);
}

}  // namespace
}  // namespace pw
