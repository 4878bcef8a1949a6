#include "model/checkpoint_manifest.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/text.h"

namespace pw {
namespace {

nlohmann::json OptimizerJson(const OptimizerConfig& o) {
  return {{"lr", o.lr},           {"min_lr", o.min_lr}, {"warmup_steps", o.warmup_steps},
          {"total_steps", o.total_steps}, {"beta1", o.beta1}, {"beta2", o.beta2},
          {"eps", o.eps},         {"weight_decay", o.weight_decay}, {"grad_clip", o.grad_clip}};
}

}  // namespace

bool IsSha256Hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string FormatCheckpointManifest(const CheckpointManifest& m) {
  nlohmann::json stages = nlohmann::json::array();
  for (const CheckpointStage& s : m.stages) {
    stages.push_back({{"stage", s.stage}, {"first_block", s.first_block},
                      {"num_blocks", s.num_blocks}, {"has_embedding", s.has_embedding},
                      {"has_head", s.has_head}, {"file", s.file}});
    if (!s.sha256.empty()) {
      stages.back()["bytes"] = s.bytes;
      stages.back()["sha256"] = s.sha256;
    }
  }
  nlohmann::json j = {{"format", "pipewright-checkpoint"},
                      {"pipewright_version", m.version},
                      {"model_config", m.model_config},
                      {"schedule", m.schedule},
                      {"pp", m.pp},
                      {"dp", m.dp},
                      {"microbatches", m.microbatches},
                      {"microbatch_size", m.microbatch_size},
                      {"seed", m.seed},
                      {"step", m.step},
                      {"data", {{"sampler", "TrainCorpus::Sample(seed, step, microbatch)"},
                                {"seed", m.seed},
                                {"next_step", m.step}}},
                      {"optimizer", {{"name", "adamw"},
                                     {"steps", m.optimizer_steps},
                                     {"hyperparameters", OptimizerJson(m.optimizer)},
                                     {"next_lr", m.next_lr}}},
                      {"stages", stages}};
  for (const auto& [key, text] : {std::pair{"job", &m.job}, std::pair{"request", &m.request}, std::pair{"plan", &m.plan}}) {
    if (!text->empty()) j[key] = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  }
  return j.dump(2) + "\n";
}

Result<CheckpointManifest> ParseCheckpointManifest(std::string_view text, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument(path + ": not valid JSON");
  CheckpointManifest m;
  try {
    m.version = j.at("pipewright_version").get<std::string>();
    m.model_config = j.at("model_config").get<std::string>();
    m.schedule = j.at("schedule").get<std::string>();
    m.pp = j.at("pp").get<int>();
    m.dp = j.at("dp").get<int>();
    m.microbatches = j.at("microbatches").get<int>();
    m.microbatch_size = j.at("microbatch_size").get<int>();
    m.seed = j.at("seed").get<uint64_t>();
    m.step = j.at("step").get<int64_t>();
    const nlohmann::json& o = j.at("optimizer");
    m.optimizer_steps = o.at("steps").get<int64_t>();
    m.next_lr = o.at("next_lr").get<double>();
    const nlohmann::json& h = o.at("hyperparameters");
    m.optimizer.lr = h.at("lr").get<double>();
    m.optimizer.min_lr = h.at("min_lr").get<double>();
    m.optimizer.warmup_steps = h.at("warmup_steps").get<int>();
    m.optimizer.total_steps = h.at("total_steps").get<int>();
    m.optimizer.beta1 = h.at("beta1").get<double>();
    m.optimizer.beta2 = h.at("beta2").get<double>();
    m.optimizer.eps = h.at("eps").get<double>();
    m.optimizer.weight_decay = h.at("weight_decay").get<double>();
    m.optimizer.grad_clip = h.at("grad_clip").get<double>();
    for (const nlohmann::json& s : j.at("stages")) {
      m.stages.push_back({s.at("stage").get<int>(), s.at("first_block").get<int>(),
                          s.at("num_blocks").get<int>(), s.at("has_embedding").get<bool>(),
                          s.at("has_head").get<bool>(), s.at("file").get<std::string>()});
      if (s.contains("sha256")) {  // absent in checkpoints written before checksums
        m.stages.back().sha256 = s.at("sha256").get<std::string>();
        m.stages.back().bytes = s.at("bytes").get<uint64_t>();
        if (!IsSha256Hex(m.stages.back().sha256)) {
          return Status::InvalidArgument(path + ": stage " + std::to_string(m.stages.back().stage) +
                                         ": sha256 is not 64 hex digits");
        }
      }
      const std::filesystem::path file(m.stages.back().file);
      if (file.empty() || file.is_absolute() ||
          std::find(file.begin(), file.end(), "..") != file.end()) {
        return Status::InvalidArgument(path + ": stage file '" + PrintableText(m.stages.back().file) +
                                       "' is not a path inside the checkpoint directory");
      }
    }
    for (const auto& [key, text] : {std::pair{"job", &m.job}, std::pair{"request", &m.request}, std::pair{"plan", &m.plan}}) {
      if (j.contains(key) && j[key].is_object()) *text = j[key].dump();
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(path + ": malformed manifest: " + e.what());
  }
  if (m.step < 0 || m.optimizer_steps < 0) {
    return Status::InvalidArgument(path + ": negative step count");
  }
  return m;
}

}  // namespace pw
