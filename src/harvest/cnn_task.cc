// CNN side task: trains a small convolutional classifier with LibTorch on a
// synthetic, deterministic labelled image set — each class is a fixed random
// prototype image, each sample its class's prototype plus noise, so the
// task is learnable and its loss falls. One step = one SGD minibatch. Work
// unit: images. Runs on one intra-op thread (the side task gets one core).
#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "harvest/builtin_tasks.h"

namespace pw {
namespace {

struct SmallCnnImpl : torch::nn::Module {
  SmallCnnImpl(int channels, int size, int classes)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, channels, 3).padding(1)))),
        conv2(register_module("conv2",
                              torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, 2 * channels, 3).padding(1)))),
        fc(register_module("fc", torch::nn::Linear(2 * channels * (size / 4) * (size / 4), classes))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    return fc->forward(x.flatten(1));
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc;
};
TORCH_MODULE(SmallCnn);

class CnnTask : public SideTask {
 public:
  CnnTask(int batch, int size, int classes, int channels, int samples, double lr, double noise, uint64_t seed)
      : batch_(batch), size_(size), classes_(classes), channels_(channels), samples_(samples), lr_(lr),
        noise_(noise), seed_(seed) {}
  std::string name() const override { return "cnn"; }
  std::string unit() const override { return "images"; }

  Status Setup() override {
    at::set_num_threads(1);
    torch::NoGradGuard no_grad;
    auto gen = at::detail::createCPUGenerator(seed_);
    const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    torch::Tensor prototypes = torch::randn({classes_, 1, size_, size_}, gen, f32);
    labels_ = torch::arange(samples_, torch::kLong).remainder(classes_);
    // A fixed permutation so minibatches mix the classes.
    labels_ = labels_.index_select(0, torch::randperm(samples_, gen, torch::kLong));
    images_ = prototypes.index_select(0, labels_) + noise_ * torch::randn({samples_, 1, size_, size_}, gen, f32);
    // The model's init follows the seed too (LibTorch draws it from the default generator).
    torch::manual_seed(seed_);
    model_ = SmallCnn(channels_, size_, classes_);
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(),
                                                     torch::optim::SGDOptions(lr_).momentum(0.9));
    return Status::Ok();
  }

  Result<double> Step() override {
    if (!optimizer_) return Status::FailedPrecondition("cnn: Step before Setup");
    const int64_t start = (cursor_ * batch_) % (samples_ - batch_ + 1);
    ++cursor_;
    torch::Tensor x = images_.narrow(0, start, batch_);
    torch::Tensor y = labels_.narrow(0, start, batch_);
    optimizer_->zero_grad();
    torch::Tensor loss = torch::cross_entropy_loss(model_->forward(x), y);
    loss.backward();
    optimizer_->step();
    last_loss_ = loss.item<double>();
    if (!std::isfinite(last_loss_)) {
      return Status::FailedPrecondition("cnn: the loss diverged (" + std::to_string(last_loss_) +
                                        "); lower lr (now " + std::to_string(lr_) + ")");
    }
    return static_cast<double>(batch_);
  }

  std::vector<std::pair<std::string, double>> Metrics() const override {
    return {{"loss", last_loss_}, {"minibatches", static_cast<double>(cursor_)}};
  }

 private:
  int batch_, size_, classes_, channels_, samples_;
  double lr_, noise_;
  uint64_t seed_;
  torch::Tensor images_, labels_;
  SmallCnn model_{nullptr};
  std::unique_ptr<torch::optim::SGD> optimizer_;
  int64_t cursor_ = 0;
  double last_loss_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace

BuiltinSideTaskInfo CnnTaskInfo() {
  return {"cnn",
          "images",
          "train a small conv net (2 conv + 1 linear, SGD) on synthetic labelled images",
          {{"batch", "32", "images per step (one SGD minibatch)"},
           {"size", "16", "image side in pixels (multiple of 4, 4-128)"},
           {"classes", "10", "number of classes (2-1000)"},
           {"channels", "8", "channels of the first conv layer (1-256)"},
           {"samples", "4096", "images in the synthetic training set"},
           {"lr", "0.01", "SGD learning rate (momentum 0.9)"},
           {"noise", "1.0", "noise added to each class prototype (std dev)"},
           {"seed", "1", "seed of the data and the model init"}}};
}

Result<std::unique_ptr<SideTask>> MakeCnnTask(const TaskOptions& o) {
  PW_ASSIGN_OR_RETURN(int64_t batch, o.Int("batch", 1, 65536));
  PW_ASSIGN_OR_RETURN(int64_t size, o.Int("size", 4, 128));
  PW_ASSIGN_OR_RETURN(int64_t classes, o.Int("classes", 2, 1000));
  PW_ASSIGN_OR_RETURN(int64_t channels, o.Int("channels", 1, 256));
  PW_ASSIGN_OR_RETURN(int64_t samples, o.Int("samples", 1, int64_t{1} << 24));
  PW_ASSIGN_OR_RETURN(double lr, o.Double("lr", 1e-9, 10.0));
  PW_ASSIGN_OR_RETURN(double noise, o.Double("noise", 0.0, 100.0));
  PW_ASSIGN_OR_RETURN(int64_t seed, o.Int("seed", 0, std::numeric_limits<int64_t>::max()));
  if (size % 4 != 0) {
    return Status::InvalidArgument("side task cnn: option size=" + std::to_string(size) +
                                   " must be a multiple of 4 (two 2x2 poolings)");
  }
  if (samples < batch) {
    return Status::InvalidArgument("side task cnn: samples=" + std::to_string(samples) + " is smaller than batch=" +
                                   std::to_string(batch) + "; the data set must hold one minibatch");
  }
  return std::unique_ptr<SideTask>(std::make_unique<CnnTask>(
      static_cast<int>(batch), static_cast<int>(size), static_cast<int>(classes), static_cast<int>(channels),
      static_cast<int>(samples), lr, noise, static_cast<uint64_t>(seed)));
}

}  // namespace pw
