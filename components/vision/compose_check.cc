// Compose's constructor: every parameter and the order of the steps checked once, so that a
// pipeline that cannot give one output shape fails where it is written, not in a worker.
#include <mploader/vision/transforms.h>

#include "util/errors.h"

#include <mploader/errors.h>

#include <cmath>
#include <sstream>

namespace mploader::vision {
namespace {

std::string text(const std::pair<double, double>& p) {
  std::ostringstream out;
  out << "(" << p.first << ", " << p.second << ")";
  return out.str();
}

std::string text(Size2 s) {
  return "(" + std::to_string(s.height) + ", " + std::to_string(s.width) + ")";
}

std::string text(const std::array<double, 3>& a) {
  std::ostringstream out;
  out << "(" << a[0] << ", " << a[1] << ", " << a[2] << ")";
  return out.str();
}

std::string describe_one(const Transform& step) {
  if (const auto* t = std::get_if<RandomResizedCrop>(&step)) {
    return "RandomResizedCrop(size=" + text(t->size) + ", scale=" + text(t->scale) +
           ", ratio=" + text(t->ratio) + ")";
  }
  if (const auto* t = std::get_if<Resize>(&step)) {
    if (!t->shorter_side) return "Resize(size=" + text(t->size) + ")";
    return "Resize(size=" + std::to_string(*t->shorter_side) +
           (t->max_size ? ", max_size=" + std::to_string(*t->max_size) : "") + ")";
  }
  if (const auto* t = std::get_if<CenterCrop>(&step)) return "CenterCrop(size=" + text(t->size) + ")";
  if (const auto* t = std::get_if<RandomHorizontalFlip>(&step)) {
    std::ostringstream out;
    out << "RandomHorizontalFlip(p=" << t->p << ")";
    return out.str();
  }
  if (std::holds_alternative<ToTensor>(step)) return "ToTensor()";
  const auto& n = std::get<Normalize>(step);
  return "Normalize(mean=" + text(n.mean) + ", std=" + text(n.std) + ")";
}

bool is_geometric(const Transform& step) {
  return !std::holds_alternative<ToTensor>(step) && !std::holds_alternative<Normalize>(step);
}

// The parameter problem of one step, or "".
std::string parameter_problem(const Transform& step) {
  auto bad_size = [](Size2 s) { return s.height < 1 || s.width < 1; };
  auto bad_range = [](const std::pair<double, double>& r) {
    return !(r.first > 0 && r.first <= r.second && std::isfinite(r.second));
  };
  if (const auto* t = std::get_if<RandomResizedCrop>(&step)) {
    if (bad_size(t->size)) return "its size must be at least 1 x 1";
    if (bad_range(t->scale) || t->scale.second > 1) return "scale must be 0 < lo <= hi <= 1";
    if (bad_range(t->ratio)) return "ratio must be 0 < lo <= hi";
  } else if (const auto* t = std::get_if<Resize>(&step)) {
    if (t->shorter_side && *t->shorter_side < 1) return "its size must be at least 1";
    if (t->max_size && t->shorter_side && *t->max_size <= *t->shorter_side) {
      return "max_size must be larger than size (as torchvision requires)";
    }
    if (!t->shorter_side && bad_size(t->size)) return "its size must be at least 1 x 1";
  } else if (const auto* t = std::get_if<CenterCrop>(&step)) {
    if (bad_size(t->size)) return "its size must be at least 1 x 1";
  } else if (const auto* t = std::get_if<RandomHorizontalFlip>(&step)) {
    if (!(t->p >= 0 && t->p <= 1)) return "p must be in [0, 1]";
  } else if (const auto* t = std::get_if<Normalize>(&step)) {
    for (double s : t->std) {
      if (!(s > 0) || !std::isfinite(s)) return "every std must be a positive number";
    }
    for (double m : t->mean) {
      if (!std::isfinite(m)) return "every mean must be a finite number";
    }
  }
  return "";
}

// The step's size after it, when it fixes one.
std::optional<Size2> fixed_size_after(const Transform& step, std::optional<Size2> before) {
  if (const auto* t = std::get_if<RandomResizedCrop>(&step)) return t->size;
  if (const auto* t = std::get_if<CenterCrop>(&step)) return t->size;
  if (const auto* t = std::get_if<Resize>(&step)) {
    if (t->shorter_side) return std::nullopt;
    return t->size;
  }
  return before;
}

}  // namespace

Compose::Compose(std::vector<Transform> transforms) : transforms_(std::move(transforms)) {
  std::optional<Size2> size;
  bool to_tensor = false, normalized = false;
  for (size_t i = 0; i < transforms_.size(); ++i) {
    const Transform& step = transforms_[i];
    // "transform 2, Normalize(...): <problem>", refused as the option it is.
    auto refuse = [&](const std::string& problem, const std::string& fix) {
      throw OptionError("transforms",
                        mploader::detail::message("Compose",
                                                  "transform " + std::to_string(i) + ", " +
                                                      describe_one(step) + ": " + problem,
                                                  fix));
    };
    if (const std::string problem = parameter_problem(step); !problem.empty()) {
      refuse(problem, "Give it parameters in those ranges");
    }
    if (is_geometric(step) && to_tensor) {
      refuse("it is geometric and comes after ToTensor()",
             "Put the geometric transforms before ToTensor()");
    }
    if (std::holds_alternative<ToTensor>(step) && to_tensor) {
      refuse("ToTensor() is given twice", "Keep one");
    }
    if (std::holds_alternative<Normalize>(step)) {
      if (!to_tensor) refuse("Normalize needs ToTensor() before it", "Put ToTensor() first");
      if (normalized) refuse("Normalize is given twice", "Keep one");
      normalized = true;
      const auto& n = std::get<Normalize>(step);
      for (int c = 0; c < 3; ++c) {
        scale_[c] = static_cast<float>(1.0 / 255.0 / n.std[c]);
        offset_[c] = static_cast<float>(-n.mean[c] / n.std[c]);
      }
    }
    if (std::holds_alternative<ToTensor>(step)) {
      to_tensor = true;
      scale_ = {1.0f / 255.0f, 1.0f / 255.0f, 1.0f / 255.0f};
      offset_ = {0, 0, 0};
    }
    size = fixed_size_after(step, size);
  }
  if (!size) {
    throw OptionError("transforms",
                      mploader::detail::message("Compose",
                                                describe() + " gives images whose size depends "
                                                             "on the input, and a batch needs "
                                                             "one shape",
                                                "End the geometric transforms with CenterCrop, "
                                                "RandomResizedCrop or Resize({height, width})"));
  }
  out_ = *size;
  layout_ = to_tensor ? PixelLayout::kFloat32CHW : PixelLayout::kUint8HWC;
  if (!to_tensor) {
    scale_ = {1, 1, 1};
    offset_ = {0, 0, 0};
  }
}

std::string Compose::describe() const {
  std::string all = "Compose(";
  for (size_t i = 0; i < transforms_.size(); ++i) {
    all += (i ? ", " : "") + describe_one(transforms_[i]);
  }
  return all + ")";
}

}  // namespace mploader::vision
