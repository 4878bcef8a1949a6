// What both tokenizer.json readers (byte-level BPE in hf_tokenizer_json.cc,
// SentencePiece style in piece_tokenizer_json.cc) read the same way: ids,
// merges, added tokens, the post-processor's BOS, and the wording of their
// errors (the file, then the JSON field at fault).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "text/added_tokens.h"

namespace pw::tokenizer_json {

using Json = nlohmann::json;

// Ids past this are refused: no real vocabulary comes near 16.7 M tokens,
// and tables are sized by the largest id.
inline constexpr int64_t kMaxTokenId = (1 << 24) - 1;

bool IsTokenId(const Json& id);
Status BadId(const Json& id, const std::string& where);
// "<source>: <field> <what> is not supported; <how>".
Status Unsupported(const std::string& source, const std::string& field, const std::string& what,
                   const std::string& how);
// j["type"] when it is a string, else "?".
std::string TypeOf(const Json& j);

// model.merges, written "left right" or ["left", "right"], highest priority first.
Status ReadMerges(const Json& merges, const std::string& source,
                  std::vector<std::pair<std::string, std::string>>& out);
// One merge written "left right" (tokens never hold a plain space:
// byte-level vocabularies write it 'Ġ', SentencePiece ones '▁'); `where`
// names the place for a message.
Status ReadMergeLine(std::string_view line, const std::function<std::string()>& where,
                     std::vector<std::pair<std::string, std::string>>& out);
// The top-level added_tokens list.
Status ReadAddedTokens(const Json& added, const std::string& source, std::vector<AddedToken>& out);
// The id a TemplateProcessing post-processor puts before sequence A.
std::optional<int32_t> TemplateBos(const Json& post);

// Runs `parse` and turns a field of the wrong JSON type (nlohmann throws)
// into InvalidArgument naming `source`.
template <class Parse>
auto CatchingTypeErrors(const std::string& source, Parse&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(source + ": a field has the wrong type (" + e.what() +
                                   "); is this a Hugging Face tokenizer.json?");
  }
}

}  // namespace pw::tokenizer_json
