// The four linears of the yardstick's blocks (d 256: qkv, proj, fc, mlp) as
// a decode pass runs them, over 8 layers' weights in turn (so they come
// from memory or L3 as in a pass, not from L1/L2), at R rows:
//
//   BM_PlainLinears/R       at::linear (OpenBLAS: packs each weight on every call)
//   BM_PrepackedLinears/R   infer/prepacked_linear.h over weights packed once,
//                           bias inside the matmul (oneDNN)
//
// Counter GFLOP/s: the linears' arithmetic per second, against the core's
// GEMM rate (bench/split_backward_torch_bench BM_Gemm/small). The
// epilogues (GELU, residual) are left out so that both do the same work.
// Skipped (an error) where the CPU cannot prepack (no AVX-512). Run with one
// thread and the OpenBLAS kernels `pipewright` picks for this CPU (it
// re-executes itself with them; a bench binary does not, and OpenBLAS
// misdetects some VMs' CPUs: `OPENBLAS_VERBOSE=2 pipewright infer ...`
// prints "Core: ..."):
//   OPENBLAS_CORETYPE=SkylakeX OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
//     build/bench/prepacked_linear_torch_bench   (one line)
// Intel AVX-512 VM, two runs: prepacked over plain 0.88-0.90x at 1 row
// (a matrix-vector product: OpenBLAS's is faster), 1.9-2.0x at 16,
// 1.26-1.33x at 128, 1.09-1.10x at 256; prepacked 97-122 GFLOP/s at 128
// rows.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <utility>
#include <vector>

#include "infer/prepacked_linear.h"

namespace pw {
namespace {

constexpr int64_t kWidth = 256, kLayers = 8;
const std::pair<int64_t, int64_t> kShapes[] = {
    {3 * kWidth, kWidth}, {kWidth, kWidth}, {4 * kWidth, kWidth}, {kWidth, 4 * kWidth}};

struct Linears {
  explicit Linears(int64_t rows) {
    at::manual_seed(1);
    for (int layer = 0; layer < kLayers; ++layer) {
      for (auto [out, in] : kShapes) {
        weights.push_back(at::randn({out, in}) * 0.05);
        biases.push_back(at::randn({out}));
        packed.push_back(at::empty({out * in}));
        if (PrepackableLinear(out, in)) PrepackLinearWeight(weights.back(), packed.back());
      }
    }
    for (auto [out, in] : kShapes) {
      inputs.push_back(at::randn({rows, in}));
      flops += 2.0 * rows * out * in;
    }
  }
  std::vector<at::Tensor> weights, biases, packed, inputs;
  double flops = 0;
};

template <bool kPrepacked>
void Run(benchmark::State& state) {
  at::set_num_threads(1);
  c10::NoGradGuard no_grad;
  if (kPrepacked && !PrepackableLinear(kShapes[0].first, kShapes[0].second)) {
    state.SkipWithError("this CPU has no prepacked kernels (AVX-512)");
    return;
  }
  Linears l(state.range(0));
  int layer = 0;
  for (auto _ : state) {
    for (int k = 0; k < 4; ++k) {
      const size_t w = layer * 4 + k;
      at::Tensor y = kPrepacked ? PrepackedLinear(l.inputs[k], l.packed[w], kShapes[k].first,
                                                  l.biases[w], LinearEpilogue::kNone)
                                : at::linear(l.inputs[k], l.weights[w], l.biases[w]);
      benchmark::DoNotOptimize(y.data_ptr<float>());
    }
    layer = (layer + 1) % kLayers;
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(l.flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_PlainLinears(benchmark::State& state) { Run<false>(state); }
void BM_PrepackedLinears(benchmark::State& state) { Run<true>(state); }

// Rows: one decode sequence, 16 and 128 sequences, a prefill chunk.
BENCHMARK(BM_PlainLinears)->Arg(1)->Arg(16)->Arg(128)->Arg(256);
BENCHMARK(BM_PrepackedLinears)->Arg(1)->Arg(16)->Arg(128)->Arg(256);

}  // namespace
}  // namespace pw

BENCHMARK_MAIN();
