// CNN side task: trains a small convolutional classifier with LibTorch on a
// synthetic, deterministic labelled image set — each class is a fixed random
// prototype image, each sample its class's prototype plus noise, so the
// task is learnable and its loss falls. One step = one SGD minibatch, which
// the host may run in `parts` parts (gradients accumulate over them, the
// update comes with the last) to fill bubbles shorter than a step. Work
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
  CnnTask(int batch, int parts, int size, int classes, int channels, int samples, double lr, double noise,
          uint64_t seed)
      : batch_(batch), parts_(parts), size_(size), classes_(classes), channels_(channels), samples_(samples),
        lr_(lr), noise_(noise), seed_(seed) {}
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
    if (part_ != 0) return Status::FailedPrecondition("cnn: Step in the middle of a step cut into parts");
    return RunParts(parts_);
  }
  int StepParts() const override { return parts_; }
  Result<double> StepPart(int parts) override {
    if (parts < 1 || parts > parts_ - part_) {
      return Status::InvalidArgument("cnn: StepPart(" + std::to_string(parts) + ") with " +
                                     std::to_string(parts_ - part_) + " parts of the step left");
    }
    return RunParts(parts);
  }

  std::vector<std::pair<std::string, double>> Metrics() const override {
    return {{"loss", last_loss_}, {"minibatches", static_cast<double>(updates_)}};
  }

 private:
  // The next `parts` parts of the current minibatch as one forward and
  // backward. Each part's loss is weighted by its share of the minibatch,
  // so the accumulated gradient is the whole minibatch's mean gradient.
  Result<double> RunParts(int parts) {
    if (!optimizer_) return Status::FailedPrecondition("cnn: Step before Setup");
    if (part_ == 0) {
      start_ = (updates_ * batch_) % (samples_ - batch_ + 1);
      optimizer_->zero_grad();
      step_loss_ = 0;
    }
    const int part_images = batch_ / parts_;
    const int64_t images = static_cast<int64_t>(parts) * part_images;
    torch::Tensor x = images_.narrow(0, start_ + static_cast<int64_t>(part_) * part_images, images);
    torch::Tensor y = labels_.narrow(0, start_ + static_cast<int64_t>(part_) * part_images, images);
    torch::Tensor loss = torch::cross_entropy_loss(model_->forward(x), y);
    const double share = static_cast<double>(images) / batch_;
    (parts == parts_ ? loss : loss * share).backward();
    step_loss_ += loss.item<double>() * share;
    part_ += parts;
    if (part_ < parts_) return static_cast<double>(images);
    part_ = 0;
    optimizer_->step();
    ++updates_;
    last_loss_ = step_loss_;
    if (!std::isfinite(last_loss_)) {
      return Status::FailedPrecondition("cnn: the loss diverged (" + std::to_string(last_loss_) +
                                        "); lower lr (now " + std::to_string(lr_) + ")");
    }
    return static_cast<double>(images);
  }

  int batch_, parts_, size_, classes_, channels_, samples_;
  double lr_, noise_;
  uint64_t seed_;
  torch::Tensor images_, labels_;
  SmallCnn model_{nullptr};
  std::unique_ptr<torch::optim::SGD> optimizer_;
  int64_t updates_ = 0;  // minibatches done (SGD updates)
  int part_ = 0;         // parts of the current minibatch done
  int64_t start_ = 0;    // the current minibatch's first sample
  double step_loss_ = 0;
  double last_loss_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace

BuiltinSideTaskInfo CnnTaskInfo() {
  return {"cnn",
          "images",
          "train a small conv net (2 conv + 1 linear, SGD) on synthetic labelled images",
          {{"batch", "32", "images per step (one SGD minibatch)"},
           {"parts", "4", "parts a step may be cut into to fill short bubbles (divides batch; 1: never cut)"},
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
  PW_ASSIGN_OR_RETURN(int64_t parts, o.Int("parts", 1, 65536));
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
  if (batch % parts != 0) {
    return Status::InvalidArgument("side task cnn: parts=" + std::to_string(parts) + " does not divide batch=" +
                                   std::to_string(batch) + "; pick parts among the divisors of batch");
  }
  return std::unique_ptr<SideTask>(std::make_unique<CnnTask>(
      static_cast<int>(batch), static_cast<int>(parts), static_cast<int>(size), static_cast<int>(classes),
      static_cast<int>(channels), static_cast<int>(samples), lr, noise, static_cast<uint64_t>(seed)));
}

}  // namespace pw
