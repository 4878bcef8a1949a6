// `pipewright kernels`: the kernel facts of this machine, as the runtime
// commands see them — the CPU flags that choose kernels, the OpenBLAS core
// LibTorch's GEMMs run on, pipewright's own kernel level (PIPEWRIGHT_KERNELS
// lowers it), whether oneDNN's prepacked layout exists here, and the layout
// `infer` takes by default. scripts/test.sh prints it first, so a failure
// log says what machine it came from.
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "infer/infer_settings.h"
#include "infer/layer_math.h"
#include "job/infer_job.h"
#include "model/fused_kernels.h"
#include "model/model_config.h"
#include "os/blas_core.h"

namespace pw::cli {
namespace {

// The flags kernels are chosen by (present ones, in this order).
std::vector<std::string> KernelFlags() {
  const std::vector<std::string> wanted = {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw",
                                           "avx512vl", "avx512_bf16", "avx512_vnni", "amx_tile"};
  const std::vector<std::string> have = CpuFlags();
  std::vector<std::string> present;
  for (const std::string& flag : wanted) {
    for (const std::string& h : have) {
      if (h == flag) {
        present.push_back(flag);
        break;
      }
    }
  }
  return present;
}

// The layout `infer` takes with its default flags, and with
// --batch-invariant off (ResolveWeightsLayout, then oneDNN's fallback where
// this CPU has no prepacked kernels).
std::string DefaultLayout(const std::string& batch_invariant, bool onednn) {
  LinearLayout layout = LinearLayout::kPlain, fallback = LinearLayout::kPlain;
  if (!ResolveWeightsLayout(InferJob{}.weights_layout, batch_invariant, &layout, &fallback).ok()) return "?";
  return LinearLayoutName(layout == LinearLayout::kOneDnn && !onednn ? fallback : layout);
}

Status RunKernels(bool json) {
  const std::string core = LoadedBlasCoreName();
  const bool onednn = BlockPrepackable(ModelConfig{});
  const std::string invariant = DefaultLayout(InferJob{}.batch_invariant, onednn);
  nlohmann::json facts = {{"cpu_flags", KernelFlags()},
                          {"openblas_core", core.empty() ? "(not OpenBLAS)" : core},
                          {"kernel_level", KernelIsaName(ActiveKernelIsa())},
                          {"kernel_level_env", kKernelLevelEnv},
                          {"onednn_prepacked", onednn},
                          {"infer_default_layout", invariant}};
  if (json) {
    std::printf("%s\n", facts.dump().c_str());
    return Status::Ok();
  }
  std::string flags;
  for (const std::string& f : facts["cpu_flags"]) flags += (flags.empty() ? "" : " ") + f;
  std::printf("cpu flags:        %s\n", flags.c_str());
  std::printf("openblas core:    %s\n", facts["openblas_core"].get<std::string>().c_str());
  std::printf("pipewright level: %s (%s lowers it: avx2, scalar)\n", KernelIsaName(ActiveKernelIsa()),
              kKernelLevelEnv);
  std::printf("oneDNN prepacked: %s\n", onednn ? "yes (--weights-layout prepacked)" : "no (needs AVX-512)");
  std::printf("infer default:    %s (batch invariant; --batch-invariant off: %s)\n", invariant.c_str(),
              DefaultLayout("off", onednn).c_str());
  return Status::Ok();
}

}  // namespace

void AddKernelsCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* cmd = app.add_subcommand(
      "kernels", "Print this machine's kernel facts: CPU flags, OpenBLAS core, pipewright's kernel level, oneDNN");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "One JSON object instead of lines");
  cmd->callback([&ctx, json] { ctx.run = [json] { return RunKernels(*json); }; });
}

}  // namespace pw::cli
