#include "text/byte_level_bpe.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "text/text_normalizer.h"
#include "text/utf8.h"

namespace pw {
namespace {

// The stand-ins are U+0021 … U+0143 (ByteStandIn).
constexpr char32_t kStandInLimit = 0x144;

std::string StandInsOf(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) AppendUtf8(ByteStandIn(static_cast<uint8_t>(c)), out);
  return out;
}

}  // namespace

char32_t ByteStandIn(uint8_t byte) {
  // Built once: StandInsOf asks for every byte of every uncached piece.
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      t[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return t;
  }();
  return table[byte];
}

Result<std::unique_ptr<ByteLevelBpe>> ByteLevelBpe::Create(BpeTables tables, BpeOptions options,
                                                           const std::string& source) {
  std::unique_ptr<ByteLevelBpe> bpe(new ByteLevelBpe());
  int32_t max_id = -1;
  for (const auto& [token, id] : tables.vocab) {
    if (id < 0) return Status::InvalidArgument(source + ": vocabulary token '" + token + "' has negative id " + std::to_string(id));
    max_id = std::max(max_id, id);
  }
  for (const auto& added : tables.added) max_id = std::max(max_id, added.id);
  bpe->id_to_token_.assign(static_cast<size_t>(max_id + 1), std::string());
  for (const auto& [token, id] : tables.vocab) {
    if (!bpe->id_to_token_[id].empty()) {
      return Status::InvalidArgument(source + ": vocabulary id " + std::to_string(id) + " is given to both '" +
                                     bpe->id_to_token_[id] + "' and '" + token + "'");
    }
    bpe->id_to_token_[id] = token;
  }
  bpe->byte_token_.resize(256);
  bpe->stand_in_byte_.assign(kStandInLimit, -1);
  for (int b = 0; b < 256; ++b) {
    std::string stand_in;
    AppendUtf8(ByteStandIn(static_cast<uint8_t>(b)), stand_in);
    auto it = tables.vocab.find(stand_in);
    if (it == tables.vocab.end()) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", b);
      return Status::InvalidArgument(source + ": the vocabulary lacks the byte-level token '" + stand_in +
                                     "' for byte " + hex + "; is this a byte-level BPE vocabulary?");
    }
    bpe->byte_token_[b] = it->second;
    bpe->stand_in_byte_[ByteStandIn(static_cast<uint8_t>(b))] = static_cast<int16_t>(b);
  }
  const auto id_of = [&](const std::string& name) {
    auto it = tables.vocab.find(name);
    return it == tables.vocab.end() ? -1 : it->second;
  };
  PW_ASSIGN_OR_RETURN(bpe->merges_, BpeMerges::FromNames(tables.merges, id_of, source));
  for (const AddedToken& added : tables.added) {
    if (added.id >= 0 && bpe->id_to_token_[added.id].empty()) bpe->id_to_token_[added.id] = added.content;
  }
  PW_ASSIGN_OR_RETURN(bpe->added_, AddedTokens::Create(std::move(tables.added), source));
  for (const std::string& pattern : options.split_patterns) {
    PW_ASSIGN_OR_RETURN(RegexSplitter splitter, RegexSplitter::Compile(pattern));
    bpe->splitters_.push_back(std::move(splitter));
  }
  bpe->vocab_ = std::move(tables.vocab);
  bpe->options_ = std::move(options);
  return bpe;
}

std::optional<int32_t> ByteLevelBpe::TokenId(const std::string& token) const {
  if (auto id = added_.IdOf(token)) return id;
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void ByteLevelBpe::EncodePiece(std::string_view piece, std::vector<int32_t>& out) const {
  if (cache_.Lookup(piece, out)) return;
  std::vector<int32_t> symbols;
  if (options_.ignore_merges) {
    auto whole = vocab_.find(StandInsOf(piece));
    if (whole != vocab_.end()) symbols.push_back(whole->second);
  }
  if (symbols.empty()) {
    symbols.reserve(piece.size());
    for (char c : piece) symbols.push_back(byte_token_[static_cast<uint8_t>(c)]);
    merges_.Merge(symbols);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  cache_.Insert(piece, symbols);
}

Status ByteLevelBpe::EncodeOrdinary(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return Status::Ok();
  std::string normalized;
  if (options_.nfc) {
    normalized = UnicodeNormalized(text, UnicodeForm::kNfc);
    text = normalized;
  }
  if (options_.add_prefix_space && text.front() != ' ') {
    normalized = " " + std::string(text);
    text = normalized;
  }
  std::vector<std::string_view> pieces{text}, next;
  for (const RegexSplitter& splitter : splitters_) {
    next.clear();
    for (std::string_view piece : pieces) PW_RETURN_IF_ERROR(splitter.Split(piece, next));
    pieces.swap(next);
  }
  for (std::string_view piece : pieces) EncodePiece(piece, out);
  return Status::Ok();
}

Result<std::vector<int32_t>> ByteLevelBpe::EncodeText(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  PW_RETURN_IF_ERROR(added_.Split(text, ids, [&](std::string_view ordinary, size_t) { return EncodeOrdinary(ordinary, ids); }));
  return ids;
}

std::optional<std::string> ByteLevelBpe::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return std::nullopt;
  if (const AddedToken* added = added_.Find(id); added != nullptr && added->special) return std::nullopt;
  Result<std::string> bytes = Decode(std::span<const int32_t>(&id, 1));
  if (!bytes.ok()) return std::nullopt;  // an id the vocabulary skips
  return std::move(bytes).value();
}

Result<std::string> ByteLevelBpe::DecodeIds(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    const AddedToken* added = added_.Find(id);
    if (id_to_token_[id].empty() && added == nullptr) {
      return Status::InvalidArgument("token " + std::to_string(i) + " has id " + std::to_string(id) +
                                     ", which this vocabulary skips");
    }
    if (added != nullptr) {
      if (!(skip_special && added->special)) out += added->content;
      continue;
    }
    const std::string& token = id_to_token_[id];
    for (size_t pos = 0; pos < token.size();) {
      const char32_t cp = NextCodePoint(token, pos);
      if (cp < kStandInLimit && stand_in_byte_[cp] >= 0) {
        out.push_back(static_cast<char>(stand_in_byte_[cp]));
      } else {
        AppendUtf8(cp, out);
      }
    }
  }
  return out;
}

}  // namespace pw
