// Split backward vs fused backward for one transformer block (issue 4: "I +
// W ≈ B"). The block is model/gpt.h's Block at d_model 512, 8 heads,
// sequence 256, batch 8 (2048 rows), fp32, one thread:
//
//   F           forward (graph built, split-capable Linears)
//   B           fused backward: dX and every dW/db at once
//   B_plain     fused backward of the same block built on torch's linear
//               (no custom Function): the autograd-only yardstick
//   I           backward for inputs only (dW/db queued in the store)
//   W           the queued dW/db of that microbatch
//   I+W         both, timed in one iteration (counters I_ms and W_ms)
//
// Every iteration runs a fresh forward (untimed except in F) and times only
// the named part with manual timing (thread CPU time, see Clock). Run with
// BLAS pinned to one thread:
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build/bench/split_backward_torch_bench
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <ctime>
#include <memory>

#include "model/gpt.h"

namespace pw {
namespace {

// Timing is this thread's CPU time, not wall time: the shared build machine
// runs other jobs, and CPU time counts only the work this thread did (BLAS
// and LibTorch run on the calling thread with one thread). It still feels
// cache and memory-bandwidth contention, so rerun on a quiet machine for
// absolute numbers; the I/W/B ratios are what matters here.
struct Clock {
  using time_point = double;
  static double now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
  }
};

double Seconds(double a, double b) { return b - a; }

struct BlockFixture {
  ModelConfig config;
  std::shared_ptr<Block> block;
  at::Tensor x, grad;
  WeightGradStore store;

  BlockFixture() {
    config.d_model = 512;
    config.n_heads = 8;
    config.seq_len = 256;
    config.n_layers = 1;
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(1);
    block = std::make_shared<Block>(config, gen);
    x = at::empty({8, 256, 512}).normal_(0, 1, gen).requires_grad_(true);
    grad = at::empty({8, 256, 512}).normal_(0, 1, gen);
  }

  at::Tensor Forward(bool split_capable) {
    ForwardContext ctx;
    ctx.store = split_capable ? &store : nullptr;
    return block->Forward(x, ctx);
  }

  void ZeroGrad() {
    for (at::Tensor& p : block->parameters()) p.mutable_grad() = at::Tensor();
    x.mutable_grad() = at::Tensor();
  }
};

// Forward FLOPs of the block (GEMMs and attention matmuls).
double BlockForwardFlops(const ModelConfig& c) {
  const double rows = 8.0 * c.seq_len, d = c.d_model;
  return 2 * rows * 12 * d * d + 4 * 8.0 * c.seq_len * c.seq_len * d;
}

enum class Part { kF, kB, kBPlain, kI, kW, kIW };

void BM_Block(benchmark::State& state, Part part) {
  BlockFixture f;
  double i_total = 0, w_total = 0;
  for (auto _ : state) {
    f.ZeroGrad();
    double t0 = Clock::now();
    at::Tensor y = f.Forward(part != Part::kBPlain);
    double t1 = Clock::now();
    if (part == Part::kF) {
      state.SetIterationTime(Seconds(t0, t1));
      continue;
    }
    if (part == Part::kB || part == Part::kBPlain) {
      y.backward(f.grad);
      state.SetIterationTime(Seconds(t1, Clock::now()));
      continue;
    }
    {
      WeightGradStore::DeferScope defer(f.store, 0);
      y.backward(f.grad);
    }
    y = at::Tensor();
    double t2 = Clock::now();
    f.store.Run(0);
    double t3 = Clock::now();
    i_total += Seconds(t1, t2);
    w_total += Seconds(t2, t3);
    if (part == Part::kI) state.SetIterationTime(Seconds(t1, t2));
    if (part == Part::kW) state.SetIterationTime(Seconds(t2, t3));
    if (part == Part::kIW) state.SetIterationTime(Seconds(t1, t3));
  }
  const double flops = BlockForwardFlops(f.config);
  if (part == Part::kF) {
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  }
  if (part == Part::kB || part == Part::kBPlain || part == Part::kIW) {
    state.counters["GFLOP/s"] =
        benchmark::Counter(2 * flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  }
  if (part == Part::kIW) {
    state.counters["I_ms"] = 1e3 * i_total / state.iterations();
    state.counters["W_ms"] = 1e3 * w_total / state.iterations();
  }
}

void Configure(benchmark::internal::Benchmark* b) {
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(1.5);
}

BENCHMARK_CAPTURE(BM_Block, F, Part::kF)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, B, Part::kB)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, B_plain, Part::kBPlain)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, I, Part::kI)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, W, Part::kW)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, I_plus_W, Part::kIW)->Apply(Configure);

}  // namespace
}  // namespace pw

int main(int argc, char** argv) {
  at::set_num_threads(1);  // one rank = one core; pin BLAS with OPENBLAS_NUM_THREADS=1
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
