// Simulator and generator throughput: simulated actions per second for small
// and large pipelines. Run: build/bench/sim_bench
// (--benchmark_filter=Simulate to pick; figures go in the README).
#include <benchmark/benchmark.h>

#include "schedule/generators.h"
#include "schedule/validator.h"
#include "sim/simulator.h"

namespace pw {
namespace {

Schedule Generate(const char* family, int p, int m) {
  GeneratorOptions g;
  g.num_ranks = p;
  g.num_microbatches = m;
  return *GenerateSchedule(family, g);
}

void BM_Generate1F1B(benchmark::State& state) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  size_t actions = 0;
  for (auto _ : state) {
    Schedule s = Generate("1f1b", p, m);
    actions = s.NumActions();
    benchmark::DoNotOptimize(s);
  }
  state.counters["actions"] = static_cast<double>(actions);
  state.counters["actions_per_s"] =
      benchmark::Counter(static_cast<double>(actions), benchmark::Counter::kIsIterationInvariantRate);
}

void SimulateFamily(benchmark::State& state, const char* family) {
  const int p = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  Schedule s = Generate(family, p, m);
  CostModel costs;
  costs.stages[0].activation_bytes = 1;
  if (!costs.Resolve(s).ok()) state.SkipWithError("cost model");
  SimOptions options;
  options.record_spans = false;
  for (auto _ : state) {
    Result<SimResult> r = Simulate(s, costs, options);
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.counters["actions"] = static_cast<double>(s.NumActions());
  state.counters["actions_per_s"] =
      benchmark::Counter(static_cast<double>(s.NumActions()), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Simulate1F1B(benchmark::State& state) { SimulateFamily(state, "1f1b"); }
void BM_SimulateZBH1(benchmark::State& state) { SimulateFamily(state, "zb-h1"); }

void BM_Validate1F1B(benchmark::State& state) {
  Schedule s = Generate("1f1b", static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  for (auto _ : state) {
    Status st = ValidateSchedule(s);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
  }
  state.counters["actions_per_s"] =
      benchmark::Counter(static_cast<double>(s.NumActions()), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Generate1F1B)->Args({4, 8})->Args({1024, 8192})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Simulate1F1B)->Args({4, 8})->Args({32, 128})->Args({1024, 8192})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateZBH1)->Args({4, 8})->Args({32, 128})->Args({1024, 8192})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Validate1F1B)->Args({32, 128})->Args({1024, 8192})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace pw

BENCHMARK_MAIN();
