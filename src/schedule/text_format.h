// The schedule text format: pipewright's own, human-editable form of a whole
// Schedule, which round-trips exactly. Example:
//
//   # pipewright schedule v1
//   name 1f1b
//   ranks 2
//   microbatches 2
//   placement 0 1          # stage -> rank, one entry per stage
//   kind OFFLOAD cost=0.5 memory=-1 after=F before=B,I
//   rank 0: 0F0 0F1 . 0B0 0B1
//   rank 1: 1F0 1B0 1F1 1B1
//
// Lines:
//   name <text>        optional; the rest of the line, blanks trimmed
//   ranks <p>          required, p >= 1
//   microbatches <m>   required, m >= 1
//   placement <r0> <r1> ...   required; the rank of each stage in order
//   kind <NAME> [cost=<x>] [memory=<x>] [after=K,..] [before=K,..] [microbatch=no]
//                      a user kind (KindInfo); zero or more, registered in
//                      the order written, each may name built-ins and
//                      earlier kinds in after/before
//   rank <r>: <actions>   one line per rank, in any order; actions in
//                      PyTorch notation (schedule/action_text.h), '.' for
//                      an idle step; may be empty
// '#' starts a comment anywhere. "# pipewright schedule vN" is the version
// line; a version other than v1 is rejected. Header lines may appear in any
// order, each at most once; FormatScheduleText writes the order above.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "schedule/schedule.h"

namespace pw {

// The text of `schedule`, ending in a newline. Deterministic: the same
// schedule gives the same bytes. Every action's kind must be registered in
// schedule.kinds (PW_CHECK). Characters of the name that the format cannot
// hold ('#', line breaks) become '_'; the name is not part of Schedule's
// equality, everything else round-trips: ParseScheduleText(Format(s)) == s
// for any schedule whose actions are in range and whose idle steps are
// kIdleAction (any idle step is written '.', and '.' reads as kIdleAction).
// Pure.
std::string FormatScheduleText(const Schedule& schedule);

// Parses the text format. `source_name` (a file path, or e.g. "<stdin>")
// prefixes every error message, as "<source>:<line>:<col>: <what>; <hint>".
// Fails with InvalidArgument on any syntax error, on missing or repeated
// header lines, rank lines out of range or repeated, a missing rank line, a
// placement that does not fit `ranks`, an unknown kind, or an action whose
// stage or microbatch is out of range. It does not check ordering or that
// an action sits on its stage's rank (that is the validator's job). Pure;
// never crashes on malformed input. FormatScheduleText(Parse(x)) == x for
// text x that FormatScheduleText wrote.
Result<Schedule> ParseScheduleText(std::string_view text, std::string_view source_name);

}  // namespace pw
