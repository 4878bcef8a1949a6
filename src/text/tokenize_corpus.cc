#include "text/tokenize_corpus.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/file_io.h"
#include "core/text.h"
#include "os/atomic_file.h"
#include "os/mapped_region.h"
#include "text/token_shard.h"
#include "text/utf8.h"

namespace pw {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kChunkBytes = 1 << 20;
constexpr const char* kManifest = "tokenize.json";

struct InputFile {
  std::string path;
  int64_t bytes = 0;
  bool jsonl = false;
};

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// The input files in order; files under `out_dir` (an output directory
// inside an input one) are not inputs.
Result<std::vector<InputFile>> ExpandInputs(const std::vector<std::string>& inputs, const std::string& out_dir) {
  std::error_code out_ec;
  const fs::path out = fs::weakly_canonical(out_dir, out_ec);
  std::vector<InputFile> files;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    const std::string ext = p.extension().string();
    files.push_back({p.string(), static_cast<int64_t>(fs::file_size(p, ec)), ext == ".jsonl" || ext == ".json"});
  };
  if (inputs.empty()) return Status::InvalidArgument("no input files; give text, JSONL files or directories");
  for (const std::string& input : inputs) {
    std::error_code ec;
    const fs::path p(input);
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
           it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) break;
        const std::string name = it->path().filename().string();
        std::error_code same_ec;
        const bool is_out = it->is_directory(same_ec) && fs::weakly_canonical(it->path(), same_ec) == out;
        if ((!name.empty() && name[0] == '.') || is_out) {
          if (it->is_directory(ec)) it.disable_recursion_pending();
          continue;
        }
        if (it->is_regular_file(ec)) found.push_back(it->path());
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) return Status::NotFound(input + ": the directory holds no files to tokenize");
      for (const fs::path& f : found) add(f);
    } else if (fs::is_regular_file(p, ec)) {
      add(p);
    } else {
      return Status::NotFound(input + ": no such file or directory");
    }
  }
  return files;
}

// Where the chunk that starts at `begin` ends: ~kChunkBytes on, just after
// a newline that a non-space follows (text, when `cut_text`: the tokenizer
// encodes such cuts as it encodes the whole), or after a whole line (JSONL).
size_t ChunkEnd(std::string_view data, size_t begin, bool jsonl, bool cut_text) {
  if (!jsonl && !cut_text) return data.size();
  size_t pos = begin + kChunkBytes;
  if (pos >= data.size()) return data.size();
  while (pos < data.size()) {
    const size_t nl = data.find('\n', pos);
    if (nl == std::string_view::npos) return data.size();
    if (jsonl || nl + 1 >= data.size() || !IsSpace(data[nl + 1])) return nl + 1;
    pos = nl + 1;
  }
  return data.size();
}

std::string ShardName(bool val, int64_t index) {
  char name[32];
  std::snprintf(name, sizeof(name), "%s_%06lld.bin", val ? "val" : "train", static_cast<long long>(index));
  return name;
}

Status WriteManifest(const fs::path& path, const Json& manifest) {
  return WriteFile(path.string(), manifest.dump(2) + "\n", Durability::kDurable);
}

// The run: encodes chunk by chunk, closing shards and saving progress.
class Run {
 public:
  Run(const TokenizeOptions& options, const Tokenizer& tokenizer, std::vector<InputFile> files)
      : options_(options), tokenizer_(tokenizer), files_(std::move(files)),
        width_(ShardTokenWidth(tokenizer.vocab_size())) {}

  Json OptionsJson() const {
    Json inputs = Json::array();
    for (const InputFile& f : files_) inputs.push_back({{"path", f.path}, {"bytes", f.bytes}});
    return {{"inputs", inputs},
            {"field", options_.field},
            {"shard_tokens", options_.shard_tokens},
            {"val_tokens", options_.val_tokens},
            {"tokenizer", options_.tokenizer_name},
            {"tokenizer_kind", std::string(tokenizer_.kind())},
            {"vocab_size", tokenizer_.vocab_size()},
            {"token_bytes", width_}};
  }

  // Reads OUT/tokenize.json if there is one: a finished run, a stopped one
  // to resume, or another run's output (an error).
  Status Restore(TokenizeSummary& summary) {
    try {
      return RestoreFields(summary);
    } catch (const nlohmann::json::exception& e) {
      return Status::InvalidArgument(options_.out_dir + "/" + kManifest + ": a field has the wrong type (" + e.what() +
                                     "); choose an empty --out directory");
    }
  }

  // Encodes from where Restore left off, closing shards and saving progress.
  Status Go(TokenizeSummary& summary, const std::function<bool(const TokenizeProgress&)>& on_progress);

 private:
  Status RestoreFields(TokenizeSummary& summary) {
    const fs::path path = fs::path(options_.out_dir) / kManifest;
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      for (const auto& entry : fs::directory_iterator(options_.out_dir, ec)) {
        if (entry.path().extension() == ".bin") {
          return Status::InvalidArgument(options_.out_dir + " already holds token shards (" +
                                         entry.path().filename().string() + ") but no " + kManifest +
                                         "; choose an empty --out directory");
        }
      }
      return Status::Ok();
    }
    PW_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path.string()));
    Json m = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (m.is_discarded() || !m.is_object() || !m.contains("options") || !m.contains("next")) {
      return Status::InvalidArgument(path.string() + ": not a tokenize manifest; choose an empty --out directory");
    }
    if (!m["next"].is_object() || !m["options"].is_object()) {
      return Status::InvalidArgument(path.string() + ": not a tokenize manifest; choose an empty --out directory");
    }
    if (m["options"] != OptionsJson()) {
      return Status::InvalidArgument(options_.out_dir + " holds the shards of a different tokenize run (other "
                                     "inputs, tokenizer or options; see " + path.string() +
                                     "); choose another --out directory or delete that one");
    }
    file_ = m["next"].value("file", size_t{0});
    offset_ = m["next"].value("offset", size_t{0});
    val_open_ = m.value("val_open", false);
    train_shards_ = m.value("train_shards", int64_t{0});
    progress_.tokens = m.value("tokens", int64_t{0});
    progress_.documents = m.value("documents", int64_t{0});
    progress_.bytes_done = m.value("bytes_done", int64_t{0});
    for (const Json& s : m.value("shards", Json::array())) shards_.push_back(s);
    progress_.shards = static_cast<int64_t>(shards_.size());
    summary.resumed = true;
    summary.already_done = m.value("done", false);
    return Status::Ok();
  }


 private:
  std::string NextName() const { return val_open_ ? ShardName(true, 0) : ShardName(false, train_shards_); }

  // Writes one document's tokens: [BOS] + text's ids + [EOS] (bos/eos: this
  // piece starts/ends the document). Errors carry no place: callers add it.
  Status Emit(std::string_view text, bool bos, bool eos) {
    PW_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tokenizer_.Encode(text));
    const SpecialTokens& special = tokenizer_.special();
    const int64_t before = writer_->size();
    if (bos && special.add_bos && special.bos) PW_RETURN_IF_ERROR(writer_->Append(std::span(&*special.bos, 1)));
    PW_RETURN_IF_ERROR(writer_->Append(ids));
    if (eos && special.eos) PW_RETURN_IF_ERROR(writer_->Append(std::span(&*special.eos, 1)));
    progress_.tokens += writer_->size() - before;
    if (eos) ++progress_.documents;
    return Status::Ok();
  }

  Status EncodeText(std::string_view chunk, const std::string& path, bool first, bool last) {
    if (auto bad = FirstInvalidUtf8(chunk)) {
      return Status::InvalidArgument(path + ": not valid UTF-8 at byte " + std::to_string(offset_ + *bad) +
                                     "; convert it first (e.g. iconv -f LATIN1 -t UTF-8)");
    }
    return Emit(chunk, first, last).WithContext(path);
  }

  Status EncodeJsonLines(std::string_view chunk, const std::string& path, int64_t& line) {
    size_t begin = 0;
    while (begin < chunk.size()) {
      size_t end = chunk.find('\n', begin);
      if (end == std::string_view::npos) end = chunk.size();
      std::string_view text = chunk.substr(begin, end - begin);
      const int64_t line_no = line++;
      begin = end + 1;
      // FILE:LINE of a message, built only when there is one.
      const auto where = [&] { return path + ":" + std::to_string(line_no); };
      if (TrimSpaces(text).empty()) continue;
      Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object()) {
        return Status::InvalidArgument(where() + ": not a JSON object; each line of a JSONL file is one "
                                       "{\"" + options_.field + "\": \"...\"} document");
      }
      auto it = j.find(options_.field);
      if (it == j.end() || !it->is_string()) {
        return Status::InvalidArgument(where() + ": no string field \"" + options_.field +
                                       "\"; name the text's key with --field");
      }
      const std::string& doc = it->get_ref<const std::string&>();
      if (doc.empty()) continue;
      if (Status s = Emit(doc, /*bos=*/true, /*eos=*/true); !s.ok()) return s.WithContext(where());
    }
    return Status::Ok();
  }

  Status CloseShard(bool done) {
    const std::string name = NextName();
    const int64_t tokens = writer_->size();
    PW_RETURN_IF_ERROR(writer_->Commit());
    shards_.push_back({{"name", name}, {"tokens", tokens}});
    progress_.shards = static_cast<int64_t>(shards_.size());
    if (val_open_) {
      val_open_ = false;
    } else {
      ++train_shards_;
    }
    PW_RETURN_IF_ERROR(SaveManifest(done));
    writer_.emplace((fs::path(options_.out_dir) / NextName()).string(), width_);
    return Status::Ok();
  }

  Status SaveManifest(bool done) {
    // The next chunk to read: past the end of a file means the next file.
    size_t file = file_, offset = offset_;
    if (file < files_.size() && offset >= static_cast<size_t>(files_[file].bytes)) ++file, offset = 0;
    Json m = {{"format", "pipewright-tokenize"},
              {"version", 1},
              {"options", OptionsJson()},
              {"next", {{"file", file}, {"offset", offset}}},
              {"val_open", val_open_},
              {"train_shards", train_shards_},
              {"shards", shards_},
              {"tokens", progress_.tokens},
              {"documents", progress_.documents},
              {"bytes_done", progress_.bytes_done},
              {"done", done}};
    return WriteManifest(fs::path(options_.out_dir) / kManifest, m);
  }

  const TokenizeOptions& options_;
  const Tokenizer& tokenizer_;
  std::vector<InputFile> files_;
  int width_;
  size_t file_ = 0, offset_ = 0;  // the next chunk to encode
  bool val_open_ = false;         // tokens still go to the validation shard
  int64_t train_shards_ = 0;
  std::vector<Json> shards_;
  TokenizeProgress progress_;
  std::optional<TokenShardWriter> writer_;
};

Status Run::Go(TokenizeSummary& summary, const std::function<bool(const TokenizeProgress&)>& on_progress) {
  const auto start = Clock::now();
  for (const InputFile& f : files_) progress_.bytes_total += f.bytes;
  if (!summary.resumed) val_open_ = options_.val_tokens > 0;
  const int64_t bytes_at_start = progress_.bytes_done;
  // The manifest exists before the first shard does, so a run stopped
  // before its first manifest update is still resumed, not refused.
  if (!summary.resumed) PW_RETURN_IF_ERROR(SaveManifest(/*done=*/false));
  writer_.emplace((fs::path(options_.out_dir) / NextName()).string(), width_);
  for (; !summary.already_done && file_ < files_.size(); ++file_, offset_ = 0) {
    const InputFile& input = files_[file_];
    PW_ASSIGN_OR_RETURN(MappedRegion region, MappedRegion::ReadOnlyFile(input.path));
    const std::string_view data(static_cast<const char*>(region.data()), region.size());
    int64_t line = 1 + std::count(data.begin(), data.begin() + static_cast<long>(offset_), '\n');
    while (offset_ < data.size()) {
      const size_t end = ChunkEnd(data, offset_, input.jsonl, tokenizer_.EncodesNewlineCutsAlike());
      const std::string_view chunk = data.substr(offset_, end - offset_);
      if (input.jsonl) {
        PW_RETURN_IF_ERROR(EncodeJsonLines(chunk, input.path, line));
      } else {
        PW_RETURN_IF_ERROR(EncodeText(chunk, input.path, /*first=*/offset_ == 0, /*last=*/end == data.size()));
      }
      progress_.bytes_done += static_cast<int64_t>(chunk.size());
      offset_ = end;
      const int64_t limit = val_open_ ? options_.val_tokens : options_.shard_tokens;
      if (writer_->size() >= limit) PW_RETURN_IF_ERROR(CloseShard(/*done=*/false));
      progress_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (on_progress && !on_progress(progress_)) {
        summary.stopped = true;
        break;
      }
    }
    if (summary.stopped) break;
  }
  if (!summary.already_done && !summary.stopped) {
    if (writer_->size() > 0) {
      PW_RETURN_IF_ERROR(CloseShard(/*done=*/true));
    } else {
      PW_RETURN_IF_ERROR(SaveManifest(/*done=*/true));
    }
  }
  summary.totals = progress_;
  summary.bytes_this_run = progress_.bytes_done - bytes_at_start;
  summary.seconds_this_run = std::chrono::duration<double>(Clock::now() - start).count();
  for (const Json& s : shards_) summary.shards.push_back(s["name"].get<std::string>());
  return Status::Ok();
}

}  // namespace

Result<TokenizeSummary> TokenizeCorpus(const TokenizeOptions& options, const Tokenizer& tokenizer,
                                       const std::function<bool(const TokenizeProgress&)>& on_progress) {
  if (options.shard_tokens < 1) return Status::InvalidArgument("--shard-tokens must be >= 1");
  if (options.val_tokens < 0) return Status::InvalidArgument("--val-tokens must be >= 0");
  if (options.out_dir.empty()) return Status::InvalidArgument("--out names the output directory");
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  PW_ASSIGN_OR_RETURN(std::vector<InputFile> files, ExpandInputs(options.inputs, options.out_dir));
  if (!fs::is_directory(options.out_dir, ec)) {
    return Status::IoError("cannot create the output directory " + options.out_dir);
  }
  Run run(options, tokenizer, std::move(files));
  TokenizeSummary summary;
  PW_RETURN_IF_ERROR(run.Restore(summary));
  PW_RETURN_IF_ERROR(run.Go(summary, on_progress));
  return summary;
}

}  // namespace pw
