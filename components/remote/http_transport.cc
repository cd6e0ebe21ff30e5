// HttpTransport: ranged GETs through libcurl, their responses classified into what a retry
// can fix and what it cannot (http_transport.h).
#include "remote/http_transport.h"

#include "remote/s3_list.h"
#include "remote/s3_transport.h"
#include "remote/text.h"
#include "remote/url.h"

#include <curl/curl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <exception>
#include <mutex>
#include <optional>

namespace mploader::remote::detail {
namespace {

constexpr size_t kMaxErrorBody = 2048;
// A response slower than this over RemoteOptions::stall_timeout_s is a stall too: a server that
// trickles a few bytes a second would otherwise hold a worker for hours.
constexpr long kMinBytesPerSecond = 1024;
// More redirects than this is a loop (curl 7.88 follows them without end).
constexpr long kMaxRedirects = 10;

// One response being received: what its headers said, and where its body goes.
struct Exchange {
  const ReadRequest* request = nullptr;
  const std::function<void(const ObjectInfo&)>* on_info = nullptr;
  const std::function<void(const char*, size_t)>* on_bytes = nullptr;
  CURL* curl = nullptr;
  bool info_sent = false;
  int64_t content_length = -1;
  int64_t range_first = -1, range_last = -1, range_total = -1;  // Content-Range
  std::string etag;
  std::string last_modified;
  int64_t to_skip = 0;  // a 200 to a ranged request: the bytes before the offset
  std::string error_body;
  std::exception_ptr failure;  // thrown by a callback: curl cannot carry exceptions
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& x = *static_cast<Exchange*>(user);
  const std::string line(data, size * count);
  if (line.compare(0, 5, "HTTP/") == 0) {  // a new response (after a redirect): start over
    x.content_length = x.range_first = x.range_last = x.range_total = -1;
    x.etag.clear();
    x.last_modified.clear();
    return size * count;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  const std::string name = lower(trimmed(line.substr(0, colon)));
  const std::string value = trimmed(line.substr(colon + 1));
  if (name == "etag") {
    x.etag = value;
  } else if (name == "last-modified") {
    x.last_modified = value;
  } else if (name == "content-length") {
    x.content_length = parse_count(value);
  } else if (name == "content-range") {  // "bytes 100-199/1000"
    const size_t dash = value.find('-'), slash = value.rfind('/');
    if (value.compare(0, 6, "bytes ") == 0 && dash != std::string::npos &&
        slash != std::string::npos && dash < slash) {
      x.range_first = parse_count(value.substr(6, dash - 6));
      x.range_last = parse_count(value.substr(dash + 1, slash - dash - 1));
      x.range_total = parse_count(value.substr(slash + 1));
    }
  }
  return size * count;
}

long status_of(CURL* curl) {
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

// A 206 must hold the bytes asked for: its Content-Range starts at the offset and, for a
// bounded read, reaches the last byte asked (or the object's end). A server or proxy that
// answers another range would otherwise have its bytes written at the wrong place. A range that
// ends early on an open read is a body cut short: the download resumes after it.
void check_range(const Exchange& x) {
  const ReadRequest& r = *x.request;
  const int64_t want_last = r.length > 0 ? r.offset + r.length - 1 : -1;
  const bool starts_right = x.range_first == r.offset;
  const bool ends_right = x.range_last >= x.range_first &&
                          (want_last < 0 || x.range_last >= want_last ||
                           x.range_last == x.range_total - 1);
  if (starts_right && ends_right) return;
  const std::string asked = std::to_string(r.offset) + "-" +
                            (want_last >= 0 ? std::to_string(want_last) : std::string());
  const std::string got = x.range_first < 0 ? std::string("no valid Content-Range")
                          : "Content-Range bytes " + std::to_string(x.range_first) + "-" +
                                std::to_string(x.range_last) + "/" +
                                (x.range_total >= 0 ? std::to_string(x.range_total) : "*");
  throw TransportError("GET " + r.url + ": asked for bytes " + asked + ", the server answered "
                       "206 with " + got + ": it (or a proxy) does not honour ranges; serve "
                       "the shards from a server that does, or read them from a local copy",
                       false, 206);
}

void send_info(Exchange& x, long status) {
  if (x.info_sent) return;
  x.info_sent = true;
  ObjectInfo info;
  info.etag = x.etag;
  info.last_modified = x.last_modified;
  if (status == 206) {
    check_range(x);
    info.bytes = x.range_total;
  } else {
    info.bytes = x.content_length;
    x.to_skip = x.request->offset;  // the server ignored the Range: drop what precedes it
  }
  (*x.on_info)(info);
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& x = *static_cast<Exchange*>(user);
  const size_t n = size * count;
  const long status = status_of(x.curl);
  if (status != 200 && status != 206) {
    if (x.error_body.size() < kMaxErrorBody) {
      x.error_body.append(data, std::min(n, kMaxErrorBody - x.error_body.size()));
    }
    return n;
  }
  try {
    send_info(x, status);
    size_t skip = static_cast<size_t>(std::min<int64_t>(x.to_skip, static_cast<int64_t>(n)));
    x.to_skip -= static_cast<int64_t>(skip);
    if (skip < n) (*x.on_bytes)(data + skip, n - skip);
  } catch (...) {
    x.failure = std::current_exception();
    return 0;  // aborts the transfer
  }
  return n;
}

bool transient_code(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT: case CURLE_PARTIAL_FILE: case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

std::string what_request(const ReadRequest& r) {
  return "GET " + r.url + (r.offset > 0 ? " (from byte " + std::to_string(r.offset) + ")" : "");
}

// What an error response's body says: an S3 error's code and message, or a page's text
// without its markup, on one line.
std::string body_snippet(const std::string& body) {
  if (const std::optional<S3Error> e = parse_s3_error(body)) {
    return " (the store said: " + e->code + ": " + e->message + ")";
  }
  std::string text;
  bool in_tag = false;
  for (char c : body) {
    if (c == '<') {
      in_tag = true;
    } else if (c == '>') {
      in_tag = false;
      c = ' ';
    }
    if (in_tag) continue;
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!text.empty() && text.back() != ' ') text.push_back(' ');
    } else {
      text.push_back(c);
    }
  }
  text = trimmed(text).substr(0, 200);
  return text.empty() ? "" : " (the server said: " + text + ")";
}

}  // namespace

HttpTransport::HttpTransport(RemoteOptions options) : options_(std::move(options)) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpTransport::~HttpTransport() {
  // A handle inherited over a fork shares the parent's socket (and TLS state): leave it.
  if (handle_ != nullptr && owner_ == ::getpid()) curl_easy_cleanup(handle_);
}

CURL* HttpTransport::handle() {
  if (handle_ == nullptr || owner_ != ::getpid()) {
    handle_ = curl_easy_init();
    owner_ = ::getpid();
    if (handle_ == nullptr) throw TransportError("libcurl could not make a handle", false, 0);
  }
  return handle_;
}

std::vector<std::string> HttpTransport::extra_headers(const std::string&, const std::string&) {
  return {};
}

std::string HttpTransport::denied_fix(const std::string& url) const {
  (void)url;
  return "the server refuses this URL without credentials: check that it is public, or put "
         "the shards in a store mploader can sign for (s3://)";
}

namespace {

// What every request sets: its URL and headers, no signals (none in a worker), the connect
// timeout, the stall rule (fewer than kMinBytesPerSecond for stall_timeout_s), and where curl
// writes its error text.
void set_request(CURL* curl, const std::string& target, curl_slist* headers,
                 const RemoteOptions& o, char* detail) {
  curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout_s * 1000));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, kMinBytesPerSecond);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, std::max(1L, std::lround(o.stall_timeout_s)));
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
}

[[noreturn]] void fail_transfer(const ReadRequest& r, CURLcode code, const char* detail,
                                const RemoteOptions& o) {
  const std::string head = what_request(r) + ": ";
  const std::string host = parse_url(r.url).host;
  std::string why = *detail != '\0' ? detail : curl_easy_strerror(code);
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
      throw TransportError(head + "the host \"" + host + "\" is unknown (DNS: " + why +
                           "): check the URL's host name", false, 0);
    case CURLE_COULDNT_CONNECT:
      throw TransportError(head + "cannot connect to \"" + host + "\" (" + why + "): is the "
                           "server up, and is the port right?", true, 0);
    case CURLE_OPERATION_TIMEDOUT:
      throw TransportError(head + "timed out: fewer than " + std::to_string(kMinBytesPerSecond) +
                           " bytes a second arrived for " +
                           std::to_string(std::lround(o.stall_timeout_s)) + " s (or no "
                           "connection within " + std::to_string(std::lround(o.connect_timeout_s))
                           + " s): " + why + "; the server stalls or trickles, or raise "
                           "RemoteOptions::stall_timeout_s", true, 0);
    case CURLE_TOO_MANY_REDIRECTS:
      throw TransportError(head + "more than " + std::to_string(kMaxRedirects) + " redirects ("
                           + why + "): the server redirects in a loop; check the URL, or "
                           "give the address the redirects end at", false, 0);
    case CURLE_PARTIAL_FILE: case CURLE_RECV_ERROR: case CURLE_GOT_NOTHING:
      throw TransportError(head + "the response was cut short (" + why + ")", true, 0);
    default:
      throw TransportError(head + why, transient_code(code), 0);
  }
}

// `target`: the URL requested (an S3 object's at its endpoint).
[[noreturn]] void fail_status(const ReadRequest& r, long status, const std::string& body,
                              const std::string& denied, const std::string& target) {
  const std::string head = what_request(r) + ": HTTP " + std::to_string(status);
  const std::string said = body_snippet(body);
  if (status == 404 && body.find("<Code>NoSuchBucket</Code>") != std::string::npos) {
    throw TransportError(head + " NoSuchBucket: the bucket this URL names does not exist at this "
                         "endpoint (" + target + "); check the bucket's name, and the endpoint "
                         "(RemoteOptions::endpoint_url, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)",
                         false, 404);
  }
  if (status == 404) {
    throw TransportError(head + " Not Found: the store has no object at this URL" + said +
                         "; check the name", false, 404);
  }
  if (status == 401 || status == 403) {
    throw TransportError(head + " (access denied)" + said + ": " + denied, false,
                         static_cast<int>(status));
  }
  if (status == 412) {
    throw TransportError(head + " Precondition Failed: the object changed on the server "
                         "(its ETag is no longer \"" + r.if_match + "\") while it was "
                         "downloaded; build the dataset again to count it anew", false, 412);
  }
  if (status == 416) {
    throw TransportError(head + " Range Not Satisfiable: the object is shorter than byte " +
                         std::to_string(r.offset) + ": it changed on the server; build the "
                         "dataset again to count it anew", false, 416);
  }
  const bool transient = status == 408 || status == 429 || status >= 500;
  throw TransportError(head + said + (transient ? "" : ": the request cannot succeed as it is"),
                       transient, static_cast<int>(status));
}

}  // namespace

void HttpTransport::read(const ReadRequest& request,
                         const std::function<void(const ObjectInfo&)>& on_info,
                         const std::function<void(const char*, size_t)>& on_bytes) {
  fetch(http_url(request.url), request, on_info, on_bytes);
}

void HttpTransport::fetch(const std::string& target, const ReadRequest& request,
                          const std::function<void(const ObjectInfo&)>& on_info,
                          const std::function<void(const char*, size_t)>& on_bytes) {
  CURL* curl = handle();
  curl_easy_reset(curl);  // keeps the connection cache
  Exchange x;
  x.request = &request;
  x.on_info = &on_info;
  x.on_bytes = &on_bytes;
  x.curl = curl;
  std::string range;
  if (request.offset > 0 || request.length > 0) {
    range = std::to_string(request.offset) + "-" +
            (request.length > 0 ? std::to_string(request.offset + request.length - 1) : "");
  }
  curl_slist* headers = nullptr;
  for (const std::string& h : extra_headers(target, range)) {
    headers = curl_slist_append(headers, h.c_str());
  }
  if (!request.if_match.empty()) {
    headers = curl_slist_append(headers, ("If-Match: " + request.if_match).c_str());
  }
  char detail[CURL_ERROR_SIZE] = "";
  set_request(curl, target, headers, options_, detail);
  if (!range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, kMaxRedirects);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &x);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &x);
  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (x.failure) std::rethrow_exception(x.failure);
  if (code != CURLE_OK) fail_transfer(request, code, detail, options_);
  const long status = status_of(curl);
  if (status != 200 && status != 206) {
    fail_status(request, status, x.error_body, denied_fix(request.url), target);
  }
  send_info(x, status);  // an empty body calls no write callback
}

std::vector<std::string> HttpTransport::put_headers(const std::string& http_url,
                                                    const std::string& sha256) {
  (void)http_url;
  (void)sha256;
  return {};
}

namespace {

size_t append_body(char* data, size_t size, size_t count, void* user) {
  auto& body = *static_cast<std::string*>(user);
  if (body.size() < 65536) body.append(data, size * count);
  return size * count;
}

}  // namespace

void HttpTransport::write(const WriteRequest& request) {
  const std::string target = http_url(request.url);
  std::FILE* in = std::fopen(request.path.c_str(), "rbe");
  if (in == nullptr) {
    throw Error("cannot read \"" + request.path + "\" (" + std::strerror(errno) +
                ") to upload it to " + request.url);
  }
  CURL* curl = handle();
  curl_easy_reset(curl);
  curl_slist* headers = curl_slist_append(nullptr, "Expect:");  // no 100-continue round trip
  headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
  for (const std::string& h : put_headers(target, request.sha256)) {
    headers = curl_slist_append(headers, h.c_str());
  }
  std::string body;
  char detail[CURL_ERROR_SIZE] = "";
  set_request(curl, target, headers, options_, detail);
  curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(curl, CURLOPT_READDATA, in);
  curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.bytes));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  const CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  std::fclose(in);
  const std::string head = "PUT " + request.url;
  if (code != CURLE_OK) {
    throw TransportError(head + ": " + (*detail != '\0' ? detail : curl_easy_strerror(code)),
                         transient_code(code), 0);
  }
  const long status = status_of(curl);
  if (status == 200 || status == 201 || status == 204) return;
  const bool transient = status == 408 || status == 429 || status >= 500;
  const std::string fix =
      status == 401 || status == 403 ? denied_fix(request.url)
      : status == 405 || status == 501
          ? "the server takes no PUT here: write to a server or path that takes uploads"
          : transient ? "the server failed; it is retried" : "the upload cannot succeed as it is";
  throw TransportError(head + ": HTTP " + std::to_string(status) + body_snippet(body) + ": " + fix,
                       transient, static_cast<int>(status));
}

std::string HttpTransport::get_text(const std::string& url) {
  std::string body;
  ReadRequest request;
  request.url = url;
  fetch(url, request, [](const ObjectInfo&) {}, small_body_sink(body, url));
  return body;
}

std::function<void(const char*, size_t)> small_body_sink(std::string& body,
                                                         const std::string& url) {
  return [&body, url](const char* data, size_t n) {
    if (body.size() + n > (size_t{64} << 20)) {
      throw TransportError("GET " + url + ": the response is over 64 MiB, too large for a "
                           "listing or a manifest", false, 0);
    }
    body.append(data, n);
  };
}

}  // namespace mploader::remote::detail

namespace mploader::remote::detail {

std::map<std::string, TransportFactory> builtin_transports() {
  auto http = [](const RemoteOptions& o) { return std::make_unique<HttpTransport>(o); };
  auto s3 = [](const RemoteOptions& o) { return std::make_unique<S3Transport>(o); };
  return {{"http", http}, {"https", http}, {"s3", s3}, {"file", make_file_transport}};
}

}  // namespace mploader::remote::detail
