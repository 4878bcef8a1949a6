// TOML text parsed by toml++, for every reader of TOML in pipewright (the
// [model] table, model/model_config.h; the [train] table, job/fields_toml.h).
//
// Debian 12's toml++ 3.3 reaches __builtin_unreachable (undefined behaviour:
// a crash or a wrong result, by build) when asked whether certain non-ASCII
// characters (U+00A1..U+0499 among them: 'é', '§') are whitespace, which it
// asks for any character outside strings and comments, in quoted keys, and
// after a line-ending backslash in a multi-line string. The fuzz target
// (fuzz/toml_config_fuzz.cc) found it; upstream fixed it after 3.3. So the
// text is checked first and such a character is refused with a message
// that says where and what to write instead; in comments and in value
// strings (paths, names) every character stays allowed.
//
// Thread-safety: pure functions.
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>

#include "core/status.h"

namespace pw {

// "source:line:col" of the start of `region`.
std::string TomlLocation(std::string_view source, const toml::source_region& region);

// OK, or InvalidArgument "source:line:col: ..." for a character that
// toml++ 3.3 cannot read safely where it stands (above). Pure.
Status CheckTomlCharacters(std::string_view text, std::string_view source);

// CheckTomlCharacters, then toml::parse. InvalidArgument
// "source:line:col: TOML syntax error: <what>" (one line) on a syntax error.
Result<toml::table> ParseTomlText(std::string_view text, std::string_view source);

}  // namespace pw
