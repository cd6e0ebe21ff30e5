/// @file
/// Remote shards: tar shards named by URL (http://, https://, s3://) instead of by path, read
/// through a Transport and kept in a shard cache that every worker, rank and job on the machine
/// shares. Part of the mploader::remote component (CMake target mploader::remote, which links
/// libcurl). mploader::shards links it: TarShards takes URLs where it takes paths.
///
///   shards::TarShardsOptions o;
///   o.remote.cache_dir = "/dev/shm/shard-cache";     // or MPLOADER_CACHE_DIR
///   o.remote.cache_limit_bytes = int64_t{20} << 30;  // or MPLOADER_CACHE_LIMIT=20G
///   shards::TarShards data(remote::expand_braces(
///       "https://host/train/shard-{000000..000099}.tar"), o);
///
/// The sample counts come from a manifest beside the shards (mploader-manifest writes it), so
/// that building the dataset downloads no shard.
#pragma once

#include <mploader/errors.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace mploader::remote {

/// Where remote shards are cached and how they are fetched.
struct RemoteOptions {
  /// The cache folder, shared by every job that names it: one download per shard per machine.
  /// Empty: MPLOADER_CACHE_DIR, else $XDG_CACHE_HOME/mploader/shards (~/.cache/...).
  std::string cache_dir;
  /// Most bytes the cache folder may hold; the least recently used shards no reader holds are
  /// evicted to make room. 0: MPLOADER_CACHE_LIMIT ("20G", "512M" or bytes), else no limit
  /// but the file system's free space (a full file system evicts too).
  int64_t cache_limit_bytes = 0;
  /// The manifest (a URL or a path) that gives each shard's size and sample count. Empty: the
  /// file "mploader-manifest.json" in the folder of the first shard's URL.
  std::string manifest;
  /// S3-compatible stores: the endpoint ("http://127.0.0.1:9000"). Empty: AWS_ENDPOINT_URL,
  /// else AWS S3 of the region.
  std::string endpoint_url;
  /// S3: the profile of ~/.aws/credentials; empty: AWS_PROFILE, else "default". Credentials in
  /// the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY variables come first.
  std::string aws_profile;
  /// S3: the region that signs requests; empty: AWS_REGION, AWS_DEFAULT_REGION, the profile's
  /// region, else "us-east-1".
  std::string region;
  /// Seconds to wait for a connection.
  double connect_timeout_s = 10;
  /// Seconds after which a response that brought fewer than 1 KiB a second counts as stalled
  /// (a try that failed).
  double stall_timeout_s = 30;
  /// Local paths, too, are read through the shard cache: each tar is copied into it once per
  /// machine and read from there. For shards on a slow network file system.
  bool cache_local_paths = false;
  /// Most bytes of shards each worker downloads ahead: while it reads one shard, the shards
  /// its stream reads next are downloaded into the cache in the background, in order, as long
  /// as those held and the one downloading fit in this many bytes (a larger shard is not
  /// fetched ahead). They count toward the cache's room. 0: no read-ahead.
  int64_t prefetch_bytes = int64_t{1} << 30;
  /// Retries of one download after a connection error, a stall, a cut body, or an HTTP 5xx
  /// or 429, with exponential backoff; each resumes from the last byte received.
  int max_retries = 8;
};

/// What a response says about the object it serves.
struct ObjectInfo {
  int64_t bytes = -1;  ///< The object's whole size; -1 when the server did not say.
  std::string etag;    ///< Its ETag, quotes included; empty when the server sent none.
  /// Its Last-Modified date as the server wrote it; empty when the server sent none. Compared
  /// between the responses of one download when the server sends no ETag.
  std::string last_modified;
};

/// A read that failed. `transient`: worth retrying (a connection error, a stall, a body cut
/// short, HTTP 5xx or 429); otherwise retrying cannot help (404, 403, a changed object). An
/// mploader::Error, as every error mploader throws; what() names the request, and the reader
/// that made it adds its own name.
class TransportError : public Error {
 public:
  /// `message` is what() returns; `http_status` 0 when no response arrived.
  TransportError(const std::string& message, bool transient, int http_status)
      : Error(message), transient_(transient), http_status_(http_status) {}
  bool transient() const { return transient_; }  ///< Whether a retry may succeed.
  int http_status() const { return http_status_; }  ///< 0 when no response arrived.

 private:
  bool transient_;
  int http_status_;
};

/// One ranged read.
struct ReadRequest {
  std::string url;       ///< The object read.
  int64_t offset = 0;    ///< The first byte wanted.
  /// Bytes wanted from `offset`; -1: to the object's end. A store that ignores ranges may
  /// send more: a reader stops once it has enough.
  int64_t length = -1;
  std::string if_match;  ///< An ETag the object must still have (HTTP If-Match), or empty.
};

/// One upload: a local file's bytes as an object (HTTP PUT), replacing one of that name.
struct WriteRequest {
  std::string url;     ///< The object written.
  std::string path;    ///< The local file whose bytes it gets.
  int64_t bytes = 0;   ///< The file's size.
  std::string sha256;  ///< The file's SHA-256 (lowercase hex): S3 signs it and checks the body.
};

/// How bytes are fetched from one kind of store. A Transport lives in one process and one
/// thread at a time; it may keep connections open between reads. Implement it to read from
/// another store, and register it with register_transport().
class Transport {
 public:
  virtual ~Transport() = default;
  /// Reads `request`: calls `on_info` once when the response's headers have arrived, then
  /// `on_bytes` with the body from request.offset to the end, in order. Throws TransportError
  /// whose text names the URL, the HTTP status and what to do.
  virtual void read(const ReadRequest& request,
                    const std::function<void(const ObjectInfo&)>& on_info,
                    const std::function<void(const char*, size_t)>& on_bytes) = 0;
  /// The URLs of every object whose URL starts with `prefix_url` (an s3:// prefix), sorted.
  /// Stores that cannot list throw TransportError saying so.
  virtual std::vector<std::string> list(const std::string& prefix_url);
  /// Uploads `request.path` as the object `request.url`. Throws TransportError naming the URL,
  /// the HTTP status and what to do (transient() as for reads). Stores that cannot be written
  /// throw TransportError saying so.
  virtual void write(const WriteRequest& request);
};

/// Uploads the local file `path` to `url` (http://, https://, s3://) with Transport::write,
/// retried like a read after a transient failure (options.max_retries, with backoff).
/// `sha256`: the file's SHA-256 (lowercase hex) when the caller has it already; empty, it is
/// taken from the file (one more read of it). Throws Error naming the file when it cannot be
/// read, and TransportError when the upload fails.
void upload_file(const std::string& path, const std::string& url, const RemoteOptions& options,
                 const std::string& sha256 = "");

/// Makes a Transport for a scheme, with the reader's options.
using TransportFactory = std::function<std::unique_ptr<Transport>(const RemoteOptions&)>;

/// Makes `scheme` ("gs", "myproto") readable: URLs "scheme://..." are then read through the
/// factory's Transports. http, https and s3 are registered by mploader::remote.
void register_transport(const std::string& scheme, TransportFactory factory);

/// A Transport for `url`'s scheme; throws OptionError naming the URL for a scheme no
/// Transport is registered for.
std::unique_ptr<Transport> make_transport(const std::string& url, const RemoteOptions& options);

/// True for "scheme://..." (any scheme but file://); a path otherwise.
bool is_url(const std::string& name);

/// WebDataset's brace ranges: "shard-{000..002}.tar" gives "shard-000.tar", "shard-001.tar",
/// "shard-002.tar" (the width of the first bound is kept); "{a,b}" gives each choice; several
/// braces expand left to right. Throws OptionError naming the pattern for an unclosed brace, a
/// range whose start is past its end, or more than 10,000,000 names.
std::vector<std::string> expand_braces(const std::string& pattern);

/// The shards a list of entries names, in order: a URL with braces expands (expand_braces); a
/// URL ending in '/' (s3://bucket/prefix/) lists every object under it whose name ends with
/// `suffix`, sorted (Transport::list); any other entry, a local path included, stands for
/// itself. Throws OptionError naming an entry that lists to nothing, and TransportError for a
/// listing that fails.
std::vector<std::string> resolve_shard_urls(const std::vector<std::string>& entries,
                                           const RemoteOptions& options,
                                           const std::string& suffix);

}  // namespace mploader::remote
