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

// What() of the mploader::Error `f` throws, or "no mploader::Error was thrown". Only an
// mploader::Error is caught: any other exception leaves the test case and fails it, which is
// what a test of the one error family wants.
inline std::string mploader_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const mploader::Error& e) {
    return e.what();
  }
  return "no mploader::Error was thrown";
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
