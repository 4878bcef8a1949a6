// The time/memory Pareto front: the schedules that no other schedule beats
// on both makespan and peak memory (max over ranks). The planner keeps one
// over every candidate it evaluated that fits the memory cap.
//
// Pure functions; safe to call concurrently.
#pragma once

#include <cstddef>
#include <vector>

namespace pw::search {

struct TimeMemoryPoint {
  double makespan = 0;
  double memory = 0;
};

// Indices of the points on the front, sorted by makespan ascending (memory
// then descends). A point is dropped when another is no worse in both and
// strictly better in one; of exact duplicates the lowest index stays.
// `rel_tol` treats values within that relative distance as equal, so that
// floating-point noise does not make two equal schedules both "better".
std::vector<size_t> ParetoFront(const std::vector<TimeMemoryPoint>& points, double rel_tol = 1e-9);

}  // namespace pw::search
