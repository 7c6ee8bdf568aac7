#pragma once
// The check of an SQLite write-ahead log (DB-wal) that the journal runs before
// SQLite opens the database. SQLite's own recovery replays the WAL's frames up
// to the first one that fails its checks and silently ignores the rest; that
// is right for a frame torn by a kill (its transaction was never acknowledged)
// but silently loses acknowledged transactions when a committed frame was
// damaged on disk. This check tells the two apart so that the journal can
// refuse to open instead of dropping jobs.
//
// Format: https://www.sqlite.org/fileformat2.html#walformat (and the comment
// at the top of SQLite's src/wal.c). A 32-byte header of eight big-endian
// u32: magic 0x377f0682 (checksums over little-endian words) or 0x377f0683
// (big-endian words), format version 3007000, page size (a power of two,
// 512..65536), checkpoint sequence, salt-1, salt-2, checksum-1, checksum-2
// (over the first 24 bytes). Then frames of 24 + page-size bytes: a header of
// six big-endian u32 (page number, database size in pages for a commit frame
// else 0, salt-1, salt-2, checksum-1, checksum-2) and the page. A frame's
// checksum is cumulative: it continues from the previous valid frame's (the
// first frame's from the header's) over the frame header's first 8 bytes and
// the page; for each pair of u32 words x0, x1: s0 += x0 + s1; s1 += x1 + s0.
#include <cstdint>
#include <optional>
#include <string>

#include "supervisor/ledger/journal_error.hpp"

namespace zkfarm::supervisor {

/// Where a WAL is damaged.
struct WalDamage {
  uint64_t frame = 0;   ///< 1-based frame number as SQLite counts them; 0: the WAL header
  uint64_t offset = 0;  ///< byte offset of that frame (or header) in the file
  std::string fault;    ///< what is wrong, one clause, no file contents
};

/// What check_wal found. Frame counts are of complete frames.
struct WalReport {
  bool exists = false;          ///< false: no WAL file (every other field is 0)
  uint64_t file_bytes = 0;
  uint32_t page_size = 0;       ///< bytes; 0 when the file is shorter than its header
  uint32_t checkpoint_seq = 0;
  bool big_endian_checksums = false;  ///< magic 0x377f0683
  uint64_t valid_frames = 0;      ///< frames of the current generation with good salts and checksums
  uint64_t committed_frames = 0;  ///< valid frames up to the last commit frame: what SQLite replays
  uint64_t commits = 0;           ///< commit frames among the valid ones
  uint64_t uncommitted_frames = 0;  ///< valid frames after the last commit frame (never acknowledged)
  uint64_t leftover_frames = 0;   ///< frames after the current generation (older salts: normal)
  uint64_t torn_bytes = 0;        ///< bytes of a trailing partial frame (a write cut by a kill: normal)
  /// Set when a frame that may belong to an acknowledged transaction is
  /// damaged: a complete frame whose salts match the header's but whose page
  /// number is 0 or whose cumulative checksum fails; a frame whose salts differ
  /// but whose checksum continues the chain (its salt bytes were damaged); or a
  /// header that fails its checks while frames follow it.
  std::optional<WalDamage> damage;
};

/// Reads and checks the WAL at `wal_path` (typically DB + "-wal"); never
/// modifies it. A missing file gives {exists = false}; a file shorter than 32
/// bytes has no frames and is not damaged. Throws JournalError naming the file
/// and errno's text when it exists but cannot be opened or read. Reads the
/// file once, one frame at a time (memory: one page).
WalReport check_wal(const std::string& wal_path);

}  // namespace zkfarm::supervisor
