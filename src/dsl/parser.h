// Reading and writing `.pipe` files (the schedule language).
//
// The grammar is documented in docs/schedule-language.md. Errors carry
// file:line:col, what was expected and a hint; malformed input of any kind
// gives an error, never a crash (fuzz/pipe_parser_fuzz.cc).
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "dsl/pipe_program.h"

namespace pw::dsl {

// Parses the text of a .pipe file; `source_name` (a path) prefixes errors.
Result<PipeProgram> ParsePipeProgram(std::string_view text, std::string_view source_name);

// Reads and parses a .pipe file.
Result<PipeProgram> LoadPipeFile(const std::string& path);

// The canonical text of `program`: ParsePipeProgram(FormatPipeProgram(x))
// gives a program equal in meaning to x (and that compiles to the same
// schedule).
std::string FormatPipeProgram(const PipeProgram& program);

}  // namespace pw::dsl
