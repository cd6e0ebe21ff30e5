#include "core/exception_text.h"

#include <mploader/errors.h>

#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <sstream>
#include <typeinfo>

namespace mploader::detail {
namespace {

std::string demangled(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : type.name();
}

}  // namespace

std::pair<std::string, std::string> describe_current_exception() {
  try {
    throw;
  } catch (const ForeignError& e) {
    return {e.type_name(), e.what()};  // the foreign language's own name, not ours
  } catch (const std::exception& e) {
    return {demangled(typeid(e)), e.what()};
  } catch (...) {
    return {"unknown", "a non-std::exception was thrown"};
  }
}

std::string shape_text(c10::IntArrayRef shape) {
  std::ostringstream s;
  s << shape;
  return s.str();
}

std::string quoted_names(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

}  // namespace mploader::detail
