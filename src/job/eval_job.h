// EvalJob: every setting of a `pipewright eval` job — the per-token loss and
// perplexity of a checkpoint (or a random init) on a text — declared once
// (core/fields.h) for the flags and the JSON job file handed to worker ranks.
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

struct EvalJob {
  std::string checkpoint;           // a `pipewright train` checkpoint directory
  std::string model_dir;            // a Hugging Face model directory (--model)
  std::string config;               // model TOML for a random init
  uint64_t seed = 1234;             // seed of the random init
  std::vector<std::string> set;     // model.KEY=VALUE (random init only)
  std::string tokenizer;            // tokenizer file or directory (default: --model's; bytes otherwise)
  std::string data;                 // the text scored (encoded by the tokenizer)
  int ranks = 1;
  int batch = 8;                    // windows per forward pass
  int64_t max_windows = 0;          // 0: the whole text
  std::string weights = "fp32";     // fp32 | bf16 | int8: score the weights as inference holds them
  bool json = false;                // print the result as JSON, not text
  std::string summary_json;         // also write the result as JSON to FILE
  int timeout = 0;
  int collective_timeout = 60;
  // Plumbing from the launcher to its workers (hidden): world rank 0 writes
  // the figures there, and the launcher prints them (unprefixed).
  std::string result_file;

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
    v(j.data, {"data", "Text file to score: its tokens, in windows of the model's seq_len", 0, 0, kFieldPath});
    v(j.ranks, {"ranks", "Local data-parallel ranks (window i on rank i % ranks)", 1, 1024});
    v(j.batch, {"batch", "Windows per forward pass", 1, 4096});
    v(j.max_windows, {"max_windows", "Score only the first N windows (0: the whole text)", 0});
    v(j.weights, {.name = "weights",
                  .help = "Score the model with its linear weights as `infer --weights` holds them: fp32, bf16 "
                          "or int8 (per output channel). Not fp32: the fp32 model is scored too, and the "
                          "result adds the loss difference per token and how often the two agree on the most "
                          "likely next token",
                  .choices = "fp32 bf16 int8"});
    v(j.json, {"json", "Print the result as one JSON object instead of text"});
    v(j.summary_json, {"summary_json", "Also write the result as JSON to FILE", 0, 0, kFieldPath});
    v(j.timeout, {"timeout", "Stop the job after this many seconds (0: none)", 0});
    v(j.collective_timeout, {"collective_timeout", "Seconds a rank waits for a peer before the job fails naming it; "
                                                   "must cover the gap between the ranks' finishing times",
                             1, 86400});
    v(j.result_file, {"result_file", "Write the figures to FILE (used by the launcher)", 0, 0,
                      kFieldPath | kFieldHidden});
  }
};

// The job as the JSON text of a job file ({"eval": {fields}}), paths made
// absolute; and back (`source` names the file in errors).
std::string EvalJobToJson(const EvalJob& job);
Result<EvalJob> EvalJobFromJson(const std::string& text, const std::string& source);

}  // namespace pw
