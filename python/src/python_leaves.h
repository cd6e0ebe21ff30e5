// A Python sample's leaves in the engine's terms, and back (mploader/_structure.py names them):
// a number ("...|n") travels as an int64 tensor [kind, bits] so that a field of ints and
// floats stacks without a cast, and the main process makes the batch's dtype from the kinds as
// default_collate would; str and bytes ("...|t") travel as text rows tagged with their type, so
// that a field may hold both, and a str that is not valid UTF-8 (a lone surrogate) survives.
#pragma once

#include <mploader/batch.h>
#include <mploader/tensor_dict.h>

#include <ATen/core/Tensor.h>
#include <pybind11/pybind11.h>

#include <string>

namespace mploader::python {

namespace py = pybind11;

// Adds the leaf `leaf` named `name` to `sample`: a Tensor, a number ("|n") or text ("|t").
// Throws py::error_already_set for a number too large for int64 (OverflowError, as torch).
void add_leaf(Sample& sample, std::string name, PyObject* leaf);

// The batch of a number field ([rows, 2] pairs) with default_collate's dtype: float64 when
// the first sample's number is a float; otherwise torch.tensor's: the default dtype when any is
// a float, bool when all are bools, else int64.
at::Tensor python_numbers(const at::Tensor& pairs);

// A "|t" field's rows, each the str or bytes its sample held.
py::list tagged_text_rows(const TextColumn& column);

}  // namespace mploader::python
