// What every fuzz target (fuzz/*_fuzz.cc) shares: the test that an error
// message is clear enough to act on, and the libFuzzer entry point that
// aborts on a check's problem.
//
// Each target defines an inline check, "" or the problem with one input;
// libFuzzer calls it through PW_FUZZ_ENTRY_POINT, and gcc builds replay the
// seed corpus through the same check (the *_fuzz_replay_test.cc files
// include the target's .cc with PW_FUZZ_REPLAY defined, which leaves the
// entry point out: several targets share one test binary).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace pw::fuzz {

// "" when `message` starts with `source` (the file it names, as the parser
// was told) and is one line; else what is wrong with it. A message that
// spans lines (a quoted name holding a line break) reads as two messages in
// a log, and one without the file does not say where to look.
inline std::string MessageProblem(std::string_view message, std::string_view source) {
  if (!message.starts_with(source)) return "error does not start with '" + std::string(source) + "': " + std::string(message);
  if (message.find_first_of("\r\n") != std::string_view::npos) return "error spans lines: " + std::string(message);
  return "";
}

// The check of a parser that has a writer. `parse(text, source)` gives a
// Result; an error must pass MessageProblem for `source`; a value must
// write (`write(value)`, a string) to text that parses again and writes the
// same text: what the writer cannot hold, or holds differently, shows.
template <class Parse, class Write>
std::string ParseWriteProblem(std::string_view text, std::string_view source, Parse parse, Write write) {
  auto first = parse(text, std::string(source));
  if (!first.ok()) return MessageProblem(first.status().message(), source);
  const std::string written = write(*first);
  auto second = parse(written, "written");
  if (!second.ok()) return "the written text does not parse: " + second.status().message() + "\n--- written:\n" + written;
  const std::string rewritten = write(*second);
  if (rewritten != written) return "round trip changed the value:\n--- first:\n" + written + "--- second:\n" + rewritten;
  return "";
}

}  // namespace pw::fuzz

#ifdef PW_FUZZ_REPLAY
#define PW_FUZZ_ENTRY_POINT(target, check)
#else
// libFuzzer's entry point: runs `check` on the input and aborts (a crash
// that libFuzzer saves as crash-*) when it reports a problem.
#define PW_FUZZ_ENTRY_POINT(target, check)                                                  \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {                 \
    const std::string problem = check(std::string_view(reinterpret_cast<const char*>(data), size)); \
    if (!problem.empty()) {                                                                 \
      std::fprintf(stderr, "%s: %s\n", target, problem.c_str());                            \
      std::abort();                                                                         \
    }                                                                                       \
    return 0;                                                                               \
  }
#endif
