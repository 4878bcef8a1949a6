// Image side task: batch image processing with OpenCV — per image, resize,
// Gaussian blur and a Sobel gradient magnitude. Images are generated
// deterministically (shapes on a gradient plus noise) or read from a
// directory of binary PGM/PPM files (the harvest library links OpenCV's
// core and imgproc only, so other formats are not decoded). One step
// processes `per_step` images, cycling through the set; the host may run it
// image by image to fill a bubble shorter than a step. Work unit: input
// pixels.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <limits>

// OpenCV 4.6's headers mix enum types (deprecated in C++20).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-enum-enum-conversion"
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#pragma GCC diagnostic pop

#include "core/file_io.h"
#include "harvest/builtin_tasks.h"

namespace pw {
namespace {

// Binary PGM (P5) or PPM (P6), 8-bit. Errors name the file.
Result<cv::Mat> ReadNetpbm(const std::string& path) {
  PW_ASSIGN_OR_RETURN(std::string bytes, ReadTextFile(path));
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument(path + ": " + why + "; image dir= takes binary PGM (P5) or PPM (P6) files, 8-bit");
  };
  if (bytes.size() < 2 || bytes[0] != 'P' || (bytes[1] != '5' && bytes[1] != '6')) return bad("not a P5/P6 file");
  const int channels = bytes[1] == '5' ? 1 : 3;
  size_t pos = 2;
  int64_t fields[3];
  for (int64_t& field : fields) {
    while (pos < bytes.size()) {  // whitespace and comments
      if (std::isspace(static_cast<unsigned char>(bytes[pos]))) {
        ++pos;
      } else if (bytes[pos] == '#') {
        while (pos < bytes.size() && bytes[pos] != '\n') ++pos;
      } else {
        break;
      }
    }
    if (pos >= bytes.size() || !std::isdigit(static_cast<unsigned char>(bytes[pos]))) return bad("bad header");
    field = 0;
    while (pos < bytes.size() && std::isdigit(static_cast<unsigned char>(bytes[pos]))) {
      field = field * 10 + (bytes[pos++] - '0');
      if (field > 1'000'000) return bad("header value too large");
    }
  }
  if (fields[0] < 1 || fields[1] < 1 || fields[2] != 255) return bad("need width, height >= 1 and maxval 255");
  ++pos;  // the single whitespace byte before the raster
  const size_t need = static_cast<size_t>(fields[0] * fields[1] * channels);
  if (bytes.size() < pos + need) return bad("truncated raster");
  cv::Mat image(static_cast<int>(fields[1]), static_cast<int>(fields[0]), channels == 1 ? CV_8UC1 : CV_8UC3);
  std::memcpy(image.data, bytes.data() + pos, need);
  if (channels == 3) cv::cvtColor(image, image, cv::COLOR_RGB2BGR);
  return image;
}

class ImageTask : public SideTask {
 public:
  ImageTask(int width, int height, int count, int per_step, double scale, double sigma, uint64_t seed,
            std::string dir)
      : width_(width), height_(height), count_(count), per_step_(per_step), scale_(scale), sigma_(sigma),
        seed_(seed), dir_(std::move(dir)) {}
  std::string name() const override { return "image"; }
  std::string unit() const override { return "pixels"; }

  Status Setup() override {
    cv::setNumThreads(0);  // sequential: the side task has one core
    if (!dir_.empty()) return LoadDirectory();
    cv::RNG rng(seed_);
    for (int i = 0; i < count_; ++i) {
      cv::Mat image(height_, width_, CV_8UC3);
      for (int y = 0; y < height_; ++y) {
        auto* row = image.ptr<cv::Vec3b>(y);
        for (int x = 0; x < width_; ++x) {
          row[x] = cv::Vec3b(static_cast<uchar>((x * 255) / width_), static_cast<uchar>((y * 255) / height_),
                             static_cast<uchar>(((x + y + 40 * i) * 255) / (width_ + height_ + 40 * count_)));
        }
      }
      for (int s = 0; s < 12; ++s) {
        const cv::Point center(rng.uniform(0, width_), rng.uniform(0, height_));
        const cv::Scalar color(rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(0, 256));
        if (s % 2 == 0) {
          cv::circle(image, center, rng.uniform(2, std::max(3, width_ / 6)), color, cv::FILLED);
        } else {
          cv::rectangle(image, center, center + cv::Point(rng.uniform(2, width_ / 4 + 3), rng.uniform(2, height_ / 4 + 3)),
                        color, cv::FILLED);
        }
      }
      cv::Mat noise(height_, width_, CV_8UC3);
      rng.fill(noise, cv::RNG::NORMAL, 0, 12);
      cv::add(image, noise, image);
      images_.push_back(image);
    }
    return Status::Ok();
  }

  Result<double> Step() override { return Process(per_step_); }
  int StepParts() const override { return per_step_; }
  Result<double> StepPart(int parts) override { return Process(parts); }

  std::vector<std::pair<std::string, double>> Metrics() const override {
    return {{"images", static_cast<double>(cursor_)}, {"checksum", checksum_},
            {"set_size", static_cast<double>(images_.size())}};
  }

 private:
  // The next `count` images of the set.
  Result<double> Process(int count) {
    if (images_.empty()) return Status::FailedPrecondition("image: Step before Setup");
    double pixels = 0;
    for (int k = 0; k < count; ++k) {
      const cv::Mat& in = images_[cursor_ % images_.size()];
      ++cursor_;
      cv::Mat small, gray, blurred, dx, dy, magnitude;
      cv::resize(in, small, cv::Size(), scale_, scale_, scale_ < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
      if (small.channels() == 3) {
        cv::cvtColor(small, gray, cv::COLOR_BGR2GRAY);
      } else {
        gray = small;
      }
      cv::GaussianBlur(gray, blurred, cv::Size(0, 0), sigma_);
      cv::Sobel(blurred, dx, CV_16S, 1, 0);
      cv::Sobel(blurred, dy, CV_16S, 0, 1);
      cv::convertScaleAbs(dx, dx);
      cv::convertScaleAbs(dy, dy);
      cv::addWeighted(dx, 0.5, dy, 0.5, 0, magnitude);
      checksum_ = cv::sum(magnitude)[0];
      pixels += static_cast<double>(in.total());
    }
    return pixels;
  }

  Status LoadDirectory() {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec)) {
      return Status::NotFound("side task image: dir=" + dir_ + " is not a directory");
    }
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
      const std::string ext = entry.path().extension().string();
      if (entry.is_regular_file() && (ext == ".pgm" || ext == ".ppm" || ext == ".pnm")) files.push_back(entry.path());
    }
    if (ec) return Status::IoError("side task image: cannot list " + dir_ + ": " + ec.message());
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      return Status::NotFound("side task image: no .pgm/.ppm/.pnm files in " + dir_ +
                              " (binary netpbm only; convert with e.g. `convert in.png out.ppm`)");
    }
    for (const std::string& f : files) {
      PW_ASSIGN_OR_RETURN(cv::Mat image, ReadNetpbm(f));
      images_.push_back(image);
    }
    return Status::Ok();
  }

  int width_, height_, count_, per_step_;
  double scale_, sigma_;
  uint64_t seed_;
  std::string dir_;
  std::vector<cv::Mat> images_;
  int64_t cursor_ = 0;
  double checksum_ = 0;
};

}  // namespace

BuiltinSideTaskInfo ImageTaskInfo() {
  return {"image",
          "pixels",
          "batch image processing with OpenCV: resize, Gaussian blur, Sobel edges",
          {{"width", "512", "generated image width (8-8192)"},
           {"height", "512", "generated image height (8-8192)"},
           {"count", "8", "generated images in the set"},
           {"dir", "", "directory of binary PGM/PPM images instead of generated ones"},
           {"per_step", "1", "images processed per step (a step may be cut image by image)"},
           {"scale", "0.5", "resize factor (0.05-4)"},
           {"sigma", "1.5", "Gaussian blur sigma (0.1-20)"},
           {"seed", "1", "seed of the generated images"}}};
}

Result<std::unique_ptr<SideTask>> MakeImageTask(const TaskOptions& o) {
  PW_ASSIGN_OR_RETURN(int64_t width, o.Int("width", 8, 8192));
  PW_ASSIGN_OR_RETURN(int64_t height, o.Int("height", 8, 8192));
  PW_ASSIGN_OR_RETURN(int64_t count, o.Int("count", 1, 4096));
  PW_ASSIGN_OR_RETURN(int64_t per_step, o.Int("per_step", 1, 4096));
  PW_ASSIGN_OR_RETURN(double scale, o.Double("scale", 0.05, 4.0));
  PW_ASSIGN_OR_RETURN(double sigma, o.Double("sigma", 0.1, 20.0));
  PW_ASSIGN_OR_RETURN(int64_t seed, o.Int("seed", 0, std::numeric_limits<int64_t>::max()));
  if (o.Given("dir") && (o.Given("width") || o.Given("height") || o.Given("count") || o.Given("seed"))) {
    return Status::InvalidArgument("side task image: dir=DIR reads the images; width, height, count and seed "
                                   "apply only to generated images");
  }
  return std::unique_ptr<SideTask>(std::make_unique<ImageTask>(
      static_cast<int>(width), static_cast<int>(height), static_cast<int>(count), static_cast<int>(per_step),
      scale, sigma, static_cast<uint64_t>(seed), o.String("dir")));
}

}  // namespace pw
