#include "text/hf_tokenizer_json.h"

#include "core/file_io.h"
#include "text/piece_tokenizer_json.h"
#include "text/tokenizer_json_fields.h"

namespace pw {
namespace {

using namespace tokenizer_json;  // NOLINT: this file is one of its two readers

Status ReadVocab(const Json& vocab, const std::string& source, const std::string& field, BpeTables& tables) {
  if (!vocab.is_object()) return Status::InvalidArgument(source + ": " + field + " must be an object of token → id");
  tables.vocab.reserve(vocab.size());
  for (const auto& [token, id] : vocab.items()) {
    if (!IsTokenId(id)) return BadId(id, source + ": " + field + "['" + token + "']");
    tables.vocab.emplace(token, id.get<int32_t>());
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
    return Unsupported(source, field + ".type", "'Metaspace' next to a ByteLevel step",
                       "a SentencePiece-style tokenizer.json has no ByteLevel step (it is read as such without one)");
  }
  return Unsupported(source, field + ".type", "'" + type + "'", "supported: ByteLevel, Split, Sequence");
}

// Whether a tokenizer.json is byte-level BPE: a ByteLevel step in its
// pre-tokenizer or decoder.
bool HasByteLevelStep(const Json& j) {
  if (!j.is_object()) return false;
  if (TypeOf(j) == "ByteLevel") return true;
  for (const char* list : {"pretokenizers", "decoders"}) {
    if (j.contains(list) && j[list].is_array()) {
      for (const Json& step : j[list]) {
        if (HasByteLevelStep(step)) return true;
      }
    }
  }
  return false;
}

Result<Json> ParseJsonObject(std::string_view json_text, const std::string& source) {
  Json j = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument(source + ": not a JSON object; is this a Hugging Face tokenizer.json?");
  }
  if (!j.value("model", Json()).is_object()) {
    return Status::InvalidArgument(source + ": model is missing; is this a Hugging Face tokenizer.json?");
  }
  return j;
}

Result<BpeFile> ParseByteLevel(const Json& j, const std::string& source) {
  const Json& model = j["model"];
  const std::string type = model.value("type", std::string("BPE"));
  if (type != "BPE") {
    return Unsupported(source, "model.type", "'" + type + "'",
                       "a byte-level tokenizer.json holds a BPE model");
  }
  if (model.value("continuing_subword_prefix", Json()).is_string() &&
      !model["continuing_subword_prefix"].get<std::string>().empty()) {
    return Unsupported(source, "model.continuing_subword_prefix", "'" + model["continuing_subword_prefix"].get<std::string>() + "'",
                       "byte-level BPE has no subword prefix");
  }
  BpeFile file;
  PW_RETURN_IF_ERROR(ReadVocab(model.value("vocab", Json()), source, "model.vocab", file.tables));
  PW_RETURN_IF_ERROR(ReadMerges(model.value("merges", Json::array()), source, file.tables.merges));
  file.options.ignore_merges = model.value("ignore_merges", false);
  PW_RETURN_IF_ERROR(ReadNormalizer(j.value("normalizer", Json()), source, "normalizer", file.options));
  bool byte_level = false;
  const Json& pre = j.value("pre_tokenizer", Json());
  if (!pre.is_null()) PW_RETURN_IF_ERROR(ReadPreTokenizer(pre, source, "pre_tokenizer", file.options, byte_level));
  if (!byte_level) {
    return Unsupported(source, "pre_tokenizer", "without a ByteLevel step",
                       "a byte-level tokenizer.json (GPT-2, Llama 3, Qwen2) has a ByteLevel pre-tokenizer");
  }
  PW_RETURN_IF_ERROR(ReadAddedTokens(j.value("added_tokens", Json::array()), source, file.tables.added));
  file.template_bos = TemplateBos(j.value("post_processor", Json()));
  return file;
}

}  // namespace

Result<std::variant<BpeFile, PieceFile>> ReadTokenizerJson(std::string_view json_text, const std::string& source) {
  PW_ASSIGN_OR_RETURN(Json j, ParseJsonObject(json_text, source));
  return CatchingTypeErrors(source, [&]() -> Result<std::variant<BpeFile, PieceFile>> {
    if (HasByteLevelStep(j.value("pre_tokenizer", Json())) || HasByteLevelStep(j.value("decoder", Json()))) {
      PW_ASSIGN_OR_RETURN(BpeFile file, ParseByteLevel(j, source));
      return std::variant<BpeFile, PieceFile>(std::move(file));
    }
    PW_ASSIGN_OR_RETURN(PieceFile file, ParsePieceTokenizerJson(j, source));
    return std::variant<BpeFile, PieceFile>(std::move(file));
  });
}

Result<BpeFile> ParseTokenizerJson(std::string_view json_text, const std::string& source) {
  PW_ASSIGN_OR_RETURN(Json j, ParseJsonObject(json_text, source));
  return CatchingTypeErrors(source, [&] { return ParseByteLevel(j, source); });
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
      PW_RETURN_IF_ERROR(ReadMergeLine(
          line, [&] { return merges_txt_path + ":" + std::to_string(line_no); }, file.tables.merges));
    }
    begin = end + 1;
  }
  file.options.split_patterns.emplace_back(kGpt2SplitPattern);
  auto eot = file.tables.vocab.find("<|endoftext|>");
  if (eot != file.tables.vocab.end()) file.tables.added.push_back(AddedToken{eot->first, eot->second, true});
  return file;
}

}  // namespace pw
