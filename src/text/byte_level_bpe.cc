#include "text/byte_level_bpe.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <queue>

#include "text/utf8.h"

namespace pw {
namespace {

// Past this many cached pieces the cache starts over: memory stays bounded
// on corpora with endless distinct words, and common words return at once.
constexpr size_t kMaxCachedPieces = 1 << 18;
// Pieces of more bytes than this merge with a heap (MergeLongSymbols).
constexpr size_t kLongPiece = 256;
// The stand-ins are U+0021 … U+0143 (ByteStandIn).
constexpr char32_t kStandInLimit = 0x144;

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

bool IsAsciiSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string NfcOf(std::string_view text) {
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    return std::string(text);
  }
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()), static_cast<utf8proc_ssize_t>(text.size()),
                   &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) return std::string(text);  // input was validated; keep it unchanged rather than fail
  std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

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
  bpe->added_index_.assign(static_cast<size_t>(max_id + 1), -1);
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
  for (size_t rank = 0; rank < tables.merges.size(); ++rank) {
    const auto& [left, right] = tables.merges[rank];
    auto l = tables.vocab.find(left), r = tables.vocab.find(right), m = tables.vocab.find(left + right);
    if (l == tables.vocab.end() || r == tables.vocab.end() || m == tables.vocab.end()) {
      return Status::InvalidArgument(source + ": merge " + std::to_string(rank + 1) + " ('" + left + "' '" + right +
                                     "') names a token the vocabulary lacks");
    }
    // A repeated rule keeps its first (highest-priority) rank.
    bpe->merges_.emplace(PairKey(l->second, r->second), std::make_pair(static_cast<int32_t>(rank), m->second));
  }
  for (const AddedToken& added : tables.added) {
    if (added.content.empty()) return Status::InvalidArgument(source + ": added token " + std::to_string(added.id) + " is empty");
    if (auto bad = FirstInvalidUtf8(added.content)) {
      return Status::InvalidArgument(source + ": added token " + std::to_string(added.id) + " is not valid UTF-8");
    }
    if (bpe->id_to_token_[added.id].empty()) bpe->id_to_token_[added.id] = added.content;
  }
  bpe->added_ = std::move(tables.added);
  // Longest first, so "<|end|>" never wins over "<|endoftext|>" at one position.
  std::stable_sort(bpe->added_.begin(), bpe->added_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  bpe->added_by_first_byte_.resize(256);
  for (size_t i = 0; i < bpe->added_.size(); ++i) {
    bpe->added_index_[bpe->added_[i].id] = static_cast<int32_t>(i);
    bpe->added_by_first_byte_[static_cast<uint8_t>(bpe->added_[i].content[0])].push_back(static_cast<int32_t>(i));
  }
  for (const std::string& pattern : options.split_patterns) {
    PW_ASSIGN_OR_RETURN(RegexSplitter splitter, RegexSplitter::Compile(pattern));
    bpe->splitters_.push_back(std::move(splitter));
  }
  bpe->vocab_ = std::move(tables.vocab);
  bpe->options_ = std::move(options);
  return bpe;
}

std::optional<int32_t> ByteLevelBpe::TokenId(const std::string& token) const {
  for (const AddedToken& added : added_) {
    if (added.content == token) return added.id;
  }
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void ByteLevelBpe::MergeLongSymbols(std::vector<int32_t>& symbols) const {
  // Hugging Face's merge_all: the lowest-ranked pair first (leftmost on a
  // tie), merged in place in a linked list; entries whose symbols changed
  // since they were queued are skipped. With merge tables a BPE trainer
  // writes (a merge's parts are older than it) this merges exactly what
  // MergeSymbols' passes do.
  struct Entry {
    int32_t rank, pos, left, right, merged;
    bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  const int n = static_cast<int>(symbols.size());
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](int pos) {
    if (pos < 0 || next[pos] < 0) return;
    auto it = merges_.find(PairKey(symbols[pos], symbols[next[pos]]));
    if (it != merges_.end()) {
      heap.push({it->second.first, pos, symbols[pos], symbols[next[pos]], it->second.second});
    }
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<bool> dead(n, false);
  while (!heap.empty()) {
    const Entry e = heap.top();
    heap.pop();
    const int right = next[e.pos];
    if (dead[e.pos] || right < 0 || symbols[e.pos] != e.left || symbols[right] != e.right) continue;
    symbols[e.pos] = e.merged;
    dead[right] = true;
    next[e.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = e.pos;
    push(prev[e.pos]);
    push(e.pos);
  }
  std::vector<int32_t> out;
  for (int i = 0; i >= 0 && i < n; i = next[i]) out.push_back(symbols[i]);
  symbols.swap(out);
}

void ByteLevelBpe::MergeSymbols(std::vector<int32_t>& symbols) const {
  // Passes over the whole piece cost O(n²): fine for words, not for a
  // megabyte of punctuation that a pre-tokenizer keeps in one piece.
  if (symbols.size() > kLongPiece) return MergeLongSymbols(symbols);
  std::vector<int32_t> merged;
  while (symbols.size() > 1) {
    int32_t best_rank = INT32_MAX, best_id = -1;
    uint64_t best_key = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = merges_.find(PairKey(symbols[i], symbols[i + 1]));
      if (it != merges_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best_id = it->second.second;
        best_key = it->first;
      }
    }
    if (best_id < 0) break;
    // Every occurrence of the best pair merges in one left-to-right pass.
    merged.clear();
    for (size_t i = 0; i < symbols.size();) {
      if (i + 1 < symbols.size() && PairKey(symbols[i], symbols[i + 1]) == best_key) {
        merged.push_back(best_id);
        i += 2;
      } else {
        merged.push_back(symbols[i]);
        ++i;
      }
    }
    symbols.swap(merged);
  }
}

void ByteLevelBpe::EncodePiece(std::string_view piece, std::vector<int32_t>& out) const {
  const std::string key(piece);
  {
    std::lock_guard lock(cache_mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> symbols;
  if (options_.ignore_merges) {
    auto whole = vocab_.find(StandInsOf(piece));
    if (whole != vocab_.end()) symbols.push_back(whole->second);
  }
  if (symbols.empty()) {
    symbols.reserve(piece.size());
    for (char c : piece) symbols.push_back(byte_token_[static_cast<uint8_t>(c)]);
    MergeSymbols(symbols);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  std::lock_guard lock(cache_mu_);
  if (cache_.size() >= kMaxCachedPieces) cache_.clear();
  cache_.emplace(key, std::move(symbols));
}

Status ByteLevelBpe::EncodeOrdinary(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return Status::Ok();
  std::string normalized;
  if (options_.nfc) {
    normalized = NfcOf(text);
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

Result<std::vector<int32_t>> ByteLevelBpe::Encode(std::string_view text) const {
  if (auto bad = FirstInvalidUtf8(text)) {
    return Status::InvalidArgument("text is not valid UTF-8 at byte " + std::to_string(*bad) +
                                   "; convert it to UTF-8 first (e.g. iconv -t UTF-8)");
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 1);
  size_t segment = 0;  // start of the text not yet encoded
  size_t i = 0;
  while (i < text.size()) {
    const AddedToken* hit = nullptr;
    for (int32_t index : added_by_first_byte_[static_cast<uint8_t>(text[i])]) {
      if (text.compare(i, added_[index].content.size(), added_[index].content) == 0) {
        hit = &added_[index];
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    size_t before_end = i;
    if (hit->lstrip) {
      while (before_end > segment && IsAsciiSpace(text[before_end - 1])) --before_end;
    }
    PW_RETURN_IF_ERROR(EncodeOrdinary(text.substr(segment, before_end - segment), ids));
    ids.push_back(hit->id);
    i += hit->content.size();
    if (hit->rstrip) {
      while (i < text.size() && IsAsciiSpace(text[i])) ++i;
    }
    segment = i;
  }
  PW_RETURN_IF_ERROR(EncodeOrdinary(text.substr(segment), ids));
  return ids;
}

std::optional<std::string> ByteLevelBpe::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return std::nullopt;
  if (added_index_[id] >= 0 && added_[added_index_[id]].special) return std::nullopt;
  Result<std::string> bytes = Decode(std::span<const int32_t>(&id, 1));
  if (!bytes.ok()) return std::nullopt;  // an id the vocabulary skips
  return std::move(bytes).value();
}

Result<std::string> ByteLevelBpe::Decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= vocab_size() || (id_to_token_[id].empty() && added_index_[id] < 0)) {
      return Status::InvalidArgument("token " + std::to_string(i) + " has id " + std::to_string(id) +
                                     ", which this vocabulary of " + std::to_string(vocab_size()) + " ids lacks");
    }
    if (added_index_[id] >= 0) {
      const AddedToken& added = added_[added_index_[id]];
      if (!(skip_special && added.special)) out += added.content;
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
