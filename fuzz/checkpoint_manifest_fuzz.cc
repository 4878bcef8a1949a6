// libFuzzer target for the checkpoint manifest (manifest.json,
// model/checkpoint_manifest.h), which `train --resume` and `infer
// --checkpoint` read. Any bytes must give a manifest or an error, never a
// crash, hang or sanitizer report; an error must name the file and be one
// line; a manifest must write (FormatCheckpointManifest) to JSON that
// parses back and writes the same text again.
//
// Replayed by src/model/model_fuzz_replay_test.cc (fuzz/fuzz_check.h).
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "model/checkpoint_manifest.h"

namespace pw::fuzz {

inline std::string CheckpointManifestProblem(std::string_view text) {
  Result<CheckpointManifest> first = ParseCheckpointManifest(text, "fuzz/manifest.json");
  if (!first.ok()) return MessageProblem(first.status().message(), "fuzz/manifest.json:");
  const std::string written = FormatCheckpointManifest(*first);
  Result<CheckpointManifest> second = ParseCheckpointManifest(written, "written/manifest.json");
  if (!second.ok()) return "the written manifest does not parse: " + second.status().message() + "\n--- written:\n" + written;
  const std::string rewritten = FormatCheckpointManifest(*second);
  if (rewritten != written) return "round trip changed the manifest:\n--- first:\n" + written + "--- second:\n" + rewritten;
  return "";
}

}  // namespace pw::fuzz

PW_FUZZ_ENTRY_POINT("checkpoint_manifest_fuzz", pw::fuzz::CheckpointManifestProblem)
