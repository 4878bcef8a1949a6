// The fixed-order linear (panel_linear.h) against its contract, at every
// kernel level this CPU runs: each output is the FMA chain over k, then
// the bias, then the residual — computed here independently, element by
// element — bit for bit, whatever the row count, the row's place in the
// call, or the level; and close to a double-precision product.
#include "model/panel_linear.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace pw {
namespace {

std::vector<KernelIsa> SupportedLevels() {
  std::vector<KernelIsa> levels;
  for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (CpuSupportsIsa(isa)) levels.push_back(isa);
  }
  return levels;
}

std::vector<float> Random(size_t n, std::mt19937& gen) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

// Shapes with partial last panels (61, 257, 50 outputs), a single output,
// K of 1 and K not a multiple of anything, and the yardstick's widths.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {{64, 64}, {61, 37}, {768, 256}, {257, 100},
                                                          {50, 1},  {1, 3},   {16, 5},    {256, 1024}};

struct Problem {
  int64_t out, in, rows;
  std::vector<float> w, packed, bias, x, residual;
  Problem(int64_t o, int64_t i, int64_t r, std::mt19937& gen)
      : out(o), in(i), rows(r), w(Random(o * i, gen)), packed(o * i), bias(Random(o, gen)), x(Random(r * i, gen)),
        residual(Random(r * o, gen)) {
    PackPanels(w.data(), out, in, packed.data());
  }
  // Rows [start, start + count) of y = x W^T + bias + residual at `isa`,
  // with the weight of `weight` when given (its packed, packed_bf16 or
  // packed_int8 and scales), else this problem's fp32 panels.
  std::vector<float> Run(KernelIsa isa, int64_t start, int64_t count, bool epilogue = true,
                         const PanelLinearArgs* weight = nullptr) const {
    std::vector<float> y(count * out);
    PanelLinearArgs a;
    a.x = x.data() + start * in;
    a.rows = count;
    a.ldx = in;
    a.packed = packed.data();
    if (weight != nullptr) {
      a.packed = weight->packed;
      a.packed_bf16 = weight->packed_bf16;
      a.packed_int8 = weight->packed_int8;
      a.scales = weight->scales;
    }
    a.out = out;
    a.in = in;
    a.bias = epilogue ? bias.data() : nullptr;
    a.residual = epilogue ? residual.data() + start * out : nullptr;
    a.ldr = out;
    a.y = y.data();
    a.ldy = out;
    PanelLinear(isa, a);
    return y;
  }
};

TEST(PanelLinearTest, PackingRoundTripsAndRowsReadBack) {
  std::mt19937 gen(1);
  for (auto [out, in] : kShapes) {
    Problem p(out, in, 1, gen);
    std::vector<float> back(out * in);
    UnpackPanels(p.packed.data(), out, in, back.data());
    EXPECT_EQ(back, p.w) << out << "x" << in;
    std::vector<float> row(in);
    for (int64_t o : {int64_t{0}, out / 2, out - 1}) {
      PanelWeightRow(p.packed.data(), out, in, o, row.data());
      EXPECT_EQ(0, std::memcmp(row.data(), p.w.data() + o * in, in * sizeof(float))) << out << "x" << in << " row " << o;
    }
  }
}

// The contract, written out: one FMA per k in ascending order from 0, then
// + bias, then + residual, each rounded once.
TEST(PanelLinearTest, EveryLevelComputesTheStatedOrderBitForBit) {
  std::mt19937 gen(2);
  for (auto [out, in] : kShapes) {
    Problem p(out, in, 11, gen);
    std::vector<float> expected(p.rows * out);
    for (int64_t r = 0; r < p.rows; ++r) {
      for (int64_t o = 0; o < out; ++o) {
        float acc = 0.0f;
        for (int64_t k = 0; k < in; ++k) acc = std::fma(p.x[r * in + k], p.w[o * in + k], acc);
        acc = acc + p.bias[o];
        expected[r * out + o] = acc + p.residual[r * out + o];
      }
    }
    for (KernelIsa isa : SupportedLevels()) {
      const std::vector<float> got = p.Run(isa, 0, p.rows);
      EXPECT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)))
          << out << "x" << in << " at " << KernelIsaName(isa);
    }
  }
}

// Batch invariance of the kernel itself: a row's outputs are the same bits
// in a call of any row count, at any place in it (every tile shape: full
// and partial row blocks, the few-row tiles of decode).
TEST(PanelLinearTest, RowsDoNotDependOnTheRowCountOrTheirPlace) {
  std::mt19937 gen(3);
  for (auto [out, in] : kShapes) {
    Problem p(out, in, 70, gen);
    for (KernelIsa isa : SupportedLevels()) {
      for (bool epilogue : {false, true}) {
        const std::vector<float> all = p.Run(isa, 0, p.rows, epilogue);
        for (int64_t count = 1; count <= p.rows; ++count) {
          for (int64_t start = 0; start + count <= p.rows; start += 13) {
            const std::vector<float> part = p.Run(isa, start, count, epilogue);
            ASSERT_EQ(0, std::memcmp(part.data(), all.data() + start * out, part.size() * sizeof(float)))
                << out << "x" << in << " at " << KernelIsaName(isa) << ": rows [" << start << ", "
                << start + count << ")";
          }
        }
      }
    }
  }
}

TEST(PanelLinearTest, Bf16RoundsToNearestEvenAndWidensExactly) {
  EXPECT_EQ(ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FromBf16(0x3f80), 1.0f);
  EXPECT_EQ(ToBf16(-2.5f), 0xc020);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even 1.
  EXPECT_EQ(ToBf16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(ToBf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);  // halfway above an odd value: up
  EXPECT_EQ(ToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // just above halfway: up
  EXPECT_EQ(ToBf16(INFINITY), 0x7f80);
  EXPECT_TRUE(std::isnan(FromBf16(ToBf16(NAN))));
  EXPECT_EQ(ToBf16(3.4e38f), 0x7f80) << "beyond bf16's largest finite value: infinity";
  std::mt19937 gen(5);
  for (float x : Random(1000, gen)) {
    const float back = FromBf16(ToBf16(x));
    EXPECT_LE(std::abs(back - x), std::abs(x) * 0x1p-8f) << x;
    EXPECT_EQ(FromBf16(ToBf16(back)), back) << "bf16 values round-trip";
  }
}

// A bf16 weight computes exactly what the fp32 kernel computes on that
// weight widened: the same FMA chain, each value widened exactly. Every
// level, every row count and place.
TEST(PanelLinearTest, Bf16WeightsComputeTheirFp32WideningBitForBit) {
  std::mt19937 gen(6);
  for (auto [out, in] : kShapes) {
    Problem p(out, in, 23, gen);
    std::vector<Bf16Bits> bf16(out * in), packed_bf16(out * in), from_bf16(out * in);
    for (int64_t i = 0; i < out * in; ++i) bf16[i] = ToBf16(p.w[i]);
    PackPanelsBf16(p.w.data(), out, in, packed_bf16.data());
    PackPanelsFromBf16(bf16.data(), out, in, from_bf16.data());
    ASSERT_EQ(packed_bf16, from_bf16) << "rounding then packing = packing then rounding";
    Problem widened = p;
    for (int64_t i = 0; i < out * in; ++i) widened.w[i] = FromBf16(bf16[i]);
    PackPanels(widened.w.data(), out, in, widened.packed.data());
    for (KernelIsa isa : SupportedLevels()) {
      const std::vector<float> expected = widened.Run(isa, 0, p.rows);
      for (int64_t count : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{9}, p.rows}) {
        for (int64_t start = 0; start + count <= p.rows; start += 7) {
          PanelLinearArgs weight;
          weight.packed_bf16 = packed_bf16.data();
          const std::vector<float> y = p.Run(isa, start, count, /*epilogue=*/true, &weight);
          ASSERT_EQ(0, std::memcmp(y.data(), expected.data() + start * out, y.size() * sizeof(float)))
              << out << "x" << in << " bf16 at " << KernelIsaName(isa) << ": rows [" << start << ", "
              << start + count << ")";
        }
      }
    }
  }
}

// Per-output symmetric int8: each row's largest magnitude maps to +-127,
// every value to its nearest step (ties to even), and a row reads back as
// q * scale within half a step.
TEST(PanelLinearTest, Int8QuantizesEachOutputSymmetricallyToNearest) {
  std::mt19937 gen(8);
  for (auto [out, in] : kShapes) {
    std::vector<float> w = Random(out * in, gen);
    if (out > 2) std::fill(w.begin() + in, w.begin() + 2 * in, 0.0f);  // an all-zero output
    std::vector<int8_t> packed(out * in);
    std::vector<float> scales(out), row(in);
    PackPanelsInt8(w.data(), out, in, packed.data(), scales.data());
    for (int64_t o = 0; o < out; ++o) {
      float amax = 0;
      for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::abs(w[o * in + k]));
      ASSERT_EQ(scales[o], amax / 127.0f) << out << "x" << in << " output " << o;
      PanelWeightRow(packed.data(), scales.data(), out, in, o, row.data());
      for (int64_t k = 0; k < in; ++k) {
        ASSERT_LE(std::abs(row[k] - w[o * in + k]), (0.5f + 1e-4f) * scales[o])  // half a step, and the rounding of q * scale
            << out << "x" << in << " (" << o << ", " << k << ")";
      }
      if (amax > 0) {
        float top = 0;
        for (int64_t k = 0; k < in; ++k) top = std::max(top, std::abs(row[k]));
        EXPECT_NEAR(top, amax, amax * 1e-6f) << "the largest value is +-127 steps";
      }
    }
  }
  // Ties go to even: 0.5 and 1.5 steps.
  const float w[4] = {127.0f, 0.5f, 1.5f, -2.5f};
  int8_t q[4];
  float scale;
  PackPanelsInt8(w, 1, 4, q, &scale);
  EXPECT_EQ(scale, 1.0f);
  EXPECT_EQ(q[0], 127);
  EXPECT_EQ(q[1], 0);
  EXPECT_EQ(q[2], 2);
  EXPECT_EQ(q[3], -2);
}

// An int8 weight at every level: the FMA chain over the widened integers,
// then the output's scale, the bias and the residual, each rounded once —
// written out here element by element — bit for bit, whatever the row
// count and the row's place.
TEST(PanelLinearTest, Int8WeightsComputeTheStatedOrderBitForBit) {
  std::mt19937 gen(9);
  for (auto [out, in] : kShapes) {
    Problem p(out, in, 19, gen);
    std::vector<int8_t> packed(out * in);
    std::vector<float> scales(out), wrow(in);
    PackPanelsInt8(p.w.data(), out, in, packed.data(), scales.data());
    std::vector<float> expected(p.rows * out);
    for (int64_t o = 0; o < out; ++o) {
      const int64_t o0 = o / kPanelWidth * kPanelWidth, n = std::min(kPanelWidth, out - o0);
      for (int64_t r = 0; r < p.rows; ++r) {
        float acc = 0.0f;
        for (int64_t k = 0; k < in; ++k) {
          acc = std::fma(p.x[r * in + k], static_cast<float>(packed[o0 * in + k * n + (o - o0)]), acc);
        }
        acc = acc * scales[o];
        acc = acc + p.bias[o];
        expected[r * out + o] = acc + p.residual[r * out + o];
      }
    }
    for (KernelIsa isa : SupportedLevels()) {
      for (int64_t count : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{8}, p.rows}) {
        for (int64_t start = 0; start + count <= p.rows; start += 5) {
          PanelLinearArgs weight;
          weight.packed_int8 = packed.data();
          weight.scales = scales.data();
          const std::vector<float> y = p.Run(isa, start, count, /*epilogue=*/true, &weight);
          ASSERT_EQ(0, std::memcmp(y.data(), expected.data() + start * out, y.size() * sizeof(float)))
              << out << "x" << in << " int8 at " << KernelIsaName(isa) << ": rows [" << start << ", "
              << start + count << ")";
        }
      }
    }
  }
}

TEST(PanelLinearTest, AgreesWithADoublePrecisionProduct) {
  std::mt19937 gen(4);
  for (auto [out, in] : kShapes) {
    Problem p(out, in, 9, gen);
    const std::vector<float> got = p.Run(ActiveKernelIsa(), 0, p.rows);
    for (int64_t r = 0; r < p.rows; ++r) {
      for (int64_t o = 0; o < out; ++o) {
        double sum = 0, magnitude = 0;
        for (int64_t k = 0; k < in; ++k) {
          sum += static_cast<double>(p.x[r * in + k]) * p.w[o * in + k];
          magnitude += std::abs(static_cast<double>(p.x[r * in + k]) * p.w[o * in + k]);
        }
        sum += static_cast<double>(p.bias[o]) + p.residual[r * out + o];
        // fp32 accumulation: error within in * eps * sum |terms| (plus the two additions).
        const double bound = (static_cast<double>(in) + 2) * 6e-8 * (magnitude + 2) + 1e-7;
        ASSERT_NEAR(got[r * out + o], sum, bound) << out << "x" << in << " row " << r << " output " << o;
      }
    }
  }
}

}  // namespace
}  // namespace pw
