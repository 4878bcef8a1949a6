// A job's fields (core/fields.h) as CLI11 flags: --NAME (with '_' as '-')
// bound to the field, its help line, its default shown, its range checked
// (out of range: usage error, exit 2). Booleans are switches; repeatable
// fields (std::vector<std::string>) take the flag once per value.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/text.h"
#include "core/fields.h"

namespace pw::cli {

// The field's range as a CLI11 check ("[1 - 4096]", ">= 0"); none when
// unbounded. Out of range is a usage error (exit 2).
template <class T>
CLI::Validator RangeValidator(const FieldInfo& info) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const double min = info.min, max = info.max;
  if (min == -kInf && max == kInf) return CLI::Validator();
  auto text = [](double v) { return std::is_integral_v<T> ? std::to_string(static_cast<long long>(v)) : ExactDouble(v); };
  const std::string description = max == kInf    ? ">= " + text(min)
                                  : min == -kInf ? "<= " + text(max)
                                                 : "[" + text(min) + " - " + text(max) + "]";
  return CLI::Validator(
      [min, max, description](std::string& input) -> std::string {
        T value{};
        if (!CLI::detail::lexical_cast(input, value)) return "not a number: " + input;
        const double v = static_cast<double>(value);
        return v >= min && v <= max ? std::string() : "value " + input + " not in range " + description;
      },
      description);
}

// The field's choices as a CLI11 check ("{queue,round-robin}" in --help);
// any other value is a usage error (exit 2) that suggests the closest.
inline CLI::Validator ChoiceValidator(const FieldInfo& info) {
  std::string description;
  for (std::string_view choice : FieldChoices(info)) description += (description.empty() ? "" : ",") + std::string(choice);
  return CLI::Validator(
      [info](std::string& input) -> std::string {
        Status status = CheckFieldChoice(input, info, "");
        return status.ok() ? std::string() : status.message();
      },
      "{" + description + "}");
}

// Registers one flag per field of `job` on `cmd`; `job` must outlive the
// parse. Returns a predicate "was the field with this name given on the
// command line", valid after parsing (for the precedence of TOML tables).
template <class Job>
std::function<bool(std::string_view)> AddJobFlags(CLI::App* cmd, Job& job) {
  auto visit = [cmd](auto& field, const FieldInfo& info) {
    using T = std::remove_reference_t<decltype(field)>;
    const std::string flag = FlagName(info.name);
    CLI::Option* option = nullptr;
    if constexpr (std::is_same_v<T, bool>) {
      option = cmd->add_flag(flag, field, std::string(info.help));
    } else {
      option = cmd->add_option(flag, field, std::string(info.help));
      if constexpr (std::is_arithmetic_v<T>) {
        option->capture_default_str();
        option->check(RangeValidator<T>(info));
      } else if constexpr (std::is_same_v<T, std::string>) {
        if (!field.empty()) option->capture_default_str();
        if (!info.choices.empty()) option->check(ChoiceValidator(info));
      }
    }
    if ((info.flags & kFieldHidden) != 0) option->group("");
  };
  job.VisitFields(visit);
  return [cmd](std::string_view name) {
    const CLI::Option* option = cmd->get_option_no_throw(FlagName(name));
    return option != nullptr && option->count() > 0;
  };
}

}  // namespace pw::cli
