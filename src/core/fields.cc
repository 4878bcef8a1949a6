#include "core/fields.h"

#include <algorithm>
#include <filesystem>

namespace pw {

std::vector<std::string_view> FieldChoices(const FieldInfo& info) {
  std::vector<std::string_view> out;
  std::string_view rest = info.choices;
  while (!rest.empty()) {
    const size_t space = rest.find(' ');
    if (space != 0) out.push_back(rest.substr(0, space));
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  return out;
}

std::optional<size_t> ChoiceIndex(std::string_view choices, std::string_view word) {
  const std::vector<std::string_view> words = FieldChoices(FieldInfo{.choices = choices});
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == word) return i;
  }
  return std::nullopt;
}

std::string_view ChoiceAt(std::string_view choices, size_t index) {
  const std::vector<std::string_view> words = FieldChoices(FieldInfo{.choices = choices});
  return index < words.size() ? words[index] : std::string_view();
}

Status CheckFieldChoice(std::string_view value, const FieldInfo& info, std::string_view where) {
  const std::vector<std::string_view> choices = FieldChoices(info);
  if (choices.empty()) return Status::Ok();
  std::string names, closest;
  size_t best = std::max<size_t>(2, value.size() / 2) + 1;  // suggest only close misspellings
  for (std::string_view choice : choices) {
    if (choice == value) return Status::Ok();
    names += (names.empty() ? "" : ", ") + std::string(choice);
    const size_t distance = EditDistance(value, choice);
    if (distance < best) best = distance, closest = choice;
  }
  return Status::InvalidArgument((where.empty() ? "" : std::string(where) + ": ") + "'" + PrintableText(value) +
                                 "' is not a value of " +
                                 std::string(info.name) +
                                 (closest.empty() ? "" : " (did you mean '" + closest + "'?)") + "; use one of " +
                                 names);
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  return ec ? path : absolute.string();
}

}  // namespace pw
