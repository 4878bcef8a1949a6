// The one progress line of long work (training steps, inference requests):
// FormatProgress is a pure function, e.g.
//   "step 12/100 [==>                 ] 12% loss 3.21 15.2k tok/s ETA 0:42"
//   "infer 3/10 requests [======>             ] 30% 1.2k tok/s ETA 0:04 (rank 0's share)"
// (bar of kProgressBarWidth cells; ETA = elapsed / (step - first_step) x
// (total - step), H:MM:SS from an hour on; tokens/s as 950, 15.2k, 1.23M).
// ProgressPrinter draws it in place on a terminal, relays it through a
// launcher's pipe, or (plain mode) leaves the caller its own lines.
//
// Thread-safety: FormatProgress is pure; a ProgressPrinter is used by one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace pw {

inline constexpr int kProgressBarWidth = 20;

struct ProgressInfo {
  std::string label = "step";  // what is counted: "step 12/100 ..."
  std::string unit;         // after the count: "infer 3/10 requests ..."
  int64_t step = 0;         // units done (1-based: 1 after the first step)
  int64_t total = 0;        // units in the run
  bool show_loss = true;
  double loss = 0;
  double tokens_per_s = 0;
  double elapsed_s = 0;     // since training (or this resumed run) started
  int64_t first_step = 0;   // steps already done when the run started (resume)
  std::string note;         // in parentheses at the end, if any
};

std::string FormatProgress(const ProgressInfo& info);

// "0:42", "12:05", "1:02:03"; negative or non-finite → "?".
std::string FormatEta(double seconds);

// "950", "15.2k", "1.23M".
std::string FormatRate(double per_s);

// Whether `stream` is a terminal (isatty).
bool IsTerminal(std::FILE* stream);

// kPlain: the caller prints its own step lines (the printer only relays
// messages); kInPlace: one line rewritten in place ("\r" ... erase to end of
// line), for a terminal; kRelay: "progress: <line>" lines, for a rank whose
// stdout is a pipe to a launcher that renders them in place (RelayLine).
enum class ProgressMode { kPlain, kInPlace, kRelay };
inline constexpr std::string_view kProgressRelayPrefix = "progress: ";

class ProgressPrinter {
 public:
  ProgressPrinter(std::FILE* stream, ProgressMode mode) : stream_(stream), mode_(mode) {}
  ~ProgressPrinter() { Finish(); }
  ProgressPrinter(const ProgressPrinter&) = delete;
  ProgressPrinter& operator=(const ProgressPrinter&) = delete;

  // Whether Update draws anything (kInPlace or kRelay).
  bool active() const { return mode_ != ProgressMode::kPlain; }
  void Update(const ProgressInfo& info);
  // Prints a message on a line of its own (above the bar when in place).
  void Message(const std::string& line);
  // Launcher side (kInPlace): `line` as a rank wrote it, possibly prefixed
  // "[rank N] ". A progress line (kProgressRelayPrefix) is drawn in place,
  // without the prefixes; any other line goes to `other` (stdout or stderr)
  // as it is.
  void RelayLine(const std::string& line, std::FILE* other);
  // Ends the in-place line (newline); idempotent.
  void Finish();

 private:
  void DrawInPlace(std::string_view line);

  std::FILE* stream_;
  ProgressMode mode_;
  bool open_line_ = false;
};

}  // namespace pw
