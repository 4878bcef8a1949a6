#include "text/piece_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "text/utf8.h"

namespace pw {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁"
constexpr char32_t kSpaceMarkCodePoint = 0x2581;
// Hugging Face's Unigram: an unknown character costs the lowest score minus this.
constexpr float kUnkPenalty = 10.0f;

std::string ByteTokenName(uint8_t byte) {
  char name[8];
  std::snprintf(name, sizeof(name), "<0x%02X>", byte);
  return name;
}

// The byte a "<0xAB>" token stands for, or -1.
int ByteOfToken(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token[5] != '>') return -1;
  int value = 0;
  for (char c : token.substr(3, 2)) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

size_t CharLength(std::string_view text, size_t pos) {
  size_t next = pos;
  NextCodePoint(text, next);
  return next - pos;
}

void ApplyByteFallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  std::string bytes;
  auto flush = [&] {
    if (bytes.empty()) return;
    if (!FirstInvalidUtf8(bytes)) {
      out.push_back(bytes);
    } else {
      for (size_t i = 0; i < bytes.size(); ++i) out.emplace_back("\xEF\xBF\xBD");  // U+FFFD per byte
    }
    bytes.clear();
  };
  for (std::string& token : tokens) {
    const int byte = ByteOfToken(token);
    if (byte >= 0) {
      bytes.push_back(static_cast<char>(byte));
      continue;
    }
    flush();
    out.push_back(std::move(token));
  }
  flush();
  tokens.swap(out);
}

std::string StripChar(const std::string& token, std::string_view c, int start, int stop) {
  std::string_view t(token);
  for (int i = 0; i < start && t.starts_with(c); ++i) t.remove_prefix(c.size());
  for (int i = 0; i < stop && t.ends_with(c); ++i) t.remove_suffix(c.size());
  return std::string(t);
}

}  // namespace

Result<std::unique_ptr<PieceTokenizer>> PieceTokenizer::Create(PieceTables tables, PieceOptions options,
                                                               const std::string& source) {
  std::unique_ptr<PieceTokenizer> t(new PieceTokenizer());
  t->model_ = tables.model;
  int32_t limit = static_cast<int32_t>(tables.pieces.size());
  for (const AddedToken& added : tables.added) limit = std::max(limit, added.id + 1);
  t->pieces_ = std::move(tables.pieces);
  t->pieces_.resize(static_cast<size_t>(limit));
  t->ids_.reserve(t->pieces_.size());
  for (size_t id = 0; id < t->pieces_.size(); ++id) {
    const std::string& piece = t->pieces_[id];
    if (piece.empty()) continue;
    if (FirstInvalidUtf8(piece)) {
      return Status::InvalidArgument(source + ": piece " + std::to_string(id) + " is not valid UTF-8");
    }
    auto [it, fresh] = t->ids_.emplace(piece, static_cast<int32_t>(id));
    if (!fresh) {
      return Status::InvalidArgument(source + ": piece '" + piece + "' has two ids, " + std::to_string(it->second) +
                                     " and " + std::to_string(id));
    }
    t->longest_piece_ = std::max(t->longest_piece_, piece.size());
  }
  if (t->model_ == PieceModel::kUnigram) {
    if (tables.scores.size() > t->pieces_.size()) {
      return Status::InvalidArgument(source + ": more Unigram scores than pieces");
    }
    t->scores_ = std::move(tables.scores);
    t->scores_.resize(t->pieces_.size(), 0.0f);
    float min_score = std::numeric_limits<float>::infinity();
    for (float s : t->scores_) min_score = std::min(min_score, s);
    t->unk_score_ = (t->scores_.empty() ? 0.0f : min_score) - kUnkPenalty;
    if (!tables.unk_id) return Status::InvalidArgument(source + ": a Unigram model needs model.unk_id");
  }
  if (tables.unk_id && (*tables.unk_id < 0 || *tables.unk_id >= limit)) {
    return Status::InvalidArgument(source + ": the unknown-token id " + std::to_string(*tables.unk_id) +
                                   " is outside the vocabulary of " + std::to_string(limit));
  }
  t->unk_id_ = tables.unk_id;
  t->byte_fallback_ = tables.byte_fallback;
  t->fuse_unk_ = tables.model == PieceModel::kUnigram || tables.fuse_unk;
  t->byte_ids_.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    auto it = t->ids_.find(ByteTokenName(static_cast<uint8_t>(b)));
    if (it != t->ids_.end()) t->byte_ids_[b] = it->second;
  }
  const auto id_of = [&](const std::string& name) {
    auto it = t->ids_.find(name);
    return it == t->ids_.end() ? -1 : it->second;
  };
  PW_ASSIGN_OR_RETURN(t->merges_, BpeMerges::FromNames(tables.merges, id_of, source));
  for (const AddedToken& added : tables.added) {
    if (added.id >= 0 && t->pieces_[added.id].empty()) t->pieces_[added.id] = added.content;
  }
  PW_ASSIGN_OR_RETURN(t->added_, AddedTokens::Create(std::move(tables.added), source));
  // Which characters some piece joins to a following "▁" (see CutWords).
  t->joined_before_space_.assign(0x110000, false);
  t->is_piece_.assign(0x110000, false);
  for (const auto& [piece, id] : t->ids_) {
    size_t pos = 0;
    char32_t previous = 0;
    while (pos < piece.size()) {
      const char32_t cp = NextCodePoint(piece, pos);
      if (pos == piece.size() && previous == 0) t->is_piece_[cp] = true;
      if (cp == kSpaceMarkCodePoint && previous != 0 && previous != kSpaceMarkCodePoint) {
        t->joined_before_space_[previous] = true;
      }
      previous = cp;
    }
  }
  t->may_cut_ = t->ids_.count(std::string(kSpaceMark)) > 0;
  t->options_ = std::move(options);
  return t;
}

std::optional<int32_t> PieceTokenizer::TokenId(const std::string& token) const {
  if (auto id = added_.IdOf(token)) return id;
  auto it = ids_.find(token);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

Result<std::vector<int32_t>> PieceTokenizer::EncodeText(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  PW_RETURN_IF_ERROR(added_.Split(text, ids, [&](std::string_view stretch, size_t offset) {
    EncodeStretch(stretch, offset == 0, ids);
    return Status::Ok();
  }));
  return ids;
}

void PieceTokenizer::EncodeStretch(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  std::string normalized = options_.normalizer.Apply(text);
  const MetaspaceOptions& meta = options_.metaspace;
  std::vector<std::string_view> words;
  if (meta.enabled) {
    normalized = ReplaceAll(normalized, " ", meta.replacement);
    const bool prepend = meta.prepend == PrependScheme::kAlways || (meta.prepend == PrependScheme::kFirst && at_start);
    if (prepend && !normalized.starts_with(meta.replacement)) normalized.insert(0, meta.replacement);
    if (meta.split) {
      // Hugging Face's split "MergedWithNext": each replacement begins a word.
      std::string_view rest(normalized);
      size_t begin = 0;
      for (size_t hit = rest.find(meta.replacement, 1); hit != std::string_view::npos;
           hit = rest.find(meta.replacement, hit + 1)) {
        words.push_back(rest.substr(begin, hit - begin));
        begin = hit;
      }
      if (begin < rest.size()) words.push_back(rest.substr(begin));
      for (std::string_view word : words) EncodeWord(word, out);
      return;
    }
  }
  CutWords(normalized, words);
  for (std::string_view word : words) EncodeWord(word, out);
}

void PieceTokenizer::CutWords(std::string_view text, std::vector<std::string_view>& words) const {
  if (!may_cut_) {
    if (!text.empty()) words.push_back(text);
    return;
  }
  size_t begin = 0;
  for (size_t hit = text.find(kSpaceMark, 1); hit != std::string_view::npos; hit = text.find(kSpaceMark, hit + 1)) {
    // The character before the "▁".
    size_t start = hit - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    const char32_t previous = NextCodePoint(text, pos);
    if (previous == kSpaceMarkCodePoint || joined_before_space_[previous]) continue;
    // A BPE character outside the vocabulary becomes byte or unk symbols,
    // whose strings are not the character: never cut after one.
    if (model_ == PieceModel::kBpe && !is_piece_[previous]) continue;
    words.push_back(text.substr(begin, hit - begin));
    begin = hit;
  }
  if (begin < text.size()) words.push_back(text.substr(begin));
}

void PieceTokenizer::EncodeWord(std::string_view word, std::vector<int32_t>& out) const {
  if (cache_.Lookup(word, out)) return;
  std::vector<int32_t> ids;
  if (model_ == PieceModel::kBpe) {
    EncodeBpe(word, ids);
  } else {
    EncodeUnigram(word, ids);
  }
  out.insert(out.end(), ids.begin(), ids.end());
  cache_.Insert(word, ids);
}

bool PieceTokenizer::AppendByteTokens(std::string_view text, std::vector<int32_t>& out) const {
  if (!byte_fallback_) return false;
  for (char c : text) {
    if (byte_ids_[static_cast<uint8_t>(c)] < 0) return false;
  }
  for (char c : text) out.push_back(byte_ids_[static_cast<uint8_t>(c)]);
  return true;
}

void PieceTokenizer::EncodeBpe(std::string_view word, std::vector<int32_t>& out) const {
  std::vector<int32_t> symbols;
  symbols.reserve(word.size());
  bool last_was_unk = false;
  for (size_t pos = 0; pos < word.size();) {
    const size_t length = CharLength(word, pos);
    const std::string_view character = word.substr(pos, length);
    pos += length;
    auto it = ids_.find(character);
    if (it != ids_.end()) {
      symbols.push_back(it->second);
      last_was_unk = false;
    } else if (AppendByteTokens(character, symbols)) {
      last_was_unk = false;
    } else if (unk_id_) {
      // Hugging Face's BPE drops a character it cannot name when there is no unk.
      if (!(fuse_unk_ && last_was_unk)) symbols.push_back(*unk_id_);
      last_was_unk = true;
    }
  }
  merges_.Merge(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

void PieceTokenizer::EncodeUnigram(std::string_view word, std::vector<int32_t>& out) const {
  // Viterbi over byte positions at character boundaries: best[end] is the
  // best-scoring split of word[0, end) and the piece that ends it. Ties keep
  // the first candidate found (earliest start, then shortest piece), as
  // Hugging Face's Unigram does.
  struct Node {
    double score = 0;
    int64_t start = -1;
    int32_t id = -1;
  };
  const size_t n = word.size();
  std::vector<Node> best(n + 1);
  best[0].start = 0;
  for (size_t start = 0; start < n;) {
    // Reached: each character boundary gets a node (its character's piece, or unk).
    const size_t first = CharLength(word, start);
    const double here = best[start].score;
    bool has_single = false;
    for (size_t end = start + first; end <= n && end - start <= longest_piece_; end += CharLength(word, end)) {
      auto it = ids_.find(word.substr(start, end - start));
      if (it != ids_.end()) {
        const double score = here + scores_[it->second];
        if (best[end].start < 0 || score > best[end].score) best[end] = Node{score, static_cast<int64_t>(start), it->second};
        if (end - start == first) has_single = true;
      }
      if (end == n) break;
    }
    if (!has_single) {
      const double score = here + unk_score_;
      Node& target = best[start + first];
      if (target.start < 0 || score > target.score) target = Node{score, static_cast<int64_t>(start), *unk_id_};
    }
    start += first;
  }
  // Back from the end; runs of unk pieces fuse into one unknown stretch.
  std::vector<std::pair<size_t, size_t>> spans;  // [start, end) of each token, last first
  std::vector<int32_t> span_ids;
  for (size_t end = n; end > 0;) {
    const Node& node = best[end];
    const size_t start = static_cast<size_t>(node.start);
    if (node.id == *unk_id_ && !span_ids.empty() && span_ids.back() == *unk_id_) {
      spans.back().first = start;
    } else {
      spans.emplace_back(start, end);
      span_ids.push_back(node.id);
    }
    end = start;
  }
  for (size_t i = spans.size(); i-- > 0;) {
    if (span_ids[i] == *unk_id_) {
      const std::string_view text = word.substr(spans[i].first, spans[i].second - spans[i].first);
      auto it = ids_.find(text);
      if (it != ids_.end()) {
        out.push_back(it->second);
      } else if (!AppendByteTokens(text, out)) {
        out.push_back(*unk_id_);
      }
      continue;
    }
    out.push_back(span_ids[i]);
  }
}

Result<std::string> PieceTokenizer::DecodeIds(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (pieces_[id].empty()) {
      return Status::InvalidArgument("token " + std::to_string(i) + " has id " + std::to_string(id) +
                                     ", which this vocabulary skips");
    }
    const AddedToken* added = added_.Find(id);
    if (added != nullptr && skip_special && added->special) continue;
    tokens.push_back(added != nullptr ? added->content : pieces_[id]);
  }
  if (options_.decoder.empty()) {
    // Hugging Face joins tokens with spaces when a file names no decoder.
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  for (const DecodeStep& step : options_.decoder) {
    switch (step.kind) {
      case DecodeStep::Kind::kReplace:
        for (std::string& token : tokens) token = ReplaceAll(token, step.from, step.to);
        break;
      case DecodeStep::Kind::kByteFallback: ApplyByteFallback(tokens); break;
      case DecodeStep::Kind::kFuse: {
        std::string all;
        for (const std::string& token : tokens) all += token;
        tokens.assign(1, std::move(all));
        break;
      }
      case DecodeStep::Kind::kStrip:
        for (std::string& token : tokens) token = StripChar(token, step.content, step.start, step.stop);
        break;
      case DecodeStep::Kind::kMetaspace:
        // Hugging Face's Metaspace decoder drops every replacement in the
        // first token (not just a leading one) unless nothing was prepended.
        for (size_t i = 0; i < tokens.size(); ++i) {
          const bool first = i == 0 && step.metaspace.prepend != PrependScheme::kNever;
          tokens[i] = ReplaceAll(tokens[i], step.metaspace.replacement, first ? "" : " ");
        }
        break;
    }
  }
  std::string out;
  for (const std::string& token : tokens) out += token;
  return out;
}

}  // namespace pw
