// Reading a SentencePiece-style tokenizer.json (see piece_tokenizer.h for
// what each part does) into PieceTables + PieceOptions. Called by
// ReadTokenizerJson (hf_tokenizer_json.h), which decides the family.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "text/hf_tokenizer_json.h"

namespace pw {

// InvalidArgument naming `source` and the JSON field for what PieceTokenizer
// cannot run (e.g. a Precompiled normalizer with a charsmap, a WordPiece
// model, a Regex Replace).
Result<PieceFile> ParsePieceTokenizerJson(const nlohmann::json& j, const std::string& source);

}  // namespace pw
