// Tests' view of a Block module's parameters as the BlockTensors that
// model/gpt_math.h computes with.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "model/gpt_math.h"

namespace pw {

// BlockTensors referring into `p` (a Block's named_parameters: "ln1.weight",
// "attn.qkv.weight", ...); a parameter the block lacks is an undefined
// tensor. `p` must outlive the result.
inline BlockTensors BlockTensorsOf(const std::map<std::string, at::Tensor>& p) {
  static const at::Tensor none;
  auto get = [&](const char* name) -> const at::Tensor& {
    auto it = p.find(name);
    return it == p.end() ? none : it->second;
  };
  return BlockTensors{
      .ln1_weight = get("ln1.weight"), .ln1_bias = get("ln1.bias"),
      .qkv_weight = get("attn.qkv.weight"), .qkv_bias = get("attn.qkv.bias"),
      .proj_weight = get("attn.proj.weight"), .proj_bias = get("attn.proj.bias"),
      .ln2_weight = get("ln2.weight"), .ln2_bias = get("ln2.bias"),
      .fc_weight = get("mlp.fc.weight"), .fc_bias = get("mlp.fc.bias"),
      .mlp_weight = get("mlp.proj.weight"), .mlp_bias = get("mlp.proj.bias")};
}

}  // namespace pw
