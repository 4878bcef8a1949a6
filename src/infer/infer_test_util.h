// Shared by the infer/ tests: small byte-level model configs. init_std is
// large (0.2) so that random-init logits are far from ties and greedy
// decoding is a sharp test of equality.
#pragma once

#include "model/model_config.h"

namespace pw {

inline ModelConfig SmallTestConfig(int d_model, int n_layers, int seq_len, bool bias = true) {
  ModelConfig c;
  c.vocab_size = 256;
  c.d_model = d_model;
  c.n_layers = n_layers;
  c.n_heads = 4;
  c.seq_len = seq_len;
  c.bias = bias;
  c.init_std = 0.2;
  return c;
}

}  // namespace pw
