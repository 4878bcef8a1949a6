// libFuzzer target for PyTorch's compute-only CSV (schedule/csv_format.h).
// Any bytes must give a schedule or an error, never a crash, hang or
// sanitizer report, with PyTorch's current notation and with the legacy
// reading of B; an error must name the source and be one line; a schedule
// must write (FormatScheduleCsv) to CSV that parses back to an equal
// schedule and writes the same bytes again.
//
// Replayed by src/schedule/schedule_fuzz_replay_test.cc (fuzz/fuzz_check.h).
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "schedule/csv_format.h"

namespace pw::fuzz {

inline std::string ScheduleCsvProblem(std::string_view csv) {
  CsvImportOptions legacy;
  legacy.legacy_b_means_input = true;
  Result<Schedule> old_style = ParseScheduleCsv(csv, "fuzz.csv", legacy);
  if (!old_style.ok()) {
    std::string problem = MessageProblem(old_style.status().message(), "fuzz.csv");
    if (!problem.empty()) return "(legacy B) " + problem;
  }
  Result<Schedule> first = ParseScheduleCsv(csv, "fuzz.csv");
  if (!first.ok()) return MessageProblem(first.status().message(), "fuzz.csv");
  Result<std::string> written = FormatScheduleCsv(*first);
  if (!written.ok()) return "a parsed schedule does not write: " + written.status().message();
  Result<Schedule> second = ParseScheduleCsv(*written, "fuzz.csv");
  if (!second.ok()) return "written CSV does not parse: " + second.status().message() + "\n--- written:\n" + *written;
  if (!(*second == *first)) return "round trip changed the schedule\n--- written:\n" + *written;
  Result<std::string> rewritten = FormatScheduleCsv(*second);
  if (!rewritten.ok() || *rewritten != *written) return "writing is not stable\n--- first:\n" + *written;
  return "";
}

}  // namespace pw::fuzz

PW_FUZZ_ENTRY_POINT("schedule_csv_fuzz", pw::fuzz::ScheduleCsvProblem)
