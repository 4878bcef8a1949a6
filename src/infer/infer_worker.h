// One rank of `pipewright infer` (an InferSession, infer/infer_session.h,
// run phase by phase): plans its memory, loads the blocks it holds, builds
// the weight pool and the paged KV cache, runs the engine over the prompts
// not already in the results file, appends each result as it completes,
// and reports (InferRankReport) to world rank 0, which prints the job
// summary and writes it to --summary-json. The pure helpers here are
// shared with the harvest layer's inference side task.
//
// The world comes from the environment (comm/world_info.h), so the same
// code runs under `pipewright infer`'s local launcher, torchrun, mpirun or
// Slurm. Prompts reach the ranks through a shared queue (--split queue, the
// default): a counter in the job's store hands out chunks of the prompt
// file in order, and each rank's engine claims the next chunk whenever it
// has room, so ranks that are faster, or got shorter prompts, take more and
// none idles while work is left. --split round-robin fixes the shares in
// advance (prompts_io.h ShareOfRank). Outputs do not depend on the split:
// sampling is seeded by the prompt's id. Each rank schedules its own
// batches.
//
// Thread-safety: one call per process. Failure: a Status naming the rank
// (bad budget, unreadable checkpoint, a peer that died); results already
// appended stay in the file, so a rerun resumes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comm/world_info.h"
#include "core/status.h"
#include "infer/engine.h"
#include "infer/infer_settings.h"
#include "infer/memory_plan.h"
#include "infer/model_weights.h"
#include "infer/prompts_io.h"
#include "infer/weight_pool.h"
#include "job/infer_job.h"
#include "constrain/token_constraint.h"
#include "text/tokenizer.h"

namespace pw {

// The memory plan of `rank` for this job and config (MemoryPlanInput built
// the way the rank builds it), its KV cache capped at what `prompts` (the
// job's prompt file, as read) can use (KvBlocksWanted) unless --kv-cache
// budget. Pure.
Result<MemoryPlan> PlanForRank(const InferJob& job, const InferSettings& settings, const ModelConfig& config,
                               const std::vector<PromptRecord>& prompts, int rank, int world);

// KV blocks the prompts can use at most on one rank: each sample of each
// prompt holds at most min(seq_len, its prompt tokens + max_tokens)
// positions, in whole blocks (prompt tokens: its ids, or for text its bytes
// + 2, as no tokenizer gives a byte fewer than one token beside BOS and a
// prefix); all of them, or the max_sequences largest that a rank runs at
// once, whichever is less. 0 (no cap) for an empty file. Pure.
int64_t KvBlocksWanted(const std::vector<PromptRecord>& prompts, const InferJob& job, const ModelConfig& config);

// Where a model's tokenizer files are, without --tokenizer: the Hugging
// Face `model_dir`, else the tokenizer a `checkpoint` carries (one trained
// from a Hugging Face directory: model/checkpoint_manifest.h
// kCheckpointSourceDir), else "". Blocks on a stat.
std::string TokenizerDirOf(const std::string& model_dir, const std::string& checkpoint);

// Whether `prompts` is not empty and every prompt gives "prompt_ids" (no
// text to encode). Pure.
bool EveryPromptIsIds(const std::vector<PromptRecord>& prompts);

// The tokenizer of a model: `tokenizer_path` (--tokenizer), else the
// Hugging Face `model_dir`'s, else (a byte-level model, also one exported
// without tokenizer files) bytes, else — a model without tokenizer files
// whose prompts are all token ids (`ids_only`) — the ids-only stand-in
// (text/ids_only_tokenizer.h: results carry ids, no text).
// InvalidArgument when its vocabulary is larger than the model's (a
// tokenizer from another model), or for a non-byte model without one whose
// prompts need it; the loader's errors otherwise.
Result<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& tokenizer_path, const std::string& model_dir,
                                                      const ModelConfig& config, bool ids_only = false);

// The requests of one rank: its share — each prompt's samples (SamplesOf)
// as requests of their own — minus `done`, with the job's defaults applied: text encoded by `tokenizer` (BOS first when it asks), stop at its
// stop ids (unless job.ignore_eos) or at job.end_byte. A prompt that cannot
// be encoded, or holds ids outside the model's vocabulary, fails alone:
// those come back in `rejected` as error results. `skipped_done` (may be
// null) is increased by the samples already in `done`. A prompt's
// "json_schema" / "regex" becomes its constraint, compiled once per
// pattern by `constraints` (a prompt with one fails alone without it, or
// when the tokenizer cannot serve it). Pure but for the cache.
std::vector<GenerationRequest> BuildRequests(const std::vector<PromptRecord>& share,
                                             const DoneSet& done, const InferJob& job,
                                             const ModelConfig& config, const Tokenizer& tokenizer,
                                             std::vector<ResultRecord>* rejected, int64_t* skipped_done = nullptr,
                                             ConstraintCache* constraints = nullptr);

// The job's --json-schema (compact JSON text, keys in order) given to
// every prompt without its own "json_schema" or "regex"; no-op without
// one. InvalidArgument naming the file when it cannot be read, parsed or
// compiled.
Status ApplyJobSchema(const InferJob& job, std::vector<PromptRecord>& prompts);

// The samples `prompt` asks for: its "n", else the job's --n. Pure.
int SamplesOf(const PromptRecord& prompt, const InferJob& job);

// Samples of `prompts` not in `done` (what is left of a resumed job). Pure.
int64_t PendingSamples(const std::vector<PromptRecord>& prompts, const DoneSet& done, const InferJob& job);

// The engine's options for `job`: sampling, scoring and batch limits. Pure.
EngineOptions EngineOptionsFor(const InferJob& job, const InferSettings& settings);

// The results-file line of a finished request, as rank `rank` writes it
// (text decoded by `tokenizer`; "logprobs" when `logprobs`). Pure.
ResultRecord ToResultRecord(const GenerationResult& g, int rank, bool logprobs, const Tokenizer& tokenizer);

// Prompts per claim from the shared queue: `requested` when > 0, else
// prompts / (8 x ranks) within [1, 16] — small enough that the ranks end
// together, large enough that claims (a store round trip each) are rare. Pure.
int64_t QueueChunk(int requested, int64_t prompts, int ranks);

// Runs this process's rank of the job: InferSession's phases in order.
// Blocks until the rank is done and every rank has finished with the pool. Rank 0
// reports the prompt file's bad lines when `report_bad_lines` (no launcher
// did), and relays its progress line when job.progress.
Status RunInferRank(const InferJob& job, const InferSettings& settings, const WorldInfo& world,
                    bool report_bad_lines);

}  // namespace pw
