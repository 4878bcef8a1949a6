// Continuous batching. Every running sequence keeps its tokens (prompt and
// generated) and how many of them the KV cache already holds; a step feeds
// each sequence its pending tokens (decode: the one token sampled last step;
// prefill: the prompt, in chunks when it does not fit the pass's rows) and
// samples a token for every sequence whose pending tokens are all in.
// Cache blocks are taken as sequences grow (vLLM's scheme): before each pass
// every running sequence gets the blocks for the rows it feeds, oldest
// first; when none are left the youngest running sequence is preempted —
// its blocks freed, its tokens so far (prompt and generated) queued to be
// prefilled again ahead of new requests — so the cache holds as many
// sequences as their actual lengths allow, not their worst case. Recomputing
// a preempted prefix gives the same keys and values to fp32 rounding (the
// same rows through the same math), and the sampling generator travels with
// the sequence, so outputs do not depend on preemption.
#include "infer/engine.h"

#include <ATen/ATen.h>
#include <torch/nn/module.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <optional>

#include "infer/decoder.h"
#include "model/gpt.h"

namespace pw {

namespace {

bool IsStopToken(const GenerationRequest& r, int64_t token) {
  return std::find(r.stop_tokens.begin(), r.stop_tokens.end(), token) != r.stop_tokens.end();
}

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Sequence {
  GenerationRequest request;
  int64_t cache_id = 0;
  std::vector<int64_t> tokens;  // prompt, then generated
  int64_t cached = 0;           // positions [0, cached) are in the KV cache
  int64_t prefill_end = 0;      // tokens at admission: positions below are prefill
  int32_t constraint_state = 0; // structured output: the automaton's state after the generated text
  GenerationResult result;
  std::optional<at::Generator> generator;
  Clock::time_point admitted;

  int64_t pending() const { return static_cast<int64_t>(tokens.size()) - cached; }
};

// KV positions a request writes: every token but the last generated one,
// and never more than the context.
int64_t PositionsNeeded(const GenerationRequest& r, int seq_len) {
  return std::min<int64_t>(static_cast<int64_t>(r.prompt.size()) + r.max_new_tokens - 1, seq_len);
}

GenerationResult StartResult(const GenerationRequest& r) {
  GenerationResult result;
  result.id = r.id;
  result.index = r.index;
  result.sample = r.sample;
  result.samples = r.samples;
  result.prompt_tokens = static_cast<int>(r.prompt.size());
  return result;
}

}  // namespace

struct InferenceEngine::Impl {
  const ModelWeights& weights;
  WeightPool& pool;
  PagedKvCache& cache;
  EngineOptions options;
  EngineStats stats;
  int64_t next_cache_id = 0;

  // Why `r` can never run here, or "" if it can.
  std::string Reject(const GenerationRequest& r) const {
    const ModelConfig& c = weights.config;
    const int64_t p = static_cast<int64_t>(r.prompt.size());
    if (p == 0) return "empty prompt";
    for (size_t i = 0; i < r.prompt.size(); ++i) {
      if (r.prompt[i] < 0 || r.prompt[i] >= c.vocab_size) {
        return "prompt token " + std::to_string(i) + " is " + std::to_string(r.prompt[i]) +
               ", outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")";
      }
    }
    if (p > c.seq_len) {
      return "prompt of " + std::to_string(p) + " tokens exceeds the model's context of " +
             std::to_string(c.seq_len) + " tokens; shorten it";
    }
    const int64_t blocks = cache.BlocksFor(PositionsNeeded(r, c.seq_len));
    if (blocks > cache.num_blocks()) {
      return "needs " + std::to_string(blocks) + " KV blocks but the cache has only " +
             std::to_string(cache.num_blocks()) +
             "; raise --memory-budget or lower max_new_tokens";
    }
    return "";
  }

  // Records the token sampled for `s`; true when `s` is finished.
  bool Append(Sequence& s, int64_t token) {
    s.tokens.push_back(token);
    s.result.tokens.push_back(token);
    ++stats.generated_tokens;
    const TokenConstraint* c = s.request.constraint.get();
    if (c != nullptr && !IsStopToken(s.request, token)) {
      s.constraint_state = c->Advance(s.constraint_state, static_cast<int32_t>(token));
    }
    if (IsStopToken(s.request, token)) {
      s.result.finish_reason = FinishReason::kEnd;
    } else if (c != nullptr && s.constraint_state == RegexDfa::kDead) {
      // Only a masked token gets here (NaN logits): never a wrong text.
      s.result.finish_reason = FinishReason::kError;
      s.result.error = "request '" + s.request.id + "': structured output: token " + std::to_string(token) +
                       " was chosen outside the constraint (NaN logits?)";
    } else if (c != nullptr && !c->CanContinue(s.constraint_state)) {
      s.result.finish_reason = FinishReason::kEnd;  // a whole match nothing may extend
    } else if (static_cast<int64_t>(s.result.tokens.size()) >= s.request.max_new_tokens) {
      s.result.finish_reason = FinishReason::kLength;
    } else if (static_cast<int64_t>(s.tokens.size()) > weights.config.seq_len) {
      // The next token would need position seq_len: past the context.
      s.result.finish_reason = FinishReason::kContext;
    }
    return s.result.finish_reason != FinishReason::kNone;
  }

  // Frees running[victim]'s blocks and queues it to be recomputed (its
  // tokens so far become its prompt) before every other waiting sequence.
  // Victims are taken youngest first, so pushing each to the front keeps
  // the queue in admission order.
  void Preempt(std::vector<Sequence>& running, size_t victim, std::deque<Sequence>& preempted) {
    Sequence& s = running[victim];
    cache.Release(s.cache_id);
    stats.recomputed_tokens += s.cached;
    s.cached = 0;
    ++stats.preemptions;
    preempted.push_front(std::move(s));
    running.erase(running.begin() + static_cast<std::ptrdiff_t>(victim));
  }

  // Rows each running sequence feeds this pass: decoding sequences one,
  // then prompts in admission order with what rows are left. Returns the
  // rows left over.
  int64_t PlanRows(const std::vector<Sequence>& running, std::vector<int64_t>& take) const {
    take.assign(running.size(), 0);
    int64_t rows = options.max_batch_tokens;
    for (int prefill = 0; prefill < 2; ++prefill) {
      for (size_t i = 0; i < running.size(); ++i) {
        const Sequence& s = running[i];
        if ((s.pending() > 1 || s.cached == 0) != (prefill == 1) || rows == 0) continue;
        take[i] = std::min(s.pending(), rows);
        rows -= take[i];
      }
    }
    return rows;
  }

  // Gives every running sequence the blocks for the rows it feeds this pass,
  // oldest first; when the cache runs out, preempts the youngest running
  // sequence (possibly the one asking) and plans again.
  void GrowRunning(std::vector<Sequence>& running, std::vector<int64_t>& take,
                   std::deque<Sequence>& preempted) {
    for (bool done = false; !done;) {
      PlanRows(running, take);
      done = true;
      for (size_t i = 0; i < running.size(); ++i) {
        if (take[i] == 0 || cache.Reserve(running[i].cache_id, running[i].cached + take[i])) {
          continue;
        }
        Preempt(running, running.size() - 1, preempted);
        done = false;
        break;
      }
    }
  }

  // Blocks kept free at admission while sequences run: about what one
  // decode step of the running sequences takes (each crosses into a new
  // block every block_size tokens), so admitting a prompt does not force a
  // preemption at the very next step.
  int64_t Headroom(size_t running) const {
    return (static_cast<int64_t>(running) + cache.block_size() - 1) / cache.block_size();
  }

  Sequence Start(GenerationRequest r) {
    Sequence s;
    s.request = std::move(r);
    s.cache_id = next_cache_id++;
    s.tokens = s.request.prompt;
    s.result = StartResult(s.request);
    if (s.request.constraint) s.constraint_state = s.request.constraint->start();
    if (options.sampling.temperature > 0) {
      s.generator = RequestGenerator(options.sampling.seed + static_cast<uint64_t>(s.request.sample),
                                     RequestKey(s.request.id));
    }
    s.admitted = Clock::now();
    stats.prompt_tokens += static_cast<int64_t>(s.tokens.size());
    return s;
  }

  // Requests that can never run, or need no tokens, finish at once;
  // the others join `waiting`.
  void Enqueue(std::vector<GenerationRequest>& requests, std::deque<GenerationRequest>& waiting,
               const std::function<void(const GenerationResult&)>& on_result) {
    for (GenerationRequest& r : requests) {
      std::string why = Reject(r);
      if (!why.empty()) {
        GenerationResult result = StartResult(r);
        result.finish_reason = FinishReason::kError;
        result.error = "request '" + r.id + "': " + why;
        on_result(result);
      } else if (r.max_new_tokens <= 0) {
        GenerationResult result = StartResult(r);
        result.finish_reason = FinishReason::kLength;
        on_result(result);
      } else {
        waiting.push_back(std::move(r));
      }
    }
  }

  // One Start..Step* run in progress: what waits, what runs, what to
  // recompute, and where results and more requests go.
  struct RunState {
    std::deque<GenerationRequest> waiting;
    std::vector<Sequence> running;
    std::deque<Sequence> preempted;  // to recompute, ahead of `waiting`
    std::vector<int64_t> take;
    bool exhausted = true;  // the source has no more (or there is none)
    std::function<void(const GenerationResult&)> on_result;
    RequestSource more;
  };
  std::optional<RunState> run;

  Status BeginRun(std::vector<GenerationRequest> requests,
                  std::function<void(const GenerationResult&)> on_result, RequestSource more) {
    if (run) return Status::FailedPrecondition("engine: Start while a run is in progress; Step it to the end first");
    if (options.max_batch_tokens < 1 || options.max_sequences < 1) {
      return Status::InvalidArgument("engine: max_batch_tokens (" +
                                     std::to_string(options.max_batch_tokens) +
                                     ") and max_sequences (" +
                                     std::to_string(options.max_sequences) +
                                     ") must be positive");
    }
    run.emplace();
    run->on_result = std::move(on_result);
    run->more = std::move(more);
    run->exhausted = !run->more;
    Enqueue(requests, run->waiting, run->on_result);
    return Status::Ok();
  }

  // Ends the run: blocks of sequences still running go back to the cache.
  // After a failed pass the prefix index goes too: that pass's blocks may
  // be half written.
  void EndRun(bool failed) {
    for (const Sequence& s : run->running) cache.Release(s.cache_id);
    if (failed) cache.ForgetPrefixes();
    run.reset();
  }

  // Asks the source for more until something waits, it has nothing now,
  // or it has no more.
  Status Refill() {
    RunState& r = *run;
    while (!r.exhausted && r.waiting.empty()) {
      Result<RequestBatch> got = r.more();
      if (!got.ok()) return got.status().WithContext("engine: asking for more requests");
      r.exhausted = got->last;
      if (got->requests.empty()) break;
      Enqueue(got->requests, r.waiting, r.on_result);
    }
    return Status::Ok();
  }

  // Indexes the full blocks this pass fills for every running sequence, so
  // that sequences admitted after may map them (the decoder writes every
  // chunk's keys and values of a layer before any attention reads them).
  void CommitPrefixes() {
    if (!options.prefix_caching) return;
    const RunState& r = *run;
    for (size_t i = 0; i < r.running.size(); ++i) {
      const Sequence& s = r.running[i];
      if (r.take[i] > 0) cache.CommitPrefix(s.cache_id, s.tokens, s.cached + r.take[i]);
    }
  }

  bool Finished() const {
    return run->waiting.empty() && run->preempted.empty() && run->running.empty() && run->exhausted;
  }

  // One pass; true once every request is done (the run ended). An error
  // ends the run too.
  Result<bool> Step() {
    if (!run) return Status::FailedPrecondition("engine: Step without a run; call Start first");
    const Clock::time_point step_start = Clock::now();
    Result<bool> outcome = Pass();
    stats.seconds += SecondsSince(step_start);
    if (!outcome.ok() || *outcome) EndRun(!outcome.ok());
    return outcome;
  }

  // One pass: admit → forward → sample → retire. True once every request
  // is done.
  Result<bool> Pass() {
    if (Finished()) return true;
    RunState& r = *run;
    GrowRunning(r.running, r.take, r.preempted);
    PW_RETURN_IF_ERROR(Admit());
    if (r.running.empty()) return NothingRuns();
    stats.peak_sequences = std::max(stats.peak_sequences, static_cast<int>(r.running.size()));
    const PassRows rows = GatherRows();
    PassMeasure measure;
    PW_ASSIGN_OR_RETURN(const at::Tensor logits, Forward(rows.chunks, measure));
    const std::vector<bool> finished = Sample(rows, logits);
    if (measure.decode_only) CountDecodePass(measure, static_cast<int64_t>(rows.chunks.size()));
    Retire(finished);
    return Finished();
  }

  // Admission, in order (preempted sequences first, then requests; no
  // overtaking: a long request waits for blocks rather than starving
  // behind short ones), while rows are left and the cache holds the first
  // chunk's blocks plus the headroom. Asks the source for more when
  // nothing waits.
  Status Admit() {
    RunState& r = *run;
    std::vector<Sequence>& running = r.running;
    // Every running sequence contributes at least one row to each pass, so
    // there are never more of them than a pass has rows.
    const int64_t max_running = std::min<int64_t>(options.max_sequences, options.max_batch_tokens);
    int64_t rows_left = PlanRows(running, r.take);
    CommitPrefixes();
    while (static_cast<int64_t>(running.size()) < max_running && rows_left > 0) {
      if (r.preempted.empty() && r.waiting.empty()) {
        PW_RETURN_IF_ERROR(Refill());  // room left: the source's next requests
        if (r.waiting.empty()) break;
      }
      const bool again = !r.preempted.empty();
      const int64_t id = again ? r.preempted.front().cache_id : next_cache_id;
      const std::vector<int64_t>& tokens = again ? r.preempted.front().tokens : r.waiting.front().prompt;
      const int64_t size = static_cast<int64_t>(tokens.size());
      // The cached prefix, never the last token: its logits pick the next.
      const int64_t mapped = options.prefix_caching ? cache.MapCachedPrefix(id, tokens, size - 1) : 0;
      const int64_t n = std::min(size - mapped, rows_left);
      const int64_t new_blocks = cache.BlocksFor(mapped + n) - cache.BlocksFor(mapped);
      const int64_t headroom = running.empty() ? 0 : Headroom(running.size() + 1);
      if (cache.free_blocks() - new_blocks < headroom || !cache.Reserve(id, mapped + n)) {
        cache.Release(id);  // the mapped prefix goes back to the cache
        break;
      }
      if (again) {
        running.push_back(std::move(r.preempted.front()));
        r.preempted.pop_front();
      } else {
        running.push_back(Start(std::move(r.waiting.front())));
        r.waiting.pop_front();
      }
      Sequence& s = running.back();
      s.cached = mapped;
      s.prefill_end = size;
      stats.prefix_hit_tokens += mapped;
      if (options.prefix_caching) cache.CommitPrefix(id, s.tokens, mapped + n);
      r.take.push_back(n);
      rows_left -= n;
    }
    return Status::Ok();
  }

  // Nothing runs after admission: true when nothing waits either and the
  // source is done; otherwise why the first in line cannot run.
  Result<bool> NothingRuns() const {
    const RunState& r = *run;
    if (r.waiting.empty() && r.preempted.empty()) {
      if (r.exhausted) return true;  // the source has no more
      return Status::Internal("engine: the request source handed out nothing while the engine was idle "
                              "and did not say it was done");
    }
    // Reject() checked that every request fits the whole cache, so only
    // blocks held outside this engine can get here.
    const std::string id = r.preempted.empty() ? r.waiting.front().id : r.preempted.front().request.id;
    return Status::FailedPrecondition(
        "engine: request '" + id + "' cannot get its KV blocks in an "
        "otherwise empty cache (" + std::to_string(cache.free_blocks()) + " of " +
        std::to_string(cache.num_blocks()) + " blocks free; is the cache shared?)");
  }

  // A pass's rows: a chunk per feeding sequence, and the running index of
  // each chunk's sequence.
  struct PassRows {
    std::vector<SequenceChunk> chunks;
    std::vector<size_t> owners;
  };

  // Decoding sequences first (one row each), then prompts in admission
  // order, as PlanRows counted them.
  PassRows GatherRows() const {
    const RunState& r = *run;
    PassRows rows;
    for (int prefill = 0; prefill < 2; ++prefill) {
      for (size_t i = 0; i < r.running.size(); ++i) {
        const Sequence& s = r.running[i];
        if ((s.pending() > 1 || s.cached == 0) != (prefill == 1) || r.take[i] == 0) continue;
        rows.chunks.push_back({s.cache_id,
                               std::vector<int64_t>(s.tokens.begin() + s.cached,
                                                    s.tokens.begin() + s.cached + r.take[i]),
                               s.cached});
        rows.owners.push_back(i);
      }
    }
    return rows;
  }

  // What Forward measured of its pass, for the decode-only counters.
  struct PassMeasure {
    Clock::time_point start;
    double flops = 0;
    bool decode_only = false;  // one row per sequence, no prompt rows
    double attention_s = 0;
  };

  // Runs the model over `chunks`: each chunk's last row's logits. Counts
  // the pass even when it fails, and hands KV blocks that auto's commit
  // freed to the cache.
  Result<at::Tensor> Forward(const std::vector<SequenceChunk>& chunks, PassMeasure& measure) {
    measure.start = Clock::now();
    measure.flops = PassFlops(weights.config, chunks);
    measure.decode_only = std::all_of(chunks.begin(), chunks.end(), [](const SequenceChunk& c) {
      return c.tokens.size() == 1 && c.start > 0;
    });
    Result<at::Tensor> logits = ForwardChunks(weights, pool, cache, chunks, &measure.attention_s);
    ++stats.steps;
    stats.flops += measure.flops;
    // Auto committed and gave its weight cache or serving reserve up: those
    // bytes become KV blocks.
    if (const int64_t freed = pool.TakeReleasedKvBlocks(); freed > 0) {
      cache.ReleaseHeldBack(freed);
      if (options.on_kv_grown) options.on_kv_grown(freed);
    }
    if (!logits.ok()) return logits.status().WithContext("engine step " + std::to_string(stats.steps));
    return logits;
  }

  // Marks the rows as cached and samples a token for every sequence whose
  // pending tokens are all in. Returns, by running index, which finished.
  std::vector<bool> Sample(const PassRows& rows, const at::Tensor& logits) {
    std::vector<Sequence>& running = run->running;
    std::vector<bool> finished(running.size(), false);
    for (size_t c = 0; c < rows.chunks.size(); ++c) {
      Sequence& s = running[rows.owners[c]];
      const int64_t n = static_cast<int64_t>(rows.chunks[c].tokens.size());
      stats.prefill_tokens += std::clamp<int64_t>(s.prefill_end - s.cached, 0, n);
      s.cached += n;
      if (s.pending() > 0) continue;  // a prompt still being prefilled
      at::Tensor row = logits[static_cast<int64_t>(c)];
      at::Tensor choose = row;
      if (s.request.constraint) {
        choose = ConstrainedLogits(s, row);
        if (!choose.defined()) {  // no token fits: the text ends here if it is a whole match
          if (s.request.constraint->Accepting(s.constraint_state)) {
            s.result.finish_reason = FinishReason::kEnd;
          } else {
            s.result.finish_reason = FinishReason::kError;
            s.result.error = "request '" + s.request.id + "': structured output: no token of the vocabulary " +
                             "continues the text after " + std::to_string(s.result.tokens.size()) + " generated tokens";
          }
          finished[rows.owners[c]] = true;
          continue;
        }
      }
      const int64_t token = s.generator ? SampleToken(choose, options.sampling, *s.generator) : GreedyToken(choose);
      if (options.logprobs >= 0) s.result.logprobs.push_back(ScoreToken(row, token, options.logprobs));
      finished[rows.owners[c]] = Append(s, token);
    }
    return finished;
  }

  // `row` (fp32 [V]) with every token the constraint forbids at -inf; stop
  // tokens only where the text is a whole match (a stop byte the pattern
  // also allows, --end-byte, would otherwise end a half-made text).
  // Undefined when no token is left.
  static at::Tensor ConstrainedLogits(const Sequence& s, const at::Tensor& row) {
    const TokenConstraint& c = *s.request.constraint;
    const TokenConstraint::Bits& allowed = c.AllowedBits(s.constraint_state);
    const bool accepting = c.Accepting(s.constraint_state);
    at::Tensor masked = row.contiguous().clone();
    float* l = masked.data_ptr<float>();
    const int64_t v = masked.numel(), in_vocab = std::min(v, c.vocab_size());
    bool any = false;
    for (int64_t t = 0; t < v; ++t) {
      const bool ok = IsStopToken(s.request, t) ? accepting : t < in_vocab && TokenConstraint::Has(allowed, t);
      if (!ok) l[t] = -std::numeric_limits<float>::infinity();
      any = any || ok;
    }
    return any ? masked : at::Tensor();
  }

  // A decode-only pass's rows, FLOPs and time from its start to its tokens
  // sampled.
  void CountDecodePass(const PassMeasure& measure, int64_t rows) {
    ++stats.decode_passes;
    stats.decode_rows += rows;
    stats.decode_flops += measure.flops;
    stats.decode_seconds += SecondsSince(measure.start);
    stats.decode_attention_seconds += measure.attention_s;
  }

  // Finished sequences give their blocks back and report their results, in
  // running order; the others keep running.
  void Retire(const std::vector<bool>& finished) {
    RunState& r = *run;
    std::vector<Sequence> still;
    for (size_t i = 0; i < r.running.size(); ++i) {
      if (!finished[i]) {
        still.push_back(std::move(r.running[i]));
        continue;
      }
      cache.Release(r.running[i].cache_id);
      r.running[i].result.seconds = SecondsSince(r.running[i].admitted);
      r.on_result(r.running[i].result);
    }
    r.running = std::move(still);
  }

  Status Run(std::vector<GenerationRequest> requests,
             const std::function<void(const GenerationResult&)>& on_result, const RequestSource& more) {
    PW_RETURN_IF_ERROR(BeginRun(std::move(requests), on_result, more));
    while (true) {
      PW_ASSIGN_OR_RETURN(const bool done, Step());
      if (done) return Status::Ok();
    }
  }
};

InferenceEngine::InferenceEngine(const ModelWeights& weights, WeightPool& pool,
                                 PagedKvCache& cache, const EngineOptions& options)
    : impl_(new Impl{weights, pool, cache, options, {}, 0}) {}

InferenceEngine::~InferenceEngine() = default;

Status InferenceEngine::Run(std::vector<GenerationRequest> requests,
                            const std::function<void(const GenerationResult&)>& on_result,
                            const RequestSource& more) {
  return impl_->Run(std::move(requests), on_result, more);
}

Status InferenceEngine::Start(std::vector<GenerationRequest> requests,
                              std::function<void(const GenerationResult&)> on_result,
                              RequestSource more) {
  return impl_->BeginRun(std::move(requests), std::move(on_result), std::move(more));
}

Result<bool> InferenceEngine::Step() { return impl_->Step(); }

const EngineStats& InferenceEngine::stats() const { return impl_->stats; }

}  // namespace pw
