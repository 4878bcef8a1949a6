// libFuzzer target for the .pipe front end (dsl/parser.h). Any bytes must
// give a program or an error, never a crash, hang or sanitizer report; an
// error must carry "<source>:<line>:<col>: " on one line; a program must
// print (FormatPipeProgram) to text that parses back to the same program and
// prints to the same text again.
//
// fuzz/CMakeLists.txt builds it with clang (-DPW_BUILD_FUZZ=ON). The same
// check replays fuzz/corpus/pipe/ in src/dsl/parser_fuzz_replay_test.cc,
// which includes this file, so that gcc builds exercise it too.
#include <string>
#include <string_view>

#include "dsl/parser.h"
#include "fuzz_check.h"

namespace pw::dsl {

// "" when `text` passes every check above; else what went wrong.
inline std::string PipeParserRoundTripProblem(std::string_view text) {
  Result<PipeProgram> first = ParsePipeProgram(text, "fuzz.pipe");
  if (!first.ok()) {
    const std::string& msg = first.status().message();
    if (!msg.starts_with("fuzz.pipe:")) return "error without file:line:col: " + msg;
    if (msg.find('\n') != std::string::npos) return "error spans lines: " + msg;
    return "";
  }
  const std::string printed = FormatPipeProgram(*first);
  Result<PipeProgram> second = ParsePipeProgram(printed, "printed.pipe");
  if (!second.ok()) return "printed text does not parse: " + second.status().message() + "\n--- printed:\n" + printed;
  const std::string difference = DescribeProgramDifference(*first, *second);
  if (!difference.empty()) return "round trip changed " + difference + "\n--- printed:\n" + printed;
  const std::string reprinted = FormatPipeProgram(*second);
  if (reprinted != printed) return "printing is not stable:\n--- first:\n" + printed + "--- second:\n" + reprinted;
  return "";
}

}  // namespace pw::dsl

PW_FUZZ_ENTRY_POINT("pipe_parser_fuzz", pw::dsl::PipeParserRoundTripProblem)
