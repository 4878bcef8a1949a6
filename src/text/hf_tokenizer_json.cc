#include "text/hf_tokenizer_json.h"

#include <nlohmann/json.hpp>

#include "core/file_io.h"

namespace pw {
namespace {

using Json = nlohmann::json;

// Ids past this are refused: no real vocabulary comes near 16.7 M tokens,
// and tables are sized by the largest id.
constexpr int64_t kMaxTokenId = (1 << 24) - 1;

bool IsTokenId(const Json& id) {
  return id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= kMaxTokenId;
}

Status BadId(const Json& id, const std::string& where) {
  return Status::InvalidArgument(where + " must be a token id in [0, " + std::to_string(kMaxTokenId) + "], got " +
                                 id.dump());
}

Status Unsupported(const std::string& source, const std::string& field, const std::string& what,
                   const std::string& how) {
  return Status::InvalidArgument(source + ": " + field + " " + what + " is not supported; " + how);
}

std::string TypeOf(const Json& j) { return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "?"; }

Status ReadVocab(const Json& vocab, const std::string& source, const std::string& field, BpeTables& tables) {
  if (!vocab.is_object()) return Status::InvalidArgument(source + ": " + field + " must be an object of token → id");
  tables.vocab.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!IsTokenId(id)) return BadId(id, source + ": " + field + "['" + token + "']");
    tables.vocab.emplace(token, id.get<int32_t>());
  }
  return Status::Ok();
}

// One merge written "left right" (tokens never hold a plain space in
// byte-level vocabularies, whose space is the stand-in 'Ġ').
template <class Where>
Status SplitMerge(std::string_view line, const Where& where, BpeTables& tables) {
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 >= line.size() ||
      line.find(' ', space + 1) != std::string_view::npos) {
    return Status::InvalidArgument(where() + ": a merge is two tokens separated by one space, got '" +
                                   std::string(line) + "'");
  }
  tables.merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  return Status::Ok();
}

Status ReadMerges(const Json& merges, const std::string& source, BpeTables& tables) {
  if (!merges.is_array()) return Status::InvalidArgument(source + ": model.merges must be an array");
  tables.merges.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const Json& m = merges[i];
    // The place of a message, built only when there is one.
    const auto where = [&] { return source + ": model.merges[" + std::to_string(i) + "]"; };
    if (m.is_string()) {
      PW_RETURN_IF_ERROR(SplitMerge(m.get_ref<const std::string&>(), where, tables));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      tables.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return Status::InvalidArgument(where() + " must be \"left right\" or [\"left\", \"right\"]");
    }
  }
  return Status::Ok();
}

Status ReadNormalizer(const Json& n, const std::string& source, const std::string& field, BpeOptions& options) {
  if (n.is_null()) return Status::Ok();
  const std::string type = TypeOf(n);
  if (type == "NFC") {
    options.nfc = true;
    return Status::Ok();
  }
  if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    for (size_t i = 0; i < n["normalizers"].size(); ++i) {
      PW_RETURN_IF_ERROR(ReadNormalizer(n["normalizers"][i], source, field + ".normalizers[" + std::to_string(i) + "]", options));
    }
    return Status::Ok();
  }
  return Unsupported(source, field + ".type", "'" + type + "'",
                     "pipewright's byte-level BPE normalises with NFC or not at all");
}

// Reads one pre-tokenizer; `byte_level` turns true once a ByteLevel step is seen.
Status ReadPreTokenizer(const Json& p, const std::string& source, const std::string& field, BpeOptions& options,
                        bool& byte_level) {
  const std::string type = TypeOf(p);
  if (type == "ByteLevel") {
    byte_level = true;
    options.add_prefix_space = p.value("add_prefix_space", false);
    if (p.value("use_regex", true)) options.split_patterns.emplace_back(kGpt2SplitPattern);
    return Status::Ok();
  }
  if (type == "Split") {
    const Json& pattern = p.value("pattern", Json());
    std::string regex;
    if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
      regex = pattern["Regex"].get<std::string>();
    } else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
      // A literal string: quote it for the regex engine.
      regex = "\\Q" + pattern["String"].get<std::string>() + "\\E";
    } else {
      return Status::InvalidArgument(source + ": " + field + ".pattern must be {\"Regex\": …} or {\"String\": …}");
    }
    const std::string behavior = p.value("behavior", std::string("Isolated"));
    if (behavior != "Isolated" || p.value("invert", false)) {
      return Unsupported(source, field + ".behavior", "'" + behavior + "'" + (p.value("invert", false) ? " inverted" : ""),
                         "only \"Isolated\", not inverted (what GPT-2, Llama 3 and Qwen2 use)");
    }
    options.split_patterns.push_back(std::move(regex));
    return Status::Ok();
  }
  if (type == "Sequence" && p.contains("pretokenizers") && p["pretokenizers"].is_array()) {
    for (size_t i = 0; i < p["pretokenizers"].size(); ++i) {
      PW_RETURN_IF_ERROR(ReadPreTokenizer(p["pretokenizers"][i], source,
                                          field + ".pretokenizers[" + std::to_string(i) + "]", options, byte_level));
    }
    return Status::Ok();
  }
  if (type == "Metaspace") {
    return Unsupported(source, field + ".type", "'Metaspace' (a SentencePiece-style tokenizer)",
                       "put the model's tokenizer.model (SentencePiece) beside it and remove tokenizer.json, "
                       "or convert to byte-level BPE");
  }
  return Unsupported(source, field + ".type", "'" + type + "'", "supported: ByteLevel, Split, Sequence");
}

// The id a TemplateProcessing post-processor puts before sequence A.
std::optional<int32_t> TemplateBos(const Json& post) {
  if (TypeOf(post) == "Sequence" && post.contains("processors") && post["processors"].is_array()) {
    for (const Json& p : post["processors"]) {
      if (auto bos = TemplateBos(p)) return bos;
    }
    return std::nullopt;
  }
  if (TypeOf(post) != "TemplateProcessing" || !post.contains("single") || !post["single"].is_array() ||
      post["single"].empty()) {
    return std::nullopt;
  }
  const Json& first = post["single"][0];
  if (!first.is_object() || !first.contains("SpecialToken")) return std::nullopt;
  const std::string name = first["SpecialToken"].value("id", std::string());
  const Json& specials = post.value("special_tokens", Json::object());
  if (!specials.contains(name)) return std::nullopt;
  const Json& ids = specials[name].value("ids", Json::array());
  if (!ids.is_array() || ids.size() != 1 || !ids[0].is_number_integer()) return std::nullopt;
  return ids[0].get<int32_t>();
}

}  // namespace

static Result<BpeFile> ParseTokenizerJsonFields(std::string_view json_text, const std::string& source);

Result<BpeFile> ParseTokenizerJson(std::string_view json_text, const std::string& source) {
  // A field of the wrong type (e.g. "add_prefix_space": null) makes
  // nlohmann throw; say which file, and what was expected.
  try {
    return ParseTokenizerJsonFields(json_text, source);
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(source + ": a field has the wrong type (" + e.what() +
                                   "); is this a Hugging Face tokenizer.json?");
  }
}

static Result<BpeFile> ParseTokenizerJsonFields(std::string_view json_text, const std::string& source) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument(source + ": not a JSON object; is this a Hugging Face tokenizer.json?");
  }
  const Json& model = j.value("model", Json());
  if (!model.is_object()) return Status::InvalidArgument(source + ": model is missing; is this a Hugging Face tokenizer.json?");
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") {
    return Unsupported(source, "model.type", "'" + type + "'",
                       "pipewright reads byte-level BPE tokenizer.json; for a SentencePiece model give tokenizer.model");
  }
  if (model.value("continuing_subword_prefix", Json()).is_string() &&
      !model["continuing_subword_prefix"].get<std::string>().empty()) {
    return Unsupported(source, "model.continuing_subword_prefix", "'" + model["continuing_subword_prefix"].get<std::string>() + "'",
                       "byte-level BPE has no subword prefix");
  }
  BpeFile file;
  PW_RETURN_IF_ERROR(ReadVocab(model.value("vocab", Json()), source, "model.vocab", file.tables));
  PW_RETURN_IF_ERROR(ReadMerges(model.value("merges", Json::array()), source, file.tables));
  file.options.ignore_merges = model.value("ignore_merges", false);
  PW_RETURN_IF_ERROR(ReadNormalizer(j.value("normalizer", Json()), source, "normalizer", file.options));
  bool byte_level = false;
  const Json& pre = j.value("pre_tokenizer", Json());
  if (!pre.is_null()) PW_RETURN_IF_ERROR(ReadPreTokenizer(pre, source, "pre_tokenizer", file.options, byte_level));
  if (!byte_level) {
    return Unsupported(source, "pre_tokenizer", "without a ByteLevel step",
                       "pipewright reads byte-level BPE (GPT-2, Llama 3, Qwen2); for a SentencePiece model give tokenizer.model");
  }
  const Json& added = j.value("added_tokens", Json::array());
  for (size_t i = 0; added.is_array() && i < added.size(); ++i) {
    const Json& a = added[i];
    if (!a.is_object() || !a.contains("id") || !a.contains("content") || !a["content"].is_string()) {
      return Status::InvalidArgument(source + ": added_tokens[" + std::to_string(i) + "] needs an integer id and a string content");
    }
    if (!IsTokenId(a["id"])) return BadId(a["id"], source + ": added_tokens[" + std::to_string(i) + "].id");
    file.tables.added.push_back(AddedToken{a["content"].get<std::string>(), a["id"].get<int32_t>(),
                                           a.value("special", false), a.value("lstrip", false), a.value("rstrip", false)});
  }
  file.template_bos = TemplateBos(j.value("post_processor", Json()));
  return file;
}

Result<BpeFile> ReadGpt2BpeFiles(const std::string& vocab_json_path, const std::string& merges_txt_path) {
  PW_ASSIGN_OR_RETURN(std::string vocab_text, ReadTextFile(vocab_json_path));
  PW_ASSIGN_OR_RETURN(std::string merges_text, ReadTextFile(merges_txt_path));
  Json vocab = Json::parse(vocab_text, nullptr, /*allow_exceptions=*/false);
  if (vocab.is_discarded()) return Status::InvalidArgument(vocab_json_path + ": not valid JSON");
  BpeFile file;
  PW_RETURN_IF_ERROR(ReadVocab(vocab, vocab_json_path, "the vocabulary", file.tables));
  size_t line_no = 0, begin = 0;
  while (begin < merges_text.size()) {
    size_t end = merges_text.find('\n', begin);
    if (end == std::string::npos) end = merges_text.size();
    std::string_view line(merges_text.data() + begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_no;
    if (!line.empty() && !(line_no == 1 && line.starts_with("#version"))) {
      PW_RETURN_IF_ERROR(SplitMerge(
          line, [&] { return merges_txt_path + ":" + std::to_string(line_no); }, file.tables));
    }
    begin = end + 1;
  }
  file.options.split_patterns.emplace_back(kGpt2SplitPattern);
  auto eot = file.tables.vocab.find("<|endoftext|>");
  if (eot != file.tables.vocab.end()) file.tables.added.push_back(AddedToken{eot->first, eot->second, true});
  return file;
}

}  // namespace pw
