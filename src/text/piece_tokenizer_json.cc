#include "text/piece_tokenizer_json.h"

#include "text/tokenizer_json_fields.h"

namespace pw {
namespace {

using namespace tokenizer_json;  // NOLINT: this file is one of its two readers

// What to do about a part this reader does not run.
constexpr const char* kUseTokenizerModel =
    "put the model's tokenizer.model (SentencePiece) beside it, which pipewright then reads instead";

// {"String": s} → s; a Regex pattern is refused.
Result<std::string> LiteralPattern(const Json& pattern, const std::string& source, const std::string& field) {
  if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string()) {
    return pattern["String"].get<std::string>();
  }
  if (pattern.is_object() && pattern.contains("Regex")) {
    return Unsupported(source, field, "{\"Regex\": …}", std::string("only {\"String\": …} patterns; ") + kUseTokenizerModel);
  }
  return Status::InvalidArgument(source + ": " + field + " must be {\"String\": …}");
}

Status ReadNormalizer(const Json& n, const std::string& source, const std::string& field,
                      std::vector<NormalizerStep>& steps) {
  if (n.is_null()) return Status::Ok();
  const std::string type = TypeOf(n);
  NormalizerStep step;
  if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    for (size_t i = 0; i < n["normalizers"].size(); ++i) {
      PW_RETURN_IF_ERROR(ReadNormalizer(n["normalizers"][i], source, field + ".normalizers[" + std::to_string(i) + "]", steps));
    }
    return Status::Ok();
  } else if (type == "Prepend") {
    step.kind = NormalizerStep::Kind::kPrepend;
    step.text = n.at("prepend").get<std::string>();
  } else if (type == "Replace") {
    step.kind = NormalizerStep::Kind::kReplace;
    PW_ASSIGN_OR_RETURN(step.from, LiteralPattern(n.value("pattern", Json()), source, field + ".pattern"));
    step.text = n.at("content").get<std::string>();
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    step.kind = NormalizerStep::Kind::kUnicode;
    step.form = type == "NFC" ? UnicodeForm::kNfc : type == "NFD" ? UnicodeForm::kNfd
              : type == "NFKC" ? UnicodeForm::kNfkc : UnicodeForm::kNfkd;
  } else if (type == "Lowercase") {
    step.kind = NormalizerStep::Kind::kLowercase;
  } else if (type == "StripAccents") {
    step.kind = NormalizerStep::Kind::kStripAccents;
  } else if (type == "Strip") {
    step.kind = NormalizerStep::Kind::kStrip;
    step.left = n.value("strip_left", true);
    step.right = n.value("strip_right", true);
  } else if (type == "Precompiled" && n.value("precompiled_charsmap", Json()).is_null()) {
    return Status::Ok();  // no charsmap: the identity
  } else if (type == "Precompiled") {
    return Unsupported(source, field + ".type", "'Precompiled' (a SentencePiece charsmap)", kUseTokenizerModel);
  } else {
    return Unsupported(source, field + ".type", "'" + type + "'",
                       "supported: Prepend, Replace, NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Strip, Sequence");
  }
  steps.push_back(std::move(step));
  return Status::Ok();
}

Result<MetaspaceOptions> ReadMetaspace(const Json& m, const std::string& source, const std::string& field) {
  MetaspaceOptions meta;
  meta.enabled = true;
  meta.replacement = m.value("replacement", meta.replacement);
  if (meta.replacement.empty()) return Status::InvalidArgument(source + ": " + field + ".replacement is empty");
  meta.split = m.value("split", true);
  // Files written before tokenizers 0.15 say add_prefix_space instead.
  const std::string scheme =
      m.contains("prepend_scheme") ? m["prepend_scheme"].get<std::string>() : m.value("add_prefix_space", true) ? "always" : "never";
  if (scheme == "always") {
    meta.prepend = PrependScheme::kAlways;
  } else if (scheme == "first") {
    meta.prepend = PrependScheme::kFirst;
  } else if (scheme == "never") {
    meta.prepend = PrependScheme::kNever;
  } else {
    return Status::InvalidArgument(source + ": " + field + ".prepend_scheme must be \"always\", \"first\" or \"never\", got '" +
                                   scheme + "'");
  }
  return meta;
}

Status ReadPreTokenizer(const Json& p, const std::string& source, const std::string& field, MetaspaceOptions& meta) {
  if (p.is_null()) return Status::Ok();
  const std::string type = TypeOf(p);
  if (type == "Sequence" && p.contains("pretokenizers") && p["pretokenizers"].is_array() && p["pretokenizers"].size() == 1) {
    return ReadPreTokenizer(p["pretokenizers"][0], source, field + ".pretokenizers[0]", meta);
  }
  if (type != "Metaspace") {
    return Unsupported(source, field + ".type", "'" + type + "'",
                       "a SentencePiece-style tokenizer.json has a Metaspace pre-tokenizer or none");
  }
  PW_ASSIGN_OR_RETURN(meta, ReadMetaspace(p, source, field));
  return Status::Ok();
}

Status ReadDecoder(const Json& d, const std::string& source, const std::string& field, std::vector<DecodeStep>& steps) {
  if (d.is_null()) return Status::Ok();
  const std::string type = TypeOf(d);
  DecodeStep step;
  if (type == "Sequence" && d.contains("decoders") && d["decoders"].is_array()) {
    for (size_t i = 0; i < d["decoders"].size(); ++i) {
      PW_RETURN_IF_ERROR(ReadDecoder(d["decoders"][i], source, field + ".decoders[" + std::to_string(i) + "]", steps));
    }
    return Status::Ok();
  } else if (type == "Replace") {
    step.kind = DecodeStep::Kind::kReplace;
    PW_ASSIGN_OR_RETURN(step.from, LiteralPattern(d.value("pattern", Json()), source, field + ".pattern"));
    step.to = d.at("content").get<std::string>();
  } else if (type == "ByteFallback") {
    step.kind = DecodeStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecodeStep::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = DecodeStep::Kind::kStrip;
    step.content = d.at("content").get<std::string>();
    step.start = d.value("start", 0);
    step.stop = d.value("stop", 0);
  } else if (type == "Metaspace") {
    step.kind = DecodeStep::Kind::kMetaspace;
    PW_ASSIGN_OR_RETURN(step.metaspace, ReadMetaspace(d, source, field));
  } else {
    return Unsupported(source, field + ".type", "'" + type + "'",
                       "supported: Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence");
  }
  steps.push_back(std::move(step));
  return Status::Ok();
}

Status ReadBpeModel(const Json& model, const std::string& source, PieceTables& tables) {
  const Json& vocab = model.value("vocab", Json());
  if (!vocab.is_object()) return Status::InvalidArgument(source + ": model.vocab must be an object of piece → id");
  for (const auto& [piece, id] : vocab.items()) {
    if (!IsTokenId(id)) return BadId(id, source + ": model.vocab['" + piece + "']");
    const auto index = id.get<size_t>();
    if (index >= tables.pieces.size()) tables.pieces.resize(index + 1);
    if (!tables.pieces[index].empty()) {
      return Status::InvalidArgument(source + ": model.vocab gives id " + std::to_string(index) + " to both '" +
                                     tables.pieces[index] + "' and '" + piece + "'");
    }
    tables.pieces[index] = piece;
  }
  PW_RETURN_IF_ERROR(ReadMerges(model.value("merges", Json::array()), source, tables.merges));
  for (const char* field : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.value(field, Json()).is_string() && !model[field].get<std::string>().empty()) {
      return Unsupported(source, std::string("model.") + field, "'" + model[field].get<std::string>() + "'",
                         "SentencePiece-style BPE marks words with \"▁\", not with affixes");
    }
  }
  if (!model.value("dropout", Json()).is_null() && model["dropout"].get<double>() != 0.0) {
    return Unsupported(source, "model.dropout", model["dropout"].dump(), "dropout is for training; set it to null");
  }
  if (model.value("ignore_merges", false)) {
    return Unsupported(source, "model.ignore_merges", "true", "SentencePiece-style BPE always merges");
  }
  const Json& unk = model.value("unk_token", Json());
  if (unk.is_string()) {
    auto it = vocab.find(unk.get<std::string>());
    if (it == vocab.end()) {
      return Status::InvalidArgument(source + ": model.unk_token '" + unk.get<std::string>() + "' is not in model.vocab");
    }
    tables.unk_id = it->get<int32_t>();
  }
  tables.fuse_unk = model.value("fuse_unk", false);
  tables.byte_fallback = model.value("byte_fallback", false);
  return Status::Ok();
}

Status ReadUnigramModel(const Json& model, const std::string& source, PieceTables& tables) {
  const Json& vocab = model.value("vocab", Json());
  if (!vocab.is_array()) return Status::InvalidArgument(source + ": model.vocab must be a list of [piece, score]");
  tables.pieces.reserve(vocab.size());
  tables.scores.reserve(vocab.size());
  for (size_t i = 0; i < vocab.size(); ++i) {
    const Json& entry = vocab[i];
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number()) {
      return Status::InvalidArgument(source + ": model.vocab[" + std::to_string(i) + "] must be [piece, score]");
    }
    tables.pieces.push_back(entry[0].get<std::string>());
    tables.scores.push_back(entry[1].get<float>());
  }
  const Json& unk = model.value("unk_id", Json());
  if (!unk.is_null()) {
    if (!unk.is_number_integer() || unk.get<int64_t>() < 0 || unk.get<size_t>() >= vocab.size()) {
      return Status::InvalidArgument(source + ": model.unk_id must index model.vocab (" + std::to_string(vocab.size()) +
                                     " pieces), got " + unk.dump());
    }
    tables.unk_id = unk.get<int32_t>();
  }
  tables.byte_fallback = model.value("byte_fallback", false);
  return Status::Ok();
}

}  // namespace

Result<PieceFile> ParsePieceTokenizerJson(const Json& j, const std::string& source) {
  const Json& model = j["model"];
  const std::string type = model.value("type", std::string("BPE"));
  PieceFile file;
  if (type == "BPE") {
    file.tables.model = PieceModel::kBpe;
    PW_RETURN_IF_ERROR(ReadBpeModel(model, source, file.tables));
  } else if (type == "Unigram") {
    file.tables.model = PieceModel::kUnigram;
    PW_RETURN_IF_ERROR(ReadUnigramModel(model, source, file.tables));
  } else {
    return Unsupported(source, "model.type", "'" + type + "'", "pipewright reads BPE and Unigram tokenizer.json");
  }
  std::vector<NormalizerStep> steps;
  PW_RETURN_IF_ERROR(ReadNormalizer(j.value("normalizer", Json()), source, "normalizer", steps));
  file.options.normalizer = TextNormalizer(std::move(steps));
  PW_RETURN_IF_ERROR(ReadPreTokenizer(j.value("pre_tokenizer", Json()), source, "pre_tokenizer", file.options.metaspace));
  PW_RETURN_IF_ERROR(ReadDecoder(j.value("decoder", Json()), source, "decoder", file.options.decoder));
  PW_RETURN_IF_ERROR(ReadAddedTokens(j.value("added_tokens", Json::array()), source, file.tables.added));
  file.template_bos = TemplateBos(j.value("post_processor", Json()));
  return file;
}

}  // namespace pw
