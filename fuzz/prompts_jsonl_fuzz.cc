// libFuzzer target for the JSONL files of `pipewright infer`
// (infer/prompts_io.h): the prompt file (ParsePrompts) and the results file
// it resumes from (ParseDone), without LibTorch. Any bytes must give
// prompts and problems, never a crash, hang or sanitizer report; every
// problem must name "FILE:LINE:" and be one line; the valid prompts must
// have unique ids and consecutive indices, and a results line written for
// each (FormatResultLine) must read back (ParseDone) as done, by that id.
//
// Replayed by src/infer/prompts_fuzz_replay_test.cc (fuzz/fuzz_check.h).
#include <string>
#include <string_view>
#include <unordered_set>

#include "fuzz_check.h"
#include "infer/prompts_io.h"

namespace pw::fuzz {

inline std::string PromptsJsonlProblem(std::string_view text) {
  const PromptFile file = ParsePrompts(text, "fuzz.jsonl");
  for (const std::string& p : file.problems) {
    std::string problem = MessageProblem(p, "fuzz.jsonl:");
    if (!problem.empty()) return problem;
  }
  if (static_cast<int64_t>(file.prompts.size() + file.problems.size()) > file.lines) {
    return "more prompts and problems than lines";
  }
  std::unordered_set<std::string> ids;
  std::string results;
  for (size_t i = 0; i < file.prompts.size(); ++i) {
    const PromptRecord& r = file.prompts[i];
    if (r.index != static_cast<int64_t>(i)) return "prompt " + std::to_string(i) + " has index " + std::to_string(r.index);
    if (r.line < 1 || r.line > file.lines) return "prompt " + r.id + " on line " + std::to_string(r.line) + " of " + std::to_string(file.lines);
    if (r.prompt.empty()) return "prompt " + r.id + " is empty";
    if (!ids.insert(r.id).second) return "duplicate id " + r.id;
    ResultRecord result;
    result.id = r.id;
    result.index = r.index;
    for (unsigned char c : r.prompt) result.tokens.push_back(c);
    result.finish_reason = FinishReason::kLength;
    results += FormatResultLine(result);
  }
  const DoneSet done = ParseDone(results);
  if (done.ids != ids || done.invalid_lines != 0 || done.torn_tail) {
    return "results written for the prompts do not read back as done\n--- results:\n" + results;
  }
  ParseDone(text);  // the same bytes as a results file: must not crash
  return "";
}

}  // namespace pw::fuzz

PW_FUZZ_ENTRY_POINT("prompts_jsonl_fuzz", pw::fuzz::PromptsJsonlProblem)
