#include "native_dataset.h"

#include <mploader/stream_mixture.h>
#include <mploader/streaming.h>
#include <mploader/token_stream.h>

#include <vector>

namespace mploader::python {

void bind_components(py::module_& m);  // python_components.cc, made by python/CMakeLists.txt
void bind_tune(py::module_& m);        // tune.cc
void bind_plugins(py::module_& m);     // plugins.cc

void Keywords::check_all_used() const {
  for (auto item : kwargs_) {
    const std::string name = py::str(item.first);
    if (known_.count(name)) continue;
    throw OptionError(name, "mploader: " + who_ + ": unknown option '" + name +
                                "'. Its options are: " +
                                comma_list({known_.begin(), known_.end()}) + ".");
  }
}

void refuse_choice(const std::string& who, const char* name, const std::string& value,
                   const char* choices) {
  throw OptionError(name, "mploader: " + who + ": " + name + "='" + value + "' is not one of " +
                              choices + ". Give one of those.");
}

namespace {

NativeDataset token_stream(std::vector<std::string> files, py::kwargs kwargs) {
  Keywords k(std::move(kwargs), "TokenStream");
  TokenStreamOptions o;
  k.take("context", o.context);
  k.take("vocab_size", o.vocab_size);
  k.take("windows_per_shard", o.windows_per_shard);
  k.take("cache_dir", o.cache_dir);
  k.choose("type", o.type, {{"uint16", TokenType::kUInt16}, {"uint32", TokenType::kUInt32}});
  k.choose("windows", o.windows,
           {{"sequential", TokenWindows::kSequential}, {"random", TokenWindows::kRandom}});
  k.check_all_used();
  return {std::make_shared<TokenStream>(std::move(files), o), "mploader.TokenStream"};
}

NativeDataset stream_mixture(const std::vector<NativeDataset>& sources,
                             std::vector<double> weights, py::kwargs kwargs) {
  Keywords k(std::move(kwargs), "StreamMixture");
  StreamMixtureOptions o;
  o.weights = std::move(weights);
  k.choose("end", o.end,
           {{"cycle", MixtureEnd::kCycle}, {"first_exhausted", MixtureEnd::kFirstExhausted},
            {"all_exhausted", MixtureEnd::kAllExhausted}});
  k.take("num_samples", o.num_samples);
  k.take("source_field", o.source_field);
  k.check_all_used();
  std::vector<std::shared_ptr<StreamingDataset>> streams;
  for (const NativeDataset& s : sources) {
    auto stream = std::dynamic_pointer_cast<StreamingDataset>(s.dataset);
    if (!stream) {
      throw OptionError("sources", "mploader: StreamMixture: " + s.kind +
                                       " is not a stream; mix TarShards, TokenStream, "
                                       "ParquetShards or StreamMixture.");
    }
    streams.push_back(std::move(stream));
  }
  return {std::make_shared<StreamMixture>(std::move(streams), o), "mploader.StreamMixture"};
}

}  // namespace

void bind_native_datasets(py::module_& m) {
  py::class_<NativeDataset>(m, "NativeDataset")
      .def("__len__", [](const NativeDataset& d) { return d.dataset->size(); })
      .def_property_readonly("streaming",
                             [](const NativeDataset& d) {
                               return dynamic_cast<StreamingDataset*>(d.dataset.get()) != nullptr;
                             })
      .def_readonly("kind", &NativeDataset::kind)
      .def("__repr__", [](const NativeDataset& d) {
        return "<" + d.kind + " of " + std::to_string(d.dataset->size()) + " samples>";
      });
  m.def("TokenStream", &token_stream, py::arg("files"));
  m.def("StreamMixture", &stream_mixture, py::arg("sources"), py::arg("weights"));
  bind_components(m);
  bind_tune(m);
  bind_plugins(m);
}

}  // namespace mploader::python
