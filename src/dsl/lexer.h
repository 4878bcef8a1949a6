// Lexer for the schedule language (.pipe files): cuts one line into tokens
// with 1-based columns, strips its comment, and formats the errors of the
// whole front end ("file:line:col: what; expected ...; hint: ...").
//
// A token is a run of non-blank characters or a quoted string. A quote opens
// a string only at the start of a token ('...' takes no escapes; "..." takes
// \\ \" \n \t and \xHH); elsewhere a quote is an ordinary character, so a bare
// name like "it's" needs no quoting. '#' outside a string starts a comment
// that runs to the end of the line. Blanks are spaces and tabs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace pw::dsl {

struct Token {
  std::string_view text;  // as written, quotes included
  int column = 1;         // 1-based column of its first character
  bool quoted = false;
  std::string value;      // quoted: the contents with escapes resolved; bare: == text
};

struct LexedLine {
  int number = 0;            // 1-based line number
  std::string_view content;  // the line up to its comment, trailing blanks removed
  std::vector<Token> tokens;
};

// The front end's one error shape: "<source>:<line>:<column>: <what>" then
// "; expected <expected>" and "; hint: <hint>" when those are not empty.
// Always InvalidArgument.
Status SyntaxError(std::string_view source, int line, int column, std::string_view what,
                   std::string_view expected, std::string_view hint);

// Lexes `raw` (one line without its '\n'; a trailing '\r' is dropped) as line
// `number` of `source`. Fails on an unterminated string, a bad escape, or a
// character stuck to a closing quote. Pure; `raw` must outlive the result
// (tokens and content view into it).
Result<LexedLine> LexLine(std::string_view source, int number, std::string_view raw);

// `text` as the rest of a line: bare when it reads back as itself
// (non-empty, no blanks or control bytes at the ends, no '#', no quote
// characters, no control bytes; blanks inside are kept), else a
// double-quoted string with escapes. Used by the printer for free text
// such as schedule names.
std::string QuoteIfNeeded(std::string_view text);

// `text` as one token: as QuoteIfNeeded, and also quoted when it holds a
// blank anywhere (a bare token ends at a blank). Used for paths.
std::string QuoteToken(std::string_view text);

// True for space and tab.
inline bool IsBlank(char c) { return c == ' ' || c == '\t'; }

}  // namespace pw::dsl
