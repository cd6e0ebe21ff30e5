// What a call throws, as text a test can match: the OptionError's option and message, or any
// exception's message.
#pragma once

#include <mploader/errors.h>

#include <exception>
#include <functional>
#include <string>

namespace testing_errors {

// "<option>: <message>" of the OptionError `f` throws, or "no error".
inline std::string option_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const mploader::OptionError& e) {
    return e.option() + ": " + e.what();
  }
  return "no error";
}

// The message `f` throws, or "no exception".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no exception";
}

}  // namespace testing_errors
