#include "infer/prompts_io.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "constrain/token_constraint.h"
#include "core/file_io.h"
#include "core/text.h"

namespace pw {
namespace {

using nlohmann::json;
// Prompt lines keep their keys in order: a "json_schema" lists its
// properties in the order the output writes them.
using LineJson = nlohmann::ordered_json;

constexpr const char* kLineExample = R"(e.g. {"id": "q1", "prompt": "Once upon a time", "max_tokens": 32})";

std::string Where(const std::string& source, int64_t line) {
  return source + ":" + std::to_string(line) + ": ";
}

// A short quote of a bad line for the message.
std::string Quote(std::string_view line) {
  constexpr size_t kMax = 40;
  std::string q = PrintableText(line.substr(0, kMax));
  if (line.size() > kMax) q += "...";
  return "'" + q + "'";
}

// nlohmann's DOM builder, told not to throw, that keeps where and on what
// the parse failed (its exception's id, not its message's wording, tells a
// number beyond a double from bad syntax).
class LineParser : public nlohmann::detail::json_sax_dom_parser<LineJson> {
 public:
  explicit LineParser(LineJson& j) : json_sax_dom_parser(j, /*allow_exceptions_=*/false) {}
  bool parse_error(std::size_t position, const std::string& last_token, const LineJson::exception& e) {
    failed = true;
    column = position;
    token = last_token;
    overflow = e.id == kNumberOverflow;
    return false;
  }

  static constexpr int kNumberOverflow = 406;  // out_of_range.406
  bool failed = false, overflow = false;
  std::size_t column = 0;  // 1-based byte of the line where the parse stopped
  std::string token;       // what was read last, control characters escaped
};

// Parses `line` into `j`; what is wrong with it, or "".
std::string ParseJsonLine(std::string_view line, LineJson& j) {
  LineParser parser(j);
  LineJson::sax_parse(line, &parser);
  if (!parser.failed) return "";
  if (parser.overflow) {
    // A number beyond a double (1e4000): uncaught it ended the whole job
    // (found by fuzzing).
    return "not valid JSON (number overflow parsing '" + PrintableText(parser.token) +
           "'); write one JSON object per line, " + kLineExample;
  }
  return "not valid JSON at column " + std::to_string(parser.column) + " (near " + Quote(parser.token) +
         "); write one JSON object per line, " + kLineExample;
}

// The record's "id": the line number when absent or null.
std::string ReadId(const LineJson& j, int64_t line_no, std::string& id) {
  auto it = j.find("id");
  if (it == j.end() || it->is_null()) {
    id = std::to_string(line_no);
  } else if (it->is_string()) {
    id = it->get<std::string>();
  } else if (it->is_number_integer()) {
    id = it->dump();
  } else {
    return "\"id\" must be a string or an integer, got " + std::string(it->type_name()) +
           "; e.g. \"id\": \"q1\" or \"id\": 17";
  }
  return "";
}

// The record's "max_tokens", when given.
std::string ReadMaxTokens(const LineJson& j, int& max_tokens) {
  auto it = j.find("max_tokens");
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > (1 << 30)) {
    return "\"max_tokens\" must be a positive integer, got " + it->dump() +
           "; e.g. \"max_tokens\": 32 (or leave it out for --max-tokens)";
  }
  max_tokens = static_cast<int>(it->get<int64_t>());
  return "";
}

// The record's "n", when given.
std::string ReadSamples(const LineJson& j, int& n) {
  auto it = j.find("n");
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > kMaxSamplesPerPrompt) {
    return "\"n\" (samples of this prompt) must be an integer from 1 to " + std::to_string(kMaxSamplesPerPrompt) + ", got " +
           it->dump();
  }
  n = static_cast<int>(it->get<int64_t>());
  return "";
}

// The record's "prompt_ids": a non-empty array of token ids >= 0.
std::string ReadPromptIds(const LineJson& ids, std::vector<int64_t>& out) {
  if (!ids.is_array() || ids.empty()) {
    return "\"prompt_ids\" must be a non-empty array of token ids, e.g. \"prompt_ids\": [128000, 9906]";
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!ids[i].is_number_integer() || ids[i].get<int64_t>() < 0 || ids[i].get<int64_t>() > INT32_MAX) {
      return "\"prompt_ids\"[" + std::to_string(i) + "] must be a token id (an integer >= 0), got " + ids[i].dump();
    }
    out.push_back(ids[i].get<int64_t>());
  }
  return "";
}

// The record's "json_schema" / "regex", compiled to check them (`checked`
// keeps each distinct one's verdict: files repeat one schema on every line).
std::string ReadConstraint(const LineJson& j, PromptRecord& record, std::unordered_map<std::string, std::string>& checked) {
  auto schema = j.find("json_schema");
  auto regex = j.find("regex");
  if (schema != j.end() && !schema->is_null()) {
    if (!schema->is_object() && !schema->is_boolean()) {
      return "\"json_schema\" must be a JSON Schema object, got " + std::string(schema->type_name()) +
             R"(; e.g. "json_schema": {"type": "object", "properties": {"answer": {"type": "string"}}})";
    }
    record.json_schema = schema->dump();
  }
  if (regex != j.end() && !regex->is_null()) {
    if (!regex->is_string() || regex->get<std::string>().empty()) {
      return "\"regex\" must be a non-empty string, e.g. \"regex\": \"(yes|no)\"";
    }
    record.regex = regex->get<std::string>();
  }
  if (record.json_schema.empty() && record.regex.empty()) return "";
  const std::string key = record.json_schema + '\0' + record.regex;
  auto it = checked.find(key);
  if (it == checked.end()) {
    std::string verdict;
    Status compiled = TokenConstraint::Check(record.json_schema, record.regex);
    if (!compiled.ok()) verdict = compiled.message() + "; fix it or leave the line unconstrained";
    it = checked.emplace(key, verdict).first;
  }
  return it->second;
}

// Reads line `line_no` into `record` (all but its index); what is wrong
// with it ("what; how to fix"), or "".
std::string ParsePromptLine(std::string_view line, int64_t line_no, PromptRecord& record,
                            std::unordered_map<std::string, std::string>& checked) {
  LineJson j;
  if (std::string problem = ParseJsonLine(line, j); !problem.empty()) return problem;
  if (!j.is_object()) return "expected a JSON object, got " + Quote(line) + "; " + kLineExample;
  auto prompt_it = j.find("prompt");
  auto ids_it = j.find("prompt_ids");
  if (prompt_it != j.end() && ids_it != j.end()) {
    return "both \"prompt\" and \"prompt_ids\" are given; keep one (text, or token ids used as given)";
  }
  record.line = static_cast<int>(line_no);
  if (ids_it != j.end()) {
    if (std::string problem = ReadPromptIds(*ids_it, record.prompt_ids); !problem.empty()) return problem;
  } else {
    if (prompt_it == j.end()) return std::string("missing \"prompt\"; add the prompt text as a string, ") + kLineExample;
    if (!prompt_it->is_string()) {
      return "\"prompt\" must be a string, got " + std::string(prompt_it->type_name()) + "; quote the text";
    }
    record.prompt = prompt_it->get<std::string>();
    if (record.prompt.empty()) return "\"prompt\" is empty; give at least one character to continue from";
  }
  if (std::string problem = ReadId(j, line_no, record.id); !problem.empty()) return problem;
  if (std::string problem = ReadSamples(j, record.n); !problem.empty()) return problem;
  if (std::string problem = ReadConstraint(j, record, checked); !problem.empty()) return problem;
  return ReadMaxTokens(j, record.max_tokens);
}

}  // namespace

PromptFile ParsePrompts(std::string_view text, const std::string& source_name) {
  PromptFile file;
  std::unordered_map<std::string, int> first_line;  // id -> line
  std::unordered_map<std::string, std::string> checked;  // constraint -> what is wrong with it
  size_t start = 0;
  int64_t line_no = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (TrimSpaces(line).empty()) continue;
    PromptRecord record;
    std::string problem = ParsePromptLine(line, line_no, record, checked);
    if (problem.empty()) {
      auto [it, inserted] = first_line.emplace(record.id, record.line);
      if (!inserted) {
        problem = "duplicate id \"" + PrintableText(record.id) + "\" (first on line " + std::to_string(it->second) +
                  "); give every prompt a unique id: results and resume are keyed by id";
      }
    }
    if (!problem.empty()) {
      file.problems.push_back(Where(source_name, line_no) + problem);
      continue;
    }
    record.index = static_cast<int64_t>(file.prompts.size());
    file.prompts.push_back(std::move(record));
  }
  file.lines = line_no;
  return file;
}

Result<PromptFile> ReadPromptFile(const std::string& path) {
  Result<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status().WithContext("prompt file");
  return ParsePrompts(*text, path);
}

std::vector<PromptRecord> ShareOfRank(const std::vector<PromptRecord>& prompts, int rank, int world) {
  std::vector<PromptRecord> share;
  for (const PromptRecord& p : prompts) {
    if (p.index % world == rank) share.push_back(p);
  }
  return share;
}

void GroupByPrefix(std::vector<PromptRecord>& prompts) {
  // Sorted order puts every two prompts that share a start next to all
  // those between them, which share it too. Stable: equal prompts keep
  // file order.
  std::stable_sort(prompts.begin(), prompts.end(), [](const PromptRecord& a, const PromptRecord& b) {
    const bool a_ids = a.prompt.empty(), b_ids = b.prompt.empty();
    if (a_ids != b_ids) return b_ids;  // text first
    return a_ids ? a.prompt_ids < b.prompt_ids : a.prompt < b.prompt;
  });
}

std::string TokensToBytes(const std::vector<int64_t>& tokens) {
  std::string bytes;
  bytes.reserve(tokens.size());
  for (int64_t t : tokens) bytes.push_back(static_cast<char>(static_cast<unsigned char>(t & 0xff)));
  return bytes;
}

std::string FormatResultLine(const ResultRecord& record) {
  json j;
  j["id"] = record.id;
  j["index"] = record.index;
  if (record.samples > 1) j["sample"] = record.sample;
  j["text"] = record.text;
  j["tokens"] = record.tokens;
  j["finish_reason"] = FinishReasonName(record.finish_reason);
  if (record.finish_reason == FinishReason::kError) j["error"] = record.error;
  j["prompt_tokens"] = record.prompt_tokens;
  j["rank"] = record.rank;
  j["seconds"] = record.seconds;
  if (record.has_logprobs) {
    json scored = json::array();
    for (const TokenLogprobs& t : record.logprobs) {
      json top = json::array();
      for (const TokenAlternative& a : t.top) top.push_back({{"token", a.token}, {"logprob", a.logprob}});
      scored.push_back({{"token", t.token}, {"logprob", t.logprob}, {"top_logprobs", std::move(top)}});
    }
    j["logprobs"] = std::move(scored);
  }
  // replace: bytes that are not UTF-8 become U+FFFD; "tokens" keeps them exact.
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string SampleKey(const std::string& id, int sample, int samples) {
  // \x1f (unit separator) cannot occur in an id read from JSON text unescaped.
  return samples > 1 ? id + '\x1f' + std::to_string(sample) : id;
}

DoneSet ParseDone(std::string_view text) {
  DoneSet done;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      done.torn_tail = true;  // written without its newline: cut by a crash
      break;
    }
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (TrimSpaces(line).empty()) continue;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("id") || !j["id"].is_string() || !j.contains("finish_reason")) {
      ++done.invalid_lines;
      continue;
    }
    const auto sample = j.find("sample");
    if (sample != j.end() && sample->is_number_integer()) {
      done.ids.insert(SampleKey(j["id"].get<std::string>(), static_cast<int>(sample->get<int64_t>()), kMaxSamplesPerPrompt));
    } else {
      done.ids.insert(j["id"].get<std::string>());
    }
    ++done.lines;
  }
  return done;
}

Result<DoneSet> ReadDoneIds(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && !ec) return DoneSet{};
  Result<std::string> text = ReadTextFile(path);
  if (!text.ok()) return text.status().WithContext("results file (--out)");
  return ParseDone(*text);
}

Result<ResultWriter> ResultWriter::Open(const std::string& path) {
  PW_ASSIGN_OR_RETURN(LineLog log, LineLog::Open(path, "results file"));
  return ResultWriter(std::move(log));
}

Status ResultWriter::Append(const ResultRecord& record) { return log_.Append(FormatResultLine(record)); }

}  // namespace pw
