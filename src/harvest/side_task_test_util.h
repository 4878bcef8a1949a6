// Helpers shared by the side-task tests: a built-in made from its spec
// text, and one of its metrics by name (a test failure when either fails).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "harvest/side_task.h"

namespace pw {

inline std::unique_ptr<SideTask> MakeTestTask(const std::string& text) {
  Result<SideTaskSpec> spec = ParseSideTaskSpec(text);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  if (!spec.ok()) return nullptr;
  Result<std::unique_ptr<SideTask>> task = MakeBuiltinSideTask(*spec);
  EXPECT_TRUE(task.ok()) << task.status().ToString();
  return task.ok() ? std::move(task).value() : nullptr;
}

inline double MetricOf(const SideTask& task, const std::string& key) {
  for (const auto& [k, v] : task.Metrics()) {
    if (k == key) return v;
  }
  ADD_FAILURE() << "no metric " << key;
  return 0;
}

}  // namespace pw
