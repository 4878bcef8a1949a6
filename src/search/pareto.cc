#include "search/pareto.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pw::search {
namespace {

bool Less(double a, double b, double rel_tol) { return a < b - rel_tol * std::max(1.0, std::abs(b)); }

}  // namespace

std::vector<size_t> ParetoFront(const std::vector<TimeMemoryPoint>& points, double rel_tol) {
  std::vector<size_t> order(points.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // By makespan, then memory, then index: a sweep then keeps a point only
  // when its memory is strictly below every faster (or equally fast) point's.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (Less(points[a].makespan, points[b].makespan, rel_tol)) return true;
    if (Less(points[b].makespan, points[a].makespan, rel_tol)) return false;
    return Less(points[a].memory, points[b].memory, rel_tol);
  });
  std::vector<size_t> front;
  for (size_t i : order) {
    if (front.empty() || Less(points[i].memory, points[front.back()].memory, rel_tol)) front.push_back(i);
  }
  return front;
}

}  // namespace pw::search
