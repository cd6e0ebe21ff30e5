// hdf5/: HDF5 files as map-style datasets (mploader::hdf5, on libhdf5). Here: RAII over
// libhdf5's identifiers, and its error stack as text for our messages.
#pragma once

#include <hdf5.h>

#include <string>
#include <utility>
#include <vector>

namespace mploader::hdf5::detail {

// Owns one identifier (file, dataset, dataspace, datatype, property list) and closes it with
// the matching H5?close. Move-only; an invalid id (negative) holds nothing.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      close_ = other.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Forgets the id without closing it: for ids that a forked child inherited, which belong to
  // the parent's library state.
  void abandon() { id_ = -1; }
  void reset() {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

// Turns off libhdf5's printing of its error stack to stderr ("HDF5-DIAG", ~20 lines a failure):
// every failure is reported through our exceptions, with the stack's text from
// error_stack_text(). A thread-safe libhdf5 keeps the setting per thread: call it in each
// function that starts calling libhdf5 (cheap after the first call in a thread).
void quiet_hdf5_errors();

// The innermost messages of libhdf5's current error stack ("truncated file: eof = 1000,
// stored_eof = 2144"), most specific first, or "" when it is empty; `all`, when given, gets
// every message. Clears the stack.
std::string error_stack_text(std::vector<std::string>* all = nullptr);

}  // namespace mploader::hdf5::detail
