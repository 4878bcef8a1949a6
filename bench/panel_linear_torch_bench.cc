// The panel kernels (model/panel_linear.h) per weight format over the
// linears of Qwen2.5-0.5B's blocks (d 896, ffn 4864, 14/2 heads: qkv
// 1152x896, proj 896x896, fc 9728x896, mlp 896x4864), 8 blocks' weights
// in turn so that they stream from memory as in a decode pass, at R rows:
//
//   BM_PanelLinears<fp32|bf16|int8>/R
//   BM_MemoryStream     one core reading a 1 GiB buffer in 8 streams: the
//                       limit a single-sequence decode (R = 1) is held to
//
// Counters: GB/s of weight bytes streamed, GFLOP/s of the linears. At one
// row the kernels read each weight once per call, so GB/s against
// BM_MemoryStream's says how close a single stream is to the memory's
// limit; at 32 rows GFLOP/s against the core's GEMM rate
// (split_backward_torch_bench BM_Gemm) says how close batched decode is to
// the arithmetic's. Run with one thread:
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build/bench/panel_linear_torch_bench
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "model/panel_linear.h"

namespace pw {
namespace {

constexpr int kLayers = 8;
const std::pair<int64_t, int64_t> kShapes[] = {{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}};

enum Format { kFp32, kBf16, kInt8 };

struct Linears {
  Linears(Format format, int64_t rows) {
    at::manual_seed(1);
    for (int layer = 0; layer < kLayers; ++layer) {
      for (auto [out, in] : kShapes) {
        const at::Tensor w = at::randn({out, in}) * 0.05;
        Weight p{out, in, {}, {}, {}, {}};
        if (format == kFp32) {
          p.fp32.resize(out * in);
          PackPanels(w.data_ptr<float>(), out, in, p.fp32.data());
        } else if (format == kBf16) {
          p.bf16.resize(out * in);
          PackPanelsBf16(w.data_ptr<float>(), out, in, p.bf16.data());
        } else {
          p.int8.resize(out * in);
          p.scales.resize(out);
          PackPanelsInt8(w.data_ptr<float>(), out, in, p.int8.data(), p.scales.data());
        }
        bytes += static_cast<double>(out * in) * (format == kFp32 ? 4 : format == kBf16 ? 2 : 1);
        flops += 2.0 * rows * out * in;
        weights.push_back(std::move(p));
      }
    }
    for (auto [out, in] : kShapes) {
      inputs.push_back(at::randn({rows, in}));
      outputs.push_back(at::empty({rows, out}));
    }
    bytes /= kLayers;
    flops /= kLayers;
  }
  struct Weight {
    int64_t out, in;
    std::vector<float> fp32;
    std::vector<Bf16Bits> bf16;
    std::vector<int8_t> int8;
    std::vector<float> scales;
  };
  std::vector<Weight> weights;
  std::vector<at::Tensor> inputs, outputs;
  double bytes = 0, flops = 0;  // per layer
};

template <Format kFormat>
void BM_PanelLinears(benchmark::State& state) {
  const int64_t rows = state.range(0);
  Linears l(kFormat, rows);
  const KernelIsa isa = ActiveKernelIsa();
  int layer = 0;
  for (auto _ : state) {
    for (int i = 0; i < 4; ++i) {
      const Linears::Weight& w = l.weights[layer * 4 + i];
      PanelLinearArgs a;
      a.x = l.inputs[i].data_ptr<float>();
      a.rows = rows;
      a.ldx = w.in;
      a.packed = w.fp32.empty() ? nullptr : w.fp32.data();
      a.packed_bf16 = w.bf16.empty() ? nullptr : w.bf16.data();
      a.packed_int8 = w.int8.empty() ? nullptr : w.int8.data();
      a.scales = w.scales.empty() ? nullptr : w.scales.data();
      a.out = w.out;
      a.in = w.in;
      a.y = l.outputs[i].data_ptr<float>();
      a.ldy = w.out;
      PanelLinear(isa, a);
    }
    benchmark::ClobberMemory();
    layer = (layer + 1) % kLayers;
  }
  state.counters["GB/s"] = benchmark::Counter(l.bytes * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(l.flops * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(KernelIsaName(isa));
}
BENCHMARK(BM_PanelLinears<kFp32>)->Arg(1)->Arg(4)->Arg(32)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PanelLinears<kBf16>)->Arg(1)->Arg(4)->Arg(32)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PanelLinears<kInt8>)->Arg(1)->Arg(4)->Arg(32)->Unit(benchmark::kMillisecond);

// Eight regions read at once, one 256-bit integer sum each, as the panel
// kernels read 8 panels at one row: bound by the memory (and the core's
// misses in flight), not by an add chain. (One region read alone goes
// slower here: the hardware prefetches each stream separately.) Where the
// CPU has AVX2; a plain loop elsewhere.
__attribute__((target("avx2"))) uint32_t SumAvx2(const uint32_t* p, size_t n) {
  constexpr int kStreams = 8;
  const size_t part = n / kStreams / 8 * 8;
  __m256i acc[kStreams];
  for (__m256i& a : acc) a = _mm256_setzero_si256();
  for (size_t i = 0; i < part; i += 8) {
    for (int s = 0; s < kStreams; ++s) {
      acc[s] = _mm256_add_epi32(acc[s], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + s * part + i)));
    }
  }
  __m256i total = _mm256_setzero_si256();
  for (const __m256i& a : acc) total = _mm256_add_epi32(total, a);
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), total);
  uint32_t sum = 0;
  for (uint32_t x : lanes) sum += x;
  return sum;
}

void BM_MemoryStream(benchmark::State& state) {
  std::vector<uint32_t> buffer(int64_t{1} << 28, 1u);  // 1 GiB
  const bool avx2 = __builtin_cpu_supports("avx2");
  uint32_t sum = 0;
  for (auto _ : state) {
    if (avx2) {
      sum += SumAvx2(buffer.data(), buffer.size());
    } else {
      for (uint32_t x : buffer) sum += x;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.counters["GB/s"] =
      benchmark::Counter(4.0 * buffer.size() * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MemoryStream)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pw

BENCHMARK_MAIN();
