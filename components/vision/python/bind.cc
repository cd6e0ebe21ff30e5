// mploader._C.vision: ImageFolder for Python, with the options of ImageFolderOptions by name
// and the transforms as the JSON that spawned workers rebuild them from (vision.py makes it).
#include "native_dataset.h"
#include "vision/transform_json.h"

#include <mploader/vision/image_folder.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace mploader::python {
namespace {

vision::ImageFolderOptions image_folder_options(Keywords& k) {
  vision::ImageFolderOptions o;
  k.choose("on_bad_image", o.on_bad_image,
           {{"raise", vision::OnBadImage::kRaise}, {"skip", vision::OnBadImage::kSkip}});
  k.take("max_pixels", o.max_pixels);
  k.take("max_file_bytes", o.max_file_bytes);
  k.take("extensions", o.extensions);
  k.take("seed", o.seed);
  k.take("cache_file", o.cache_file);
  k.take("full_decode", o.full_decode);
  k.take("max_consecutive_bad", o.max_consecutive_bad);
  return o;
}

NativeDataset image_folder(const std::optional<std::string>& root,
                           const std::optional<std::string>& list_file,
                           const std::string& transforms, py::kwargs kwargs) {
  Keywords k(std::move(kwargs), "ImageFolder");
  vision::ImageFolderOptions options = image_folder_options(k);
  k.check_all_used();
  vision::Compose transform = vision::compose_from_json(nlohmann::json::parse(transforms));
  std::shared_ptr<vision::ImageFolder> dataset;
  py::gil_scoped_release unlocked;  // the scan of a large folder takes a while
  if (list_file) {
    dataset = vision::ImageFolder::from_list(*list_file, std::move(transform), std::move(options));
  } else {
    dataset = std::make_shared<vision::ImageFolder>(root.value_or(""), std::move(transform),
                                                    std::move(options));
  }
  return {dataset, "mploader.vision.ImageFolder"};
}

std::vector<std::string> classes_of(const NativeDataset& d) {
  auto folder = std::dynamic_pointer_cast<vision::ImageFolder>(d.dataset);
  if (!folder) {
    throw OptionError("dataset", "mploader: vision.classes: " + d.kind +
                                     " is not an ImageFolder. Give an ImageFolder.");
  }
  return folder->classes();
}

}  // namespace

void bind_vision(py::module_& m) {
  m.def("ImageFolder", &image_folder, py::arg("root"), py::arg("list_file"),
        py::arg("transforms"));
  m.def("classes", &classes_of, py::arg("dataset"));
}

}  // namespace mploader::python
