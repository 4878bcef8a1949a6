#include "text/sentencepiece_tokenizer.h"

#include <cstdlib>
#include <filesystem>

#include "os/environment.h"
#include "os/shared_library.h"
#include "text/sentencepiece_plugin.h"

namespace pw {

// The plugin's entry points (sentencepiece_plugin.h).
struct SentencePieceTokenizer::Plugin {
  decltype(&pw_sp_load) load = nullptr;
  decltype(&pw_sp_free) free = nullptr;
  decltype(&pw_sp_encode) encode = nullptr;
  decltype(&pw_sp_decode) decode = nullptr;
  decltype(&pw_sp_piece_size) piece_size = nullptr;
  decltype(&pw_sp_bos_id) bos_id = nullptr;
  decltype(&pw_sp_eos_id) eos_id = nullptr;
  decltype(&pw_sp_is_control) is_control = nullptr;
  decltype(&pw_sp_piece_id) piece_id = nullptr;
  decltype(&pw_sp_free_buffer) free_buffer = nullptr;
  std::string error;  // why it could not be loaded; empty when loaded
};

namespace {

constexpr const char* kPluginName = "libpw_sentencepiece.so";

// Where to look: $PIPEWRIGHT_SENTENCEPIECE_PLUGIN, the build tree's copy,
// then beside the running binary.
std::vector<std::string> PluginCandidates() {
  std::vector<std::string> paths;
  if (auto env = EnvironmentVariable("PIPEWRIGHT_SENTENCEPIECE_PLUGIN")) paths.push_back(*env);
#ifdef PW_SENTENCEPIECE_PLUGIN
  paths.emplace_back(PW_SENTENCEPIECE_PLUGIN);
#endif
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) paths.push_back((self.parent_path() / kPluginName).string());
  return paths;
}

template <class F>
bool Bind(const SharedLibrary& library, const char* name, F& out) {
  out = reinterpret_cast<F>(library.Symbol(name));
  return out != nullptr;
}

}  // namespace

SentencePieceTokenizer::~SentencePieceTokenizer() { plugin_.free(processor_); }

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::Load(const std::string& path) {
  // Loaded once per process and never unloaded; immutable afterwards.
  static const Plugin plugin = [] {
    Plugin p;
    std::string tried;
    for (const std::string& candidate : PluginCandidates()) {
      Result<SharedLibrary> library = SharedLibrary::OpenIsolated(candidate);
      if (!library.ok()) {
        tried += (tried.empty() ? "" : "; ") + library.status().message();
        continue;
      }
      const SharedLibrary& handle = *library;
      if (Bind(handle, "pw_sp_load", p.load) && Bind(handle, "pw_sp_free", p.free) &&
          Bind(handle, "pw_sp_encode", p.encode) && Bind(handle, "pw_sp_decode", p.decode) &&
          Bind(handle, "pw_sp_piece_size", p.piece_size) && Bind(handle, "pw_sp_bos_id", p.bos_id) &&
          Bind(handle, "pw_sp_eos_id", p.eos_id) && Bind(handle, "pw_sp_is_control", p.is_control) &&
          Bind(handle, "pw_sp_piece_id", p.piece_id) && Bind(handle, "pw_sp_free_buffer", p.free_buffer)) {
        library->KeepLoaded();  // its functions serve every tokenizer until exit
        return p;
      }
      tried += (tried.empty() ? "" : "; ") + candidate + " lacks the pw_sp_* functions";
    }
    p.error = "SentencePiece support (" + std::string(kPluginName) + ") could not be loaded: " +
              (tried.empty() ? std::string("no candidate path") : tried) +
              "; rebuild with scripts/build.sh, or point PIPEWRIGHT_SENTENCEPIECE_PLUGIN at it";
    return p;
  }();
  if (!plugin.error.empty()) return Status::FailedPrecondition(plugin.error);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status::NotFound(path + ": no such SentencePiece model file");
  char error[512] = {};
  void* processor = plugin.load(path.c_str(), error, sizeof(error));
  if (processor == nullptr) {
    return Status::InvalidArgument(path + ": not a SentencePiece model (" + error +
                                   "); a Llama 2 style tokenizer.model is expected");
  }
  std::unique_ptr<SentencePieceTokenizer> tokenizer(new SentencePieceTokenizer(plugin, processor));
  SpecialTokens special;
  if (plugin.bos_id(processor) >= 0) special.bos = plugin.bos_id(processor);
  if (plugin.eos_id(processor) >= 0) {
    special.eos = plugin.eos_id(processor);
    special.stop_ids = {*special.eos};
  }
  special.add_bos = special.bos.has_value();
  tokenizer->set_special(std::move(special));
  return tokenizer;
}

Result<std::vector<int32_t>> SentencePieceTokenizer::EncodeText(std::string_view text) const {
  int* ids = nullptr;
  size_t count = 0;
  char error[512] = {};
  if (plugin_.encode(processor_, text.data(), text.size(), &ids, &count, error, sizeof(error)) != 0) {
    return Status::InvalidArgument(std::string("SentencePiece could not encode the text: ") + error);
  }
  std::vector<int32_t> out(ids, ids + count);
  plugin_.free_buffer(ids);
  return out;
}

Result<std::string> SentencePieceTokenizer::DecodeIds(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (skip_special && plugin_.is_control(processor_, ids[i]) != 0) continue;
    kept.push_back(ids[i]);
  }
  char* text = nullptr;
  size_t size = 0;
  char error[512] = {};
  if (plugin_.decode(processor_, kept.data(), kept.size(), &text, &size, error, sizeof(error)) != 0) {
    return Status::InvalidArgument(std::string("SentencePiece could not decode the ids: ") + error);
  }
  std::string out(text, size);
  plugin_.free_buffer(text);
  return out;
}

int64_t SentencePieceTokenizer::vocab_size() const { return plugin_.piece_size(processor_); }

std::optional<int32_t> SentencePieceTokenizer::TokenId(const std::string& token) const {
  const int id = plugin_.piece_id(processor_, token.c_str());
  if (id < 0) return std::nullopt;
  return id;
}

}  // namespace pw
