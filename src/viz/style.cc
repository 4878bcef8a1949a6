#include "viz/style.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pw::viz_internal {

KindLetters::KindLetters(const KindRegistry& kinds) : letters_(kMaxKinds, '?') {
  auto set = [this](ActionKind k, char c) { letters_[static_cast<size_t>(k)] = c; };
  set(ActionKind::kForward, 'F');
  set(ActionKind::kBackward, 'B');
  set(ActionKind::kBackwardInput, 'I');
  set(ActionKind::kBackwardWeight, 'W');
  set(ActionKind::kSendForward, 'S');
  set(ActionKind::kSendBackward, 'S');
  set(ActionKind::kRecvForward, 'R');
  set(ActionKind::kRecvBackward, 'R');
  set(ActionKind::kReduceGrad, 'G');
  set(ActionKind::kOptimizer, 'O');
  set(ActionKind::kIdle, '.');
  std::string taken = "FBIWSRGO";
  for (ActionKind k : kinds.UserKinds()) {
    for (char c : kinds.Name(k)) {
      if (c >= 'A' && c <= 'Z' && taken.find(c) == std::string::npos) {
        set(k, c);
        taken += c;
        break;
      }
    }
  }
}

std::string KindFill(const KindRegistry& kinds, ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward: return "#0072B2";
    case ActionKind::kBackward: return "#009E73";
    case ActionKind::kBackwardInput: return "#E69F00";
    case ActionKind::kBackwardWeight: return "#CC79A7";
    case ActionKind::kSendForward:
    case ActionKind::kRecvForward:
    case ActionKind::kSendBackward:
    case ActionKind::kRecvBackward: return "#B0B0B0";
    case ActionKind::kReduceGrad: return "#505050";
    case ActionKind::kOptimizer: return "#303030";
    default: break;
  }
  // User kinds: distinct greys, in registration order.
  static constexpr const char* kGreys[] = {"#8C8C8C", "#6E6E6E", "#A6A6A6", "#5A5A5A", "#BDBDBD"};
  const std::vector<ActionKind> users = kinds.UserKinds();
  const auto it = std::find(users.begin(), users.end(), kind);
  const size_t i = it == users.end() ? 0 : static_cast<size_t>(it - users.begin());
  return kGreys[i % std::size(kGreys)];
}

std::string KindDescription(const KindRegistry& kinds, ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward: return "forward";
    case ActionKind::kBackward: return "backward";
    case ActionKind::kBackwardInput: return "backward (input)";
    case ActionKind::kBackwardWeight: return "backward (weight)";
    default: return std::string(kinds.Name(kind));
  }
}

namespace {

int HexByte(std::string_view hex, size_t at) {
  auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 0;
  };
  return digit(hex[at]) * 16 + digit(hex[at + 1]);
}

}  // namespace

std::string Lighten(std::string_view hex, double t) {
  PW_CHECK(hex.size() == 7 && hex[0] == '#', "colour must be #rrggbb");
  char out[8];
  int rgb[3];
  for (int i = 0; i < 3; ++i) {
    const int c = HexByte(hex, 1 + 2 * i);
    rgb[i] = static_cast<int>(std::lround(c + (255 - c) * t));
  }
  std::snprintf(out, sizeof(out), "#%02X%02X%02X", rgb[0], rgb[1], rgb[2]);
  return out;
}

bool PrefersDarkText(std::string_view hex) {
  PW_CHECK(hex.size() == 7 && hex[0] == '#', "colour must be #rrggbb");
  // Perceived brightness (ITU-R BT.601 weights); 150 keeps white text on
  // the Okabe-Ito blue, green and purple, and black on orange.
  const double y = 0.299 * HexByte(hex, 1) + 0.587 * HexByte(hex, 3) + 0.114 * HexByte(hex, 5);
  return y > 150;
}

std::vector<int> ChunkOfStage(const Placement& placement) {
  std::vector<int> chunk(placement.num_stages(), 0);
  for (RankId r = 0; r < placement.num_ranks(); ++r) {
    const std::vector<StageId>& stages = placement.StagesOf(r);
    for (size_t i = 0; i < stages.size(); ++i) chunk[stages[i]] = static_cast<int>(i);
  }
  return chunk;
}

int MaxChunksPerRank(const Placement& placement) {
  size_t most = 0;
  for (RankId r = 0; r < placement.num_ranks(); ++r) most = std::max(most, placement.StagesOf(r).size());
  return static_cast<int>(most);
}

void CheckSpansMatch(const Schedule& schedule, const SimResult& result) {
  PW_CHECK(result.spans.size() == schedule.programs.size(),
           "SimResult has no spans for this schedule; simulate with SimOptions::record_spans");
  for (size_t r = 0; r < schedule.programs.size(); ++r) {
    PW_CHECK(result.spans[r].size() == schedule.programs[r].size(),
             "SimResult spans of rank " + std::to_string(r) + " do not match its program");
  }
  CheckRanksMatch(schedule, result);
}

void CheckRanksMatch(const Schedule& schedule, const SimResult& result) {
  PW_CHECK(result.ranks.size() == static_cast<size_t>(schedule.num_ranks()),
           "SimResult has " + std::to_string(result.ranks.size()) + " ranks, the schedule " +
               std::to_string(schedule.num_ranks()));
}

double NiceStep(double raw) {
  if (!(raw > 0)) return 1;
  const double base = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 5.0}) {
    if (f * base >= raw * (1 - 1e-9)) return f * base;
  }
  return 10 * base;
}

std::string FormatNumber(double v) {
  if (v == 0) return "0";  // also turns -0 into "0"
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string FormatPercent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", ratio * 100);
  return buf;
}

}  // namespace pw::viz_internal
