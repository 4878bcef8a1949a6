#include "comm/gather.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

namespace pw {

// Two all-reduces over disjoint slots (lengths, then bytes): CommGroup's
// collectives are all-reduces, and a sum over zeros elsewhere is a gather.
Result<std::vector<std::string>> GatherStrings(CommGroup& group, const std::string& mine) {
  const int n = group.size(), r = group.rank();
  if (n <= 1) return std::vector<std::string>{mine};
  at::Tensor lengths = at::zeros({n}, at::kLong);
  lengths[r] = static_cast<int64_t>(mine.size());
  PW_RETURN_IF_ERROR(group.AllReduce({lengths}, ReduceKind::kSum).Wait());
  const int64_t longest = std::max<int64_t>(1, lengths.max().item<int64_t>());
  at::Tensor data = at::zeros({n, longest}, at::kByte);
  std::memcpy(data[r].data_ptr<uint8_t>(), mine.data(), mine.size());
  PW_RETURN_IF_ERROR(group.AllReduce({data}, ReduceKind::kSum).Wait());
  std::vector<std::string> all(n);
  for (int k = 0; k < n; ++k) {
    const int64_t len = lengths[k].item<int64_t>();
    const auto* bytes = reinterpret_cast<const char*>(data[k].data_ptr<uint8_t>());
    all[k].assign(bytes, static_cast<size_t>(len));
  }
  return all;
}

}  // namespace pw
