// Reports as data: a report struct declares each of its fields once, as
// (member pointer, ReportField), in a ReportFieldsOf<T> specialization:
//   template <> struct ReportFieldsOf<DecodeReport> {
//     template <class V> static void Visit(V&& v) {
//       v(&DecodeReport::passes, ReportField{"passes"});
//       v(&DecodeReport::seconds, ReportField{"seconds", kCombineSum});
//     }
//   };
// and one writer (ReportToJson), one reader (ReportFromJson) and one
// combiner across ranks (CombineReports) serve every report. Member
// pointers rather than references (core/fields.h's habit) because the
// combiner walks several reports of one type side by side.
//
// Field types: bool, int, int64_t, double, std::string, KvDtype (its name
// in JSON), a struct with its own ReportFieldsOf, std::optional of any of
// these (absent from the JSON when empty), std::vector of a report struct
// (written only). Objects are nlohmann::json's, whose keys are sorted, so
// the order of declaration does not change the text.
//
// Thread-safety: everything here is pure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "infer/kv_cache.h"

namespace pw {

// How the job combines a field across its ranks (bits; 0: per rank only).
// Ranks agree on kCombineSame fields, and the job reports rank 0's.
enum CombineRule : unsigned {
  kCombinePerRank = 0,
  kCombineSum = 1u << 0,
  kCombineMax = 1u << 1,
  kCombineMin = 1u << 2,  // of bools: whether every rank's is true
  kCombineSame = 1u << 3,
};

struct ReportField {
  std::string_view key;               // the JSON key
  unsigned combine = kCombinePerRank;  // CombineRule bits
};

template <class T>
struct ReportFieldsOf {};  // specialized, with Visit, by every report struct

namespace report_detail {

template <class T>
concept ReportStruct = requires { ReportFieldsOf<T>::Visit([](auto, const ReportField&) {}); };
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};

}  // namespace report_detail

// Every field of `report` under its key; nested structs as objects.
template <class T>
nlohmann::json ReportToJson(const T& report);

namespace report_detail {

template <class T>
nlohmann::json ValueToJson(const T& value) {
  if constexpr (ReportStruct<T>) {
    return ReportToJson(value);
  } else if constexpr (IsVector<T>::value) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& item : value) list.push_back(ValueToJson(item));
    return list;
  } else if constexpr (std::is_same_v<T, KvDtype>) {
    return KvDtypeName(value);
  } else {
    return value;
  }
}

// Reads `j` into `out`. Messages: "`where`: key `path` is missing".
template <class T>
Status ValueFromJson(const nlohmann::json& j, T& out, const std::string& where, const std::string& path);

template <class T>
Status FieldsFromJson(const nlohmann::json& j, T& out, const std::string& where, const std::string& path) {
  Status status;
  ReportFieldsOf<T>::Visit([&](auto member, const ReportField& field) {
    if (!status.ok()) return;
    using Value = std::remove_reference_t<decltype(out.*member)>;
    const std::string key = (path.empty() ? "" : path + ".") + std::string(field.key);
    auto it = j.find(std::string(field.key));
    if constexpr (IsOptional<Value>::value) {
      if (it == j.end()) return;
      typename Value::value_type value{};
      status = ValueFromJson(*it, value, where, key);
      out.*member = std::move(value);
    } else if (it == j.end()) {
      status = Status::InvalidArgument(where + ": key " + key + " is missing");
    } else {
      status = ValueFromJson(*it, out.*member, where, key);
    }
  });
  return status;
}

template <class T>
Status ValueFromJson(const nlohmann::json& j, T& out, const std::string& where, const std::string& path) {
  bool type_ok = false;
  if constexpr (ReportStruct<T>) type_ok = j.is_object();
  else if constexpr (std::is_same_v<T, bool>) type_ok = j.is_boolean();
  else if constexpr (std::is_integral_v<T>) type_ok = j.is_number_integer();
  else if constexpr (std::is_floating_point_v<T>) type_ok = j.is_number();
  else type_ok = j.is_string();  // std::string, KvDtype
  if (!type_ok) {
    return Status::InvalidArgument(where + ": key " + path + " has the wrong type (" + j.type_name() + ")");
  }
  if constexpr (ReportStruct<T>) {
    return FieldsFromJson(j, out, where, path);
  } else if constexpr (std::is_same_v<T, KvDtype>) {
    Result<KvDtype> dtype = ParseKvDtype(j.get_ref<const std::string&>());
    if (!dtype.ok()) return dtype.status().WithContext(where + ": key " + path);
    out = *dtype;
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = j.get_ref<const std::string&>();
  } else {
    out = j.template get<T>();  // the type was checked: does not throw
  }
  return Status::Ok();
}

// Folds `value` (one more rank's) into the accumulators by `rule`.
template <class T>
void CombineValue(const T& value, unsigned rule, T& sum, T& max, T& min) {
  if constexpr (ReportStruct<T>) {
    ReportFieldsOf<T>::Visit([&](auto member, const ReportField& field) {
      CombineValue(value.*member, field.combine, sum.*member, max.*member, min.*member);
    });
  } else if constexpr (IsOptional<T>::value) {
    if (!value) return;
    if (!sum) {  // the first rank that has it
      sum = max = min = value;
      return;
    }
    CombineValue(*value, rule, *sum, *max, *min);
  } else if constexpr (std::is_arithmetic_v<T>) {
    if constexpr (std::is_same_v<T, bool>) {
      if (rule & kCombineMin) min = min && value;
    } else {
      if (rule & kCombineSum) sum += value;
      if (rule & kCombineMin) min = std::min(min, value);
    }
    if (rule & kCombineMax) max = std::max(max, value);
  }
}

}  // namespace report_detail

template <class T>
nlohmann::json ReportToJson(const T& report) {
  nlohmann::json j = nlohmann::json::object();
  ReportFieldsOf<T>::Visit([&](auto member, const ReportField& field) {
    const auto& value = report.*member;
    using Value = std::remove_cvref_t<decltype(value)>;
    if constexpr (report_detail::IsOptional<Value>::value) {
      if (value) j[std::string(field.key)] = report_detail::ValueToJson(*value);
    } else {
      j[std::string(field.key)] = report_detail::ValueToJson(value);
    }
  });
  return j;
}

// Reads a report written by ReportToJson. A missing field (other than an
// optional one) or a value of the wrong type is InvalidArgument naming
// `where` and the field's path ("rank 1's summary: key pool.fetches is
// missing"). Never throws.
template <class T>
Result<T> ReportFromJson(const nlohmann::json& j, const std::string& where) {
  T report{};
  if (!j.is_object()) return Status::InvalidArgument(where + " is not a JSON object");
  PW_RETURN_IF_ERROR(report_detail::FieldsFromJson(j, report, where, ""));
  return report;
}

// Every field of `reports` combined by its rule: `sum` holds the sums of
// kCombineSum fields, `max` and `min` the extremes of kCombineMax and
// kCombineMin fields; every other field (and each of the three where its
// rule does not apply) holds the first report's value. An optional field
// combines over the reports that have it. Empty `reports`: all default.
template <class T>
struct CombinedReports {
  T sum{}, max{}, min{};
};

template <class T>
CombinedReports<T> CombineReports(const std::vector<T>& reports) {
  CombinedReports<T> out;
  if (reports.empty()) return out;
  out.sum = out.max = out.min = reports.front();
  for (size_t i = 1; i < reports.size(); ++i) {
    report_detail::CombineValue(reports[i], kCombinePerRank, out.sum, out.max, out.min);
  }
  return out;
}

}  // namespace pw
