// The measured trace with the rank observers' lanes: each rank's side-task
// intervals ("rank N side tasks", sorted just below the rank's own lane),
// placed on the steps they happened in.
//
// Thread-safety: pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/rank_observer.h"
#include "runtime/timeline.h"

namespace pw {

// The events as spans of the steps they started in (the step whose origin
// is the last at or before the event; events before the first step are
// left out). span.stage indexes `names`, which gets each distinct event name.
Timeline ObserverLane(const std::vector<RankObserver::LaneEvent>& events,
                      const std::map<int64_t, std::chrono::steady_clock::time_point>& step_origins,
                      std::vector<std::string>* names);

// The trace with each rank's observer lane added. `ranks[r]`: rank r's
// measured spans (for the step origins); `lanes[r]`: rank r's lane
// (ObserverLane), `names[r]` its names. A trace that is not a Chrome trace
// object comes back unchanged.
std::string AddObserverLanes(const std::string& trace, const std::vector<std::vector<TimelineSpan>>& ranks,
                             const std::vector<std::vector<TimelineSpan>>& lanes,
                             const std::vector<std::vector<std::string>>& names);

}  // namespace pw
