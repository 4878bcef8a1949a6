#include "search/step_prediction.h"

#include "schedule/lowering.h"
#include "sim/simulator.h"

namespace pw::search {

Result<double> PredictTrainingStep(const Schedule& compute, const CostModel& costs) {
  PW_ASSIGN_OR_RETURN(Schedule lowered, LowerForTraining(compute));
  CostModel uncapped = costs;
  uncapped.memory_cap.reset();
  PW_RETURN_IF_ERROR(uncapped.Resolve(lowered));
  SimOptions options;
  options.record_spans = false;
  options.record_bubbles = false;
  PW_ASSIGN_OR_RETURN(SimResult sim, Simulate(lowered, uncapped, options));
  return sim.makespan;
}

}  // namespace pw::search
