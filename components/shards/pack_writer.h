// shards/: PackWriter, which writes a pack (pack_format.h) one sample at a time into a folder,
// and picks a stopped pack up where it stopped.
//
// A shard is written to "<name>.part" files and renamed into place once whole, its index
// first; then the progress file (mploader-pack.progress.json, a pack description of the
// shards done so far, written to a temporary file, synced and renamed) records it. A pack
// killed at any moment therefore restarts after the last recorded shard: the samples of the
// shard it was writing are written again, each sample once in the finished pack, and the
// bytes are the same as those of a pack never stopped. Nothing here links libtorch.
#pragma once

#include "shards/pack_format.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mploader::shards::detail {

struct PackWriterOptions {
  std::string dir;                      // the output folder (created when missing)
  int64_t shard_bytes = int64_t{256} << 20;  // a shard's most tar bytes (one sample at least)
  int64_t samples = 0;                  // the samples the pack will hold
  // The command's settings as a JSON object's text: a progress file with other settings is not
  // resumed but refused (the folder holds another pack).
  std::string settings = "{}";
  bool overwrite = false;  // start again over a folder that holds another pack
  // When set, each finished file (a shard's index, then its tar; at the end the manifest, then
  // the description) is handed to it by name, relative to `dir`, to be copied elsewhere (an
  // upload), with its SHA-256 where the writer took it (a shard's files; empty for the
  // others). A shard is recorded only once both of its files are published, and its local
  // files are then removed: `dir` is a staging folder that holds about one shard.
  std::function<void(const std::string& name, const std::string& sha256)> publish;
};

class PackWriter {
 public:
  // Opens the folder: resumes the pack its progress file records, takes up a finished pack
  // made with the same settings as complete(), or starts one. Throws OptionError naming the
  // folder when it holds a finished pack or a stopped one made with other settings (unless
  // overwrite), or when it cannot be made. Writes that fail later throw Error, and the shard
  // being written leaves no ".part" file behind.
  explicit PackWriter(PackWriterOptions options);
  ~PackWriter();
  PackWriter(const PackWriter&) = delete;
  PackWriter& operator=(const PackWriter&) = delete;

  // The position of the next sample to write (0, or where a resumed pack stopped).
  int64_t next_sample() const { return next_sample_; }
  // The fields, from the first sample written; empty before it (unless resumed).
  const std::vector<PackedField>& fields() const { return pack_.fields; }
  // Shards done so far.
  int64_t shards_done() const { return static_cast<int64_t>(pack_.shards.size()); }
  // The folder held this pack finished already (the same settings): nothing to add, and
  // finish() writes nothing.
  bool complete() const { return complete_; }

  // Writes the next sample: `members[f]` is the data of fields[f]. The first sample sets the
  // fields; later samples must have the same ones (OptionError naming the sample otherwise).
  void add(const std::vector<PackedField>& fields, const std::vector<std::string_view>& members);
  // Closes the last shard, writes mploader-pack.json and mploader-manifest.json, removes the
  // progress file. Throws OptionError when fewer samples were added than options.samples.
  void finish();

 private:
  void resume_or_start();
  // Takes up the shards of `done`, the folder's finished pack or stopped one, when it was made
  // with these settings; refuses it otherwise (unless overwrite).
  void adopt(const PackDescription& done, bool finished);
  void remove_stale() const;
  void open_shard();
  void close_shard();
  void write_progress(const std::string& name) const;
  void check_fields(const std::vector<PackedField>& fields) const;

  PackWriterOptions options_;
  PackDescription pack_;  // the shards done
  int64_t next_sample_ = 0;
  bool complete_ = false;
  struct OpenShard;  // the shard being written
  std::unique_ptr<OpenShard> open_;
};

// The path of `name` in `dir`.
std::string path_in(const std::string& dir, const std::string& name);

}  // namespace mploader::shards::detail
