#include "infer/infer_session.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "comm/gather.h"
#include "core/units.h"
#include "infer/calibration.h"
#include "infer/infer_worker.h"
#include "infer/job_summary.h"
#include "infer/layer_math.h"
#include "infer/shared_pool.h"
#include "model/fused_kernels.h"
#include "os/memory.h"
#include "os/atomic_file.h"

namespace pw {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

InferSession::InferSession(const InferJob& job, const InferSettings& settings, const WorldInfo& world)
    : job_(job), settings_(settings), world_(world), start_(Clock::now()) {}

InferSession::~InferSession() = default;

Result<std::unique_ptr<InferSession>> InferSession::Create(const InferJob& job, const InferSettings& settings,
                                                           const WorldInfo& world, bool report_bad_lines) {
  std::unique_ptr<InferSession> s(new InferSession(job, settings, world));
  at::set_num_threads(1);
  // Pages of shared libraries' code first run while generating (~9 MiB of
  // LibTorch and OpenBLAS) are resident too, but shared by every rank on
  // the host and given back under pressure: reported, not charged.
  (void)ResetResidentPeak();  // an old kernel: the peak since exec, a little high
  s->at_start_ = ReadResidentMemory();
  // Large tensors from here on are mapped by the worker's own allocator,
  // which keeps a pass's freed buffers for the next pass instead of leaving
  // them to fragment glibc's heap. Nothing is kept while loading;
  // generation's scratch budget is set by BuildPool.
  s->allocator_ = &InstallReusingCpuAllocator(0);
  PW_RETURN_IF_ERROR(s->PlanAndReadPrompts(report_bad_lines));
  PW_RETURN_IF_ERROR(s->JoinGroups());
  PW_RETURN_IF_ERROR(s->ProbeSharedMemory());
  return s;
}

Status InferSession::PlanAndReadPrompts(bool report_bad_lines) {
  const int rank = world_.rank, n = world_.world_size;
  PW_ASSIGN_OR_RETURN(config_, SourceConfig(settings_.source));
  // Prompts (the launcher reported the bad lines already), minus those done.
  PW_ASSIGN_OR_RETURN(prompts_, ReadPromptFile(job_.prompts));
  Result<std::unique_ptr<Tokenizer>> tokenizer =
      LoadModelTokenizer(job_.tokenizer, TokenizerDirOf(job_.model_dir, job_.checkpoint), config_,
                         EveryPromptIsIds(prompts_.prompts));
  if (!tokenizer.ok()) return tokenizer.status().WithContext(Who() + "loading the tokenizer");
  tokenizer_ = std::move(*tokenizer);
  constraints_ = std::make_unique<ConstraintCache>(*tokenizer_, config_.vocab_size);
  PW_RETURN_IF_ERROR(ApplyJobSchema(job_, prompts_.prompts));
  Result<MemoryPlan> planned = PlanForRank(job_, settings_, config_, prompts_.prompts, rank, n);
  if (!planned.ok()) return planned.status().WithContext(Who() + "memory plan");
  plan_ = *planned;
  // Every rank sorts alike, so the queue's chunks are the same everywhere.
  if (job_.prefix_cache == "on") GroupByPrefix(prompts_.prompts);
  if (rank == 0 && report_bad_lines) {
    for (const std::string& problem : prompts_.problems) std::fprintf(stderr, "%s (skipped)\n", problem.c_str());
  }
  Result<ResultWriter> writer = ResultWriter::Open(job_.out);  // cuts a torn tail first
  if (!writer.ok()) return writer.status().WithContext("rank " + std::to_string(rank));
  writer_.emplace(std::move(*writer));
  PW_ASSIGN_OR_RETURN(done_, ReadDoneIds(job_.out));
  // Round-robin: this rank's share, fixed now. Queue: nothing yet; the
  // engine claims chunks of the whole file whenever it has room.
  queue_ = settings_.shared_queue && n > 1;
  PW_ASSIGN_OR_RETURN(requests_,
                      RequestsOf(queue_ ? std::vector<PromptRecord>{} : ShareOfRank(prompts_.prompts, rank, n)));
  job_pending_ = PendingSamples(prompts_.prompts, done_, job_);
  return Status::Ok();
}

Result<std::vector<GenerationRequest>> InferSession::RequestsOf(const std::vector<PromptRecord>& part) {
  std::vector<ResultRecord> bad;
  std::vector<GenerationRequest> got = BuildRequests(part, done_, job_, config_, *tokenizer_, &bad, &skipped_done_, constraints_.get());
  for (ResultRecord& r : bad) {
    r.rank = world_.rank;
    PW_RETURN_IF_ERROR(writer_->Append(r));
  }
  rejected_ += static_cast<int64_t>(bad.size());
  total_ += static_cast<int64_t>(got.size());
  return got;
}

Status InferSession::JoinGroups() {
  // pp = 1; a serving group for the pool's owner thread.
  ProcessGroupsOptions options;
  options.pp = 1;
  options.serving_group = world_.world_size > 1;
  options.timeout = std::chrono::seconds(job_.collective_timeout);
  options.exit_after_failure = true;  // a failed group ends the rank
  Result<ProcessGroups> groups = ProcessGroups::Create(world_, options);
  if (!groups.ok()) return groups.status().WithContext(Who() + "joining the job");
  groups_.emplace(std::move(*groups));
  return Status::Ok();
}

// Auto on one host: every rank maps the others' blocks (mode shared),
// which moves nothing and reserves nothing, so it beats both WaS and CaS;
// the probe is the real thing (a region each rank maps), not a hostname.
Status InferSession::ProbeSharedMemory() {
  const int n = world_.world_size;
  if (settings_.pool.mode != PoolMode::kAuto || n == 1 || job_.network_pool) return Status::Ok();
  Result<bool> one_host = RanksShareMemory(groups_->world());
  if (!one_host.ok()) return one_host.status().WithContext(Who() + "probing for shared memory");
  if (!*one_host) return Status::Ok();
  settings_.pool.mode = PoolMode::kShared;
  Result<MemoryPlan> planned = PlanForRank(job_, settings_, config_, prompts_.prompts, world_.rank, n);  // less than auto's: fits
  if (!planned.ok()) return planned.status().WithContext(Who() + "memory plan");
  plan_ = *planned;
  if (world_.rank == 0) {
    std::printf("auto: every rank maps the others' memory (one host), so the weights are shared in "
                "place (mode shared); --network-pool pools them over the network instead\n");
    std::fflush(stdout);
  }
  return Status::Ok();
}

// Blocks are packed for the kernels once, here, in place. Panels
// (model/panel_linear.h) are the same on every machine, so every rank packs
// them and sends them as they are; the head is packed with them. oneDNN's
// layout (infer/prepacked_linear.h) is used where the blocks are computed
// on the host that holds them, and in WaS and auto (which send blocks) when
// every rank has the same layout; elsewhere the fallback layout.
Status InferSession::Load() {
  const int rank = world_.rank, n = world_.world_size;
  const PoolMode mode = settings_.pool.mode;
  const auto load_start = Clock::now();
  const bool computed_here =
      n == 1 || mode == PoolMode::kReplicate || mode == PoolMode::kCas || mode == PoolMode::kShared;
  layout_ = settings_.weights_layout;
  format_ = settings_.weight_format;
  if (layout_ == LinearLayout::kOneDnn) {
    const std::string signature = BlockPrepackedSignature(config_);
    bool one_layout = !signature.empty();
    if (n > 1) {
      Result<std::vector<std::string>> layouts = GatherStrings(groups_->world(), signature);
      if (!layouts.ok()) return layouts.status().WithContext(Who() + "comparing weight layouts");
      for (const std::string& other : *layouts) one_layout = one_layout && other == signature;
    }
    if (signature.empty() || !(computed_here || one_layout)) layout_ = settings_.fallback_layout;
  }
  // Each part is packed as soon as it is read: a bf16 or int8 model is
  // never held whole in fp32.
  LoadFinishers finish;
  finish.block = [&](BlockWeights& block) { PrepackBlock(block, config_, layout_, format_); };
  finish.shared = [&](ModelWeights& w) { PackWeights(w, layout_, format_); };
  Result<ModelWeights> weights = LoadModelWeights(settings_.source, OwnedBlocks(rank, n, config_.n_layers),
                                                  /*keep_all=*/mode == PoolMode::kReplicate, finish);
  if (!weights.ok()) return weights.status().WithContext(Who() + "loading weights");
  weights_.emplace(std::move(*weights));
  load_s_ = Since(load_start);
  return Status::Ok();
}

// The pool's options under this rank's plan: its cache, what giving up
// the cache or the serving reserve frees (auto).
PoolOptions InferSession::PoolOptionsForPlan(LinearLayout layout) const {
  PoolOptions options = settings_.pool;
  options.blocks_layout = layout;
  options.blocks_format = format_;
  options.start_without_cache = plan_.auto_without_cache;
  if (plan_.kv_blocks > 0) {
    options.kv_gain_without_cache =
        static_cast<double>(plan_.kv_blocks + plan_.kv_swap_blocks) / static_cast<double>(plan_.kv_blocks);
  }
  if (options.mode == PoolMode::kAuto && plan_.cache_slots >= 2 && plan_.cache_slots < options.cache_slots) {
    // Auto: the cache the budget holds (the plan line says so).
    options.cache_slots = plan_.cache_slots;
    options.prefetch_depth = std::min(options.prefetch_depth, plan_.cache_slots - 1);
  }
  options.kv_blocks_freed_by_cache = plan_.kv_swap_blocks;
  options.kv_blocks_freed_by_serving = plan_.kv_was_swap_blocks;
  if (plan_.was_swap_slots > 0) {
    options.slots_added_by_serving = plan_.was_swap_slots;
    options.prefetch_depth_after_serving =
        std::min(settings_.pool.prefetch_depth, plan_.cache_slots + plan_.was_swap_slots - 1);
  }
  return options;
}

Status InferSession::BuildPool() {
  const int n = world_.world_size;
  PoolOptions options = PoolOptionsForPlan(layout_);
  // Auto calibrates inside CreateWeightPool; calibrating here instead lets
  // the report give the cost model's figures and crossover (same code).
  calibrated_ = n > 1 && (job_.predict_crossover || options.mode == PoolMode::kAuto);
  if (calibrated_) {
    Result<PoolCalibration> calibration = Calibrate(config_, &*groups_, layout_, format_);
    if (!calibration.ok()) return calibration.status().WithContext(Who() + "calibrating the cost model");
    calibration_ = *calibration;
    options.calibration = &calibration_;
  }
  Result<std::unique_ptr<WeightPool>> pool = CreateWeightPool(options, *weights_, &*groups_);
  if (!pool.ok()) return pool.status().WithContext(Who() + "weight pool");
  pool_ = std::move(*pool);
  if (pool_->mode() == PoolMode::kShared) {
    for (BlockWeights& block : weights_->blocks) block = BlockWeights{};  // the pool holds the copy
  }
  // Held back: the blocks of whichever commitment frees more (one of them
  // happens at most; untouched, they cost no resident memory).
  cache_ = std::make_unique<PagedKvCache>(config_, plan_.kv_blocks, plan_.block_size,
                                          std::max(plan_.kv_swap_blocks, plan_.kv_was_swap_blocks),
                                          plan_.kv_dtype);
  // Loading peaks apart (files read whole, a random init built whole): the
  // budget is about generation, so its peak is measured from here.
  after_load_ = ReadResidentMemory();
  // What loading freed goes back to the system; glibc would keep it in the
  // heap, resident, where the budget promised KV cache.
  ReturnFreedHeapToSystem();
  // A pass's intermediates are what the plan's workspace (and the serving
  // thread's) charges: the allocator's scratch, live and kept, stays there.
  allocator_->SetScratchBudget(plan_.workspace + plan_.serving);
  (void)ResetResidentPeak();
  CheckAccounting();
  return Status::Ok();
}

// Exact accounting: what is actually held equals what the plan charged.
void InferSession::CheckAccounting() {
  held_weights_ = weights_->SharedBytes() + pool_->HeldBytes();
  accounting_exact_ = held_weights_ == plan_.weights + plan_.weight_cache && cache_->bytes() == plan_.kv &&
                      plan_.held() + plan_.kv + plan_.slack == plan_.budget;
  if (!accounting_exact_) {
    std::fprintf(stderr, "%swarning: memory accounting differs from the plan: held weights %lld B "
                 "(plan %lld B), kv %lld B (plan %lld B)\n", Who().c_str(),
                 static_cast<long long>(held_weights_),
                 static_cast<long long>(plan_.weights + plan_.weight_cache),
                 static_cast<long long>(cache_->bytes()), static_cast<long long>(plan_.kv));
  }
}

// The shared queue: every rank computes the same chunks of the prompt
// file. Chunk r is rank r's own first claim, so every rank serves prompts
// whenever the file has a chunk per rank, however late it starts (on
// several hosts a host whose ranks started last would otherwise find the
// file taken); a counter in the job's store hands out the rest in order.
InferenceEngine::RequestSource InferSession::QueueSource() {
  const int n = world_.world_size;
  const int64_t chunk = QueueChunk(job_.queue_chunk, static_cast<int64_t>(prompts_.prompts.size()), n);
  // A rank holds at most its even share of the job unfinished, so a job
  // smaller than the ranks' batches still spreads evenly; larger jobs are
  // claimed as room appears, and the last chunks go to whoever is free.
  const int64_t most_in_flight = std::max(chunk, (job_pending_ + n - 1) / n);
  return [this, chunk, most_in_flight] { return ClaimChunks(chunk, most_in_flight); };
}

// The next chunk with requests not done yet, none when this rank holds
// enough unfinished, or `last` past the end of the file.
Result<InferenceEngine::RequestBatch> InferSession::ClaimChunks(int64_t chunk, int64_t most_in_flight) {
  const int64_t size = static_cast<int64_t>(prompts_.prompts.size());
  InferenceEngine::RequestBatch batch;
  while (batch.requests.empty()) {
    if (total_ - finished_ >= most_in_flight) return batch;  // not now
    int64_t index = world_.rank;
    if (own_chunk_claimed_) {
      PW_ASSIGN_OR_RETURN(const int64_t next, groups_->AddToCounter("infer/next_chunk", 1));
      index = world_.world_size + next - 1;
    }
    own_chunk_claimed_ = true;
    const int64_t begin = index * chunk;
    if (begin >= size) {
      batch.last = true;
      return batch;
    }
    const auto first = prompts_.prompts.begin() + begin;
    PW_ASSIGN_OR_RETURN(batch.requests,  // empty when the chunk was done: claim the next
                        RequestsOf(std::vector<PromptRecord>(first, first + std::min(chunk, size - begin))));
  }
  return batch;
}

Status InferSession::Generate() {
  EngineOptions options = EngineOptionsFor(job_, settings_);
  // A serving reserve given up for KV blocks (auto committed to WaS) is no
  // longer scratch room: the allocator keeps only the workspace's worth.
  // (A weight cache given up was long-lived: the allocator unmaps it.)
  options.on_kv_grown = [this](int64_t /*kv_blocks*/) {
    if (pool_->stats().serving_released_after_pass >= 0) allocator_->SetScratchBudget(plan_.workspace);
  };
  engine_ = std::make_unique<InferenceEngine>(*weights_, *pool_, *cache_, options);
  InferenceEngine::RequestSource more;
  if (queue_) more = QueueSource();
  // Rank 0 shows the progress of its share: relayed to the launcher's
  // terminal, or a plain line every few seconds.
  progress_ = std::make_unique<ProgressPrinter>(
      stdout, world_.rank == 0 && job_.progress ? ProgressMode::kRelay : ProgressMode::kPlain);
  run_start_ = last_print_ = last_report_ = Clock::now();
  Status run = engine_->Run(std::move(requests_), [this](const GenerationResult& g) { OnResult(g); }, more);
  run_s_ = Since(run_start_);
  if (!run.ok()) return run.WithContext(Who() + "generation");
  return append_status_.WithContext(Who());
}

// Appends the result and counts it. With the queue, the job's results so
// far are a store counter, added to at most twice a second (a round trip
// each; this is the engine's thread). The progress line is all it serves,
// so an unreachable store only skips it.
void InferSession::OnResult(const GenerationResult& g) {
  if (append_status_.ok()) append_status_ = writer_->Append(ToResultRecord(g, world_.rank, job_.logprobs >= 0, *tokenizer_));
  ++finished_;
  generated_ += static_cast<int64_t>(g.tokens.size());
  if (g.finish_reason == FinishReason::kError) {
    ++errors_;
    std::fprintf(stderr, "%s%s\n", Who().c_str(), g.error.c_str());
  }
  Result<int64_t> job_finished = finished_;
  if (queue_) {
    ++unreported_;
    if (Since(last_report_) < 0.5) return;
    last_report_ = Clock::now();
    job_finished = groups_->AddToCounter("infer/finished", unreported_);
    unreported_ = 0;
  }
  if (world_.rank != 0 || !job_finished.ok()) return;
  ShowProgress(*job_finished);
}

void InferSession::ShowProgress(int64_t job_finished) {
  ProgressInfo info;
  info.label = "infer";
  info.unit = "requests";
  info.show_loss = false;
  info.step = job_finished;
  info.total = queue_ ? job_pending_ : total_;
  info.elapsed_s = Since(run_start_);
  info.tokens_per_s = generated_ / std::max(info.elapsed_s, 1e-9);
  info.note = queue_ ? "the job's; tok/s of rank 0" : "rank 0's share";
  if (progress_->active()) {
    progress_->Update(info);
  } else if (Since(last_print_) >= 5 || info.step == info.total) {
    last_print_ = Clock::now();
    std::printf("%s\n", FormatProgress(info).c_str());
    std::fflush(stdout);
  }
}

Status InferSession::Finish() {
  Status finished_pool = pool_->Finish();
  if (!finished_pool.ok()) return finished_pool.WithContext(Who() + "finishing the weight pool");
  const InferRankReport report = Report();
  // Against the budget given: a plan whose KV cache was capped at what the
  // prompts can use holds less than that, and the extras the plan does not
  // count then fit in what it left.
  if (report.memory && report.memory->measured_bytes > plan_.budget_cap) {
    const int64_t measured = report.memory->measured_bytes;
    std::fprintf(stderr,
                 "%swarning: measured memory %s (the process's own resident peak while generating, above the "
                 "start) exceeds the budget %s; what the plan does not count (communication and request "
                 "buffers, LibTorch's scratch) needs %s more: raise --memory-budget or lower --max-batch-tokens\n",
                 Who().c_str(),
                 FormatBytes(static_cast<double>(measured)).c_str(),
                 FormatBytes(static_cast<double>(plan_.budget_cap)).c_str(),
                 FormatBytes(static_cast<double>(measured - plan_.budget_cap)).c_str());
  }
  std::printf("rank %d: %lld requests, %lld tokens in %.2f s (%s tok/s), kv %lld tokens, peak %d sequences, "
              "%s moved/token; %s\n",
              world_.rank, static_cast<long long>(total_), static_cast<long long>(report.generated_tokens), run_s_,
              FormatRate(report.generated_tokens / std::max(run_s_, 1e-9)).c_str(),
              static_cast<long long>(report.kv_capacity_tokens), report.peak_sequences,
              FormatBytes(report.bytes_moved_per_token).c_str(), DescribePlan(plan_).c_str());
  std::fflush(stdout);
  return ReportJob(report);
}

InferRankReport InferSession::Report() const {
  InferRankReport r;
  const int n = world_.world_size;
  if (calibrated_) {
    const int owned = static_cast<int>(OwnedBlocks(world_.rank, n, config_.n_layers).size());
    r.calibration = calibration_;
    // Against a WaS run with the cache slots asked for (--cache-slots).
    r.predicted_crossover_rows = CrossoverRows(calibration_, config_, owned, n, settings_.pool.cache_slots, format_);
  }
  const EngineStats& st = engine_->stats();
  r.pool = pool_->stats();
  r.rank = world_.rank;
  r.world = n;
  r.mode = PoolModeName(pool_->mode());
  r.requests = total_;
  r.finished = finished_;
  r.errors = errors_ + rejected_;
  r.split = queue_ ? "queue" : "round-robin";
  r.skipped_done = skipped_done_;
  r.generated_tokens = st.generated_tokens;
  r.prompt_tokens = st.prompt_tokens;
  r.steps = st.steps;
  r.peak_sequences = st.peak_sequences;
  r.preemptions = st.preemptions;
  r.recomputed_tokens = st.recomputed_tokens;
  r.prefill_tokens = st.prefill_tokens;
  r.prefix_hit_tokens = st.prefix_hit_tokens;
  r.prefix_evictions = cache_->prefix_stats().evictions;
  r.engine_seconds = st.seconds;
  r.model_flops = st.flops;
  r.decode = {st.decode_passes, st.decode_rows, st.decode_flops, st.decode_seconds, st.decode_attention_seconds};
  r.run_seconds = run_s_;
  r.load_seconds = load_s_;
  r.rank_seconds = Since(start_);
  r.tokens_per_s = st.generated_tokens / std::max(run_s_, 1e-9);
  r.kv_capacity_tokens = cache_->capacity_tokens();
  r.kv_bytes = cache_->bytes();
  r.held_weight_bytes = held_weights_;
  r.weights_layout = LinearLayoutName(layout_);
  r.weights_format = WeightFormatName(format_);
  r.kernel_level = KernelIsaName(ActiveKernelIsa());
  r.accounting_exact = accounting_exact_;
  r.bytes_moved = r.pool.bytes_received;  // every byte moved is received once (as the job summary)
  r.bytes_moved_per_token =
      st.generated_tokens > 0 ? static_cast<double>(r.bytes_moved) / st.generated_tokens : 0.0;
  r.plan = plan_;
  r.allocator = allocator_->stats();
  r.memory = MeasuredMemory();
  return r;
}

// Shared mode's blocks are shared pages, which the anonymous measure leaves
// out: this rank owns its region, so it is charged for it. None when
// /proc could not be read.
std::optional<MeasuredMemoryReport> InferSession::MeasuredMemory() const {
  const Result<ResidentMemory> at_end = ReadResidentMemory();
  if (!at_start_.ok() || !at_end.ok() || !after_load_.ok()) return std::nullopt;
  MeasuredMemoryReport m;
  m.start_resident_bytes = at_start_->current_bytes;
  m.load_peak_bytes = after_load_->peak_bytes - at_start_->current_bytes;
  m.peak_resident_bytes = at_end->peak_bytes;
  m.resident_growth_bytes = at_end->peak_bytes - at_start_->current_bytes;
  m.file_backed_growth_bytes = at_end->file_bytes - at_start_->file_bytes;
  m.measured_bytes = at_end->anon_peak_bytes() - at_start_->anon_bytes() + pool_->SharedMemoryBytes();
  m.planned_bytes = plan_.budget - plan_.slack;
  m.measured_over_planned = static_cast<double>(m.measured_bytes) / std::max<int64_t>(1, m.planned_bytes);
  return m;
}

// World rank 0 gathers every rank's report (collective over the world),
// prints the job summary and writes --summary-json.
Status InferSession::ReportJob(const InferRankReport& mine) {
  PW_ASSIGN_OR_RETURN(std::vector<std::string> texts, GatherStrings(groups_->world(), ReportToJson(mine).dump()));
  if (world_.rank != 0) return Status::Ok();
  std::vector<InferRankReport> ranks;
  double wall = 0;
  for (size_t r = 0; r < texts.size(); ++r) {
    const std::string who = "rank " + std::to_string(r);
    const nlohmann::json j = nlohmann::json::parse(texts[r], nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return Status::Internal(who + " sent an unreadable summary: " + texts[r]);
    Result<InferRankReport> report = ReportFromJson<InferRankReport>(j, who + "'s summary");
    if (!report.ok()) return Status::Internal(report.status().message());
    wall = std::max(wall, report->rank_seconds);
    ranks.push_back(std::move(*report));
  }
  const InferJobSummary summary = SummarizeJob(std::move(ranks), settings_.budget_bytes, wall);
  std::printf("%s", FormatJobSummary(summary).c_str());
  std::printf("results: %s\n", job_.out.c_str());
  if (!job_.summary_json.empty()) {
    PW_RETURN_IF_ERROR(WriteFile(job_.summary_json, JobSummaryJson(summary).dump(2) + "\n", Durability::kAtomic));
    std::printf("wrote %s (job summary)\n", job_.summary_json.c_str());
  }
  std::fflush(stdout);
  return Status::Ok();
}

}  // namespace pw
