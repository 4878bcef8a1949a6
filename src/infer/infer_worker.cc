#include "infer/infer_worker.h"

#include <ATen/ATen.h>
#include <malloc.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "comm/gather.h"
#include "comm/process_groups.h"
#include "core/units.h"
#include "infer/calibration.h"
#include "infer/job_summary.h"
#include "infer/kv_cache.h"
#include "infer/layer_math.h"
#include "infer/reusing_allocator.h"
#include "infer/shared_pool.h"
#include "os/memory.h"
#include "viz/file_output.h"
#include "viz/progress.h"

namespace pw {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

json PlanJson(const MemoryPlan& p) {
  return {{"budget", p.budget},       {"weights", p.weights}, {"weight_cache", p.weight_cache},
          {"workspace", p.workspace}, {"serving", p.serving},   {"kv", p.kv},
          {"slack", p.slack},
          {"kv_blocks", p.kv_blocks}, {"block_size", p.block_size},
          {"kv_dtype", KvDtypeName(p.kv_dtype)},
          {"kv_capacity_tokens", p.kv_capacity_tokens}, {"kv_swap_blocks", p.kv_swap_blocks},
          {"kv_was_swap_blocks", p.kv_was_swap_blocks}, {"was_swap_slots", p.was_swap_slots},
          {"cache_slots", p.cache_slots},
          {"auto_without_cache", p.auto_without_cache}};
}

json PoolJson(const PoolStats& s) {
  return {{"bytes_sent", s.bytes_sent},           {"bytes_received", s.bytes_received},
          {"fetches", s.fetches},                 {"remote_computes", s.remote_computes},
          {"served_fetches", s.served_fetches},   {"served_computes", s.served_computes},
          {"passes_was", s.passes_was},           {"passes_cas", s.passes_cas},
          {"passes_local", s.passes_local},       {"switches", s.switches},
          {"fetch_wait_s", s.fetch_wait_s},       {"remote_wait_s", s.remote_wait_s},
          {"learned_extra_was_s", s.learned_extra_was_s},
          {"cache_dropped_after_pass", s.cache_dropped_after_pass},
          {"was_committed_after_pass", s.was_committed_after_pass},
          {"serving_released_after_pass", s.serving_released_after_pass},
          {"learned_extra_cas_s", s.learned_extra_cas_s}};
}

// World rank 0 gathers every rank's summary (collective over the world),
// prints the job summary and writes --summary-json.
Status ReportJob(const InferJob& job, const InferSettings& settings, const json& mine, ProcessGroups& groups) {
  PW_ASSIGN_OR_RETURN(std::vector<std::string> texts, GatherStrings(groups.world(), mine.dump()));
  if (groups.world().rank() != 0) return Status::Ok();
  std::vector<json> ranks;
  double wall = 0;
  for (size_t r = 0; r < texts.size(); ++r) {
    ranks.push_back(json::parse(texts[r], nullptr, /*allow_exceptions=*/false));
    if (!ranks.back().is_object() || !ranks.back().contains("rank_seconds")) {
      return Status::Internal("rank " + std::to_string(r) + " sent an unreadable summary: " + texts[r]);
    }
    wall = std::max(wall, ranks.back()["rank_seconds"].get<double>());
  }
  const json summary = JobSummary(ranks, settings.budget_bytes, wall);
  std::printf("%s", FormatJobSummary(summary).c_str());
  std::printf("results: %s\n", job.out.c_str());
  if (!job.summary_json.empty()) {
    PW_RETURN_IF_ERROR(WriteFileAtomically(job.summary_json, summary.dump(2) + "\n"));
    std::printf("wrote %s (job summary)\n", job.summary_json.c_str());
  }
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace

Result<MemoryPlan> PlanForRank(const InferJob& job, const InferSettings& settings, const ModelConfig& config,
                               int rank, int world) {
  MemoryPlanInput in;
  in.config = config;
  in.pool = settings.pool;
  in.rank = rank;
  in.world = world;
  in.budget_bytes = settings.budget_bytes;
  in.block_size = job.block_size;
  in.kv_dtype = settings.kv_dtype;
  in.max_batch_tokens = job.max_batch_tokens;
  return PlanMemory(in);
}

EngineOptions EngineOptionsFor(const InferJob& job, const InferSettings& settings) {
  EngineOptions options;
  options.sampling = settings.sampling;
  options.logprobs = job.logprobs;
  options.max_batch_tokens = job.max_batch_tokens;
  options.max_sequences = job.max_sequences;
  return options;
}

ResultRecord ToResultRecord(const GenerationResult& g, int rank, bool logprobs) {
  ResultRecord r;
  r.id = g.id;
  r.index = g.index;
  r.tokens = g.tokens;
  r.finish_reason = g.finish_reason;
  r.error = g.error;
  r.prompt_tokens = g.prompt_tokens;
  r.rank = rank;
  r.seconds = g.seconds;
  r.has_logprobs = logprobs;
  r.logprobs = g.logprobs;
  return r;
}

int64_t QueueChunk(int requested, int64_t prompts, int ranks) {
  if (requested > 0) return requested;
  return std::clamp<int64_t>(prompts / (8 * std::max(1, ranks)), 1, 16);
}

std::vector<GenerationRequest> BuildRequests(const std::vector<PromptRecord>& share,
                                             const DoneSet& done, const InferJob& job,
                                             const ModelConfig& config,
                                             std::vector<ResultRecord>* rejected) {
  std::vector<GenerationRequest> requests;
  for (const PromptRecord& p : share) {
    if (done.ids.count(p.id) != 0) continue;
    GenerationRequest r;
    r.id = p.id;
    r.index = p.index;
    r.max_new_tokens = p.max_tokens > 0 ? p.max_tokens : job.max_tokens;
    r.end_token = job.end_byte;
    bool in_vocab = true;
    for (unsigned char c : p.prompt) {
      in_vocab = in_vocab && c < config.vocab_size;
      r.prompt.push_back(c);
    }
    if (!in_vocab) {
      ResultRecord bad;
      bad.id = p.id;
      bad.index = p.index;
      bad.finish_reason = "error";
      bad.error = "line " + std::to_string(p.line) + ": the prompt has bytes >= the model's vocab_size " +
                  std::to_string(config.vocab_size) + "; use a byte-level model (vocab_size = 256)";
      bad.prompt_tokens = static_cast<int>(p.prompt.size());
      bad.has_logprobs = job.logprobs >= 0;
      if (rejected != nullptr) rejected->push_back(std::move(bad));
      continue;
    }
    requests.push_back(std::move(r));
  }
  return requests;
}

Status RunInferRank(const InferJob& job, const InferSettings& requested, const WorldInfo& world,
                    bool report_bad_lines) {
  InferSettings settings = requested;  // auto may become shared (below)
  const auto job_start = Clock::now();
  const int rank = world.rank, n = world.world_size;
  const std::string who = "rank " + std::to_string(rank) + ": ";
  at::set_num_threads(1);
  torch::NoGradGuard no_grad;
  // Measured memory: the process's own (anonymous) memory at its peak while
  // generating, above what it holds here (LibTorch's start-up is not the
  // job's), reported beside what the plan charges; loading's own peak
  // apart. Pages of shared libraries' code first run while generating (~9
  // MiB of LibTorch and OpenBLAS) are resident too, but shared by every
  // rank on the host and given back under pressure: reported, not charged.
  (void)ResetResidentPeak();  // an old kernel: the peak since exec, a little high
  const Result<ResidentMemory> at_start = ReadResidentMemory();
  // Large tensors from here on are mapped by the worker's own allocator,
  // which keeps a pass's freed buffers for the next pass instead of leaving
  // them to fragment glibc's heap (infer/reusing_allocator.h). Nothing is
  // kept while loading; generation's scratch budget is set below.
  ReusingCpuAllocator& allocator = InstallReusingCpuAllocator(0);

  PW_ASSIGN_OR_RETURN(ModelConfig config, SourceConfig(settings.source));
  Result<MemoryPlan> planned = PlanForRank(job, settings, config, rank, n);
  if (!planned.ok()) return planned.status().WithContext(who + "memory plan");
  MemoryPlan plan = *planned;

  // Prompts (the launcher reported the bad lines already), minus those done.
  PW_ASSIGN_OR_RETURN(PromptFile prompts, ReadPromptFile(job.prompts));
  if (rank == 0 && report_bad_lines) {
    for (const std::string& problem : prompts.problems) std::fprintf(stderr, "%s (skipped)\n", problem.c_str());
  }
  Result<ResultWriter> writer = ResultWriter::Open(job.out);  // cuts a torn tail first
  if (!writer.ok()) return writer.status().WithContext(who.substr(0, who.size() - 2));
  PW_ASSIGN_OR_RETURN(DoneSet done, ReadDoneIds(job.out));
  // Round-robin: this rank's share, fixed now. Queue: nothing yet; the
  // engine claims chunks of the whole file whenever it has room (below).
  const bool queue = settings.shared_queue && n > 1;
  int64_t total = 0, skipped_done = 0, rejected = 0;
  // The requests among `prompts` not done yet; bad ones are answered now.
  auto requests_of = [&](const std::vector<PromptRecord>& part) -> Result<std::vector<GenerationRequest>> {
    std::vector<ResultRecord> bad;
    std::vector<GenerationRequest> got = BuildRequests(part, done, job, config, &bad);
    skipped_done += static_cast<int64_t>(part.size() - got.size() - bad.size());
    for (ResultRecord& r : bad) {
      r.rank = rank;
      PW_RETURN_IF_ERROR(writer->Append(r));
    }
    rejected += static_cast<int64_t>(bad.size());
    total += static_cast<int64_t>(got.size());
    return got;
  };
  PW_ASSIGN_OR_RETURN(std::vector<GenerationRequest> requests,
                      requests_of(queue ? std::vector<PromptRecord>{} : ShareOfRank(prompts.prompts, rank, n)));
  int64_t job_pending = 0;  // the queue's progress line counts the whole job
  for (const PromptRecord& p : prompts.prompts) job_pending += done.ids.count(p.id) == 0 ? 1 : 0;

  // Groups: pp = 1; a serving group for the pool's owner thread.
  ProcessGroupsOptions gopts;
  gopts.pp = 1;
  gopts.serving_group = n > 1;
  gopts.timeout = std::chrono::seconds(job.collective_timeout);
  gopts.exit_after_failure = true;  // a failed group ends the rank
  Result<ProcessGroups> groups_or = ProcessGroups::Create(world, gopts);
  if (!groups_or.ok()) return groups_or.status().WithContext(who + "joining the job");
  ProcessGroups groups = std::move(*groups_or);

  // Auto on one host: every rank maps the others' blocks (mode shared),
  // which moves nothing and reserves nothing, so it beats both WaS and CaS;
  // the probe is the real thing (a region each rank maps), not a hostname.
  if (settings.pool.mode == PoolMode::kAuto && n > 1 && !job.network_pool) {
    Result<bool> one_host = RanksShareMemory(groups.world());
    if (!one_host.ok()) return one_host.status().WithContext(who + "probing for shared memory");
    if (*one_host) {
      settings.pool.mode = PoolMode::kShared;
      planned = PlanForRank(job, settings, config, rank, n);  // needs less than auto's: fits
      if (!planned.ok()) return planned.status().WithContext(who + "memory plan");
      plan = *planned;
      if (rank == 0) {
        std::printf("auto: every rank maps the others' memory (one host), so the weights are shared in "
                    "place (mode shared); --network-pool pools them over the network instead\n");
        std::fflush(stdout);
      }
    }
  }

  const bool replicate = settings.pool.mode == PoolMode::kReplicate;
  const auto load_start = Clock::now();
  Result<ModelWeights> weights_or =
      LoadModelWeights(settings.source, OwnedBlocks(rank, n, config.n_layers), /*keep_all=*/replicate);
  if (!weights_or.ok()) return weights_or.status().WithContext(who + "loading weights");
  ModelWeights weights = std::move(*weights_or);
  // Blocks are prepacked for the GEMMs once, here, in place
  // (infer/prepacked_linear.h) where they are computed on the host that
  // holds them, and in WaS and auto (which send blocks) when every rank
  // has the same layout, so that what one sends another reads as it is.
  const PoolMode held_mode = settings.pool.mode;
  const bool computed_here = n == 1 || held_mode == PoolMode::kReplicate ||
                             held_mode == PoolMode::kCas || held_mode == PoolMode::kShared;
  const std::string layout = settings.prepack_weights ? BlockPrepackedSignature(config) : "";
  bool one_layout = !layout.empty();
  if (n > 1) {
    Result<std::vector<std::string>> layouts = GatherStrings(groups.world(), layout);
    if (!layouts.ok()) return layouts.status().WithContext(who + "comparing weight layouts");
    for (const std::string& other : *layouts) one_layout = one_layout && other == layout;
  }
  const bool prepacked = !layout.empty() && (computed_here || one_layout);
  if (prepacked) {
    for (BlockWeights& block : weights.blocks) {
      if (block.defined()) PrepackBlock(block, config);
    }
  }
  const double load_s = Since(load_start);

  // Auto calibrates inside CreateWeightPool; calibrating here instead lets
  // the summary report the cost model's figures and crossover (same code).
  PoolOptions pool_options = settings.pool;
  pool_options.blocks_prepacked = prepacked;
  pool_options.start_without_cache = plan.auto_without_cache;
  if (plan.kv_blocks > 0) {
    pool_options.kv_gain_without_cache =
        static_cast<double>(plan.kv_blocks + plan.kv_swap_blocks) / static_cast<double>(plan.kv_blocks);
  }
  if (pool_options.mode == PoolMode::kAuto && plan.cache_slots >= 2 &&
      plan.cache_slots < pool_options.cache_slots) {
    // Auto: the cache the budget holds (the plan line says so).
    pool_options.cache_slots = plan.cache_slots;
    pool_options.prefetch_depth = std::min(pool_options.prefetch_depth, plan.cache_slots - 1);
  }
  pool_options.kv_blocks_freed_by_cache = plan.kv_swap_blocks;
  pool_options.kv_blocks_freed_by_serving = plan.kv_was_swap_blocks;
  if (plan.was_swap_slots > 0) {
    pool_options.slots_added_by_serving = plan.was_swap_slots;
    pool_options.prefetch_depth_after_serving =
        std::min(settings.pool.prefetch_depth, plan.cache_slots + plan.was_swap_slots - 1);
  }
  PoolCalibration calibration;
  const bool calibrated = n > 1 && (job.predict_crossover || pool_options.mode == PoolMode::kAuto);
  if (calibrated) {
    Result<PoolCalibration> cal = Calibrate(config, &groups, prepacked);
    if (!cal.ok()) return cal.status().WithContext(who + "calibrating the cost model");
    calibration = *cal;
    pool_options.calibration = &calibration;
  }
  Result<std::unique_ptr<WeightPool>> pool_or = CreateWeightPool(pool_options, weights, &groups);
  if (!pool_or.ok()) return pool_or.status().WithContext(who + "weight pool");
  std::unique_ptr<WeightPool> pool = std::move(*pool_or);
  if (pool->mode() == PoolMode::kShared) {
    for (BlockWeights& block : weights.blocks) block = BlockWeights{};  // the pool holds the copy
  }

  // Held back: the blocks of whichever commitment frees more (one of them
  // happens at most; untouched, they cost no resident memory).
  PagedKvCache cache(config, plan.kv_blocks, plan.block_size,
                     std::max(plan.kv_swap_blocks, plan.kv_was_swap_blocks), plan.kv_dtype);
  // Loading peaks apart (files read whole, a random init built whole): the
  // budget is about generation, so its peak is measured from here.
  const Result<ResidentMemory> after_load = ReadResidentMemory();
  // What loading freed goes back to the system; glibc would keep it in the
  // heap, resident, where the budget promised KV cache.
  malloc_trim(0);
  // A pass's intermediates are what the plan's workspace (and the serving
  // thread's) charges: the allocator's scratch, live and kept, stays there.
  allocator.SetScratchBudget(plan.workspace + plan.serving);
  (void)ResetResidentPeak();
  // Exact accounting: what is actually held equals what the plan charged.
  const int64_t held_weights = weights.SharedBytes() + pool->HeldBytes();
  const bool accounting_exact = held_weights == plan.weights + plan.weight_cache &&
                                cache.bytes() == plan.kv &&
                                plan.held() + plan.kv + plan.slack == plan.budget;
  if (!accounting_exact) {
    std::fprintf(stderr, "%swarning: memory accounting differs from the plan: held weights %lld B "
                 "(plan %lld B), kv %lld B (plan %lld B)\n", who.c_str(),
                 static_cast<long long>(held_weights),
                 static_cast<long long>(plan.weights + plan.weight_cache),
                 static_cast<long long>(cache.bytes()), static_cast<long long>(plan.kv));
  }

  EngineOptions engine_options = EngineOptionsFor(job, settings);
  // A serving reserve given up for KV blocks (auto committed to WaS) is no
  // longer scratch room: the allocator keeps only the workspace's worth.
  // (A weight cache given up was long-lived: the allocator unmaps it.)
  engine_options.on_kv_grown = [&](int64_t /*kv_blocks*/) {
    if (pool->stats().serving_released_after_pass >= 0) allocator.SetScratchBudget(plan.workspace);
  };
  InferenceEngine engine(weights, *pool, cache, engine_options);

  int64_t finished = 0, generated = 0, errors = 0;
  // The shared queue: every rank computes the same chunks of the prompt
  // file. Chunk r is rank r's own first claim, so every rank serves prompts
  // whenever the file has a chunk per rank, however late it starts (on
  // several hosts a host whose ranks started last would otherwise find the
  // file taken); a counter in the job's store hands out the rest in order.
  InferenceEngine::RequestSource more;
  bool own_chunk_claimed = false;  // outlives the block: `more` runs later
  if (queue) {
    const int64_t size = static_cast<int64_t>(prompts.prompts.size());
    const int64_t chunk = QueueChunk(job.queue_chunk, size, n);
    // A rank holds at most its even share of the job unfinished, so a job
    // smaller than the ranks' batches still spreads evenly; larger jobs
    // are claimed as room appears, and the last chunks go to whoever is free.
    const int64_t most_in_flight = std::max(chunk, (job_pending + n - 1) / n);
    more = [&, size, chunk, most_in_flight]() -> Result<InferenceEngine::RequestBatch> {
      InferenceEngine::RequestBatch batch;
      while (batch.requests.empty()) {
        if (total - finished >= most_in_flight) return batch;  // not now
        int64_t index = rank;
        if (own_chunk_claimed) {
          PW_ASSIGN_OR_RETURN(const int64_t next, groups.AddToCounter("infer/next_chunk", 1));
          index = n + next - 1;
        }
        own_chunk_claimed = true;
        const int64_t begin = index * chunk;
        if (begin >= size) {
          batch.last = true;
          return batch;
        }
        const auto first = prompts.prompts.begin() + begin;
        PW_ASSIGN_OR_RETURN(batch.requests,  // empty when the chunk was done: claim the next
                            requests_of(std::vector<PromptRecord>(first, first + std::min(chunk, size - begin))));
      }
      return batch;
    };
  }

  Status append_status;
  // Rank 0 shows the progress of its share: relayed to the launcher's
  // terminal, or a plain line every few seconds.
  ProgressPrinter progress(stdout, rank == 0 && job.progress ? ProgressMode::kRelay : ProgressMode::kPlain);
  const auto run_start = Clock::now();
  auto last_print = run_start, last_report = run_start;
  int64_t unreported = 0;  // queue: results not yet added to the job's counter
  auto on_result = [&](const GenerationResult& g) {
    if (append_status.ok()) append_status = writer->Append(ToResultRecord(g, rank, job.logprobs >= 0));
    ++finished;
    generated += static_cast<int64_t>(g.tokens.size());
    if (g.finish_reason == "error") {
      ++errors;
      std::fprintf(stderr, "%s%s\n", who.c_str(), g.error.c_str());
    }
    // With the queue, the job's results so far: a store counter, added to
    // at most twice a second (a round trip each; this is the engine's
    // thread). The progress line is all it serves, so an unreachable store
    // only skips it.
    Result<int64_t> job_finished = finished;
    if (queue) {
      ++unreported;
      if (Since(last_report) < 0.5) return;
      last_report = Clock::now();
      job_finished = groups.AddToCounter("infer/finished", unreported);
      unreported = 0;
    }
    if (rank != 0 || !job_finished.ok()) return;
    ProgressInfo info;
    info.label = "infer";
    info.unit = "requests";
    info.show_loss = false;
    info.step = *job_finished;
    info.total = queue ? job_pending : total;
    info.elapsed_s = Since(run_start);
    info.tokens_per_s = generated / std::max(info.elapsed_s, 1e-9);
    info.note = queue ? "the job's; tok/s of rank 0" : "rank 0's share";
    if (progress.active()) {
      progress.Update(info);
    } else if (Since(last_print) >= 5 || info.step == info.total) {
      last_print = Clock::now();
      std::printf("%s\n", FormatProgress(info).c_str());
      std::fflush(stdout);
    }
  };
  Status run = engine.Run(std::move(requests), on_result, more);
  const double run_s = Since(run_start);
  if (!run.ok()) return run.WithContext(who + "generation");
  PW_RETURN_IF_ERROR(append_status.WithContext(who));
  Status finished_pool = pool->Finish();
  if (!finished_pool.ok()) return finished_pool.WithContext(who + "finishing the weight pool");

  json summary;
  if (calibrated) {
    const int owned = static_cast<int>(OwnedBlocks(rank, n, config.n_layers).size());
    summary["calibration"] = {{"gemm_flops", calibration.gemm_flops}, {"bandwidth", calibration.bandwidth},
                              {"latency_s", calibration.latency_s}};
    // Against a WaS run with the cache slots asked for (--cache-slots).
    summary["predicted_crossover_rows"] =
        CrossoverRows(calibration, config, owned, n, settings.pool.cache_slots);
  }
  const EngineStats& st = engine.stats();
  const PoolStats ps = pool->stats();
  const int64_t moved = ps.bytes_received;  // every byte moved is received once (as the job summary)
  summary["rank"] = rank;
  summary["world"] = n;
  summary["mode"] = PoolModeName(pool->mode());
  summary["requests"] = total;
  summary["finished"] = finished;
  summary["errors"] = errors + rejected;
  summary["split"] = queue ? "queue" : "round-robin";
  summary["skipped_done"] = skipped_done;
  summary["generated_tokens"] = st.generated_tokens;
  summary["prompt_tokens"] = st.prompt_tokens;
  summary["steps"] = st.steps;
  summary["peak_sequences"] = st.peak_sequences;
  summary["preemptions"] = st.preemptions;
  summary["recomputed_tokens"] = st.recomputed_tokens;
  summary["engine_seconds"] = st.seconds;
  summary["model_flops"] = st.flops;
  summary["decode"] = {{"passes", st.decode_passes}, {"rows", st.decode_rows},
                       {"flops", st.decode_flops}, {"seconds", st.decode_seconds},
                       {"attention_seconds", st.decode_attention_seconds}};
  summary["run_seconds"] = run_s;
  summary["load_seconds"] = load_s;
  summary["rank_seconds"] = Since(job_start);
  summary["tokens_per_s"] = st.generated_tokens / std::max(run_s, 1e-9);
  summary["kv_capacity_tokens"] = cache.capacity_tokens();
  summary["kv_bytes"] = cache.bytes();
  summary["held_weight_bytes"] = held_weights;
  summary["weights_layout"] = prepacked ? "prepacked" : "plain";
  summary["accounting_exact"] = accounting_exact;
  summary["bytes_moved"] = moved;
  summary["bytes_moved_per_token"] = st.generated_tokens > 0 ? static_cast<double>(moved) / st.generated_tokens : 0.0;
  summary["plan"] = PlanJson(plan);
  const ReusingAllocatorStats alloc = allocator.stats();
  summary["allocator"] = {{"scratch_budget_bytes", alloc.scratch_budget_bytes},
                          {"scratch_peak_bytes", alloc.scratch_peak_bytes},
                          {"mapped_peak_bytes", alloc.mapped_peak_bytes},
                          {"reuses", alloc.reuses},
                          {"maps", alloc.maps}};
  if (const Result<ResidentMemory> at_end = ReadResidentMemory(); at_start.ok() && at_end.ok() && after_load.ok()) {
    // Shared mode's blocks are shared pages, which the anonymous measure
    // leaves out: this rank owns its region, so it is charged for it.
    const int64_t measured = at_end->anon_peak_bytes() - at_start->anon_bytes() + pool->SharedMemoryBytes();
    const int64_t planned = plan.budget - plan.slack;
    summary["memory"] = {{"start_resident_bytes", at_start->current_bytes},
                         {"load_peak_bytes", after_load->peak_bytes - at_start->current_bytes},
                         {"peak_resident_bytes", at_end->peak_bytes},
                         {"resident_growth_bytes", at_end->peak_bytes - at_start->current_bytes},
                         {"file_backed_growth_bytes", at_end->file_bytes - at_start->file_bytes},
                         {"measured_bytes", measured},
                         {"planned_bytes", planned},
                         {"measured_over_planned", static_cast<double>(measured) / std::max<int64_t>(1, planned)}};
    if (measured > plan.budget) {
      std::fprintf(stderr, "%swarning: measured memory %s (the process's own resident peak while generating, above the start) exceeds the budget %s; "
                   "what the plan does not count (communication and request buffers, LibTorch's scratch) needs "
                   "%s more: raise --memory-budget or lower --max-batch-tokens\n", who.c_str(),
                   FormatBytes(static_cast<double>(measured)).c_str(),
                   FormatBytes(static_cast<double>(plan.budget)).c_str(),
                   FormatBytes(static_cast<double>(measured - plan.budget)).c_str());
    }
  }
  summary["pool"] = PoolJson(ps);
  std::printf("rank %d: %lld requests, %lld tokens in %.2f s (%s tok/s), kv %lld tokens, peak %d sequences, "
              "%s moved/token; %s\n",
              rank, static_cast<long long>(total), static_cast<long long>(st.generated_tokens), run_s,
              FormatRate(st.generated_tokens / std::max(run_s, 1e-9)).c_str(),
              static_cast<long long>(cache.capacity_tokens()), st.peak_sequences,
              FormatBytes(summary["bytes_moved_per_token"].get<double>()).c_str(), DescribePlan(plan).c_str());
  std::fflush(stdout);
  return ReportJob(job, settings, summary, groups);
}

}  // namespace pw
