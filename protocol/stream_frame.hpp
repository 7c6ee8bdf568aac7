#pragma once
// Length-prefixed frames on a byte stream: control.sock's framing between
// zkfarmctl (or zkfarm-api) and zkfarmd (docs/protocol.md, "control.sock").
//
// A frame is a 4-byte big-endian unsigned length N followed by N bytes of
// body (one MessagePack map, protocol/messages.hpp). N must not pass the
// reader's limit (kMaxFrameBytes unless told otherwise); a larger N is refused
// from the 4 header bytes alone, before anything is allocated for the body,
// and the connection is then to be closed (a stream cannot skip a frame it
// will not read). ZeroMQ's multipart messages are why control.sock no longer
// speaks ZMTP: libzmq holds every part of a message until its last one
// arrives, with no bound on the total (docs/decisions.md).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/messages.hpp"

namespace zkfarm::protocol {

/// Bytes of a frame's length prefix.
inline constexpr size_t kFrameHeaderBytes = 4;

/// The frame of `body`: its length as 4 big-endian bytes, then the body.
/// Throws ProtocolError when body is larger than `max_body` bytes.
std::string frame_of(std::string_view body, size_t max_body = kMaxFrameBytes);

/// Reassembles frames from a stream read in pieces, holding at most one
/// frame (header + body ≤ kFrameHeaderBytes + max_body bytes) at a time.
/// The caller reads at most room() bytes from its stream, gives them to
/// feed(), and takes the frame when has_frame() says so; it never has to
/// keep bytes of the next frame itself.
class FrameReader {
 public:
  /// `max_body`: the largest body accepted (bytes).
  explicit FrameReader(size_t max_body = kMaxFrameBytes) : max_body_(max_body) {}

  /// How many bytes feed() takes now: those that complete the header, or the
  /// body the header announced; 0 while a whole frame waits to be taken or
  /// after too_large().
  size_t room() const;
  /// Appends `n` ≤ room() bytes (more is a programming error: the excess is
  /// ignored and the count of bytes taken returned).
  size_t feed(const char* data, size_t n);
  /// A whole frame waits.
  bool has_frame() const;
  /// The waiting frame's body; the reader is then empty again. Empty
  /// optional when no whole frame waits.
  std::optional<std::string> take();
  /// The header announced a body larger than max_body: the stream is
  /// unusable (close it). announced() says how large.
  bool too_large() const { return too_large_; }
  /// The length the current header announced (0 before a whole header).
  uint64_t announced() const { return announced_; }
  /// Bytes held now (header and body so far).
  size_t buffered() const { return buf_.size(); }
  /// Some bytes of a frame have arrived, not yet all of them.
  bool partial() const { return !buf_.empty() && !has_frame(); }

 private:
  size_t max_body_;
  std::string buf_;
  uint64_t announced_ = 0;
  bool header_done_ = false;
  bool too_large_ = false;
};

}  // namespace zkfarm::protocol
