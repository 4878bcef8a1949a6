// Split backward vs fused backward for one transformer block (issue 4: "I +
// W ≈ B"). The block is model/gpt.h's Block, fp32, one thread, at two
// shapes: d_model 512, 8 heads, sequence 256, batch 8 (2048 rows; the cases
// without a suffix) and the training yardstick examples/small.toml, d_model
// 256, 8 heads, sequence 128, microbatch 8 (1024 rows; the "/small" cases):
//
//   F           forward (graph built, split-capable Linears)
//   B           fused backward: dX and every dW/db at once
//   B_plain     fused backward of the same block built on torch's linear
//               (no custom Function): the autograd-only yardstick
//   I           backward for inputs only (dW/db queued in the store)
//   W           the queued dW/db of that microbatch
//   I+W         both, timed in one iteration (counters I_ms and W_ms)
//   WeightGrads the four linears' dW for 2 or 4 microbatches, each as W
//               runs it, batched into one GEMM (copies included), or that
//               GEMM alone (what batching could save at best)
//
// Every iteration runs a fresh forward (untimed except in F) and times only
// the named part with manual timing (thread CPU time, see Clock). Run with
// BLAS pinned to one thread:
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 build/bench/split_backward_torch_bench
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cmath>
#include <iterator>
#include <ctime>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "model/fused_kernels.h"
#include "model/gpt.h"
#include "os/memory.h"

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

// The block's shape; the batch is 8 sequences in both.
struct Shape {
  int64_t d_model;
  int64_t seq_len;
};
constexpr Shape kWide{512, 256};
constexpr Shape kSmall{256, 128};  // examples/small.toml
constexpr int64_t kBatch = 8;

struct BlockFixture {
  ModelConfig config;
  std::shared_ptr<Block> block;
  at::Tensor x, grad;
  WeightGradStore store;

  explicit BlockFixture(Shape shape) {
    config.d_model = shape.d_model;
    config.n_heads = 8;
    config.seq_len = shape.seq_len;
    config.n_layers = 1;
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(1);
    block = std::make_shared<Block>(config, gen);
    x = at::empty({kBatch, shape.seq_len, shape.d_model}).normal_(0, 1, gen).requires_grad_(true);
    grad = at::empty({kBatch, shape.seq_len, shape.d_model}).normal_(0, 1, gen);
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

// Forward FLOPs of the block (GEMMs and attention matmuls, the attention
// counted over the whole T x T matrix even where the kernels skip the masked
// half, so that rates stay comparable across kernel versions).
double BlockForwardFlops(const ModelConfig& c) {
  const double rows = double(kBatch) * c.seq_len, d = c.d_model;
  return 2 * rows * 12 * d * d + 4 * double(kBatch) * c.seq_len * c.seq_len * d;
}

enum class Part { kF, kB, kBPlain, kI, kW, kIW };

void BM_Block(benchmark::State& state, Part part, Shape shape) {
  BlockFixture f(shape);
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

// The core's GEMM rate at the block's shapes: the forward's four linear
// GEMMs (qkv, proj, fc, mlp.proj) as bare at::mm on contiguous fp32
// matrices, nothing else. The block's F/B GFLOP/s over this rate is the
// "% of the GEMM rate" of issue 11.
void BM_Gemm(benchmark::State& state, Shape shape) {
  const int64_t rows = kBatch * shape.seq_len, d = shape.d_model;
  const std::pair<int64_t, int64_t> linears[] = {{d, 3 * d}, {d, d}, {d, 4 * d}, {4 * d, d}};
  std::vector<at::Tensor> xs, ws, ys;
  double flops = 0;
  for (auto [in, out] : linears) {
    xs.push_back(at::randn({rows, in}));
    ws.push_back(at::randn({in, out}));
    ys.push_back(at::empty({rows, out}));
    flops += 2.0 * rows * in * out;
  }
  for (auto _ : state) {
    double t0 = Clock::now();
    for (size_t i = 0; i < xs.size(); ++i) at::mm_out(ys[i], xs[i], ws[i]);
    state.SetIterationTime(Seconds(t0, Clock::now()));
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The weight gradients of the block's four linears for `k` microbatches, as
// W computes them (one dW GEMM per microbatch, added into the gradient)
// or batched (the microbatches' rows concatenated, one GEMM with k times
// the inner dimension, the concatenation's copies included), or that GEMM
// alone on rows concatenated ahead (the bound if I wrote them into one
// buffer): what batching the W of several deferred microbatches could save.
enum class WeightGrads { kEach, kBatched, kBatchedGemmOnly };

void BM_WeightGrads(benchmark::State& state, WeightGrads mode, int k, Shape shape) {
  const int64_t rows = kBatch * shape.seq_len, d = shape.d_model;
  const std::pair<int64_t, int64_t> linears[] = {{d, 3 * d}, {d, d}, {d, 4 * d}, {4 * d, d}};
  std::vector<std::vector<at::Tensor>> xs(std::size(linears)), gs(std::size(linears));
  std::vector<at::Tensor> grads;
  double flops = 0;
  for (size_t l = 0; l < std::size(linears); ++l) {
    const auto [in, out] = linears[l];
    for (int m = 0; m < k; ++m) {
      xs[l].push_back(at::randn({rows, in}));
      gs[l].push_back(at::randn({rows, out}));
    }
    grads.push_back(at::zeros({out, in}));
    flops += 2.0 * k * rows * in * out;
  }
  std::vector<at::Tensor> x_all, g_all;
  for (size_t l = 0; l < grads.size(); ++l) {
    x_all.push_back(at::cat(xs[l]));
    g_all.push_back(at::cat(gs[l]));
  }
  for (auto _ : state) {
    double t0 = Clock::now();
    for (size_t l = 0; l < grads.size(); ++l) {
      if (mode == WeightGrads::kBatched) {
        grads[l].add_(at::cat(gs[l]).t().mm(at::cat(xs[l])));
      } else if (mode == WeightGrads::kBatchedGemmOnly) {
        grads[l].add_(g_all[l].t().mm(x_all[l]));
      } else {
        for (int m = 0; m < k; ++m) grads[l].add_(gs[l][m].t().mm(xs[l][m]));
      }
    }
    state.SetIterationTime(Seconds(t0, Clock::now()));
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The attention core alone at a shape (queries, keys and values from one
// qkv [8, T, 3d], 8 heads): forward with the graph, then its backward, as
// gpt_math runs it (fused) or op by op as it was before issue 11 (plain:
// head permute copies, scale multiply, masked_fill, softmax, matmuls).
at::Tensor PlainSelfAttention(const at::Tensor& qkv, int n_heads) {
  const int64_t d = qkv.size(-1) / 3, t = qkv.size(1), hd = d / n_heads;
  std::vector<at::Tensor> parts = qkv.split(d, -1);
  auto heads = [&](const at::Tensor& z) {
    return z.view({z.size(0), t, n_heads, hd}).transpose(1, 2);
  };
  at::Tensor scores =
      at::matmul(heads(parts[0]), heads(parts[1]).transpose(-2, -1)) * (1.0 / std::sqrt(double(hd)));
  at::Tensor future = at::ones({t, t}, at::TensorOptions().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  return at::matmul(at::softmax(scores, -1), heads(parts[2])).transpose(1, 2).reshape({-1, t, d});
}

void BM_Attention(benchmark::State& state, bool fused, bool backward, Shape shape) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(2);
  at::Tensor qkv = at::empty({kBatch, shape.seq_len, 3 * shape.d_model})
                       .normal_(0, 1, gen)
                       .requires_grad_(true);
  at::Tensor grad = at::empty({kBatch, shape.seq_len, shape.d_model}).normal_(0, 1, gen);
  for (auto _ : state) {
    qkv.mutable_grad() = at::Tensor();
    double t0 = Clock::now();
    at::Tensor y = fused ? FusedSelfAttention(qkv, 8) : PlainSelfAttention(qkv, 8);
    double t1 = Clock::now();
    if (backward) {
      y.backward(grad);
      state.SetIterationTime(Seconds(t1, Clock::now()));
    } else {
      state.SetIterationTime(Seconds(t0, t1));
    }
  }
}

void Configure(benchmark::internal::Benchmark* b) {
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(1.5);
}

BENCHMARK_CAPTURE(BM_Block, F, Part::kF, kWide)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, B, Part::kB, kWide)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, B_plain, Part::kBPlain, kWide)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, I, Part::kI, kWide)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, W, Part::kW, kWide)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, I_plus_W, Part::kIW, kWide)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Gemm, wide, kWide)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Gemm, small, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Attention, F_plain/small, false, false, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Attention, F_fused/small, true, false, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Attention, B_plain/small, false, true, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Attention, B_fused/small, true, true, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, F/small, Part::kF, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, B/small, Part::kB, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, B_plain/small, Part::kBPlain, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, I/small, Part::kI, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, W/small, Part::kW, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_Block, I_plus_W/small, Part::kIW, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_WeightGrads, each/2/small, WeightGrads::kEach, 2, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_WeightGrads, batched/2/small, WeightGrads::kBatched, 2, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_WeightGrads, batched_gemm_only/2/small, WeightGrads::kBatchedGemmOnly, 2, kSmall)
    ->Apply(Configure);
BENCHMARK_CAPTURE(BM_WeightGrads, each/4/small, WeightGrads::kEach, 4, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_WeightGrads, batched/4/small, WeightGrads::kBatched, 4, kSmall)->Apply(Configure);
BENCHMARK_CAPTURE(BM_WeightGrads, batched_gemm_only/4/small, WeightGrads::kBatchedGemmOnly, 4, kSmall)
    ->Apply(Configure);

}  // namespace
}  // namespace pw

int main(int argc, char** argv) {
  at::set_num_threads(1);  // one rank = one core; pin BLAS with OPENBLAS_NUM_THREADS=1
  // As a training rank: freed buffers are reused, not faulted in afresh
  // (os/memory.h). Without it the split's I + W, which keeps a microbatch's
  // linear inputs and output gradients alive between I and W, paid more
  // page faults than the fused B.
  if (!pw::KeepFreedMemoryForReuse().ok()) return 1;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
