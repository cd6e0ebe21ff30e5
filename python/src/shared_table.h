// mploader._C.SharedTable, the compiled base of mploader.SharedList and mploader.SharedDict.
#pragma once

#include <pybind11/pybind11.h>

namespace mploader::python::shared {

// Adds SharedTable to `m`.
void bind_shared_table(pybind11::module_& m);

}  // namespace mploader::python::shared
