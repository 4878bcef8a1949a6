// libFuzzer target for the cost-model JSON (sim/cost_model_json.h), what
// --cost-file and the planner read. Any bytes must give a cost file or an
// error, never a crash, hang or sanitizer report; an error must name the
// source and be one line; a cost file must write (FormatCostFileJson) to
// JSON that parses back and writes the same text again.
//
// Replayed by src/sim/cost_model_fuzz_replay_test.cc (fuzz/fuzz_check.h).
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "sim/cost_model_json.h"

namespace pw::fuzz {

inline std::string CostModelJsonProblem(std::string_view text) {
  return ParseWriteProblem(
      text, "fuzz.json", [](std::string_view t, const std::string& source) { return ParseCostFileJson(t, source); },
      [](const CostFile& file) { return FormatCostFileJson(file); });
}

}  // namespace pw::fuzz

PW_FUZZ_ENTRY_POINT("cost_model_json_fuzz", pw::fuzz::CostModelJsonProblem)
