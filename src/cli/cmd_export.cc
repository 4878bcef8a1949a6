// `pipewright export`: a training checkpoint — or the random init of a model
// TOML (--config, --set, --seed), for tiny models of each family to try the
// loaders on — as a Hugging Face model directory (config.json +
// model.safetensors) that `train --model`, and the Hugging Face library,
// read back (model/hf_checkpoint.h). In fp32 the round trip is bit for bit.
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cli/command.h"
#include "model/gpt.h"
#include "model/checkpoint.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"

namespace pw::cli {
namespace {

struct ExportCommand {
  std::string checkpoint;
  std::string config;             // a model TOML: export its random init instead
  std::vector<std::string> set;   // model.KEY=VALUE overrides of --config
  uint64_t seed = 1234;
  std::string out;
  std::string format = "hf";
  std::string dtype = "F32";
};

// Every parameter of the checkpoint, pipewright names, from all its stages.
Result<HfNamedTensors> CheckpointParameters(const std::string& dir, const CheckpointManifest& manifest) {
  HfNamedTensors params;
  for (const CheckpointStage& stage : manifest.stages) {
    PW_ASSIGN_OR_RETURN(SafetensorsContents contents, ReadCheckpointFile(dir, stage));
    for (auto& [name, t] : contents.tensors) {
      if (name.rfind("param/", 0) == 0) params.emplace_back(name.substr(6), std::move(t));
    }
  }
  return params;
}

// The random init of `c.config` (the same parameters `train --config
// --seed` starts from), as a Hugging Face directory.
Status ExportRandomInit(const ExportCommand& c) {
  PW_ASSIGN_OR_RETURN(ModelConfig config, LoadModelConfig(c.config));
  PW_RETURN_IF_ERROR(ApplyOverrides(config, c.set).WithContext("--set"));
  PW_ASSIGN_OR_RETURN(std::string type, HfModelType(config));
  const GptSegment model(config, WholeModelSpan(config), c.seed);
  HfNamedTensors params;
  for (const auto& item : model.named_parameters()) params.emplace_back(item.key(), item.value().detach());
  PW_RETURN_IF_ERROR(ExportHfModel(c.out, config, params, c.dtype).WithContext("export " + c.config));
  std::printf("wrote %s: a Hugging Face %s model (%lld parameters, %s), the random init of %s (seed %llu)\n",
              c.out.c_str(), type.c_str(), static_cast<long long>(CountParameters(config)), c.dtype.c_str(),
              c.config.c_str(), static_cast<unsigned long long>(c.seed));
  return Status::Ok();
}

Status RunExport(const ExportCommand& c) {
  if (c.checkpoint.empty() == c.config.empty()) {
    return Status::InvalidArgument("give one of --checkpoint (a trained model) or --config (a random init)");
  }
  if (!c.config.empty()) return ExportRandomInit(c);
  if (!c.set.empty()) return Status::InvalidArgument("--set applies to --config only; a checkpoint keeps its model");
  PW_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadCheckpointManifest(c.checkpoint));
  PW_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(manifest.model_config, c.checkpoint + "/manifest.json"));
  PW_ASSIGN_OR_RETURN(std::string type, HfModelType(config));
  PW_ASSIGN_OR_RETURN(HfNamedTensors params, CheckpointParameters(c.checkpoint, manifest));
  PW_RETURN_IF_ERROR(ExportHfModel(c.out, config, params, c.dtype).WithContext("export " + c.checkpoint));
  // A model trained from a Hugging Face directory: its context, BOS/EOS,
  // generation config and tokenizer, not only what the training run held.
  PW_RETURN_IF_ERROR(KeepHfSourceFacts(c.out, (std::filesystem::path(c.checkpoint) / kCheckpointSourceDir).string(),
                                       config)
                         .WithContext("export " + c.checkpoint));
  std::printf("wrote %s: a Hugging Face %s model (%lld parameters, %s) from step %lld of %s\n", c.out.c_str(),
              type.c_str(), static_cast<long long>(CountParameters(config)), c.dtype.c_str(),
              static_cast<long long>(manifest.step), c.checkpoint.c_str());
  return Status::Ok();
}

}  // namespace

void AddExportCommand(CLI::App& app, CommandContext& ctx) {
  auto c = std::make_shared<ExportCommand>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a training checkpoint as a Hugging Face model directory (config.json, model.safetensors)");
  cmd->add_option("--checkpoint", c->checkpoint, "Checkpoint directory written by `pipewright train`")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--config", c->config, "Model TOML: export its random init instead (e.g. examples/models/*.toml)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", c->set, "Override model.KEY=VALUE of --config (repeatable)");
  cmd->add_option("--seed", c->seed, "Seed of --config's random init")->capture_default_str();
  cmd->add_option("--out", c->out, "Directory to write (created; its config.json and model.safetensors replaced)")
      ->required();
  cmd->add_option("--format", c->format, "Output format")->check(CLI::IsMember({"hf"}))->capture_default_str();
  cmd->add_option("--dtype", c->dtype, "Weight type: F32 (bit-exact), BF16 or F16")
      ->check(CLI::IsMember({"F32", "BF16", "F16"}))
      ->capture_default_str();
  cmd->callback([c, &ctx] { ctx.run = [c] { return RunExport(*c); }; });
}

}  // namespace pw::cli
