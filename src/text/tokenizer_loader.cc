#include "text/tokenizer_loader.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "text/byte_tokenizer.h"
#include "text/ids_only_tokenizer.h"
#include "text/hf_tokenizer_json.h"
#include "text/sentencepiece_tokenizer.h"

namespace pw {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The files a model directory's tokenizer may be, in the order they are tried.
constexpr const char* kTokenizerFiles[] = {"tokenizer.json", "tokenizer.model", "vocab.json"};

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The JSON object in `path`, or null when the file does not exist.
Result<Json> OptionalJson(const fs::path& path) {
  if (!IsFile(path)) return Json();
  PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path.string()));
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument(path.string() + ": not a JSON object");
  return j;
}

Result<std::unique_ptr<Tokenizer>> LoadBpe(BpeFile file, const std::string& source, std::optional<int32_t>& template_bos) {
  template_bos = file.template_bos;
  PW_ASSIGN_OR_RETURN(std::unique_ptr<ByteLevelBpe> bpe,
                      ByteLevelBpe::Create(std::move(file.tables), std::move(file.options), source));
  return std::unique_ptr<Tokenizer>(std::move(bpe));
}

// The tokenizer file itself, by name.
Result<std::unique_ptr<Tokenizer>> LoadFile(const fs::path& file, std::optional<int32_t>& template_bos) {
  const std::string name = file.filename().string();
  if (file.extension() == ".model") {
    PW_ASSIGN_OR_RETURN(auto sp, SentencePieceTokenizer::Load(file.string()));
    return std::unique_ptr<Tokenizer>(std::move(sp));
  }
  if (name == "vocab.json" || name == "merges.txt") {
    const fs::path dir = file.parent_path();
    PW_ASSIGN_OR_RETURN(BpeFile bpe, ReadGpt2BpeFiles((dir / "vocab.json").string(), (dir / "merges.txt").string()));
    std::optional<int32_t> end_of_text;
    if (auto it = bpe.tables.vocab.find("<|endoftext|>"); it != bpe.tables.vocab.end()) end_of_text = it->second;
    PW_ASSIGN_OR_RETURN(auto tokenizer, LoadBpe(std::move(bpe), (dir / "vocab.json").string(), template_bos));
    // GPT-2's tokenizer begins and ends documents with <|endoftext|> but
    // never prepends it to a prompt.
    if (end_of_text) tokenizer->set_special(SpecialTokens{end_of_text, end_of_text, {*end_of_text}, false});
    return tokenizer;
  }
  if (file.extension() == ".json") {
    PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(file.string()));
    PW_ASSIGN_OR_RETURN(auto parsed, ReadTokenizerJson(text, file.string()));
    if (auto* bpe = std::get_if<BpeFile>(&parsed)) return LoadBpe(std::move(*bpe), file.string(), template_bos);
    auto& pieces = std::get<PieceFile>(parsed);
    template_bos = pieces.template_bos;
    PW_ASSIGN_OR_RETURN(std::unique_ptr<PieceTokenizer> tokenizer,
                        PieceTokenizer::Create(std::move(pieces.tables), std::move(pieces.options), file.string()));
    return std::unique_ptr<Tokenizer>(std::move(tokenizer));
  }
  return Status::InvalidArgument(file.string() + ": unknown tokenizer type; give tokenizer.json, "
                                 "a SentencePiece *.model, GPT-2's vocab.json + merges.txt, or their directory");
}

// The id a config field gives: an integer, a list of integers (first one
// here; all of them in `all`), or a token name / {"content": name}.
Result<std::optional<int32_t>> IdField(const Json& j, const char* key, const Tokenizer& tokenizer,
                                       const std::string& source, std::vector<int32_t>* all = nullptr) {
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return std::optional<int32_t>();
  const Json& v = j[key];
  std::vector<int64_t> ids;
  if (v.is_number_integer()) {
    ids.push_back(v.get<int64_t>());
  } else if (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_number_integer(); })) {
    for (const Json& e : v) ids.push_back(e.get<int64_t>());
  } else if (v.is_string() || (v.is_object() && v.contains("content") && v["content"].is_string())) {
    const std::string name = v.is_string() ? v.get<std::string>() : v["content"].get<std::string>();
    auto id = tokenizer.TokenId(name);
    if (!id) return Status::InvalidArgument(source + ": " + key + " names '" + name + "', which the tokenizer lacks");
    ids.push_back(*id);
  } else {
    return Status::InvalidArgument(source + ": " + key + " must be a token id, a list of ids or a token name");
  }
  for (int64_t id : ids) {
    if (id < 0 || id >= tokenizer.vocab_size()) {
      return Status::InvalidArgument(source + ": " + key + " " + std::to_string(id) + " is outside the tokenizer's " +
                                     std::to_string(tokenizer.vocab_size()) + " ids; is this config from another model?");
    }
  }
  if (all != nullptr) all->assign(ids.begin(), ids.end());
  return std::optional<int32_t>(static_cast<int32_t>(ids.front()));
}

// `dir`: the model directory, or the tokenizer file's directory.
Status ReadSpecialTokens(const fs::path& dir, std::optional<int32_t> template_bos, Tokenizer& tokenizer) {
  SpecialTokens special = tokenizer.special();
  if (template_bos) special.bos = template_bos;
  PW_ASSIGN_OR_RETURN(Json generation, OptionalJson(dir / "generation_config.json"));
  PW_ASSIGN_OR_RETURN(Json config, OptionalJson(dir / "config.json"));
  PW_ASSIGN_OR_RETURN(Json tokenizer_config, OptionalJson(dir / "tokenizer_config.json"));
  const std::string gen_src = (dir / "generation_config.json").string();
  const std::string cfg_src = (dir / "config.json").string();
  const std::string tok_src = (dir / "tokenizer_config.json").string();
  // Lowest precedence first: each later source overrides what it says.
  for (auto [j, src, bos_key, eos_key] :
       {std::tuple{&tokenizer_config, tok_src, "bos_token", "eos_token"},
        std::tuple{&config, cfg_src, "bos_token_id", "eos_token_id"},
        std::tuple{&generation, gen_src, "bos_token_id", "eos_token_id"}}) {
    PW_ASSIGN_OR_RETURN(auto bos, IdField(*j, bos_key, tokenizer, src));
    std::vector<int32_t> eos_all;
    PW_ASSIGN_OR_RETURN(auto eos, IdField(*j, eos_key, tokenizer, src, &eos_all));
    if (bos) special.bos = bos;
    if (eos) {
      special.eos = eos;
      special.stop_ids = eos_all;
    }
  }
  if (tokenizer_config.is_object() && tokenizer_config.contains("add_bos_token") &&
      tokenizer_config["add_bos_token"].is_boolean()) {
    special.add_bos = tokenizer_config["add_bos_token"].get<bool>() && special.bos.has_value();
  } else if (template_bos) {
    special.add_bos = true;
  }
  tokenizer.set_special(std::move(special));
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  std::optional<int32_t> template_bos;
  std::unique_ptr<Tokenizer> tokenizer;
  fs::path dir;
  if (fs::is_directory(p, ec)) {
    dir = p;
    fs::path file;
    for (const char* name : kTokenizerFiles) {
      if (IsFile(p / name)) {
        file = p / name;
        break;
      }
    }
    if (file.empty()) {
      return Status::NotFound(path + " holds no tokenizer: looked for tokenizer.json, tokenizer.model and "
                              "vocab.json + merges.txt; copy the model's tokenizer files there or pass --tokenizer");
    }
    Result<std::unique_ptr<Tokenizer>> loaded = LoadFile(file, template_bos);
    // A tokenizer.json this reader cannot run (e.g. a Precompiled charsmap)
    // gives way to the tokenizer.model beside it.
    if (!loaded.ok() && file.filename() == "tokenizer.json" && IsFile(p / "tokenizer.model")) {
      template_bos.reset();
      loaded = LoadFile(p / "tokenizer.model", template_bos);
    }
    if (!loaded.ok()) return loaded.status();
    tokenizer = std::move(*loaded);
  } else if (IsFile(p)) {
    PW_ASSIGN_OR_RETURN(tokenizer, LoadFile(p, template_bos));
    // A tokenizer file inside a model directory: its configs say BOS/EOS.
    dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  } else {
    return Status::NotFound(path + ": no such tokenizer file or model directory");
  }
  PW_RETURN_IF_ERROR(ReadSpecialTokens(dir, template_bos, *tokenizer));
  return tokenizer;
}

bool HasTokenizerFiles(const std::string& dir) {
  return std::any_of(std::begin(kTokenizerFiles), std::end(kTokenizerFiles),
                     [&](const char* name) { return IsFile(fs::path(dir) / name); });
}

std::vector<std::string> TokenizerFilesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const char* name : {"tokenizer.json", "tokenizer.model", "vocab.json", "merges.txt", "tokenizer_config.json",
                           "special_tokens_map.json", "generation_config.json", "config.json"}) {
    if (IsFile(fs::path(dir) / name)) names.emplace_back(name);
  }
  return names;
}

std::unique_ptr<Tokenizer> MakeByteTokenizer() { return std::make_unique<ByteTokenizer>(); }

Result<std::unique_ptr<Tokenizer>> MakeIdsOnlyTokenizer(int64_t vocab_size, const std::string& model_dir) {
  auto tokenizer = std::make_unique<IdsOnlyTokenizer>(vocab_size);
  if (model_dir.empty()) return std::unique_ptr<Tokenizer>(std::move(tokenizer));
  // The model's own configs only (tokenizer_config.json names tokens, which
  // need a vocabulary): lowest precedence first.
  SpecialTokens special;
  for (const char* name : {"config.json", "generation_config.json"}) {
    const fs::path file = fs::path(model_dir) / name;
    PW_ASSIGN_OR_RETURN(Json j, OptionalJson(file));
    PW_ASSIGN_OR_RETURN(auto bos, IdField(j, "bos_token_id", *tokenizer, file.string()));
    std::vector<int32_t> eos_all;
    PW_ASSIGN_OR_RETURN(auto eos, IdField(j, "eos_token_id", *tokenizer, file.string(), &eos_all));
    if (bos) special.bos = bos;
    if (eos) {
      special.eos = eos;
      special.stop_ids = eos_all;
    }
  }
  tokenizer->set_special(std::move(special));  // prompt ids are used as given: no BOS added
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

}  // namespace pw
