// URLs, brace patterns and the registry of transports (remote.h, url.h).
#include <mploader/errors.h>
#include <mploader/remote/remote.h>

#include "core/remote_files.h"
#include "remote/http_transport.h"
#include "remote/text.h"
#include "remote/url.h"

#include <cctype>
#include <map>
#include <mutex>

namespace mploader::remote {
namespace {

constexpr size_t kMaxExpanded = 10000000;

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}

// The built-in transports are in the map from the start, not registered by static objects:
// a static library would drop an object file that nothing references.
std::map<std::string, TransportFactory>& registry() {
  static std::map<std::string, TransportFactory> r =  // GUARDED_BY(registry_mutex())
      detail::builtin_transports();
  return r;
}

[[noreturn]] void bad_pattern(const std::string& pattern, const std::string& why) {
  throw OptionError("shard pattern", "the shard pattern \"" + pattern + "\" " + why);
}

// The choices one brace group stands for: "000..002" (a range) or "a,b,c".
std::vector<std::string> brace_choices(const std::string& pattern, const std::string& inner) {
  const size_t dots = inner.find("..");
  if (dots == std::string::npos) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t comma; (comma = inner.find(',', start)) != std::string::npos; start = comma + 1) {
      out.push_back(inner.substr(start, comma - start));
    }
    out.push_back(inner.substr(start));
    return out;
  }
  const std::string lo = inner.substr(0, dots), hi = inner.substr(dots + 2);
  const long long first = detail::parse_count(lo), last = detail::parse_count(hi);
  if (first < 0 || last < 0) {
    bad_pattern(pattern, "has the range {" + inner + "}, whose bounds are not both numbers "
                         "of at most 18 digits: write it as {000000..000099}");
  }
  if (first > last) {
    bad_pattern(pattern, "has the range {" + inner + "}, whose start is past its end: write "
                         "the smaller bound first");
  }
  if (static_cast<unsigned long long>(last - first) >= kMaxExpanded) {
    bad_pattern(pattern, "expands to more than 10,000,000 names: split the corpus");
  }
  std::vector<std::string> out;
  for (long long v = first; v <= last; ++v) {
    std::string digits = std::to_string(v);
    if (digits.size() < lo.size()) digits.insert(0, lo.size() - digits.size(), '0');
    out.push_back(std::move(digits));
  }
  return out;
}

}  // namespace

std::vector<std::string> Transport::list(const std::string& prefix_url) {
  throw TransportError("cannot list \"" + prefix_url + "\": this store does not list objects; "
                       "name the shards one by one or with a brace pattern "
                       "(shard-{000000..000099}.tar)", false, 0);
}

void Transport::write(const WriteRequest& request) {
  throw TransportError("cannot write \"" + request.url + "\": this store takes no uploads; "
                       "write to a folder, an s3:// URL or an http(s):// server that takes PUT",
                       false, 0);
}

void register_transport(const std::string& scheme, TransportFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[scheme] = std::move(factory);
}

std::unique_ptr<Transport> make_transport(const std::string& url, const RemoteOptions& options) {
  const size_t colon = url.find("://");
  if (colon == std::string::npos || colon == 0) {
    throw OptionError("url", "\"" + url + "\" is no URL (scheme://host/path)");
  }
  const std::string scheme = url.substr(0, colon);
  TransportFactory factory;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(scheme);
    if (it != registry().end()) factory = it->second;
  }
  if (!factory) {
    throw OptionError("url", "\"" + url + "\": no transport reads " + scheme + ":// URLs: use "
                             "http://, https:// or s3://, or register one for \"" + scheme +
                             "\" with mploader::remote::register_transport");
  }
  return factory(options);
}

std::vector<std::string> resolve_shard_urls(const std::vector<std::string>& entries,
                                           const RemoteOptions& options,
                                           const std::string& suffix) {
  std::vector<std::string> out;
  for (const std::string& entry : entries) {
    if (!is_url(entry)) {
      out.push_back(entry);
    } else if (entry.find('{') != std::string::npos) {
      for (std::string& url : expand_braces(entry)) out.push_back(std::move(url));
    } else if (entry.back() == '/' || (entry.compare(0, 5, "s3://") == 0 &&
                                       entry.find('/', 5) == std::string::npos)) {
      const std::string prefix = entry.back() == '/' ? entry : entry + "/";  // a whole bucket
      size_t found = 0;
      for (std::string& url : make_transport(prefix, options)->list(prefix)) {
        if (url.size() < suffix.size() ||
            url.compare(url.size() - suffix.size(), suffix.size(), suffix) != 0) {
          continue;
        }
        out.push_back(std::move(url));
        ++found;
      }
      if (found == 0) {
        throw OptionError("url", "\"" + entry + "\" holds no object whose name ends in \"" +
                                     suffix + "\": check the bucket and the prefix");
      }
    } else {
      out.push_back(entry);
    }
  }
  return out;
}

bool is_url(const std::string& name) { return mploader::detail::names_url(name); }

std::vector<std::string> expand_braces(const std::string& pattern) {
  const size_t open = pattern.find('{');
  if (open == std::string::npos) {
    if (pattern.find('}') != std::string::npos) bad_pattern(pattern, "has a '}' with no '{'");
    return {pattern};
  }
  const size_t close = pattern.find('}', open);
  if (close == std::string::npos) bad_pattern(pattern, "has a '{' with no '}'");
  const std::string head = pattern.substr(0, open);
  const std::vector<std::string> tails = expand_braces(pattern.substr(close + 1));
  const std::vector<std::string> choices =
      brace_choices(pattern, pattern.substr(open + 1, close - open - 1));
  if (choices.size() * tails.size() > kMaxExpanded) {
    bad_pattern(pattern, "expands to more than 10,000,000 names: split the corpus");
  }
  std::vector<std::string> out;
  out.reserve(choices.size() * tails.size());
  for (const std::string& c : choices) {
    for (const std::string& t : tails) out.push_back(head + c + t);
  }
  return out;
}

namespace detail {

Url parse_url(const std::string& url) {
  const size_t colon = url.find("://");
  if (colon == std::string::npos || colon == 0) {
    throw OptionError("url", "\"" + url + "\" is no URL (scheme://host/path)");
  }
  Url out;
  out.scheme = url.substr(0, colon);
  const size_t host_start = colon + 3;
  const size_t slash = url.find('/', host_start);
  out.host = url.substr(host_start, slash == std::string::npos ? std::string::npos
                                                               : slash - host_start);
  out.path = slash == std::string::npos ? "/" : url.substr(slash);
  if (out.host.empty()) {
    throw OptionError("url", "\"" + url + "\" names no host (or, for s3://, no bucket): write "
                             + out.scheme + "://host/path");
  }
  return out;
}

std::string url_folder(const std::string& url) {
  const size_t slash = url.rfind('/');
  return slash == std::string::npos ? url : url.substr(0, slash + 1);
}

}  // namespace detail
}  // namespace mploader::remote
