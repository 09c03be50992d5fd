//===- DiskCache.h - compiled plans on disk ---------------------*- C++ -*-===//
//
// One file per entry, named by the SHA-256 of the full key and holding the
// full key and the serialised Plan. Writes go to a temporary file renamed
// into place, so readers see a whole entry or none. On load the full key
// is compared; a corrupt, truncated or mismatched entry is ignored (and
// replaced by the next store), with a KFUSE_DEBUG message.
//
// The directory is trusted only when it is the user's own: a directory, not
// a symbolic link, owned by the effective uid and writable by no group or
// other user. Otherwise nothing is loaded from it or stored in it, and
// kfuse says so once on stderr: entries hold machine code that kfuse runs.
//
//===----------------------------------------------------------------------===//

#ifndef KFUSE_RUNTIME_DISKCACHE_H
#define KFUSE_RUNTIME_DISKCACHE_H

#include "kfuse/Error.h"
#include "runtime/Plan.h"

#include <optional>
#include <string>

namespace kfuse::runtime {

class DiskCache {
public:
  /// `directory` empty: $KFUSE_CACHE_DIR, else $XDG_CACHE_HOME/kfuse, else
  /// ~/.cache/kfuse.
  explicit DiskCache(std::string directory = "");

  static std::string defaultDirectory();
  const std::string &directory() const { return dir; }
  std::string pathFor(const std::string &key) const;
  /// The SHA-256 of `key`, in hex.
  static std::string digest(const std::string &key);

  /// The entry for `key`, if one is there and whole; `rejected` tells
  /// whether a file was there but ignored (corrupt or another key).
  std::optional<Plan> load(const std::string &key,
                           bool *rejected = nullptr) const;
  /// Creates the directory (0700) if needed; refuses one that is not the
  /// user's own.
  Status store(const std::string &key, const Plan &plan) const;

private:
  std::string dir;
};

} // namespace kfuse::runtime

#endif // KFUSE_RUNTIME_DISKCACHE_H
