#include "text/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <filesystem>

#include "text/utf8.h"

namespace pw {

SentencePieceTokenizer::SentencePieceTokenizer()
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

Result<std::unique_ptr<SentencePieceTokenizer>> SentencePieceTokenizer::Load(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(path + ": no such SentencePiece model file");
  }
  std::unique_ptr<SentencePieceTokenizer> tokenizer(new SentencePieceTokenizer());
  const auto status = tokenizer->processor_->Load(path);
  if (!status.ok()) {
    return Status::InvalidArgument(path + ": not a SentencePiece model (" + status.ToString() +
                                   "); a Llama 2 style tokenizer.model is expected");
  }
  SpecialTokens special;
  if (tokenizer->processor_->bos_id() >= 0) special.bos = tokenizer->processor_->bos_id();
  if (tokenizer->processor_->eos_id() >= 0) {
    special.eos = tokenizer->processor_->eos_id();
    special.stop_ids = {*special.eos};
  }
  special.add_bos = special.bos.has_value();
  tokenizer->set_special(std::move(special));
  return tokenizer;
}

Result<std::vector<int32_t>> SentencePieceTokenizer::Encode(std::string_view text) const {
  if (auto bad = FirstInvalidUtf8(text)) {
    return Status::InvalidArgument("text is not valid UTF-8 at byte " + std::to_string(*bad) +
                                   "; convert it to UTF-8 first (e.g. iconv -t UTF-8)");
  }
  std::vector<int> ids;
  const auto status = processor_->Encode(std::string(text), &ids);
  if (!status.ok()) return Status::InvalidArgument("SentencePiece could not encode the text: " + status.ToString());
  return std::vector<int32_t>(ids.begin(), ids.end());
}

Result<std::string> SentencePieceTokenizer::Decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size()) {
      return Status::InvalidArgument("token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                                     ", which this vocabulary of " + std::to_string(vocab_size()) + " ids lacks");
    }
    if (skip_special && processor_->IsControl(ids[i])) continue;
    kept.push_back(ids[i]);
  }
  std::string text;
  const auto status = processor_->Decode(kept, &text);
  if (!status.ok()) return Status::InvalidArgument("SentencePiece could not decode the ids: " + status.ToString());
  return text;
}

int64_t SentencePieceTokenizer::vocab_size() const { return processor_->GetPieceSize(); }

std::optional<int32_t> SentencePieceTokenizer::TokenId(const std::string& token) const {
  const int id = processor_->PieceToId(token);
  if (id == processor_->unk_id() && token != processor_->IdToPiece(id)) return std::nullopt;
  return id;
}

}  // namespace pw
