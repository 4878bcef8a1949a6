// The files of `pipewright infer`: the JSONL prompt file it reads and the
// JSONL results file it appends to (and resumes from).
//
// Prompt file: one JSON object per line,
//   {"id": "q1" | 17, "prompt": "text", "max_tokens": 32}
//   {"id": "q2", "prompt_ids": [128000, 9906, 1917]}
// "id" (string or integer) defaults to the 1-based line number; either
// "prompt" (text, encoded by the model's tokenizer, BOS first when the
// tokenizer asks for it) or "prompt_ids" (token ids, used as given) is
// required; "max_tokens" (integer >= 1) overrides the job's default; "n"
// (1 to 64) the samples per prompt (--n). Blank lines are
// ignored. A malformed line (bad JSON, not an object, missing or non-string
// prompt, wrong types, a duplicate id) is reported as "FILE:LINE: what; how
// to fix" and skipped; the other lines are processed.
//
// Results file: one JSON object per finished request,
//   {"id","index","text","tokens","finish_reason","prompt_tokens","rank","seconds"}
// (plus "sample": k, 0-based, for each of a prompt's n > 1 samples)
// (plus "error" when finish_reason is "error"; with infer --logprobs K,
// "logprobs": one {"token","logprob","top_logprobs":[{"token","logprob"}...]}
// per generated token). "tokens" are the generated token ids, exact;
// "text" is their decoding by the model's tokenizer (special tokens such as
// EOS left out) as a JSON string, where bytes that are not valid UTF-8
// become U+FFFD (nlohmann's replace handler) — so read "tokens" when the
// exact output matters.
//
// Appending: each line is one write(2) on an O_APPEND descriptor under an
// exclusive flock, so ranks of one job (and jobs on one machine) can share
// the file and a line is never interleaved with another. A crash during a
// write can leave a last line without its newline ("torn"); opening a
// ResultWriter truncates such a tail (under the lock) before appending, and
// ReadDoneIds ignores it, so a rerun with the same file redoes only that
// request. Resume: the ids in complete lines are done and are skipped.
//
// Thread-safety: the functions are pure or touch only their own file; one
// ResultWriter is for one thread. Failure: Status naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "infer/finish_reason.h"
#include "infer/token_logprobs.h"
#include "job/infer_job.h"
#include "os/line_log.h"

namespace pw {

struct PromptRecord {
  std::string id;        // "id" as text (a number keeps its decimal form)
  int64_t index = 0;     // 0-based position among the file's valid prompts
  int line = 0;          // 1-based line in the file
  std::string prompt;    // text (empty when prompt_ids are given)
  std::vector<int64_t> prompt_ids;  // "prompt_ids": token ids as given
  int max_tokens = 0;    // 0: the job's default
  int n = 0;             // samples of this prompt; 0: the job's default
  // Structured output: the line's "json_schema" (compact JSON text, keys in
  // the order written) or "regex"; both empty: unconstrained (or the job's
  // --json-schema). Checked when the file is read: one that cannot be
  // compiled makes the line a bad line.
  std::string json_schema, regex;
};

struct PromptFile {
  std::vector<PromptRecord> prompts;  // valid lines, in file order
  std::vector<std::string> problems;  // "FILE:LINE: what; how to fix", one per skipped line
  int64_t lines = 0;                  // lines read (blank ones included)
};

// Parses the text of a prompt file; `source_name` is the FILE of messages.
// Never fails: bad lines land in `problems`. Pure.
PromptFile ParsePrompts(std::string_view text, const std::string& source_name);

// Reads and parses `path`. NotFound / IoError when the file cannot be read.
Result<PromptFile> ReadPromptFile(const std::string& path);

// Reorders `prompts` so that prompts starting alike are adjacent (sorted
// by text, then by ids; stable), which puts them in the same chunks of the
// shared queue and in one rank's engine close together, where prefix
// caching reuses their common KV blocks. Indices (and so round-robin
// shares) and ids (sampling seeds) are unchanged. Pure.
void GroupByPrefix(std::vector<PromptRecord>& prompts);

// The prompts of `rank` out of `world`: those with index % world == rank,
// in order (round-robin, so ranks get equal shares of a sorted file). Pure.
std::vector<PromptRecord> ShareOfRank(const std::vector<PromptRecord>& prompts, int rank, int world);

struct ResultRecord {
  std::string id;
  int64_t index = 0;
  int sample = 0;                // which of the prompt's samples (0-based)
  int samples = 1;               // how many the prompt has ("sample" written when > 1)
  std::vector<int64_t> tokens;   // generated token ids
  std::string text;              // their decoding (the tokenizer's; without special tokens)
  FinishReason finish_reason = FinishReason::kNone;
  std::string error;             // when finish_reason is kError
  int prompt_tokens = 0;
  int rank = 0;
  double seconds = 0;
  bool has_logprobs = false;            // infer --logprobs: write "logprobs" (even [])
  std::vector<TokenLogprobs> logprobs;  // one per generated token
};

// One results line, '\n'-terminated. Pure.
std::string FormatResultLine(const ResultRecord& record);

// Byte-level token ids as the bytes they are. Pure.
std::string TokensToBytes(const std::vector<int64_t>& tokens);

// The key of (prompt id, sample) in a DoneSet: the id itself for a prompt's
// only sample, else the id and the sample number (lines with "sample").
std::string SampleKey(const std::string& id, int sample, int samples);

struct DoneSet {
  std::unordered_set<std::string> ids;  // SampleKeys of complete, valid lines
  int64_t lines = 0;                    // complete valid lines
  int64_t invalid_lines = 0;            // complete lines that are not result objects (ignored)
  bool torn_tail = false;               // the file ends in a partial line (ignored)
};

// The results already in `text` (the bytes of a results file). Pure.
DoneSet ParseDone(std::string_view text);

// The results already in `path`; an absent file is an empty set. IoError
// when it exists but cannot be read.
Result<DoneSet> ReadDoneIds(const std::string& path);

// Appends result lines to a file shared by several processes (see above).
class ResultWriter {
 public:
  // Opens (creating) `path` for appending and truncates a torn tail under
  // the lock. IoError naming the path (and errno's text) on failure.
  static Result<ResultWriter> Open(const std::string& path);

  // One line, one write(2), under an exclusive flock. Blocks while another
  // process holds the lock. IoError on a failed or short write.
  Status Append(const ResultRecord& record);
  // Whether Open cut a torn tail, and how many bytes it cut.
  int64_t truncated_bytes() const { return log_.truncated_bytes(); }

 private:
  explicit ResultWriter(LineLog log) : log_(std::move(log)) {}
  LineLog log_;  // os/line_log.h: one write per line under a lock, torn tails cut
};

}  // namespace pw
