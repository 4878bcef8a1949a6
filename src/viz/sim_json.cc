#include "viz/sim_json.h"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <string>

#include "viz/style.h"

namespace pw {

std::string_view FormatJsonDouble(double v, char (&text)[64]) {
  if (!std::isfinite(v)) return "null";
  // The shortest digits that read back as v, from to_chars in scientific
  // form ("-d.ddde+XX"), laid out by nlohmann's rules (its format_buffer):
  // fixed notation while the decimal point is within 15 digits of the
  // first digit and no more than 4 zeros follow it, else scientific.
  // Plain char buffers: `schedule sim --json` prints millions of numbers.
  char sci[40];
  const auto [sci_end, ec] = std::to_chars(sci, sci + sizeof(sci), v, std::chars_format::scientific);
  const char* e_at = std::find(sci, sci_end, 'e');
  const bool negative = sci[0] == '-';
  char digits[32];  // at most 17 significant digits
  int k = 0;
  for (const char* c = sci + (negative ? 1 : 0); c < e_at; ++c) {
    if (*c != '.') digits[k++] = *c;
  }
  int exponent = 0;
  std::from_chars(e_at + (e_at[1] == '+' ? 2 : 1), sci_end, exponent);
  const int n = exponent + 1;  // the decimal point sits after n digits
  char* out = text;
  auto put = [&](const char* from, int count) {
    std::copy(from, from + count, out);
    out += count;
  };
  auto zeros = [&](int count) { out = std::fill_n(out, count, '0'); };
  if (negative) *out++ = '-';
  if (k <= n && n <= 15) {
    put(digits, k);
    zeros(n - k);
    put(".0", 2);
  } else if (0 < n && n <= 15) {
    put(digits, n);
    *out++ = '.';
    put(digits + n, k - n);
  } else if (-4 < n && n <= 0) {
    put("0.", 2);
    zeros(-n);
    put(digits, k);
  } else {
    *out++ = digits[0];
    if (k > 1) {
      *out++ = '.';
      put(digits + 1, k - 1);
    }
    const int e = n - 1;
    out += std::snprintf(out, 8, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
  }
  return std::string_view(text, static_cast<size_t>(out - text));
}

namespace {

// Appends JSON text to a buffer and hands it to a FILE in large writes;
// without a FILE it keeps the whole text (Text()).
class JsonStream {
 public:
  explicit JsonStream(std::FILE* out) : out_(out) {
    if (out_ != nullptr) buffer_.reserve(kFlushBytes + 4096);
  }

  JsonStream& Raw(std::string_view text) {
    buffer_.append(text);
    if (out_ != nullptr && buffer_.size() >= kFlushBytes) Flush();
    return *this;
  }
  JsonStream& Key(std::string_view key) { return Raw("\"").Raw(key).Raw("\":"); }
  JsonStream& Number(double v) {
    char text[64];
    return Raw(FormatJsonDouble(v, text));
  }
  JsonStream& Integer(long long v) {
    char text[24];
    const auto [end, ec] = std::to_chars(text, text + sizeof(text), v);
    return Raw(std::string_view(text, static_cast<size_t>(end - text)));
  }
  JsonStream& Bool(bool v) { return Raw(v ? "true" : "false"); }
  JsonStream& String(const std::string& v) { return Raw(nlohmann::json(v).dump()); }
  JsonStream& Optional(const std::optional<double>& v) { return v ? Number(*v) : Raw("null"); }

  const std::string& Text() const { return buffer_; }

  Status Finish() {
    if (out_ == nullptr) return Status::Ok();
    Flush();
    if (std::fflush(out_) != 0 || std::ferror(out_)) return Status::IoError("cannot write the JSON output");
    return Status::Ok();
  }

 private:
  static constexpr size_t kFlushBytes = size_t{1} << 20;
  void Flush() {
    if (!buffer_.empty()) std::fwrite(buffer_.data(), 1, buffer_.size(), out_);
    buffer_.clear();
  }
  std::FILE* out_;
  std::string buffer_;
};

// Keys in nlohmann::json's (alphabetical) order, so the text reads as dump()'s.
void StreamSimResult(JsonStream& j, const Schedule& schedule, const SimResult& result, const CostModel& costs) {
  viz_internal::CheckRanksMatch(schedule, result);
  j.Raw("{").Key("bubble_ratio").Number(result.bubble_ratio);
  j.Raw(",").Key("cluster").String(costs.cluster.Describe());
  j.Raw(",").Key("makespan").Number(result.makespan);
  j.Raw(",").Key("memory_cap").Optional(costs.memory_cap);
  j.Raw(",").Key("memory_cap_violated").Bool(result.memory_cap_violated);
  j.Raw(",").Key("num_actions").Integer(schedule.NumActions());
  j.Raw(",").Key("num_microbatches").Integer(schedule.num_microbatches);
  j.Raw(",").Key("num_ranks").Integer(schedule.num_ranks());
  j.Raw(",").Key("num_stages").Integer(schedule.num_stages());
  j.Raw(",").Key("placement").String(schedule.placement.Describe());
  j.Raw(",").Key("ranks").Raw("[");
  for (size_t r = 0; r < result.ranks.size(); ++r) {
    const RankSimResult& rank = result.ranks[r];
    j.Raw(r == 0 ? "{" : ",{").Key("bubble_memory").Raw("[");
    for (size_t i = 0; i < rank.bubbles.size(); ++i) {
      const Bubble& b = rank.bubbles[i];
      j.Raw(i == 0 ? "{" : ",{").Key("end").Number(b.end);
      j.Raw(",").Key("free_memory").Optional(b.free_memory);
      j.Raw(",").Key("memory_used").Number(b.memory_used);
      j.Raw(",").Key("start").Number(b.start).Raw("}");
    }
    j.Raw("],").Key("bubbles").Raw("[");
    for (size_t i = 0; i < rank.bubbles.size(); ++i) {
      j.Raw(i == 0 ? "[" : ",[").Number(rank.bubbles[i].start).Raw(",").Number(rank.bubbles[i].end).Raw("]");
    }
    j.Raw("],").Key("busy").Number(rank.busy);
    j.Raw(",").Key("idle").Number(std::max(0.0, result.makespan - rank.busy));
    j.Raw(",").Key("memory_cap_violated").Bool(rank.memory_cap_violated);
    j.Raw(",").Key("peak_memory").Number(rank.peak_memory);
    j.Raw(",").Key("rank").Integer(static_cast<long long>(r)).Raw("}");
  }
  j.Raw("],").Key("schedule").String(schedule.name).Raw("}");
}

}  // namespace

Status WriteSimResultJson(std::FILE* out, const Schedule& schedule, const SimResult& result, const CostModel& costs) {
  JsonStream j(out);
  StreamSimResult(j, schedule, result, costs);
  j.Raw("\n");
  return j.Finish();
}

nlohmann::json SimResultToJson(const Schedule& schedule, const SimResult& result, const CostModel& costs) {
  JsonStream j(nullptr);
  StreamSimResult(j, schedule, result, costs);
  return nlohmann::json::parse(j.Text());
}

}  // namespace pw
