// Rank body for src/infer's multi-process weight-pool tests. Run under
// LaunchLocalRanks:
//   pw_infer_rank_helper key=value...
// keys:
//   mode=replicate|was|cas|shared|auto   pool mode (shared: the helper frees
//                                 its own copies of the blocks once the pool
//                                 holds them)
//   rows=1,7,64                   rows of each pass (rank r adds r, so ranks differ)
//   slots=N depth=N               cache slots and prefetch depth
//   format=bf16|int8              hold the blocks in panels of this format
//                                 (and the reference the same way)
//   cache_kv_blocks=N             auto: KV blocks its CaS commitment frees (a
//                                 gain of 2 for ShouldDropWeightCache)
//   serving_kv_blocks=N           auto: KV blocks its WaS commitment frees
//   serving_slots=N serving_depth=N  auto: cache slots added, and the prefetch
//                                 depth then, when the serving reserve goes
//   calib=flops,bandwidth,latency auto: use these figures instead of measuring
//   learn=1                       auto with calib: also correct them with what
//                                 the passes measure (off by default, so the
//                                 choices follow from the figures alone)
//   extra_rank=R extra=N          rank R runs N more passes (Finish at different times)
//   extra_sleep_ms=N              ... and sleeps N ms before each of them (a slow peer)
//   die_rank=R                    rank R exits with code 3 after its first pass
//   hang_rank=R                   rank R sleeps 60 s before Finish (a hung peer)
//   measure=1                     run the calibration and print it and the
//                                 crossover rows of the model (no passes)
//   probe=1                       print "share_memory <0|1>" (RanksShareMemory)
//                                 and stop
//   timeout_ms=N                  group timeout
//   blocks=1                      run each pass with RunBlocks (CaS chains
//                                 the remote blocks) and print, instead of
//                                 "check" lines, "block <pass> <layer> pre
//                                 <sum> equal <0|1>" per block and "final
//                                 <pass> <sum> equal <0|1>" for the output
//   model.<key>=value             ModelConfig overrides (random init, seed 1234)
// Each pass chains every block: x -> PreAttention -> a stand-in attention
// (q + v) -> PostAttention -> next block, through the pool and, for the
// reference, locally over all the weights. Prints per pass
//   mode <pass> <cas|other>
// and per pass and block
//   check <pass> <layer> pre <sum> post <sum> equal <0|1>
// (sums with 17 significant digits; equal = bit-identical to the local
// reference), "pass <i> rows <n> seconds <s>" (the pool pass alone), then
// "held <bytes> expected <bytes>" and "stats ..." lines.
// Exits 1 with the error on stderr.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "comm/process_groups.h"
#include "comm/world_info.h"
#include "infer/calibration.h"
#include "infer/layer_math.h"
#include "infer/model_weights.h"
#include "infer/shared_pool.h"
#include "infer/weight_pool.h"

namespace pw {
namespace {

struct Args {
  PoolOptions options;
  std::vector<int64_t> rows = {1, 5, 33};
  bool has_calibration = false;
  bool learn = false;
  PoolCalibration calibration;
  int extra_rank = -1, extra = 0, die_rank = -1, hang_rank = -1, extra_sleep_ms = 0;
  bool measure = false;
  bool probe = false;
  bool blocks = false;
  int timeout_ms = 60000;
  std::vector<std::string> overrides;
};

std::vector<double> SplitNumbers(const std::string& text) {
  std::vector<double> values;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) values.push_back(std::atof(item.c_str()));
  return values;
}

Status Parse(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    if (eq == std::string::npos) return Status::InvalidArgument("bad argument '" + arg + "'");
    std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
    if (key.rfind("model.", 0) == 0) {
      args.overrides.push_back(arg);
    } else if (key == "mode") {
      PW_ASSIGN_OR_RETURN(args.options.mode, ParsePoolMode(value));
    } else if (key == "rows") {
      args.rows.clear();
      for (double v : SplitNumbers(value)) args.rows.push_back(static_cast<int64_t>(v));
    } else if (key == "format") {
      if (value != "bf16" && value != "int8") return Status::InvalidArgument("format=bf16|int8");
      args.options.blocks_layout = LinearLayout::kPanels;
      args.options.blocks_format = value == "bf16" ? WeightFormat::kBf16 : WeightFormat::kInt8;
    } else if (key == "slots") {
      args.options.cache_slots = std::atoi(value.c_str());
    } else if (key == "depth") {
      args.options.prefetch_depth = std::atoi(value.c_str());
    } else if (key == "cache_kv_blocks") {
      args.options.kv_blocks_freed_by_cache = std::atoll(value.c_str());
      args.options.kv_gain_without_cache = 2.0;
    } else if (key == "serving_kv_blocks") {
      args.options.kv_blocks_freed_by_serving = std::atoll(value.c_str());
    } else if (key == "serving_slots") {
      args.options.slots_added_by_serving = std::atoi(value.c_str());
    } else if (key == "serving_depth") {
      args.options.prefetch_depth_after_serving = std::atoi(value.c_str());
    } else if (key == "calib") {
      std::vector<double> v = SplitNumbers(value);
      if (v.size() != 3) return Status::InvalidArgument("calib=flops,bandwidth,latency");
      args.calibration = {v[0], v[1], v[2]};
      args.has_calibration = true;
    } else if (key == "learn") {
      args.learn = value == "1";
    } else if (key == "extra_rank") {
      args.extra_rank = std::atoi(value.c_str());
    } else if (key == "extra") {
      args.extra = std::atoi(value.c_str());
    } else if (key == "extra_sleep_ms") {
      args.extra_sleep_ms = std::atoi(value.c_str());
    } else if (key == "die_rank") {
      args.die_rank = std::atoi(value.c_str());
    } else if (key == "hang_rank") {
      args.hang_rank = std::atoi(value.c_str());
    } else if (key == "measure") {
      args.measure = value == "1";
    } else if (key == "probe") {
      args.probe = value == "1";
    } else if (key == "blocks") {
      args.blocks = value == "1";
    } else if (key == "timeout_ms") {
      args.timeout_ms = std::atoi(value.c_str());
    } else {
      return Status::InvalidArgument("unknown key '" + key + "'");
    }
  }
  return Status::Ok();
}

std::string Sum17(const at::Tensor& t) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", t.sum(at::kDouble).item<double>());
  return buffer;
}

// The stand-in for attention: a fixed function of qkv, the same on both paths.
at::Tensor FakeAttention(const at::Tensor& qkv, int64_t d) {
  return qkv.narrow(1, 0, d) + qkv.narrow(1, 2 * d, d);
}

// measure=1: the calibration and the model's crossover rows.
Status PrintCalibration(const ModelConfig& config, ProcessGroups& groups) {
  const int rank = groups.rank(), size = groups.world().size();
  PW_ASSIGN_OR_RETURN(PoolCalibration c, Calibrate(config, &groups));
  int owned = static_cast<int>(OwnedBlocks(rank, size, config.n_layers).size());
  std::printf("calibration gemm_flops %.4g bandwidth %.4g latency_s %.4g\n", c.gemm_flops,
              c.bandwidth, c.latency_s);
  std::printf("crossover rows %lld owned %d block_bytes %lld\n",
              static_cast<long long>(CrossoverRows(c, config, owned)), owned,
              static_cast<long long>(BlockBytes(config)));
  return Status::Ok();
}

// One pass's input and its local reference, and what the pool's KV
// commitments freed so far.
struct PassState {
  at::Tensor x, ref_x;
  int64_t released = 0;
};

// blocks=1: the pass through RunBlocks, then "block" and "final" lines.
Status BlocksPass(WeightPool& pool, const ModelWeights& reference, size_t pass, PassState& p) {
  const ModelConfig& config = reference.config;
  const int64_t d = config.d_model;
  std::vector<at::Tensor> qkvs;
  AttendFn attend = [&](int, const at::Tensor& qkv) -> Result<at::Tensor> {
    qkvs.push_back(qkv);
    return FakeAttention(qkv, d);
  };
  PW_ASSIGN_OR_RETURN(p.x, pool.RunBlocks(p.x, attend));
  PW_RETURN_IF_ERROR(pool.EndPass());
  p.released += pool.TakeReleasedKvBlocks();
  for (int layer = 0; layer < config.n_layers; ++layer) {
    at::Tensor ref_qkv = PreAttention(reference.blocks[layer], p.ref_x);
    p.ref_x = PostAttention(reference.blocks[layer], p.ref_x, FakeAttention(ref_qkv, d));
    bool equal = layer < static_cast<int>(qkvs.size()) && at::equal(qkvs[layer], ref_qkv);
    std::printf("block %zu %d pre %s equal %d\n", pass, layer,
                layer < static_cast<int>(qkvs.size()) ? Sum17(qkvs[layer]).c_str() : "-",
                equal ? 1 : 0);
  }
  std::printf("final %zu %s equal %d\n", pass, Sum17(p.x).c_str(), at::equal(p.x, p.ref_x) ? 1 : 0);
  std::fflush(stdout);
  return Status::Ok();
}

// The pass block by block (PreAttention, PostAttention), then its "pass"
// and "check" lines. `start`: when the pool's pass began.
Status LayersPass(WeightPool& pool, const ModelWeights& reference, size_t pass, PassState& p,
                  std::chrono::steady_clock::time_point start) {
  const ModelConfig& config = reference.config;
  const int64_t d = config.d_model;
  const int64_t n = p.x.size(0);
  std::vector<at::Tensor> qkvs, outs;
  for (int layer = 0; layer < config.n_layers; ++layer) {
    PW_ASSIGN_OR_RETURN(at::Tensor qkv, pool.PreAttention(layer, p.x));
    at::Tensor attended = FakeAttention(qkv, d);
    PW_ASSIGN_OR_RETURN(p.x, pool.PostAttention(layer, p.x, attended));
    qkvs.push_back(qkv);
    outs.push_back(p.x);
  }
  PW_RETURN_IF_ERROR(pool.EndPass());
  p.released += pool.TakeReleasedKvBlocks();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("pass %zu rows %lld seconds %.6f\n", pass, static_cast<long long>(n), seconds);
  for (int layer = 0; layer < config.n_layers; ++layer) {
    at::Tensor ref_qkv = PreAttention(reference.blocks[layer], p.ref_x);
    at::Tensor ref_out = PostAttention(reference.blocks[layer], p.ref_x, FakeAttention(ref_qkv, d));
    bool equal = at::equal(qkvs[layer], ref_qkv) && at::equal(outs[layer], ref_out);
    std::printf("check %zu %d pre %s post %s equal %d\n", pass, layer,
                Sum17(qkvs[layer]).c_str(), Sum17(outs[layer]).c_str(), equal ? 1 : 0);
    p.ref_x = ref_out;
  }
  std::fflush(stdout);
  return Status::Ok();
}

// Every pass of this rank (see the header comment); returns the KV blocks
// auto's commitments freed.
Result<int64_t> RunPasses(const Args& args, WeightPool& pool, const ModelWeights& reference, int rank) {
  std::vector<int64_t> rows = args.rows;
  if (rank == args.extra_rank) {
    for (int i = 0; i < args.extra; ++i) rows.push_back(args.rows[i % args.rows.size()]);
  }
  PassState p;
  for (size_t pass = 0; pass < rows.size(); ++pass) {
    if (pass >= args.rows.size() && args.extra_sleep_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(args.extra_sleep_ms));
    }
    const int64_t n = rows[pass] + rank;
    at::manual_seed(1000 * static_cast<uint64_t>(pass) + rank);
    p.x = at::randn({n, reference.config.d_model});
    p.ref_x = p.x.clone();
    // The pass through the pool first (timed), then the local reference.
    auto start = std::chrono::steady_clock::now();
    const int64_t cas_before = pool.stats().passes_cas;
    PW_RETURN_IF_ERROR(pool.BeginPass(n));
    std::printf("mode %zu %s\n", pass, pool.stats().passes_cas > cas_before ? "cas" : "other");
    if (args.blocks) {
      PW_RETURN_IF_ERROR(BlocksPass(pool, reference, pass, p));
      continue;
    }
    PW_RETURN_IF_ERROR(LayersPass(pool, reference, pass, p, start));
    if (rank == args.die_rank) {
      std::fprintf(stderr, "rank %d exits on purpose (die_rank)\n", rank);
      std::fflush(stderr);
      std::_Exit(3);
    }
  }
  return p.released;
}

void PrintStats(const PoolStats& s, int64_t released) {
  std::printf(
      "stats passes_was %lld passes_cas %lld passes_local %lld switches %lld fetches %lld "
      "remote_computes %lld served_fetches %lld served_computes %lld bytes_sent %lld "
      "bytes_received %lld fetch_wait_s %.4f remote_wait_s %.4f cache_dropped_after_pass %lld "
      "was_committed_after_pass %lld serving_released_after_pass %lld released_kv_blocks %lld\n",
      (long long)s.passes_was, (long long)s.passes_cas, (long long)s.passes_local,
      (long long)s.switches, (long long)s.fetches, (long long)s.remote_computes,
      (long long)s.served_fetches, (long long)s.served_computes, (long long)s.bytes_sent,
      (long long)s.bytes_received, s.fetch_wait_s, s.remote_wait_s,
      (long long)s.cache_dropped_after_pass, (long long)s.was_committed_after_pass,
      (long long)s.serving_released_after_pass, (long long)released);
}

Status Run(const Args& args) {
  c10::InferenceMode inference_mode;
  PW_ASSIGN_OR_RETURN(WorldInfo world, WorldFromEnvironment(ProcessEnvironment()));
  ProcessGroupsOptions group_options;
  group_options.pp = 1;
  group_options.serving_group = true;
  group_options.timeout = std::chrono::milliseconds(args.timeout_ms);
  PW_ASSIGN_OR_RETURN(ProcessGroups groups, ProcessGroups::Create(world, group_options));
  const int rank = groups.rank(), size = groups.world().size();

  WeightSource source;
  PW_RETURN_IF_ERROR(ApplyOverrides(source.config, args.overrides));
  const ModelConfig& config = source.config;

  if (args.probe) {
    PW_ASSIGN_OR_RETURN(const bool shares, RanksShareMemory(groups.world()));
    std::printf("share_memory %d\n", shares ? 1 : 0);
    return Status::Ok();
  }
  if (args.measure) return PrintCalibration(config, groups);

  bool all = args.options.mode == PoolMode::kReplicate || size == 1;
  PW_ASSIGN_OR_RETURN(ModelWeights weights,
                      LoadModelWeights(source, OwnedBlocks(rank, size, config.n_layers), all));
  PW_ASSIGN_OR_RETURN(ModelWeights reference, LoadModelWeights(source, {}, true));
  PoolOptions options = args.options;
  if (options.blocks_format != WeightFormat::kFp32) {
    PackWeights(weights, options.blocks_layout, options.blocks_format);
    PackWeights(reference, options.blocks_layout, options.blocks_format);
  }
  if (args.has_calibration) {
    options.calibration = &args.calibration;
    // The test checks the choices this calibration implies (learn=1: from
    // the calibration and what the passes teach).
    options.learn = args.learn;
  }
  PW_ASSIGN_OR_RETURN(std::unique_ptr<WeightPool> pool,
                      CreateWeightPool(options, weights, &groups));
  if (options.mode == PoolMode::kShared) {
    for (BlockWeights& block : weights.blocks) block = BlockWeights{};  // the pool has its own
  }
  PW_ASSIGN_OR_RETURN(const int64_t released, RunPasses(args, *pool, reference, rank));
  if (rank == args.hang_rank) std::this_thread::sleep_for(std::chrono::seconds(60));
  PW_RETURN_IF_ERROR(pool->Finish());
  std::printf("held %lld expected %lld\n", static_cast<long long>(pool->HeldBytes()),
              static_cast<long long>(PoolHeldBytes(options, config, rank, size)));
  PrintStats(pool->stats(), released);
  std::printf("finished\n");
  return Status::Ok();
}

}  // namespace
}  // namespace pw

int main(int argc, char** argv) {
  at::set_num_threads(1);
  pw::Args args;
  pw::Status status = pw::Parse(argc, argv, args);
  if (status.ok()) status = pw::Run(args);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
