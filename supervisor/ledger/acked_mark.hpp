#pragma once
// The journal's acknowledged mark (DB-acked, beside DB-wal): the sequence
// number of the last transaction whose success the journal's caller told a
// client (a submit's job id, a registered circuit), kept outside SQLite's
// files and fsynced before the client hears it.
//
// Why: SQLite's recovery replays a WAL's frames up to the first one that
// fails its checks and silently ignores the rest. Damage that cuts the WAL
// (a truncated tail, a lost last frame, a zeroed header) looks exactly like a
// kill in the middle of an unacknowledged write, so no reading of the WAL's
// bytes alone can tell "this job was never acknowledged" from "this
// acknowledged job was lost". The journal counts acknowledged transactions in
// the database itself (its `acknowledged` row) and here; at open, a database
// behind this mark has lost acknowledged work, and the journal refuses to
// open (journal.cpp) instead of starting without it.
//
// Format: two 32-byte slots at offsets 0 and 32; a write goes to slot
// seq % 2, so a write torn by a crash leaves the other slot, one mark older
// (a smaller mark only weakens the check, never fails a good journal). A slot:
// the 8 bytes "ZKFACK01", the sequence number (u64 little-endian), its
// FNV-1a 64 over those 16 bytes (u64 little-endian), 8 zero bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "files/unique_fd.hpp"

namespace zkfarm::supervisor {

/// What a mark file holds.
struct AckedMarkRead {
  bool exists = false;               ///< false: no file (a journal from before the mark, or a new one)
  std::optional<uint64_t> seq;       ///< the highest valid slot's number; none when no slot is valid
};

/// Reads the mark at `path` without changing it. A missing file is
/// {exists = false}; a file whose slots are both damaged is {true, nullopt}.
/// Throws JournalError naming the file when it exists but cannot be read, or
/// is not a regular file (a symlink is not followed).
AckedMarkRead read_acked_mark(const std::string& path);

/// The mark file kept open for writing by the journal.
class AckedMark {
 public:
  /// Opens (creating, mode 0600) the mark at `path`, never through a symlink.
  /// Throws JournalError naming the file and the fault.
  explicit AckedMark(const std::string& path);
  /// Writes `seq` into its slot and, with `sync`, fdatasyncs. Returns "" or the fault.
  /// A mark deleted or renamed away since it was opened (its name no longer
  /// leads to this file) is made anew at `path` first, both slots `seq`,
  /// the folder synced, and take_notice() says so; something else planted at
  /// the name (a link, a FIFO) is a fault, never written through.
  std::string write(uint64_t seq, bool sync = true);
  const std::string& path() const { return path_; }
  /// What write() repaired since the last call ("" when nothing), for the log.
  std::string take_notice() { return std::exchange(notice_, {}); }

 private:
  std::string recreate(uint64_t seq);
  std::string path_;
  files::UniqueFd fd_;
  std::string notice_;
};

}  // namespace zkfarm::supervisor
