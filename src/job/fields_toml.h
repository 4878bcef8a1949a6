// A TOML table as settings of a job (core/fields.h): a model file's [train]
// table sets the defaults of `pipewright train`'s flags, so each bundled
// model carries the settings that train it well.
//
// Thread-safety: pure.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/fields.h"

namespace pw {

struct TomlSetting {
  std::string key;
  std::string text;    // the value as text (a string's contents; numbers and booleans as written)
  std::string origin;  // "FILE:LINE:COL: [SECTION] KEY", for messages
};

// The keys of table `section` of the TOML text, in order, with values as
// text (an array of strings gives one entry per element). No table: none.
// A syntax error, or a value that is a table or a non-string array, is
// InvalidArgument naming source:line:col.
Result<std::vector<TomlSetting>> ReadTomlTable(std::string_view toml_text, std::string_view section,
                                               std::string_view source);

// Applies ReadTomlTable's settings to `job` by field name, skipping the keys
// for which `skip` returns true (e.g. flags given on the command line).
template <class Job>
Status ApplyTomlTable(Job& job, std::string_view section, std::string_view toml_text, std::string_view source,
                      const std::function<bool(std::string_view)>& skip) {
  PW_ASSIGN_OR_RETURN(std::vector<TomlSetting> settings, ReadTomlTable(toml_text, section, source));
  for (const TomlSetting& s : settings) {
    if (skip && skip(s.key)) continue;
    PW_RETURN_IF_ERROR(SetFieldFromText(job, section, s.key, s.text, s.origin));
  }
  return Status::Ok();
}

}  // namespace pw
