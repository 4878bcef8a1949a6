// The built-in side tasks' shared plumbing: option parsing against each
// task's declared options (so `side-task list` and parsing agree on names
// and defaults), and the factories side_task.cc dispatches to.
//
// Thread-safety: TaskOptions is immutable after Parse.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "harvest/side_task.h"

namespace pw {

class TaskOptions {
 public:
  // "key=value" args checked against `info.options`: InvalidArgument on an
  // unknown key (with the valid ones) or a missing '='.
  static Result<TaskOptions> Parse(const BuiltinSideTaskInfo& info, const std::vector<std::string>& args);

  // The value given, or the declared default. InvalidArgument names the
  // task, the option and the accepted range.
  Result<int64_t> Int(const std::string& key, int64_t min, int64_t max) const;
  Result<double> Double(const std::string& key, double min, double max) const;
  std::string String(const std::string& key) const;
  bool Given(const std::string& key) const { return given_.count(key) > 0; }

 private:
  std::string task_;
  std::map<std::string, std::string> values_;  // defaults, then given values
  std::map<std::string, bool> given_;
};

BuiltinSideTaskInfo CnnTaskInfo();
BuiltinSideTaskInfo PageRankTaskInfo();
BuiltinSideTaskInfo ImageTaskInfo();
BuiltinSideTaskInfo InferTaskInfo();
Result<std::unique_ptr<SideTask>> MakeCnnTask(const TaskOptions& options);
Result<std::unique_ptr<SideTask>> MakePageRankTask(const TaskOptions& options);
Result<std::unique_ptr<SideTask>> MakeImageTask(const TaskOptions& options);
Result<std::unique_ptr<SideTask>> MakeInferTask(const TaskOptions& options);

}  // namespace pw
