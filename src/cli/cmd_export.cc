// `pipewright export`: a training checkpoint as a Hugging Face model
// directory (config.json + model.safetensors) that `train --model`, and the
// Hugging Face library, read back (model/hf_checkpoint.h). In fp32 the
// round trip is bit for bit.
#include <cstdio>
#include <map>
#include <string>

#include "cli/command.h"
#include "model/checkpoint.h"
#include "model/hf_checkpoint.h"
#include "model/hf_config.h"

namespace pw::cli {
namespace {

struct ExportCommand {
  std::string checkpoint;
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

Status RunExport(const ExportCommand& c) {
  PW_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadCheckpointManifest(c.checkpoint));
  PW_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(manifest.model_config, c.checkpoint + "/manifest.json"));
  PW_ASSIGN_OR_RETURN(std::string type, HfModelType(config));
  PW_ASSIGN_OR_RETURN(HfNamedTensors params, CheckpointParameters(c.checkpoint, manifest));
  PW_RETURN_IF_ERROR(ExportHfModel(c.out, config, params, c.dtype).WithContext("export " + c.checkpoint));
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
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--out", c->out, "Directory to write (created; its config.json and model.safetensors replaced)")
      ->required();
  cmd->add_option("--format", c->format, "Output format")->check(CLI::IsMember({"hf"}))->capture_default_str();
  cmd->add_option("--dtype", c->dtype, "Weight type: F32 (bit-exact), BF16 or F16")
      ->check(CLI::IsMember({"F32", "BF16", "F16"}))
      ->capture_default_str();
  cmd->callback([c, &ctx] { ctx.run = [c] { return RunExport(*c); }; });
}

}  // namespace pw::cli
