// Loading a Hugging Face checkpoint per pipeline stage reads only that
// stage's bytes: writes a Llama-family model of about 1 GB in bf16
// (model.safetensors: vocabulary 32,000, width 2048, 10 layers, 16 heads of
// which 8 key/value, SwiGLU 5632, tied head), then for each stage of a pp=2
// split drops the file from the page cache (posix_fadvise DONTNEED), loads
// the stage's parameters as training does (LoadHfParameters with the
// stage's names), and counts the file's pages in the page cache afterwards
// (mincore): the bytes read from disk. Prints, per stage: the bytes its
// tensors hold in the file, the bytes read, their share of the file, and
// the load time; then the whole model the same way.
//
// Usage: hf_load_torch_bench [DIR]   (default: a temporary directory, removed after)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <vector>
#include <string>

#include "model/hf_checkpoint.h"
#include "model/partitioner.h"

namespace {

namespace fs = std::filesystem;
using pw::ModelConfig;

ModelConfig BenchConfig() {
  ModelConfig c;
  c.vocab_size = 32000;
  c.d_model = 2048;
  c.n_layers = 10;
  c.n_heads = 16;
  c.n_kv_heads = 8;
  c.d_ff = 5632;
  c.seq_len = 256;
  c.position = pw::PositionKind::kRope;
  c.norm = pw::NormKind::kRmsNorm;
  c.mlp = pw::MlpKind::kSwiGlu;
  c.bias = false;
  c.tie_embeddings = true;
  return c;
}

// Drops `path`'s clean pages from the page cache; the next read comes from disk.
void Evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Bytes of `path` now in the page cache.
int64_t CachedBytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return -1;
  const auto size = static_cast<size_t>(fs::file_size(path));
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return -1;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  int64_t bytes = 0;
  if (::mincore(map, size, resident.data()) == 0) {
    for (unsigned char r : resident) bytes += (r & 1) ? static_cast<int64_t>(page) : 0;
  }
  ::munmap(map, size);
  return bytes;
}

bool InSpan(std::string_view name, const pw::StageSpan& span) {
  if (name.rfind("embed.", 0) == 0) return span.has_embedding;
  if (name.rfind("head.", 0) == 0) return span.has_head;
  for (int i = span.first_block; i < span.first_block + span.num_blocks; ++i) {
    if (name.rfind("blocks." + std::to_string(i) + ".", 0) == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);
  const bool own_dir = argc < 2;
  const std::string dir = own_dir ? (fs::temp_directory_path() / ("pw_hf_load_" + std::to_string(::getpid()))).string()
                                  : std::string(argv[1]);
  const ModelConfig config = BenchConfig();
  if (!pw::ValidateModelConfig(config).ok()) {
    std::fprintf(stderr, "bad config: %s\n", pw::ValidateModelConfig(config).ToString().c_str());
    return 1;
  }
  // Every parameter, constant-filled (the values do not matter here), written as bf16.
  {
    pw::HfNamedTensors params;
    const int64_t d = config.d_model, kv = config.kv_width(), h = config.ffn_width(), v = config.vocab_size;
    params.emplace_back("embed.tok_emb", at::full({v, d}, 0.01f));
    for (int i = 0; i < config.n_layers; ++i) {
      const std::string b = "blocks." + std::to_string(i) + ".";
      params.emplace_back(b + "ln1.weight", at::ones({d}));
      params.emplace_back(b + "attn.qkv.weight", at::full({d + 2 * kv, d}, 0.01f));
      params.emplace_back(b + "attn.proj.weight", at::full({d, d}, 0.01f));
      params.emplace_back(b + "ln2.weight", at::ones({d}));
      params.emplace_back(b + "mlp.fc.weight", at::full({2 * h, d}, 0.01f));
      params.emplace_back(b + "mlp.proj.weight", at::full({d, h}, 0.01f));
    }
    params.emplace_back("head.ln.weight", at::ones({d}));
    const auto start = std::chrono::steady_clock::now();
    const pw::Status written = pw::ExportHfModel(dir, config, params, "BF16");
    if (!written.ok()) {
      std::fprintf(stderr, "writing the checkpoint: %s\n", written.ToString().c_str());
      return 1;
    }
    std::printf("wrote %s: %lld parameters in bf16 (%.2f s)\n", dir.c_str(),
                static_cast<long long>(pw::CountParameters(config)),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  const std::string file = (fs::path(dir) / "model.safetensors").string();
  const int64_t file_bytes = static_cast<int64_t>(fs::file_size(file));
  auto partition = pw::PartitionModel(config, 2, "");
  if (!partition.ok()) return 1;
  std::printf("model.safetensors: %.1f MiB; pp=2 split, blocks per stage %s\n", file_bytes / 1048576.0,
              partition->BlocksPerStageString().c_str());
  std::printf("%-8s %14s %14s %10s %10s\n", "load", "tensors MiB", "read MiB", "of file", "seconds");
  auto measure = [&](const char* label, const std::function<bool(std::string_view)>& wanted) {
    Evict(file);
    const int64_t before = CachedBytes(file);
    const auto start = std::chrono::steady_clock::now();
    auto loaded = pw::LoadHfParameters(dir, config, wanted);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s: %s\n", label, loaded.status().ToString().c_str());
      return;
    }
    int64_t tensor_bytes = 0;
    for (const auto& [name, t] : *loaded) tensor_bytes += t.numel() * 2;  // bf16 in the file
    const int64_t read = CachedBytes(file) - before;
    std::printf("%-8s %14.1f %14.1f %9.1f%% %10.2f\n", label, tensor_bytes / 1048576.0, read / 1048576.0,
                100.0 * read / file_bytes, seconds);
  };
  for (const pw::StageSpan& span : partition->stages) {
    const std::string label = "stage " + std::to_string(span.stage);
    measure(label.c_str(), [&](std::string_view name) { return InSpan(name, span); });
  }
  measure("whole", [](std::string_view) { return true; });
  if (own_dir) fs::remove_all(dir);
  return 0;
}
