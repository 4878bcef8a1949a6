// Checks for numeric flags with a message a person can read. CLI11's own
// NonNegativeNumber and PositiveNumber print their range with the largest
// double spelled out (300 digits); these say "--flag: -1 is negative".
#pragma once

#include <string>
#include <utility>

#include <CLI/CLI.hpp>

namespace pw::cli {

// Accepts a number above 0, or equal to 0 when `zero_allowed`; anything else
// is a usage error (exit 2) whose message is `input + complaint`.
inline CLI::Validator SignCheck(bool zero_allowed, std::string complaint, std::string name) {
  return CLI::Validator(
      [zero_allowed, complaint](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "not a number: " + input;
        const bool ok = zero_allowed ? value >= 0 : value > 0;
        return ok ? std::string() : input + complaint;
      },
      std::move(name));
}

// Accepts a number >= 0.
inline CLI::Validator NonNegative() { return SignCheck(true, " is negative; give 0 or more", "NONNEGATIVE"); }

// Accepts a number > 0.
inline CLI::Validator Positive() { return SignCheck(false, " is not positive; give a number above 0", "POSITIVE"); }

}  // namespace pw::cli
