// InferJob: every setting of a `pipewright infer` job, declared once
// (core/fields.h): the flags, `--set model.KEY=VALUE` (random init only) and
// the JSON job file handed to worker ranks all go through VisitFields.
//
// Thread-safety: a plain value; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/fields.h"
#include "job/model_source_fields.h"

namespace pw {

// Samples one prompt may ask for (--n, a prompt line's "n").
inline constexpr int kMaxSamplesPerPrompt = 64;

struct InferJob {
  std::string checkpoint;           // a `pipewright train` checkpoint directory
  std::string model_dir;            // a Hugging Face model directory (--model)
  std::string config;               // model TOML for a random init
  uint64_t seed = 1234;             // seed of the random init
  std::vector<std::string> set;     // model.KEY=VALUE (random init only)
  std::string tokenizer;            // tokenizer file or directory (default: --model's; bytes otherwise)
  std::string prompts;              // JSONL prompt file
  std::string out;                  // JSONL results file (appended, resumed)
  int ranks = 1;
  std::string split = "queue";      // queue | round-robin: how prompts reach ranks
  int queue_chunk = 0;              // prompts per claim from the queue (0: automatic)
  std::string mode = "auto";        // replicate | was | cas | shared | auto
  bool network_pool = false;        // auto: never shared, even on one host
  std::string memory_budget = "auto";  // bytes per rank, or auto (kAutoBudgetShare of what the host has)
  std::string kv_cache = "prompts";    // prompts | budget: how much of the budget the KV cache takes
  int block_size = 16;
  std::string kv_dtype = "fp32";    // fp32 | fp16 | int8: element type of the KV cache
  std::string weights_layout = "auto";  // auto | panels | prepacked | plain: linear weights for compute
  std::string weights = "auto";         // auto | fp32 | bf16 | int8: the number format they are held in
  int64_t max_batch_tokens = 256;
  int max_sequences = 256;
  int max_tokens = 64;
  int n = 1;                        // samples per prompt (a line's "n" wins)
  double temperature = 0;
  int top_k = 0;
  double top_p = 1.0;
  uint64_t sampling_seed = 0;
  int end_byte = -1;
  bool ignore_eos = false;          // do not stop at the tokenizer's EOS / stop ids
  std::string json_schema;          // JSON Schema file for prompts without their own constraint
  std::string prefix_cache = "on";  // on | off: map cached prompt prefixes' KV blocks
  std::string batch_invariant = "on";  // on | off: outputs independent of batching, bit for bit
  int logprobs = -1;                // >= 0: score each generated token, with this many alternatives
  int cache_slots = 3;
  int prefetch_depth = 2;
  std::string summary_json;
  bool predict_crossover = false;
  int timeout = 0;
  int collective_timeout = 60;      // seconds; bound on every wait for a peer
  // Plumbing from the launcher to its workers (hidden).
  bool progress = false;            // relay a progress line to the launcher

  template <class V> void VisitFields(V& v) { Visit(*this, v); }
  template <class V> void VisitFields(V& v) const { Visit(*this, v); }

 private:
  template <class Self, class V>
  static void Visit(Self& j, V& v) {
    VisitModelSourceFields(j, v);
    v(j.tokenizer, {"tokenizer",
                    "Tokenizer: tokenizer.json, tokenizer.model, GPT-2's vocab.json, or a directory holding one "
                    "(default: the --model directory's; the byte-level model: bytes)",
                    0, 0, kFieldPath});
    v(j.prompts, {"prompts", "JSONL prompt file", 0, 0, kFieldPath});
    v(j.out, {"out", "JSONL results file (appended; existing results are skipped)", 0, 0, kFieldPath});
    v(j.ranks, {"ranks", "Local data-parallel ranks", 1, 1024});
    v(j.split, {.name = "split",
                .help = "How prompts reach the ranks: queue (each rank claims the next chunk of the file when it "
                        "has room, so no rank idles while work is left) or round-robin (prompt i to rank i % "
                        "ranks, fixed in advance)",
                .choices = "queue round-robin"});
    v(j.queue_chunk, {"queue_chunk", "Prompts per claim from the queue (0: prompts / (8 x ranks), 1 to 16)", 0,
                      1 << 20});
    v(j.mode, {.name = "mode",
               .help = "Weight pool: replicate (every rank holds every block), was (fetch non-owned blocks), cas "
                       "(send activations to the owner), shared (ranks on one host map each other's blocks in "
                       "place: nothing moves), auto (shared when every rank is on one host, else WaS or CaS per "
                       "pass by a calibrated cost model)",
               .choices = "replicate was cas shared auto"});
    v(j.network_pool, {"network_pool", "Auto: pool the weights over the network (WaS/CaS) even when every "
                                       "rank is on one host (to measure those modes; shared is faster there)"});
    v(j.memory_budget, {"memory_budget", "Most bytes per rank for weights + weight cache + workspace + KV cache, "
                                         "e.g. 6GiB, or auto: 80 % of the memory this host has available, shared "
                                         "by the --ranks local ranks (the KV cache takes no more than the prompts "
                                         "can use either way)"});
    v(j.kv_cache, {.name = "kv_cache",
                   .help = "How much KV cache a rank holds: prompts (no more than the prompts can use: each "
                           "sample at its longest, for the --max-sequences largest at once; the rest of the budget "
                           "stays with the machine) or budget (all that the budget leaves, as a serving engine "
                           "preallocates: to measure capacity)",
                   .choices = "prompts budget"});
    v(j.block_size, {"block_size", "KV cache block size in tokens", 1, 4096});
    v(j.kv_dtype, {.name = "kv_dtype",
                   .help = "KV cache element type: fp32 (the model's own precision), fp16 (twice the tokens per "
                           "byte and about half the decode attention time; keys and values rounded to fp16) or "
                           "int8 (3.6x fp32's tokens per byte at width 256 and 8 heads; int8 with one scale per "
                           "position and head); fp16 and int8 outputs may differ from fp32's",
                   .choices = "fp32 fp16 int8"});
    v(j.weights_layout, {.name = "weights_layout",
                         .help = "Linear weights as the kernels read them, packed once at load: panels "
                                 "(pipewright's own kernels: one summation order per output, batch invariant, the "
                                 "same layout on every machine), prepacked (oneDNN's layout for this CPU, where it "
                                 "has one: AVX-512; WaS and auto send blocks prepacked only when every rank has the "
                                 "same layout, else plain), plain (OpenBLAS) or auto (panels with --batch-invariant "
                                 "on; with off, prepacked where the CPU has it, else panels). prepacked and plain "
                                 "need --batch-invariant off",
                         .choices = "auto panels prepacked plain"});
    v(j.weights, {.name = "weights",
                  .help = "Number format of the linear weights in memory: fp32, bf16 (half the bytes; values "
                          "rounded to bf16, or kept as a bf16 checkpoint has them), int8 (a quarter; symmetric "
                          "per output channel, fp32 scales), or auto (bf16 for a Hugging Face directory stored "
                          "in bf16 or fp16, else fp32). Products accumulate in fp32. bf16 and int8 are held in "
                          "panels (--weights-layout panels or auto); `pipewright eval --weights` reports what "
                          "a format costs in loss",
                  .choices = "auto fp32 bf16 int8"});
    v(j.max_batch_tokens, {"max_batch_tokens", "Most token rows in one forward pass", 1, double(int64_t{1} << 24)});
    v(j.max_sequences, {"max_sequences", "Most sequences running at once per rank", 1, 1 << 20});
    v(j.max_tokens, {"max_tokens", "Tokens to generate per prompt (a line's max_tokens wins)", 1, 1 << 24});
    v(j.n, {"n", "Samples per prompt (a line's \"n\" wins); sample k draws with sampling seed + k", 1, kMaxSamplesPerPrompt});
    v(j.temperature, {"temperature", "Sampling temperature (0: greedy)", 0});
    v(j.top_k, {"top_k", "Keep the k most likely tokens (0: all)", 0});
    v(j.top_p, {"top_p", "Nucleus: keep the most likely tokens up to this mass (1: no cut)"});
    v(j.sampling_seed, {"sampling_seed", "Seed of sampling (with the prompt's id)"});
    v(j.logprobs, {"logprobs", "Write each generated token's log-probability and the K most likely tokens "
                               "with theirs (the model's distribution, before temperature/top-k/top-p; "
                               "0: the token's own only; -1: none)", -1, 256});
    v(j.end_byte, {"end_byte", "Byte-level model: stop a sequence after this byte (10: newline; -1: none)", -1, 255});
    v(j.ignore_eos, {"ignore_eos", "Generate max_tokens even past the tokenizer's end-of-sequence tokens"});
    v(j.json_schema, {"json_schema", "Structured output: a JSON Schema file every prompt without its own "
                                     "\"json_schema\" or \"regex\" must follow (docs/inference.md)",
                      0, 0, kFieldPath});
    v(j.prefix_cache, {.name = "prefix_cache",
                       .help = "Prefix caching: on (a prompt whose first tokens fill KV blocks another prompt "
                               "computed maps them instead of prefilling them again; outputs unchanged) or off",
                       .choices = "on off"});
    v(j.batch_invariant, {.name = "batch_invariant",
                          .help = "Batch invariance: on (a prompt's tokens and log-probabilities are the same bits "
                                  "whatever else shares its passes, its rank, mode or preemption, on one machine "
                                  "at one kernel level: the weights are held in panels) or off (any "
                                  "--weights-layout; outputs may then differ in the last bits with batching)",
                          .choices = "on off"});
    v(j.cache_slots, {"cache_slots", "WaS/auto: weight cache slots (blocks)"});
    v(j.prefetch_depth, {"prefetch_depth", "WaS/auto: blocks fetched ahead"});
    v(j.summary_json, {"summary_json", "Write the job summary (per-rank figures too) to FILE", 0, 0, kFieldPath});
    v(j.predict_crossover, {"predict_crossover", "Calibrate the cost model at start-up (GEMM speed, link latency "
                                                 "and bandwidth; auto always does) and report its WaS/CaS "
                                                 "crossover batch size"});
    v(j.timeout, {"timeout", "Stop the job after this many seconds (0: none)", 0});
    v(j.collective_timeout, {"collective_timeout", "Seconds a rank waits for a peer (weight pool, the final "
                                                   "report) before the job fails naming the hung rank; must cover "
                                                   "the longest compute between matching operations (with "
                                                   "--mode replicate: the gap between the ranks' finishing times)",
                             1, 86400});
    v(j.progress, {"progress", "Relay a progress line (used by the launcher)", 0, 0, kFieldHidden});
  }
};

// The job as the JSON text of a job file ({"infer": {fields}}), paths made
// absolute; and back (`source` names the file in errors).
std::string InferJobToJson(const InferJob& job);
Result<InferJob> InferJobFromJson(const std::string& text, const std::string& source);

}  // namespace pw
