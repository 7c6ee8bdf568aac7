// control.sock's framing (protocol/stream_frame.hpp): frames reassembled from
// any split of the stream, several in a row, and a hostile length refused
// from its header before a body is held.
#include <gtest/gtest.h>

#include <string>

#include "protocol/stream_frame.hpp"

using zkfarm::protocol::FrameReader;
using zkfarm::protocol::frame_of;
using zkfarm::protocol::kFrameHeaderBytes;

namespace {

/// Feeds `stream` to `r` in pieces of `piece` bytes, never more than room().
/// Returns the bodies of the frames that became whole.
std::vector<std::string> feed_in_pieces(FrameReader& r, const std::string& stream, size_t piece) {
  std::vector<std::string> bodies;
  size_t at = 0;
  while (at < stream.size()) {
    if (r.room() == 0) {
      auto f = r.take();
      if (!f) break;  // too large
      bodies.push_back(*f);
      continue;
    }
    at += r.feed(stream.data() + at, std::min({piece, r.room(), stream.size() - at}));
  }
  if (auto f = r.take()) bodies.push_back(*f);
  return bodies;
}

}  // namespace

TEST(StreamFrame, TheHeaderIsTheLengthBigEndian) {
  const std::string f = frame_of(std::string(0x010203, 'x'));
  ASSERT_EQ(f.size(), kFrameHeaderBytes + 0x010203);
  EXPECT_EQ(f.substr(0, 4), std::string("\x00\x01\x02\x03", 4));
  EXPECT_EQ(frame_of(""), std::string(4, '\0'));
  EXPECT_THROW(frame_of(std::string(11, 'x'), 10), zkfarm::protocol::ProtocolError);
}

TEST(StreamFrame, FramesComeBackWholeFromAnySplitOfTheStream) {
  const std::vector<std::string> bodies = {"first", "", std::string(70000, '\xff'), "last \x00 byte"};
  std::string stream;
  for (const auto& b : bodies) stream += frame_of(b);
  for (size_t piece : {size_t(1), size_t(3), size_t(4), size_t(5), size_t(4096), stream.size()}) {
    FrameReader r;
    EXPECT_EQ(feed_in_pieces(r, stream, piece), bodies) << "pieces of " << piece;
    EXPECT_EQ(r.buffered(), 0u);
    EXPECT_FALSE(r.partial());
  }
}

TEST(StreamFrame, ReaderNeverTakesBytesOfTheNextFrame) {
  const std::string stream = frame_of("ab") + frame_of("cde");
  FrameReader r;
  EXPECT_EQ(r.room(), kFrameHeaderBytes);
  EXPECT_EQ(r.feed(stream.data(), stream.size()), kFrameHeaderBytes + 2);  // stops at the frame's end
  EXPECT_TRUE(r.has_frame());
  EXPECT_EQ(r.room(), 0u);
  EXPECT_EQ(r.take(), std::optional<std::string>("ab"));
  EXPECT_EQ(r.feed(stream.data() + 6, stream.size() - 6), kFrameHeaderBytes + 3);
  EXPECT_EQ(r.take(), std::optional<std::string>("cde"));
  EXPECT_EQ(r.take(), std::nullopt);
}

TEST(StreamFrame, AnOversizedLengthIsRefusedFromItsHeaderAlone) {
  FrameReader r(1 << 20);
  const std::string header("\xff\xff\xff\xff", 4);  // 4 GiB - 1 announced
  EXPECT_EQ(r.feed(header.data(), 3), 3u);
  EXPECT_FALSE(r.too_large());
  EXPECT_TRUE(r.partial());
  EXPECT_EQ(r.feed(header.data() + 3, 1), 1u);
  EXPECT_TRUE(r.too_large());
  EXPECT_EQ(r.announced(), 0xffffffffu);
  EXPECT_EQ(r.room(), 0u);  // not one byte of the body is taken
  EXPECT_EQ(r.feed("body", 4), 0u);
  EXPECT_EQ(r.buffered(), kFrameHeaderBytes);
  EXPECT_FALSE(r.has_frame());
  EXPECT_EQ(r.take(), std::nullopt);
  // At the limit itself a frame is taken.
  FrameReader at(10);
  const std::string ten = frame_of("0123456789");
  EXPECT_EQ(at.feed(ten.data(), ten.size()), ten.size());
  EXPECT_EQ(at.take(), std::optional<std::string>("0123456789"));
  FrameReader past(10);
  const std::string eleven = frame_of("0123456789a");
  past.feed(eleven.data(), eleven.size());
  EXPECT_TRUE(past.too_large());
}
