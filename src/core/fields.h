// Options as data: a job (TrainJob, InferJob) or a config (ModelConfig)
// declares each of its settings once, in its VisitFields method, as
// (reference, FieldInfo). Every reader
// and writer of settings is a visitor over that one list:
//   - command-line flags (cli/job_flags.h: --NAME with '_' as '-'),
//   - `--set SECTION.NAME=VALUE` and TOML tables (SetFieldFromText here,
//     job/fields_toml.h),
//   - the JSON job file a launcher hands its worker ranks and the checkpoint
//     manifest (job/fields_json.h).
// So a setting added to a job reaches every one of them, and none of them
// can lose a value on the way (gemma.cpp's gemma_args.h habit).
//
// A job's VisitFields is a template over the visitor:
//   template <class V> void VisitFields(V& v) {
//     v(pp, {"pp", "Pipeline ranks", 1, 4096});
//     v(lr, {"lr", "Peak learning rate", 0});
//   }
// with a const overload for writers. Field types: bool, int, int64_t,
// uint64_t, double, std::string, std::vector<std::string> (repeatable). A
// string field with a fixed set of values declares them, so every reader
// refuses any other value as it reads it (with "did you mean"):
//     v(split, {.name = "split", .help = "...", .choices = "queue round-robin"});
//
// Thread-safety: everything here is pure over the job it is given.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/status.h"
#include "core/text.h"

namespace pw {

enum FieldFlag : unsigned {
  kFieldPath = 1u << 0,     // a file or directory: made absolute before workers see it
  kFieldHidden = 1u << 1,   // plumbing between launcher and workers: not in --help, not settable by --set
  kFieldCliOnly = 1u << 2,  // a flag only (e.g. --config): not a --set or TOML key
  kFieldAuto = 1u << 3,     // with kFieldPath: the value "auto" is a keyword, not a path
};

struct FieldInfo {
  std::string_view name;  // snake_case key; the flag is --name with '_' as '-'
  std::string_view help;  // one line for --help
  double min = -std::numeric_limits<double>::infinity();  // inclusive range of numbers,
  double max = std::numeric_limits<double>::infinity();   // checked by every reader
  unsigned flags = 0;     // FieldFlag bits
  std::string_view choices = {};  // a string field's allowed values, space-separated; empty: any text
};

// The field's allowed values ("queue", "round-robin"); empty when any text is.
std::vector<std::string_view> FieldChoices(const FieldInfo& info);

// An enum field's value is the index of its name among the field's
// choices ("learned rope": 0 is learned, 1 rope), so its names are declared
// once, in the choices. The index of `word` in `choices`, or nullopt.
std::optional<size_t> ChoiceIndex(std::string_view choices, std::string_view word);
// The `index`-th word of `choices` ("" past the end).
std::string_view ChoiceAt(std::string_view choices, size_t index);

// OK when `value` is one of the field's choices (or it has none), else
// InvalidArgument starting with "`where`: " (when given) that lists them
// and suggests the closest one.
Status CheckFieldChoice(std::string_view value, const FieldInfo& info, std::string_view where);

// "--microbatch-size" for "microbatch_size".
inline std::string FlagName(std::string_view name) {
  std::string flag = "--" + std::string(name);
  for (char& c : flag) c = c == '_' ? '-' : c;
  return flag;
}

// OK when `value` lies in the field's range (a number) or is one of its
// choices (a string), else InvalidArgument naming it.
template <class T>
Status CheckFieldRange(const T& value, const FieldInfo& info, std::string_view where) {
  if constexpr (std::is_same_v<T, std::string>) {
    return CheckFieldChoice(value, info, where);
  } else if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    const double v = static_cast<double>(value);
    if (!(v >= info.min && v <= info.max)) {
      std::string range = info.max == std::numeric_limits<double>::infinity()
                              ? ">= " + ExactDouble(info.min)
                              : "in [" + ExactDouble(info.min) + ", " + ExactDouble(info.max) + "]";
      return Status::InvalidArgument(std::string(where) + ": " + ExactDouble(v) + " is out of range; " +
                                     std::string(info.name) + " must be " + range);
    }
  }
  return Status::Ok();
}

// Parses `text` into a field of type T (a vector field gets `text` appended).
template <class T>
Status ParseFieldText(std::string_view text, T& out, std::string_view where) {
  if constexpr (std::is_same_v<T, std::string>) {
    out = std::string(text);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    out.emplace_back(text);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (text == "true" || text == "1") {
      out = true;
    } else if (text == "false" || text == "0") {
      out = false;
    } else {
      return Status::InvalidArgument(std::string(where) + ": '" + PrintableText(text) + "' is not true or false");
    }
  } else {
    T v{};
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range && ptr == text.data() + text.size()) {
      return Status::InvalidArgument(std::string(where) + ": '" + PrintableText(text) + "' is out of range");
    }
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
      return Status::InvalidArgument(std::string(where) + ": '" + PrintableText(text) + "' is not " +
                                     (std::is_floating_point_v<T> ? "a number" : "a whole number"));
    }
    out = v;
  }
  return Status::Ok();
}

// " (did you mean 'lr'?); valid train keys: pp, lr, ...": what follows
// "unknown key" in a message, for `key` among the settable fields of `job`
// (neither hidden nor CLI-only); `keys_label` names the list ("train keys",
// "[model] keys").
template <class Job>
std::string UnknownKeyHint(const Job& job, std::string_view key, std::string_view keys_label) {
  std::string names, closest;
  size_t best = 3;  // suggest only close misspellings
  auto visit = [&](const auto&, const FieldInfo& info) {
    if ((info.flags & (kFieldHidden | kFieldCliOnly)) != 0) return;
    names += (names.empty() ? "" : ", ") + std::string(info.name);
    const size_t distance = EditDistance(key, info.name);
    if (distance < best) best = distance, closest = info.name;
  };
  job.VisitFields(visit);
  return (closest.empty() ? "" : " (did you mean '" + closest + "'?)") + "; valid " + std::string(keys_label) +
         ": " + names;
}

// `SECTION.KEY=VALUE` applied to `job` by field name, e.g. from
// `--set train.lr=1e-3` (`section` is "train" there). Messages start with
// `origin` ("--set train.lr=1e-3" when empty; a TOML reader passes
// "FILE: [train] lr"). Hidden and CLI-only fields are not keys. An unknown
// key is an error that suggests the closest name and lists the valid ones.
// Range-checked; on error the job is unchanged.
template <class Job>
Status SetFieldFromText(Job& job, std::string_view section, std::string_view key, std::string_view value,
                        std::string_view origin = "") {
  const std::string where = origin.empty() ? "--set " + std::string(section) + "." + PrintableText(key) + "=" +
                                                 PrintableText(value)
                                           : std::string(origin);
  bool found = false;
  Status status;
  auto visit = [&](auto& field, const FieldInfo& info) {
    if ((info.flags & (kFieldHidden | kFieldCliOnly)) != 0) return;
    if (found || key != info.name) return;
    found = true;
    using T = std::remove_reference_t<decltype(field)>;
    if constexpr (std::is_enum_v<T>) {
      status = CheckFieldChoice(value, info, where);
      if (status.ok()) field = static_cast<T>(*ChoiceIndex(info.choices, value));
    } else {
      T parsed = field;
      status = ParseFieldText(value, parsed, where);
      if (status.ok()) status = CheckFieldRange(parsed, info, where);
      if (status.ok()) field = std::move(parsed);
    }
  };
  job.VisitFields(visit);
  if (!found) {
    return Status::InvalidArgument((origin.empty() ? "--set " + std::string(section) + "." + PrintableText(key)
                                                   : std::string(origin)) +
                                   ": unknown key" + UnknownKeyHint(job, key, std::string(section) + " keys"));
  }
  return status;
}

// Checks every numeric field of `job` against its range and every choice
// field against its choices (what a reader that bypasses the flags, e.g. a
// test or a JSON file, might have set).
template <class Job>
Status CheckFieldRanges(const Job& job) {
  Status status;
  auto visit = [&](const auto& field, const FieldInfo& info) {
    if (status.ok()) status = CheckFieldRange(field, info, FlagName(info.name));
  };
  job.VisitFields(visit);
  return status;
}

// Makes every non-empty path field (kFieldPath) absolute against the current
// directory: a worker rank may start elsewhere. "auto" stays as it is in a
// field flagged kFieldAuto (a directory of that name is given as ./auto).
std::string AbsolutePath(const std::string& path);
template <class Job>
void MakePathsAbsolute(Job& job) {
  auto visit = [](auto& field, const FieldInfo& info) {
    if constexpr (std::is_same_v<std::remove_reference_t<decltype(field)>, std::string>) {
      const bool keyword = (info.flags & kFieldAuto) != 0 && field == "auto";
      if ((info.flags & kFieldPath) != 0 && !field.empty() && !keyword) field = AbsolutePath(field);
    }
  };
  job.VisitFields(visit);
}

}  // namespace pw
