// libFuzzer target for the schedule text format (schedule/text_format.h).
// Any bytes must give a schedule or an error, never a crash, hang or
// sanitizer report; an error must name the source and be one line; a
// schedule must print (FormatScheduleText) to text that parses back to an
// equal schedule and prints to the same text again.
//
// Replayed by src/schedule/schedule_fuzz_replay_test.cc (fuzz/fuzz_check.h).
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "schedule/text_format.h"

namespace pw::fuzz {

inline std::string ScheduleTextProblem(std::string_view text) {
  Result<Schedule> first = ParseScheduleText(text, "fuzz.schedule");
  if (!first.ok()) return MessageProblem(first.status().message(), "fuzz.schedule:");
  const std::string printed = FormatScheduleText(*first);
  Result<Schedule> second = ParseScheduleText(printed, "printed.schedule");
  if (!second.ok()) return "printed text does not parse: " + second.status().message() + "\n--- printed:\n" + printed;
  if (!(*second == *first)) return "round trip changed the schedule\n--- printed:\n" + printed;
  const std::string reprinted = FormatScheduleText(*second);
  if (reprinted != printed) return "printing is not stable:\n--- first:\n" + printed + "--- second:\n" + reprinted;
  return "";
}

}  // namespace pw::fuzz

PW_FUZZ_ENTRY_POINT("schedule_text_fuzz", pw::fuzz::ScheduleTextProblem)
