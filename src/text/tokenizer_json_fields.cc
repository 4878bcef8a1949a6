#include "text/tokenizer_json_fields.h"

namespace pw::tokenizer_json {
Status ReadMergeLine(std::string_view line, const std::function<std::string()>& where,
                     std::vector<std::pair<std::string, std::string>>& out) {
  const size_t space = line.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 >= line.size() ||
      line.find(' ', space + 1) != std::string_view::npos) {
    return Status::InvalidArgument(where() + ": a merge is two tokens separated by one space, got '" +
                                   std::string(line) + "'");
  }
  out.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  return Status::Ok();
}

bool IsTokenId(const Json& id) {
  return id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= kMaxTokenId;
}

Status BadId(const Json& id, const std::string& where) {
  return Status::InvalidArgument(where + " must be a token id in [0, " + std::to_string(kMaxTokenId) + "], got " +
                                 id.dump());
}

Status Unsupported(const std::string& source, const std::string& field, const std::string& what,
                   const std::string& how) {
  return Status::InvalidArgument(source + ": " + field + " " + what + " is not supported; " + how);
}

std::string TypeOf(const Json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "?";
}

Status ReadMerges(const Json& merges, const std::string& source,
                  std::vector<std::pair<std::string, std::string>>& out) {
  if (!merges.is_array()) return Status::InvalidArgument(source + ": model.merges must be an array");
  out.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const Json& m = merges[i];
    // The place of a message, built only when there is one.
    const auto where = [&] { return source + ": model.merges[" + std::to_string(i) + "]"; };
    if (m.is_string()) {
      PW_RETURN_IF_ERROR(ReadMergeLine(m.get_ref<const std::string&>(), where, out));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return Status::InvalidArgument(where() + " must be \"left right\" or [\"left\", \"right\"]");
    }
  }
  return Status::Ok();
}

Status ReadAddedTokens(const Json& added, const std::string& source, std::vector<AddedToken>& out) {
  for (size_t i = 0; added.is_array() && i < added.size(); ++i) {
    const Json& a = added[i];
    if (!a.is_object() || !a.contains("id") || !a.contains("content") || !a["content"].is_string()) {
      return Status::InvalidArgument(source + ": added_tokens[" + std::to_string(i) + "] needs an integer id and a string content");
    }
    if (!IsTokenId(a["id"])) return BadId(a["id"], source + ": added_tokens[" + std::to_string(i) + "].id");
    out.push_back(AddedToken{a["content"].get<std::string>(), a["id"].get<int32_t>(), a.value("special", false),
                             a.value("lstrip", false), a.value("rstrip", false)});
  }
  return Status::Ok();
}

std::optional<int32_t> TemplateBos(const Json& post) {
  if (TypeOf(post) == "Sequence" && post.contains("processors") && post["processors"].is_array()) {
    for (const Json& p : post["processors"]) {
      if (auto bos = TemplateBos(p)) return bos;
    }
    return std::nullopt;
  }
  if (TypeOf(post) != "TemplateProcessing" || !post.contains("single") || !post["single"].is_array() ||
      post["single"].empty()) {
    return std::nullopt;
  }
  const Json& first = post["single"][0];
  if (!first.is_object() || !first.contains("SpecialToken")) return std::nullopt;
  const std::string name = first["SpecialToken"].value("id", std::string());
  const Json& specials = post.value("special_tokens", Json::object());
  if (!specials.contains(name)) return std::nullopt;
  const Json& ids = specials[name].value("ids", Json::array());
  if (!ids.is_array() || ids.size() != 1 || !ids[0].is_number_integer()) return std::nullopt;
  return ids[0].get<int32_t>();
}

}  // namespace pw::tokenizer_json
