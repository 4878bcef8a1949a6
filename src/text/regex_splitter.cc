#include "text/regex_splitter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>

namespace pw {

struct RegexSplitter::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Result<RegexSplitter> RegexSplitter::Compile(std::string_view pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    return Status::InvalidArgument("pre-tokenizer regex does not compile at offset " + std::to_string(offset) +
                                   ": " + reinterpret_cast<const char*>(message) + " (pattern: " +
                                   std::string(pattern) + ")");
  }
  // JIT is an optimisation only: where it is unavailable pcre2_match
  // interprets the same pattern.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  auto holder = std::make_shared<Code>();
  holder->code = code;
  return RegexSplitter(std::string(pattern), std::move(holder));
}

Status RegexSplitter::Split(std::string_view text, std::vector<std::string_view>& pieces) const {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match_data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  if (!match_data) return Status::Internal("pre-tokenizer: out of memory for the regex engine");
  pcre2_match_data* match = match_data.get();
  // JIT code runs on its own stack; PCRE2's default (32 KiB) can overflow
  // on long whitespace runs under lookahead. Only then is a larger one made.
  std::unique_ptr<pcre2_match_context, decltype(&pcre2_match_context_free)> context(nullptr,
                                                                                  &pcre2_match_context_free);
  std::unique_ptr<pcre2_jit_stack, decltype(&pcre2_jit_stack_free)> stack(nullptr, &pcre2_jit_stack_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;  // where the next match search begins
  size_t emitted = 0;  // text before this is already in `pieces`
  while (start < text.size()) {
    int rc = pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, match, context.get());
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !stack) {
      context.reset(pcre2_match_context_create(nullptr));
      stack.reset(pcre2_jit_stack_create(64 * 1024, 16 * 1024 * 1024, nullptr));
      if (!context || !stack) return Status::Internal("pre-tokenizer: out of memory for the regex engine");
      pcre2_jit_stack_assign(context.get(), nullptr, stack.get());
      rc = pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, match, context.get());
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      return Status::InvalidArgument("the pre-tokenizer regex gave up at byte " + std::to_string(start) + " (" +
                                     reinterpret_cast<const char*>(message) + "); split the text into smaller "
                                     "documents");
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const size_t begin = ovector[0], end = ovector[1];
    if (begin > emitted) pieces.push_back(text.substr(emitted, begin - emitted));
    if (end > begin) {
      pieces.push_back(text.substr(begin, end - begin));
      emitted = end;
      start = end;
    } else {
      // An empty match: step over one code point so the search moves on.
      emitted = begin;
      start = begin + 1;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
    }
  }
  if (emitted < text.size()) pieces.push_back(text.substr(emitted));
  return Status::Ok();
}

}  // namespace pw
