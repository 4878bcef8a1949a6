// pw_side_task_host: the side-task host process without the CLI — the same
// body and the same argv as `pipewright side-task host` (harvest/task_host.h):
//   pw_side_task_host side-task host --spec TEXT --control-fd N --margin X
#include <cstdio>
#include <string>
#include <vector>

#include "harvest/task_host.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  pw::Result<pw::SideTaskHostArgs> parsed = pw::ParseSideTaskHostArgv(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "pw_side_task_host: %s\n", parsed.status().message().c_str());
    return 2;
  }
  return pw::RunSideTaskHost(*parsed);
}
