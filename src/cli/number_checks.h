// Checks for numeric flags with a message a person can read. CLI11's own
// NonNegativeNumber and PositiveNumber print their range with the largest
// double spelled out (300 digits); these say "--flag: -1 is negative".
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace pw::cli {

// Accepts a number >= 0; anything else is a usage error (exit 2).
inline CLI::Validator NonNegative() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "not a number: " + input;
        return value >= 0 ? std::string() : input + " is negative; give 0 or more";
      },
      "NONNEGATIVE");
}

// Accepts a number > 0; anything else is a usage error (exit 2).
inline CLI::Validator Positive() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value)) return "not a number: " + input;
        return value > 0 ? std::string() : input + " is not positive; give a number above 0";
      },
      "POSITIVE");
}

}  // namespace pw::cli
