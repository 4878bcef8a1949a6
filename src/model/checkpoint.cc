#include "model/checkpoint.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <utility>


#include "model/stage_module.h"
#include "model/safetensors.h"

namespace pw {
namespace {

std::string Join(const std::string& dir, const std::string& file) {
  return (std::filesystem::path(dir) / file).string();
}

}  // namespace

std::string CheckpointStageFile(int stage) {
  return "stage_" + std::to_string(stage) + ".safetensors";
}

std::string CheckpointStagePath(int64_t step, int stage) {
  return "step_" + std::to_string(step) + "/" + CheckpointStageFile(stage);
}

Result<FileDigest> WriteCheckpointStage(const std::string& dir, const StageModule& stage,
                                        const AdamWState& state, const std::string& file) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  std::vector<std::pair<std::string, at::Tensor>> m, v;
  for (const auto& [name, p] : stage.NamedParameters()) {
    const AdamWState::Entry* entry = nullptr;
    for (const AdamWState::Entry& e : state.entries) {
      if (e.param.is_same(p)) entry = &e;
    }
    tensors.emplace_back("param/" + name, p.detach());
    m.emplace_back("adam_m/" + name, entry ? entry->exp_avg : at::zeros_like(p));
    v.emplace_back("adam_v/" + name, entry ? entry->exp_avg_sq : at::zeros_like(p));
  }
  tensors.insert(tensors.end(), m.begin(), m.end());
  tensors.insert(tensors.end(), v.begin(), v.end());
  const std::string path = Join(dir, file.empty() ? CheckpointStageFile(stage.stage()) : file);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return Status::IoError("cannot create the directory of " + path + ": " + ec.message());
  FileDigest digest;
  PW_RETURN_IF_ERROR(WriteSafetensors(path, tensors,
                                      {{"format", "pipewright-checkpoint"},
                                       {"stage", std::to_string(stage.stage())},
                                       {"version", kPipewrightVersion}},
                                      &digest));
  return digest;
}

Result<SafetensorsContents> ReadCheckpointFile(const std::string& dir, const CheckpointStage& entry) {
  const std::string path = Join(dir, entry.file);
  PW_ASSIGN_OR_RETURN(std::string bytes, ReadSafetensorsBytes(path));
  const std::string manifest = Join(dir, kCheckpointManifest);
  if (entry.sha256.empty()) {
    std::fprintf(stderr,
                 "warning: %s is not verified: %s has no checksum for it (a checkpoint written "
                 "before checksums; a new checkpoint of this run will have them)\n",
                 path.c_str(), manifest.c_str());
  } else {
    const std::string how = "; the file changed after it was written (a disk or copy error, or an edit). Use an "
                            "intact copy of the checkpoint or an earlier one, or retrain";
    if (bytes.size() != entry.bytes) {
      return Status::IoError("checkpoint file " + path + " is corrupt: it has " + std::to_string(bytes.size()) +
                             " bytes but " + manifest + " records " + std::to_string(entry.bytes) + how);
    }
    const std::string sha256 = Sha256Hex(bytes);
    if (sha256 != entry.sha256) {
      return Status::IoError("checkpoint file " + path + " is corrupt: its SHA-256 is " + sha256 + " but " +
                             manifest + " records " + entry.sha256 + how);
    }
  }
  return ParseSafetensors(bytes, path);
}

Status LoadCheckpointStage(const std::string& dir, const CheckpointManifest& manifest, StageModule& stage,
                           AdamWState& state) {
  const CheckpointStage* entry = nullptr;
  for (const CheckpointStage& s : manifest.stages) {
    if (s.stage == stage.stage()) entry = &s;
  }
  if (entry == nullptr) {
    return Status::InvalidArgument(Join(dir, kCheckpointManifest) + ": no file for stage " +
                                   std::to_string(stage.stage()));
  }
  const std::string path = Join(dir, entry->file);
  PW_ASSIGN_OR_RETURN(SafetensorsContents contents, ReadCheckpointFile(dir, *entry));
  std::map<std::string, at::Tensor> by_name(contents.tensors.begin(), contents.tensors.end());
  auto take = [&](const std::string& name, const at::Tensor& like) -> Result<at::Tensor> {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return Status::InvalidArgument(path + ": tensor '" + name + "' is missing; the checkpoint "
                                     "was written for another model or stage layout");
    }
    if (it->second.sizes() != like.sizes() || it->second.scalar_type() != like.scalar_type()) {
      return Status::InvalidArgument(path + ": tensor '" + name + "' has shape " +
                                     c10::str(it->second.sizes()) + " but the model has " +
                                     c10::str(like.sizes()));
    }
    at::Tensor t = it->second;
    by_name.erase(it);
    return t;
  };
  c10::NoGradGuard no_grad;
  for (const auto& [name, p] : stage.NamedParameters()) {
    PW_ASSIGN_OR_RETURN(at::Tensor value, take("param/" + name, p));
    PW_ASSIGN_OR_RETURN(at::Tensor m, take("adam_m/" + name, p));
    PW_ASSIGN_OR_RETURN(at::Tensor v, take("adam_v/" + name, p));
    p.detach().copy_(value);
    state.entries.push_back({p, m, v});
  }
  if (!by_name.empty()) {
    return Status::InvalidArgument(path + ": tensor '" + by_name.begin()->first +
                                   "' is not a parameter of stage " +
                                   std::to_string(stage.stage()) + " of this model");
  }
  return Status::Ok();
}

void RemoveUnreferencedCheckpointFiles(const std::string& dir, const CheckpointManifest& manifest) {
  namespace fs = std::filesystem;
  std::set<std::string> kept;  // top-level entries the manifest's files live in
  for (const CheckpointStage& s : manifest.stages) {
    const fs::path file(s.file);
    kept.insert(file.begin() == file.end() ? s.file : file.begin()->string());
  }
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (kept.count(name) != 0) continue;
    const bool step_dir = name.starts_with("step_") && it->is_directory(ec);
    const bool legacy_stage = name.starts_with("stage_") && name.ends_with(".safetensors");
    const bool tmp = name.ends_with(".tmp") && (name.starts_with("stage_") || name.starts_with(kCheckpointManifest));
    if (step_dir || legacy_stage || tmp) stale.push_back(it->path());
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

Status WriteCheckpointManifest(const std::string& dir, const CheckpointManifest& m) {
  return WriteFileDurably(Join(dir, kCheckpointManifest), FormatCheckpointManifest(m)).status();
}

Result<CheckpointManifest> ReadCheckpointManifest(const std::string& dir) {
  const std::string path = Join(dir, kCheckpointManifest);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(path + ": no checkpoint manifest (is " + dir +
                            " a complete checkpoint written with --checkpoint-dir?)");
  }
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseCheckpointManifest(text, path);
}

Status CheckResumable(const std::string& dir, const CheckpointManifest& found,
                      const CheckpointManifest& expected) {
  std::string diffs;
  auto differ = [&](const std::string& what, const std::string& was, const std::string& is) {
    if (was != is) diffs += "\n  " + what + ": checkpoint has " + was + ", this run has " + is;
  };
  differ("model config", "\n" + found.model_config, "\n" + expected.model_config);
  differ("schedule", found.schedule, expected.schedule);
  differ("pp", std::to_string(found.pp), std::to_string(expected.pp));
  differ("dp", std::to_string(found.dp), std::to_string(expected.dp));
  differ("microbatches", std::to_string(found.microbatches), std::to_string(expected.microbatches));
  differ("microbatch size", std::to_string(found.microbatch_size),
         std::to_string(expected.microbatch_size));
  differ("seed", std::to_string(found.seed), std::to_string(expected.seed));
  auto layout = [](const CheckpointManifest& m) {
    std::string s;
    for (const CheckpointStage& st : m.stages) {
      s += (s.empty() ? "" : ",") + std::to_string(st.num_blocks) + (st.has_embedding ? "e" : "") +
           (st.has_head ? "h" : "");
    }
    return "[" + s + "] (blocks per stage)";
  };
  differ("stage layout", layout(found), layout(expected));
  if (diffs.empty()) return Status::Ok();
  return Status::FailedPrecondition("cannot resume from " + dir +
                                    ": it was written for another job:" + diffs +
                                    "\n  (pass the same config and flags as the run that wrote it)");
}

}  // namespace pw
