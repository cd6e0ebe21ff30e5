// remote/: the libcurl Transport for http:// and https://, and the base of the S3 one.
#pragma once

#include <mploader/remote/remote.h>

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

typedef void CURL;

namespace mploader::remote::detail {

// Reads with one curl handle per process, so that consecutive reads reuse the connection.
// After a fork the child leaves the parent's handle alone (its socket is the parent's) and
// opens its own.
class HttpTransport : public Transport {
 public:
  explicit HttpTransport(RemoteOptions options);
  ~HttpTransport() override;

  void read(const ReadRequest& request, const std::function<void(const ObjectInfo&)>& on_info,
            const std::function<void(const char*, size_t)>& on_bytes) override;
  // An HTTP PUT of the file's bytes; 200, 201 and 204 are success.
  void write(const WriteRequest& request) override;

 protected:
  // What a request for `url` is sent to (the S3 transport maps s3://bucket/key to its
  // endpoint), and the headers it needs beyond Range and If-Match.
  virtual std::string http_url(const std::string& url) const { return url; }
  virtual std::vector<std::string> extra_headers(const std::string& http_url,
                                                 const std::string& range);
  // The headers of a PUT to `http_url` of a body whose SHA-256 is `sha256` (hex).
  virtual std::vector<std::string> put_headers(const std::string& http_url,
                                               const std::string& sha256);
  // What to do about a 401 or 403 for `url`: which credentials were sent, and how to fix it.
  virtual std::string denied_fix(const std::string& url) const;
  // A GET of a small body (a listing) from an HTTP URL, as it is (no http_url mapping);
  // throws TransportError like read().
  std::string get_text(const std::string& http_url);
  const RemoteOptions& options() const { return options_; }

 private:
  CURL* handle();
  // read(), sent to `target` (http_url's answer).
  void fetch(const std::string& target, const ReadRequest& request,
             const std::function<void(const ObjectInfo&)>& on_info,
             const std::function<void(const char*, size_t)>& on_bytes);

  RemoteOptions options_;
  CURL* handle_ = nullptr;
  pid_t owner_ = 0;
};

// A body sink that appends to `body`, and throws TransportError naming `url` past 64 MiB: a
// listing or a manifest, never a shard, is read whole into memory.
std::function<void(const char*, size_t)> small_body_sink(std::string& body,
                                                         const std::string& url);

// file:// (file_transport.cc).
std::unique_ptr<Transport> make_file_transport(const RemoteOptions& options);

// http, https, s3 and file, for the registry of transports.
std::map<std::string, TransportFactory> builtin_transports();

}  // namespace mploader::remote::detail
