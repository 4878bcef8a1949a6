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
  return ParseWriteProblem(
      text, "fuzz/manifest.json",
      [](std::string_view t, const std::string& path) { return ParseCheckpointManifest(t, path); },
      [](const CheckpointManifest& m) { return FormatCheckpointManifest(m); });
}

}  // namespace pw::fuzz

PW_FUZZ_ENTRY_POINT("checkpoint_manifest_fuzz", pw::fuzz::CheckpointManifestProblem)
