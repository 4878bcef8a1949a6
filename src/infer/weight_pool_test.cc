// Weight pool tests. Unit: modes, ownership, memory, the cost model and
// CreateWeightPool's checks. Dist (ranks as local processes running
// tools/rank_helper.cc): was / cas / auto on 2 and 3 ranks give results of
// every block, over passes of different row counts, bit-identical to the
// local computation over all the weights and to the replicate run; ranks
// finish at different times; a dying rank fails the job instead of hanging.
#include "infer/weight_pool.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "comm/launcher.h"
#include "core/fields.h"
#include "job/infer_job.h"
#include "infer/layer_math.h"
#include "infer/model_weights.h"

namespace pw {
namespace {

ModelConfig SmallConfig() {
  ModelConfig config;
  config.d_model = 32;
  config.n_layers = 5;
  config.n_heads = 2;
  config.seq_len = 16;
  return config;
}

TEST(WeightPoolTest, ParsePoolModeRoundTripsAndListsModes) {
  for (PoolMode mode : {PoolMode::kReplicate, PoolMode::kWas, PoolMode::kCas, PoolMode::kAuto,
                        PoolMode::kShared}) {
    Result<PoolMode> parsed = ParsePoolMode(PoolModeName(mode));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, mode);
  }
  Result<PoolMode> bad = ParsePoolMode("sidp");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  for (const char* name : {"'sidp'", "replicate", "was", "cas", "shared", "auto"}) {
    EXPECT_NE(bad.status().message().find(name), std::string::npos) << name;
  }
}

// The flag's declared choices (job/infer_job.h) and the enum's names are two
// lists of one thing: a mode added to one and not the other would be refused
// at parse time or accepted by the flag and refused by every rank.
TEST(WeightPoolTest, TheModeFlagDeclaresExactlyTheModes) {
  std::set<std::string> declared;
  InferJob job;
  auto collect = [&](auto&, const FieldInfo& info) {
    if (info.name != "mode") return;
    for (std::string_view choice : FieldChoices(info)) declared.emplace(choice);
  };
  job.VisitFields(collect);
  std::set<std::string> named;
  for (PoolMode mode : {PoolMode::kReplicate, PoolMode::kWas, PoolMode::kCas, PoolMode::kAuto,
                        PoolMode::kShared}) {
    named.emplace(PoolModeName(mode));
  }
  EXPECT_EQ(declared, named);
  for (const std::string& name : declared) EXPECT_TRUE(ParsePoolMode(name).ok()) << name;
}

TEST(WeightPoolTest, OwnedBlocksPartitionTheLayers) {
  EXPECT_EQ(OwnedBlocks(1, 3, 8), (std::vector<int>{1, 4, 7}));
  EXPECT_EQ(OwnedBlocks(0, 1, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(OwnedBlocks(3, 4, 3).empty());  // more ranks than blocks
  for (int world : {1, 2, 3, 5}) {
    std::multiset<int> all;
    for (int r = 0; r < world; ++r) {
      for (int b : OwnedBlocks(r, world, 11)) all.insert(b);
    }
    EXPECT_EQ(all.size(), 11u);
    EXPECT_EQ(std::set<int>(all.begin(), all.end()).size(), 11u) << "world " << world;
  }
}

TEST(WeightPoolTest, PoolHeldBytesCountsOwnedBlocksAndSlots) {
  ModelConfig config = SmallConfig();
  config.n_layers = 8;
  const int64_t block = BlockBytes(config);
  // d = 32, h = 128, with biases: 2 LayerNorms (4d) + qkv (3d*d + 3d) +
  // proj (d*d + d) + fc (h*d + h) + mlp (d*h + d) floats.
  const int64_t d = 32, h = 128;
  EXPECT_EQ(block, 4 * (4 * d + 3 * d * d + 3 * d + d * d + d + h * d + h + d * h + d));
  PoolOptions options;
  options.mode = PoolMode::kReplicate;
  EXPECT_EQ(PoolHeldBytes(options, config, 1, 4), 8 * block);
  options.mode = PoolMode::kWas;
  options.cache_slots = 3;
  EXPECT_EQ(PoolHeldBytes(options, config, 1, 4), (2 + 3) * block);
  EXPECT_EQ(PoolHeldBytes(options, config, 0, 1), 8 * block);  // one rank holds all
  options.mode = PoolMode::kAuto;
  EXPECT_EQ(PoolHeldBytes(options, config, 3, 4), (2 + 3) * block);
  options.mode = PoolMode::kCas;
  EXPECT_EQ(PoolHeldBytes(options, config, 2, 4), 2 * block);
  // Slots beyond the remote blocks are not allocated: 3 layers, 2 ranks.
  config.n_layers = 3;
  options.mode = PoolMode::kWas;
  EXPECT_EQ(PoolHeldBytes(options, config, 1, 2), (1 + 2) * block);
}

TEST(WeightPoolTest, ChooseModeMatchesTheFormulaAndCrossesOver) {
  ModelConfig config = SmallConfig();  // 5 layers
  PoolCalibration c{/*gemm_flops=*/1e11, /*bandwidth=*/1e9, /*latency_s=*/1e-6};
  const double p = static_cast<double>(BlockParamCount(config));
  // Hand-computed for 10 rows, 2 owned blocks (3 remote).
  PassCost cost = ChooseMode(c, config, 10, 2);
  double compute = 5 * 2.0 * 10 * p / 1e11;
  EXPECT_DOUBLE_EQ(cost.was_s, std::max(compute, 3 * (4 * p / 1e9 + 1e-6)));
  // World 2: every remote block is a run of its own (6 rows of activations,
  // two round trips each).
  EXPECT_DOUBLE_EQ(cost.cas_s, compute + 3 * (4.0 * 10 * 32 * 6 / 1e9 + 4e-6));
  // Few rows: activations are cheaper than weights. Many: weights win.
  EXPECT_EQ(ChooseMode(c, config, 1, 2).best, PoolMode::kCas);
  EXPECT_EQ(ChooseMode(c, config, 4096, 2).best, PoolMode::kWas);
  int64_t crossover = CrossoverRows(c, config, 2);
  EXPECT_GT(crossover, 1);
  EXPECT_EQ(ChooseMode(c, config, crossover - 1, 2).best, PoolMode::kCas);
  EXPECT_EQ(ChooseMode(c, config, crossover, 2).best, PoolMode::kWas);
  EXPECT_EQ(ChooseMode(c, config, crossover * 10, 2).best, PoolMode::kWas);
  // A faster link moves the crossover down (weights get cheaper to move).
  PoolCalibration fast = c;
  fast.bandwidth = 1e11;
  EXPECT_LT(CrossoverRows(fast, config, 2), crossover);
  // Owning every block: nothing to move, WaS (= local) from one row.
  EXPECT_EQ(CrossoverRows(c, config, 5), 1);
  // A cache that keeps part of the ring between passes: with 2 slots for
  // the 3 remote blocks one stays (2 fetched per pass), with 3 all do.
  EXPECT_DOUBLE_EQ(ChooseMode(c, config, 10, 2, 2, /*cache_slots=*/2).was_s,
                   std::max(compute, 2 * (4 * p / 1e9 + 1e-6)));
  EXPECT_DOUBLE_EQ(ChooseMode(c, config, 10, 2, 2, /*cache_slots=*/3).was_s, compute);
  EXPECT_LT(CrossoverRows(c, config, 2, 2, 2), crossover);
}

// Which ring positions keep their block from pass to pass: a slot used by
// one position only. Walked by hand for small rings.
TEST(WeightPoolTest, RingFetchesPerPassCountsTheBlocksThatDoNotStay) {
  EXPECT_EQ(RingFetchesPerPass(4, 0), 4);  // no cache known
  EXPECT_EQ(RingFetchesPerPass(4, 2), 4);  // slots {0,2} {1,3}: all refetched
  EXPECT_EQ(RingFetchesPerPass(4, 3), 2);  // {0,3} {1} {2}: blocks 1, 2 stay
  EXPECT_EQ(RingFetchesPerPass(5, 4), 2);  // {0,4} {1} {2} {3}
  EXPECT_EQ(RingFetchesPerPass(6, 3), 6);  // {0,3} {1,4} {2,5}
  EXPECT_EQ(RingFetchesPerPass(3, 3), 0);  // every block has its slot
  EXPECT_EQ(RingFetchesPerPass(0, 3), 0);
}

// Auto gives its cache up only when CaS wins now and at the larger passes
// the freed memory would allow, with what the passes taught each mode.
TEST(WeightPoolTest, ShouldDropWeightCacheLooksAtTheGrownBatchToo) {
  ModelConfig config = SmallConfig();
  PoolCalibration c{/*gemm_flops=*/1e11, /*bandwidth=*/1e9, /*latency_s=*/1e-6};
  const int64_t crossover = CrossoverRows(c, config, 2);
  ASSERT_GT(crossover, 4);
  const int64_t rows = crossover / 4;
  EXPECT_TRUE(ShouldDropWeightCache(c, config, rows, 1.5, 2, 2, 0, 0));
  EXPECT_FALSE(ShouldDropWeightCache(c, config, rows, 1.0, 2, 2, 0, 0));   // nothing to gain
  EXPECT_FALSE(ShouldDropWeightCache(c, config, rows, 8.0, 2, 2, 0, 0));   // WaS wins when grown
  EXPECT_FALSE(ShouldDropWeightCache(c, config, crossover, 1.5, 2, 2, 0, 0));  // WaS wins now
  // Measured: CaS passes ran 1 s slower than predicted, WaS as predicted.
  EXPECT_FALSE(ShouldDropWeightCache(c, config, rows, 1.5, 2, 2, 0, 1.0));
  // Measured: WaS passes ran slower (transfers took CPU): CaS wins further up.
  EXPECT_TRUE(ShouldDropWeightCache(c, config, crossover, 1.5, 2, 2, 1.0, 0));
}

TEST(WeightPoolTest, WasWinsDecisivelyAtTwiceThePassTime) {
  PassCost cost;
  cost.was_s = 0.010;
  cost.cas_s = 0.015;
  EXPECT_FALSE(WasWinsDecisively(cost, 0, 0));          // 1.5x: not decisive
  EXPECT_TRUE(WasWinsDecisively(cost, 0, 0.005));       // 2x with what CaS taught
  EXPECT_FALSE(WasWinsDecisively(cost, 0.005, 0.005));  // WaS's correction counts too
  cost.cas_s = 0.005;
  EXPECT_FALSE(WasWinsDecisively(cost, 0, 0));          // CaS faster
}

TEST(WeightPoolTest, CreateRejectsBadOptionsAndWrongBlocks) {
  WeightSource source;
  source.config = SmallConfig();
  Result<ModelWeights> all = LoadModelWeights(source, {}, true);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  PoolOptions options;
  options.mode = PoolMode::kWas;
  options.cache_slots = 1;
  Result<std::unique_ptr<WeightPool>> pool = CreateWeightPool(options, *all, nullptr);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find("cache_slots"), std::string::npos);
  options.cache_slots = 3;
  options.prefetch_depth = 3;
  pool = CreateWeightPool(options, *all, nullptr);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find("prefetch_depth"), std::string::npos);

  Result<ModelWeights> some = LoadModelWeights(source, {0, 2}, false);
  ASSERT_TRUE(some.ok()) << some.status().ToString();
  options = PoolOptions{};
  options.mode = PoolMode::kReplicate;
  pool = CreateWeightPool(options, *some, nullptr);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pool.status().message().find("block 1 is missing"), std::string::npos)
      << pool.status().message();
}

TEST(WeightPoolTest, SingleRankPoolComputesLocally) {
  WeightSource source;
  source.config = SmallConfig();
  Result<ModelWeights> weights = LoadModelWeights(source, {}, true);
  ASSERT_TRUE(weights.ok());
  PoolOptions options;
  options.mode = PoolMode::kAuto;  // one rank: every mode is local
  Result<std::unique_ptr<WeightPool>> pool = CreateWeightPool(options, *weights, nullptr);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  c10::InferenceMode guard;
  at::Tensor x = at::randn({7, 32});
  ASSERT_TRUE((*pool)->BeginPass(7).ok());
  Result<at::Tensor> qkv = (*pool)->PreAttention(3, x);
  ASSERT_TRUE(qkv.ok());
  EXPECT_TRUE(at::equal(*qkv, PreAttention(weights->blocks[3], x)));
  ASSERT_TRUE((*pool)->EndPass().ok());
  EXPECT_EQ((*pool)->HeldBytes(), PoolHeldBytes(options, source.config, 0, 1));
  EXPECT_TRUE((*pool)->Finish().ok());
}

// --- multi-process ---

struct Job {
  Status status;
  std::vector<std::string> out, err;  // without the "[rank N] " prefix
  std::vector<int> out_rank;
  double seconds = 0;
};

// `wrapper`: a command each rank's helper runs under (e.g. unshare).
Job RunRanks(int world, std::vector<std::string> args, int timeout_s = 120,
             std::vector<std::string> wrapper = {}) {
  std::vector<std::string> argv = wrapper;
  for (const char* a : {PW_INFER_RANK_HELPER, "model.d_model=32", "model.n_layers=5", "model.n_heads=2",
                        "model.seq_len=16"}) {
    argv.push_back(a);
  }
  argv.insert(argv.end(), args.begin(), args.end());
  Job job;
  std::mutex mu;
  LaunchOptions options;
  options.timeout = std::chrono::seconds(timeout_s);
  options.sink = [&](int rank, OutputStream stream, const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    size_t pos = line.find("] ");
    std::string body = pos == std::string::npos ? line : line.substr(pos + 2);
    if (stream == OutputStream::kStdout) {
      job.out.push_back(body);
      job.out_rank.push_back(rank);
    } else {
      job.err.push_back(body);
    }
  };
  auto start = std::chrono::steady_clock::now();
  job.status = LaunchLocalRanks(argv, world, options);
  job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return job;
}

// (rank, pass, layer) -> "pre post" checksums.
using Checks = std::map<std::tuple<int, int, int>, std::string>;

struct Parsed {
  Checks checks;
  int unequal = 0, finished = 0;
  std::map<int, std::map<std::string, long long>> stats;  // rank -> name -> value
  std::map<int, std::pair<long long, long long>> held;
  std::map<int, std::string> modes;  // rank -> per pass, 'c' (CaS) or 'o' (other)
};

Parsed Parse(const Job& job) {
  Parsed p;
  for (size_t i = 0; i < job.out.size(); ++i) {
    const std::string& line = job.out[i];
    int rank = job.out_rank[i];
    int pass, layer, equal;
    char pre[64], post[64];
    long long held, expected;
    if (std::sscanf(line.c_str(), "check %d %d pre %63s post %63s equal %d", &pass, &layer, pre,
                    post, &equal) == 5) {
      p.checks[{rank, pass, layer}] = std::string(pre) + " " + post;
      if (!equal) ++p.unequal;
    } else if (char mode[8]; std::sscanf(line.c_str(), "mode %d %7s", &pass, mode) == 2) {
      p.modes[rank] += mode[0];
    } else if (std::sscanf(line.c_str(), "held %lld expected %lld", &held, &expected) == 2) {
      p.held[rank] = {held, expected};
    } else if (line.rfind("stats ", 0) == 0) {
      std::istringstream in(line.substr(6));
      std::string name, value;
      while (in >> name >> value) p.stats[rank][name] = std::atoll(value.c_str());
    } else if (line == "finished") {
      ++p.finished;
    }
  }
  return p;
}

std::string JoinLines(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return text;
}

struct DistCase {
  int world;
  std::string mode;
  std::vector<std::string> extra;  // more helper arguments
  std::string name;
  int late_passes = 0;             // rank 1 runs this many more passes
};

void PrintTo(const DistCase& c, std::ostream* os) { *os << c.name; }

class PooledModesTest : public ::testing::TestWithParam<DistCase> {};

const char* kRows = "rows=1,60,3,100";
constexpr int kPasses = 4, kLayers = 5;
// Forced calibration for auto: crossover at ~31-36 rows for this config
// without a cache kept between passes (see the ChooseMode test's figures),
// so there passes of 1 and 3 rows go CaS and 60 and 100 rows go WaS.
const char* kCalib = "calib=1e11,1e9,1e-6";

TEST_P(PooledModesTest, BitIdenticalToLocalAndToReplicate) {
  const DistCase c = GetParam();
  std::vector<std::string> reference_args = {"mode=replicate", kRows};
  for (const std::string& arg : c.extra) {
    if (arg.rfind("format=", 0) == 0) reference_args.push_back(arg);  // the same weights
  }
  Job reference = RunRanks(c.world, reference_args);
  ASSERT_TRUE(reference.status.ok()) << reference.status.ToString() << JoinLines(reference.err);
  Parsed ref = Parse(reference);
  ASSERT_EQ(ref.unequal, 0);
  ASSERT_EQ(ref.checks.size(), size_t(c.world * kPasses * kLayers));

  std::vector<std::string> args = {"mode=" + c.mode, kRows};
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  if (c.late_passes > 0) {
    args.push_back("extra_rank=1");
    args.push_back("extra=" + std::to_string(c.late_passes));
  }
  Job job = RunRanks(c.world, args);
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << JoinLines(job.err);
  Parsed p = Parse(job);
  EXPECT_EQ(p.finished, c.world);
  EXPECT_EQ(p.unequal, 0) << "some block's result differs from the local computation";
  // Every check of the replicate run appears with the same checksums.
  for (const auto& [key, sums] : ref.checks) {
    auto it = p.checks.find(key);
    ASSERT_NE(it, p.checks.end()) << "missing rank " << std::get<0>(key) << " pass "
                                  << std::get<1>(key) << " layer " << std::get<2>(key);
    EXPECT_EQ(it->second, sums) << "rank " << std::get<0>(key) << " pass " << std::get<1>(key)
                                << " layer " << std::get<2>(key);
  }
  long long fetches = 0, served_fetches = 0, computes = 0, served_computes = 0;
  for (int r = 0; r < c.world; ++r) {
    ASSERT_TRUE(p.held.count(r));
    EXPECT_EQ(p.held[r].first, p.held[r].second) << "rank " << r;
    fetches += p.stats[r]["fetches"];
    served_fetches += p.stats[r]["served_fetches"];
    computes += p.stats[r]["remote_computes"];
    served_computes += p.stats[r]["served_computes"];
  }
  EXPECT_EQ(fetches, served_fetches);
  EXPECT_EQ(computes, served_computes);
  if (c.mode == "was") {
    EXPECT_GT(fetches, 0);
    EXPECT_EQ(computes, 0);
    // What auto's cost model assumes a WaS pass fetches
    // (RingFetchesPerPass) is what the cache does: every remote block in the
    // first pass, then G per pass, plus at most G that the last pass's end
    // prefetches for a pass that never comes.
    int slots = 3;
    for (const std::string& arg : c.extra) {
      if (arg.rfind("slots=", 0) == 0) slots = std::stoi(arg.substr(6));
    }
    for (int r = 0; r < c.world; ++r) {
      const int64_t remote = kLayers - static_cast<int64_t>(OwnedBlocks(r, c.world, kLayers).size());
      const int64_t g = RingFetchesPerPass(remote, slots);
      const int64_t passes = kPasses + (r == 1 ? c.late_passes : 0);
      EXPECT_GE(p.stats[r]["fetches"], remote + (passes - 1) * g) << "rank " << r;
      EXPECT_LE(p.stats[r]["fetches"], remote + passes * g) << "rank " << r;
    }
  } else if (c.mode == "shared") {  // every block read in place: nothing moves
    for (int r = 0; r < c.world; ++r) {
      EXPECT_EQ(p.stats[r]["bytes_sent"] + p.stats[r]["bytes_received"], 0) << "rank " << r;
      EXPECT_EQ(p.stats[r]["passes_local"], kPasses + (r == 1 ? c.late_passes : 0)) << "rank " << r;
    }
    EXPECT_EQ(fetches + computes, 0);
  } else if (c.mode == "cas") {
    EXPECT_EQ(fetches, 0);
    EXPECT_GT(computes, 0);
  } else {  // auto with the forced calibration: each pass as ChooseMode says
    // Rank r's passes have rows 1, 60, 3, 100 (+ r), and its cache keeps
    // what of the ring its slots hold (3 unless the case says): a rank
    // with no more remote blocks than slots fetches none after the first
    // pass, so WaS always wins there; the others take CaS for the small
    // passes.
    const PoolCalibration calib{1e11, 1e9, 1e-6};
    const int64_t rows[] = {1, 60, 3, 100};
    int asked = 3;
    for (const std::string& arg : c.extra) {
      if (arg.rfind("slots=", 0) == 0) asked = std::stoi(arg.substr(6));
    }
    int alternating = 0;
    for (int r = 0; r < c.world; ++r) {
      const int owned = static_cast<int>(OwnedBlocks(r, c.world, kLayers).size());
      const int slots = std::min(asked, kLayers - owned);
      const int passes = kPasses + (r == 1 ? c.late_passes : 0);
      long long cas = 0, switches = 0;
      PoolMode last = PoolMode::kReplicate;
      for (int pass = 0; pass < passes; ++pass) {
        const PoolMode mode =
            ChooseMode(calib, SmallConfig(), rows[pass % 4] + r, owned, c.world, slots).best;
        cas += mode == PoolMode::kCas;
        switches += pass > 0 && mode != last;
        last = mode;
      }
      EXPECT_EQ(p.stats[r]["passes_cas"], cas) << "rank " << r;
      EXPECT_EQ(p.stats[r]["passes_was"], passes - cas) << "rank " << r;
      EXPECT_EQ(p.stats[r]["switches"], switches) << "rank " << r;
      alternating += switches == passes - 1;
    }
    EXPECT_GE(alternating, 1) << "some rank runs both modes";
  }
  if (c.late_passes > 0) {  // the late rank's extra passes are checked too
    EXPECT_EQ(p.checks.size(), size_t((c.world * kPasses + c.late_passes) * kLayers));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, PooledModesTest,
    ::testing::Values(DistCase{2, "was", {}, "was2"},
                      DistCase{2, "was", {}, "was2_late", 5},
                      DistCase{2, "cas", {}, "cas2"},
                      // 2 slots: rank 1's 3 remote blocks are not all kept.
                      DistCase{2, "auto", {kCalib, "slots=2", "depth=1"}, "auto2"},
                      // 2 slots for 3 remote blocks: the ring wraps every pass.
                      DistCase{3, "was", {"slots=2", "depth=1"}, "was3_wrap"},
                      DistCase{3, "cas", {}, "cas3"},
                      // rank 1 runs 6 more passes: the others Finish first
                      // and keep serving it.
                      DistCase{3, "auto", {kCalib}, "auto3_late", 6},
                      // 5 blocks over 3 ranks (2, 2, 1); rank 1 runs on after
                      // the others have finished and exited.
                      DistCase{3, "shared", {}, "shared3_late", 6},
                      // 6 ranks, 5 blocks: rank 5 owns none.
                      DistCase{6, "shared", {}, "shared6"},
                      // Blocks held in int8 and bf16 panels: fetched, served
                      // and mapped in their format (scales included).
                      DistCase{3, "was", {"format=int8", "slots=2", "depth=1"}, "was3_int8"},
                      DistCase{2, "cas", {"format=bf16"}, "cas2_bf16"},
                      DistCase{3, "shared", {"format=int8"}, "shared3_int8"}),
    [](const ::testing::TestParamInfo<DistCase>& info) { return info.param.name; });

// Auto commits as one job and the committed mode frees its reserve as KV
// blocks. A calibration under which WaS wins every pass: each rank commits
// to WaS after at most 8 passes (one decides, the others follow), tells
// the others, and a rank that has heard from all of them hands over the
// serving reserve's blocks; its weight cache stays, and grows by the slot
// the reserve also buys (it starts with 2 of 3 remote blocks' slots, as
// auto does when the slots asked for do not fit). One under which CaS
// wins every pass: the ranks give their caches up (no coordination needed)
// and hand over the cache's blocks. Outputs stay bit-identical throughout.
TEST(WeightPoolDistTest, AutoCommitsAsOneAndFreesTheOtherModesReserve) {
  std::string rows = "rows=8";
  for (int i = 1; i < 20; ++i) rows += ",8";
  struct Case {
    std::string name, calib;
    const char* committed;  // the stat of the commitment expected
    long long freed;
    std::vector<std::string> slots;
  };
  for (const Case& c :
       {Case{"WaS", "calib=1e11,1e15,1e-9", "was_committed_after_pass", 5,
             {"slots=2", "depth=1", "serving_slots=1", "serving_depth=2"}},
        // 2 slots: rank 0's 3 remote blocks are not all kept between
        // passes, so WaS pays for fetches on every rank.
        Case{"CaS", "calib=1e11,1e6,1e-3", "cache_dropped_after_pass", 7,
             {"slots=2", "depth=1"}}}) {
    std::vector<std::string> args = {"mode=auto", rows, c.calib, "serving_kv_blocks=5",
                                     "cache_kv_blocks=7"};
    args.insert(args.end(), c.slots.begin(), c.slots.end());
    Job job = RunRanks(3, args);
    ASSERT_TRUE(job.status.ok()) << c.name << ": " << job.status.ToString() << JoinLines(job.err);
    Parsed p = Parse(job);
    EXPECT_EQ(p.finished, 3) << c.name;
    EXPECT_EQ(p.unequal, 0) << c.name;
    int deciders = 0, released = 0;
    for (int rank = 0; rank < 3; ++rank) {
      std::map<std::string, long long>& st = p.stats[rank];
      const char* other = c.freed == 5 ? "cache_dropped_after_pass" : "was_committed_after_pass";
      EXPECT_GE(st[c.committed], 1) << c.name << " rank " << rank;
      EXPECT_LE(st[c.committed], 8) << c.name << " rank " << rank;
      EXPECT_EQ(st[other], -1) << c.name << " rank " << rank;
      deciders += st[c.committed] == 8;
      if (c.freed == 5) {
        // The serving reserve goes only once all three have committed.
        const bool freed = st["serving_released_after_pass"] >= 0;
        EXPECT_EQ(st["released_kv_blocks"], freed ? 5 : 0) << "rank " << rank;
        if (freed) {
          EXPECT_GE(st["serving_released_after_pass"], st[c.committed]);
        }
        // Held: the owned blocks and 2 slots, plus the added one once freed.
        ASSERT_TRUE(p.held.count(rank));
        if (freed) {
          EXPECT_GT(p.held[rank].first, p.held[rank].second) << "rank " << rank;
        } else {
          EXPECT_EQ(p.held[rank].first, p.held[rank].second) << "rank " << rank;
        }
        released += freed;
        EXPECT_EQ(st["passes_cas"], 0) << "rank " << rank;
      } else {
        EXPECT_EQ(st["released_kv_blocks"], 7) << "rank " << rank;
        EXPECT_EQ(st["serving_released_after_pass"], -1) << "rank " << rank;
        EXPECT_EQ(st["passes_was"], 0) << "rank " << rank;
      }
    }
    EXPECT_GE(deciders, 1) << c.name << ": some rank decided by itself after 8 passes";
    // The last to commit had heard from the others (20 passes leave time).
    if (c.freed == 5) {
      EXPECT_GE(released, 1);
    }
  }
}

// Learning auto: the job's first pass runs cold (WaS fetches every remote
// block) and teaches nothing, so the second pass still follows the model.
// Under this calibration WaS wins by microseconds (the queue term of 3
// ranks), less than any real pass takes: had the cold pass set WaS's
// correction, CaS (with none yet) would have run the second pass. Once the
// second pass has taught WaS's excess, the untaught CaS runs the third.
TEST(WeightPoolDistTest, AutoLearnsNothingFromTheColdFirstPass) {
  Job job = RunRanks(3, {"mode=auto", "rows=8,8,8", "calib=1e11,1e15,1e-9", "learn=1"});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << JoinLines(job.err);
  Parsed p = Parse(job);
  EXPECT_EQ(p.finished, 3);
  EXPECT_EQ(p.unequal, 0);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(p.modes[rank], "ooc") << "rank " << rank << " ran its passes as " << p.modes[rank]
                                    << " (c = CaS)";
  }
}

// RunBlocks: CaS keeps the residual stream with the owners through a run of
// remote blocks (3 ranks, 5 layers: rank 0's blocks 1 and 2 form a run, so
// block 1's owner forwards to block 2's). Every block's qkv and the output
// are bit-identical to the local computation and to replicate's.
TEST(WeightPoolDistTest, RunBlocksChainsCasRunsExactly) {
  auto lines = [](const Job& job, int* unequal) {
    std::map<std::pair<int, std::string>, std::string> out;  // (rank, key) -> sum
    for (size_t i = 0; i < job.out.size(); ++i) {
      std::istringstream in(job.out[i]);
      std::string what, pass, layer, word, sum;
      int equal = 0;
      in >> what;
      if (what == "block") {
        in >> pass >> layer >> word >> sum >> word >> equal;
      } else if (what == "final") {
        in >> pass >> sum >> word >> equal;
      } else {
        continue;
      }
      if (!equal) ++*unequal;
      out[{job.out_rank[i], what + pass + "/" + layer}] = sum;
    }
    return out;
  };
  Job reference = RunRanks(3, {"mode=replicate", "blocks=1", kRows});
  ASSERT_TRUE(reference.status.ok()) << reference.status.ToString() << JoinLines(reference.err);
  Job job = RunRanks(3, {"mode=cas", "blocks=1", kRows});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << JoinLines(job.err);
  int ref_unequal = 0, unequal = 0;
  auto ref = lines(reference, &ref_unequal);
  auto got = lines(job, &unequal);
  EXPECT_EQ(ref_unequal, 0);
  EXPECT_EQ(unequal, 0);
  EXPECT_EQ(ref.size(), size_t(3 * kPasses * (kLayers + 1)));
  EXPECT_EQ(got, ref);
  Parsed p = Parse(job);
  long long computes = 0, served = 0;
  for (int r = 0; r < 3; ++r) {
    computes += p.stats[r]["remote_computes"];
    served += p.stats[r]["served_computes"];
  }
  EXPECT_EQ(computes, served);
  EXPECT_GT(computes, 0);
}

// The probe auto runs before choosing shared: local ranks share a host.
TEST(WeightPoolDistTest, LocalRanksShareMemory) {
  Job job = RunRanks(3, {"probe=1"});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << JoinLines(job.err);
  EXPECT_EQ(std::count(job.out.begin(), job.out.end(), "share_memory 1"), 3) << JoinLines(job.out);
}

// Ranks that cannot see each other's processes (here: each in its own PID
// namespace, as on different hosts): the probe says so on every rank, and
// mode shared fails on every rank with the same message, naming the rank
// and the way out, instead of hanging or half-starting.
TEST(WeightPoolDistTest, RanksThatCannotMapEachOtherAreToldSo) {
  const std::vector<std::string> apart = {"unshare", "--pid", "--fork", "--mount-proc"};
  if (std::system("unshare --pid --fork --mount-proc true >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "this machine cannot create PID namespaces (unshare needs root)";
  }
  Job probe = RunRanks(2, {"probe=1"}, 120, apart);
  ASSERT_TRUE(probe.status.ok()) << probe.status.ToString() << JoinLines(probe.err);
  EXPECT_EQ(std::count(probe.out.begin(), probe.out.end(), "share_memory 0"), 2) << JoinLines(probe.out);

  Job shared = RunRanks(2, {"mode=shared"}, 120, apart);
  ASSERT_FALSE(shared.status.ok());
  int told = 0;
  for (const std::string& line : shared.err) {
    told += line.find("could not map another rank's weights") != std::string::npos &&
            line.find("use --mode was or cas") != std::string::npos;
  }
  EXPECT_EQ(told, 2) << JoinLines(shared.err);
}

TEST(WeightPoolDistTest, MeasuredCalibrationIsPositive) {
  Job job = RunRanks(2, {"measure=1"});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << JoinLines(job.err);
  int seen = 0;
  for (const std::string& line : job.out) {
    double flops, bandwidth, latency;
    if (std::sscanf(line.c_str(), "calibration gemm_flops %lf bandwidth %lf latency_s %lf",
                    &flops, &bandwidth, &latency) == 3) {
      EXPECT_GT(flops, 0);
      EXPECT_GT(bandwidth, 0);
      EXPECT_GT(latency, 0);
      std::printf("  %s\n", line.c_str());
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

TEST(WeightPoolDistTest, AutoWithMeasuredCalibrationStaysExact) {
  Job job = RunRanks(2, {"mode=auto", kRows});
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << JoinLines(job.err);
  Parsed p = Parse(job);
  EXPECT_EQ(p.finished, 2);
  EXPECT_EQ(p.unequal, 0);
  EXPECT_EQ(p.checks.size(), size_t(2 * kPasses * kLayers));
}

TEST(WeightPoolDistTest, DyingRankFailsTheJobInsteadOfHanging) {
  // Rank 1 exits after its first pass; the others need its blocks (and its
  // Done). The job must fail, naming rank 1, well before any hang limit.
  Job job = RunRanks(3, {"mode=was", "rows=2,50,4,70,9", "die_rank=1", "timeout_ms=20000"}, 90);
  ASSERT_FALSE(job.status.ok());
  std::printf("  job error: %s\n", job.status.message().substr(0, 300).c_str());
  EXPECT_NE(job.status.message().find("rank 1"), std::string::npos) << job.status.message();
  EXPECT_LT(job.seconds, 60.0);
}

TEST(WeightPoolDistTest, FinishWaitsForASlowPeerWhoseBlocksAreAllCached) {
  // Rank 1 keeps working for about twice the group timeout after rank 0
  // finished, but with every remote block in its WaS cache it fetches
  // nothing: its keep-alive messages must stop rank 0's Finish from taking
  // it for hung.
  Job job = RunRanks(2, {"mode=was", "slots=8", "rows=2,9", "extra_rank=1", "extra=8",
                         "extra_sleep_ms=500", "timeout_ms=2000"}, 90);
  ASSERT_TRUE(job.status.ok()) << job.status.ToString() << JoinLines(job.err);
  Parsed p = Parse(job);
  EXPECT_EQ(p.finished, 2);
  EXPECT_EQ(p.unequal, 0);
}

TEST(WeightPoolDistTest, FinishFailsNamingAPeerThatNeverFinishes) {
  // Rank 2 stops using the pool and never calls Finish. The others' Finish
  // must give up after the group timeout of silence and name rank 2 (the
  // launcher then stops the job), not wait forever.
  Job job = RunRanks(3, {"mode=cas", "rows=2,9", "hang_rank=2", "timeout_ms=3000"}, 90);
  ASSERT_FALSE(job.status.ok());
  std::string text = job.status.message() + JoinLines(job.err);
  EXPECT_NE(text.find("rank(s) 2 have not finished"), std::string::npos) << text;
  EXPECT_LT(job.seconds, 40.0);
}

}  // namespace
}  // namespace pw
