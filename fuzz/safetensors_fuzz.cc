// libFuzzer target for the safetensors header (model/safetensors_header.h:
// the length, the JSON header and the extents it gives; the torch half
// only copies the bytes it validated). Any bytes must give a header or an
// error, never a crash, hang or sanitizer report; an error must name the
// file and be one line; a header must write (FormatSafetensorsHeader), in
// front of the same data, to a file that parses back to the same entries
// and metadata and writes the same header again.
//
// Replayed by src/model/model_fuzz_replay_test.cc (fuzz/fuzz_check.h).
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "model/safetensors_header.h"

namespace pw::fuzz {

inline std::string SafetensorsProblem(std::string_view bytes) {
  Result<SafetensorsHeader> first = ParseSafetensorsHeader(bytes, "fuzz.safetensors");
  if (!first.ok()) return MessageProblem(first.status().message(), "fuzz.safetensors:");
  const std::string header = FormatSafetensorsHeader(first->entries, first->metadata);
  const std::string file = header + std::string(bytes.substr(first->data_start));
  Result<SafetensorsHeader> second = ParseSafetensorsHeader(file, "written.safetensors");
  if (!second.ok()) return "the written header does not parse: " + second.status().message();
  if (second->entries != first->entries || second->metadata != first->metadata) {
    return "round trip changed the header: " + header.substr(8);
  }
  if (FormatSafetensorsHeader(second->entries, second->metadata) != header) return "writing is not stable";
  return "";
}

}  // namespace pw::fuzz

PW_FUZZ_ENTRY_POINT("safetensors_fuzz", pw::fuzz::SafetensorsProblem)
