// A job's fields (core/fields.h) as one JSON object and back: the job file a
// launcher writes for its worker ranks (`--job FILE`) and the job recorded
// in a checkpoint manifest. Doubles keep every bit (nlohmann writes the
// shortest text that reads back exactly), so no setting changes on the way.
//
// Thread-safety: pure.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fields.h"

namespace pw {

// Every field, hidden ones included, under its name.
template <class Job>
nlohmann::json FieldsToJson(const Job& job) {
  nlohmann::json j = nlohmann::json::object();
  auto visit = [&](const auto& field, const FieldInfo& info) { j[std::string(info.name)] = field; };
  job.VisitFields(visit);
  return j;
}

// Sets the fields named in `j` (others keep their values). A key that is no
// field, or a value of the wrong type or out of range, is InvalidArgument
// naming `source` and the key.
template <class Job>
Status FieldsFromJson(const nlohmann::json& j, Job& job, const std::string& source) {
  if (!j.is_object()) return Status::InvalidArgument(source + ": expected a JSON object of settings");
  Status status;
  size_t known = 0;
  auto visit = [&](auto& field, const FieldInfo& info) {
    using T = std::remove_reference_t<decltype(field)>;
    auto it = j.find(std::string(info.name));
    if (!status.ok() || it == j.end()) return;
    ++known;
    const std::string where = source + ": " + std::string(info.name);
    bool type_ok = false;
    if constexpr (std::is_same_v<T, bool>) type_ok = it->is_boolean();
    else if constexpr (std::is_integral_v<T>) type_ok = it->is_number_integer();
    else if constexpr (std::is_floating_point_v<T>) type_ok = it->is_number();
    else if constexpr (std::is_same_v<T, std::string>) type_ok = it->is_string();
    else type_ok = it->is_array();  // std::vector<std::string>
    if (!type_ok) {
      status = Status::InvalidArgument(where + ": wrong type (" + std::string(it->type_name()) + ")");
      return;
    }
    try {
      T value = it->template get<T>();
      status = CheckFieldRange(value, info, where);
      if (status.ok()) field = std::move(value);
    } catch (const nlohmann::json::exception& e) {
      status = Status::InvalidArgument(where + ": " + e.what());
    }
  };
  job.VisitFields(visit);
  PW_RETURN_IF_ERROR(status);
  if (known != j.size()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      bool is_field = false;
      auto find = [&](const auto&, const FieldInfo& info) { is_field = is_field || info.name == it.key(); };
      job.VisitFields(find);
      if (!is_field) return Status::InvalidArgument(source + ": unknown setting '" + it.key() + "'");
    }
  }
  return Status::Ok();
}

}  // namespace pw
