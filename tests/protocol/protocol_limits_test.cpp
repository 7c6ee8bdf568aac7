// The decoder's limits (protocol::decode, protocol::check_msgpack): hostile
// frames (deep nesting, lying counts and lengths, trailing bytes, ext types,
// non-str keys, bad UTF-8) are refused with ProtocolError before nlohmann
// parses them, every MessagePack type still decodes to the value the
// specification gives it, and every message the farm sends round-trips. The
// expected values are written from the MessagePack specification
// (github.com/msgpack/msgpack/blob/master/spec.md), not from the decoder.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "protocol/messages.hpp"
#include "protocol/msgpack_limits.hpp"

namespace zkfarm {
namespace {

namespace proto = zkfarm::protocol;
using proto::Message;
using proto::ProtocolError;

// Builds frames byte by byte.
struct Frame {
  std::string b;
  Frame& u8(unsigned v) {
    b.push_back(static_cast<char>(v));
    return *this;
  }
  Frame& be(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) u8(static_cast<unsigned>((v >> (8 * i)) & 0xff));
    return *this;
  }
  Frame& raw(std::string_view s) {
    b += s;
    return *this;
  }
  Frame& fixstr(std::string_view s) { return u8(0xa0 | static_cast<unsigned>(s.size())).raw(s); }
  Frame& repeat(std::string_view s, size_t n) {
    for (size_t i = 0; i < n; ++i) b += s;
    return *this;
  }
};

// The common prefix of a message map with N entries: {"v": 1, "t": "X", ...}.
Frame header(unsigned entries) { return Frame{}.u8(0x80 | entries).fixstr("v").u8(0x01).fixstr("t").fixstr("X"); }

// The ProtocolError's text, or a test failure if decode accepts FRAME or
// throws something else.
std::string refusal(const std::string& frame) {
  try {
    proto::decode(frame);
  } catch (const ProtocolError& e) {
    return e.what();
  }
  ADD_FAILURE() << "frame of " << frame.size() << " bytes was accepted";
  return "";
}

#define EXPECT_REFUSED(frame, text) EXPECT_NE(refusal(frame).find(text), std::string::npos) << refusal(frame)

TEST(ProtocolLimits, DeepArrayFrameIsRefusedWithoutCrashing) {
  // The attack sweep's frame: 500,000 nested fixarrays of one element, nil at
  // the bottom. nlohmann's recursive reader overflows the stack on it.
  const std::string frame = Frame{}.repeat("\x91", 500000).u8(0xc0).b;
  ASSERT_EQ(frame.size(), 500001u);
  ASSERT_LE(frame.size(), proto::kMaxFrameBytes);
  EXPECT_REFUSED(frame, "nested deeper than 16 levels");
  EXPECT_REFUSED(frame, "at offset 16:");  // the 17th array starts at byte 16
}

TEST(ProtocolLimits, DeepMapFrameIsRefusedWithoutCrashing) {
  // 500,000 nested one-entry maps keyed by "" (0x81 0xa0): 1,000,001 bytes,
  // just under kMaxFrameBytes, so the depth check and not the size check fires.
  const std::string frame = Frame{}.repeat(std::string("\x81\xa0", 2), 500000).u8(0xc0).b;
  ASSERT_LE(frame.size(), proto::kMaxFrameBytes);
  EXPECT_REFUSED(frame, "nested deeper than 16 levels");
  EXPECT_REFUSED(frame, "at offset 32:");
}

TEST(ProtocolLimits, DepthLimitIsExactlySixteenLevels) {
  // The message map is level 1; 15 arrays inside it reach level 16.
  auto nested = [](int arrays) { return header(3).fixstr("d").repeat("\x91", arrays).u8(0x07).b; };
  const Message ok = proto::decode(nested(15));
  const Message* inner = &ok.at("d");
  for (int i = 1; i < 15; ++i) inner = &inner->at(0);
  EXPECT_EQ(inner->at(0).get<int>(), 7);
  EXPECT_REFUSED(nested(16), "nested deeper than 16 levels");
  // An empty container at level 17 is refused too: depth, not content, counts.
  EXPECT_REFUSED(header(3).fixstr("d").repeat("\x91", 15).u8(0x90).b, "nested deeper");
  EXPECT_NO_THROW(proto::decode(header(3).fixstr("d").repeat("\x91", 14).u8(0x80).b));
}

TEST(ProtocolLimits, HugeCountsInTinyFramesAreRefused) {
  // 10 bytes declaring 2^32-1 elements: refused by the walk from the count
  // alone (the message says so), so nothing is sized from it.
  const std::string array32 = Frame{}.u8(0xdd).be(0xffffffffu, 4).raw("\x01\x02\x03\x04\x05").b;
  ASSERT_EQ(array32.size(), 10u);
  EXPECT_REFUSED(array32, "array declares 4294967295 elements, more than the 5 bytes left in the frame can hold");
  const std::string map32 = Frame{}.u8(0xdf).be(0xffffffffu, 4).raw("\xa0\x01\xa0\x02\xa0").b;
  EXPECT_REFUSED(map32, "map declares 4294967295 entries, more than the 5 bytes left");
  // Inside a valid header: a map of 3 entries whose third value lies.
  EXPECT_REFUSED(header(3).fixstr("d").u8(0xdc).be(0xffff, 2).u8(0xc0).b, "array declares 65535 elements");
  // A map of 2 entries needs 4 bytes: 3 left is one short.
  EXPECT_REFUSED(Frame{}.u8(0x82).raw("\xa0\x01\xa0").b, "map declares 2 entries, more than the 3 bytes left");
  // Lengths of str and bin past the end.
  EXPECT_REFUSED(header(3).fixstr("d").u8(0xdb).be(0xffffffffu, 4).raw("ab").b,
                 "str of 4294967295 bytes runs past the end of the frame (2 bytes left)");
  EXPECT_REFUSED(header(3).fixstr("d").u8(0xc6).be(0x80000000u, 4).b, "bin of 2147483648 bytes runs past the end");
  EXPECT_REFUSED(header(3).fixstr("d").u8(0xc4).u8(3).raw("ab").b, "bin of 3 bytes runs past the end of the frame (2 bytes left)");
  EXPECT_REFUSED(header(3).fixstr("d").u8(0xa5).raw("abcd").b, "str of 5 bytes");
}

TEST(ProtocolLimits, ValueCountIsLimited) {
  // Map, "v", 1, "t", "X", "d", array: 7 values, then N elements.
  auto with_elements = [](uint64_t n) { return header(3).fixstr("d").u8(0xdd).be(n, 4).repeat(std::string_view("\0", 1), n).b; };
  const uint64_t fits = proto::kMaxMsgpackValues - 7;
  EXPECT_EQ(proto::decode(with_elements(fits)).at("d").size(), fits);
  EXPECT_REFUSED(with_elements(fits + 1), "more than 131072 values in one frame");
  // The worst case for nlohmann's memory, a million empty maps in 1 MiB, is refused by the walk.
  const uint64_t n = proto::kMaxFrameBytes - 5;
  EXPECT_REFUSED(Frame{}.u8(0xdd).be(n, 4).repeat("\x80", n).b, "more than 131072 values");
}

TEST(ProtocolLimits, TrailingBytesAndTruncationAreRefused) {
  const std::string msg = proto::encode(proto::make(proto::kHeartbeat));
  EXPECT_REFUSED(msg + '\xc0', "1 trailing bytes after the message's value (frame of " + std::to_string(msg.size() + 1));
  EXPECT_REFUSED(msg + msg, "trailing bytes");
  EXPECT_REFUSED("", "empty frame");
  EXPECT_REFUSED(header(3).fixstr("d").u8(0xcf).raw("\x01\x02").b, "truncated: a number of 8 bytes, 2 left");
  EXPECT_REFUSED(header(3).fixstr("d").u8(0xda).u8(0).b, "truncated: the str's 2-byte length runs past the end");
  EXPECT_REFUSED(header(3).fixstr("d").b, "truncated: the frame ends where a value should start");
}

TEST(ProtocolLimits, ExtTypesAndTheUnusedMarkerAreRefused) {
  // fixext 1/2/4/8/16 and ext 8/16/32, each well-formed (type byte 1 and payload).
  const std::vector<std::string> exts = {
      Frame{}.u8(0xd4).u8(1).repeat("x", 1).b,          Frame{}.u8(0xd5).u8(1).repeat("x", 2).b,
      Frame{}.u8(0xd6).u8(1).repeat("x", 4).b,          Frame{}.u8(0xd7).u8(1).repeat("x", 8).b,
      Frame{}.u8(0xd8).u8(1).repeat("x", 16).b,         Frame{}.u8(0xc7).u8(2).u8(1).raw("xy").b,
      Frame{}.u8(0xc8).be(2, 2).u8(1).raw("xy").b,      Frame{}.u8(0xc9).be(2, 4).u8(1).raw("xy").b};
  for (const std::string& ext : exts) {
    EXPECT_REFUSED(header(3).fixstr("d").raw(ext).b, "extension type") << std::hex << int(uint8_t(ext[0]));
  }
  EXPECT_REFUSED(header(3).fixstr("d").u8(0xc1).b, "marker 0xc1 is never used");
}

TEST(ProtocolLimits, MapKeysMustBeStrings) {
  EXPECT_REFUSED(Frame{}.u8(0x81).u8(0x01).u8(0x02).b, "map key is a number, not a str");
  EXPECT_REFUSED(header(3).u8(0xc4).u8(1).raw("d").u8(0x01).b, "map key is a bin, not a str");
  EXPECT_REFUSED(header(3).fixstr("d").u8(0x81).u8(0x90).u8(0xc0).b, "map key is a array, not a str");
}

TEST(ProtocolLimits, StringsMustBeWellFormedUtf8) {
  auto with = [](std::string_view s) { return header(3).fixstr("d").fixstr(s).b; };
  // Accepted: 2-, 3- and 4-byte sequences (é, €, U+1D11E, U+10FFFF).
  const std::string good = "\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\xf4\x8f\xbf\xbf";
  EXPECT_EQ(proto::get_str(proto::decode(with(good)), "d"), good);
  // Refused: overlong "/" (C0 AF), overlong 3-byte (E0 80 80), a UTF-16
  // surrogate (ED A0 80), past U+10FFFF (F4 90 80 80), F5, a lone
  // continuation byte, and a sequence cut by the end of the string.
  for (std::string_view bad : {"\xc0\xaf", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "a\x80",
                               "\xe2\x82"}) {
    EXPECT_REFUSED(with(bad), "str is not well-formed UTF-8");
  }
  // Keys too.
  EXPECT_REFUSED(header(3).fixstr("\xff").u8(0xc0).b, "not well-formed UTF-8");
}

TEST(ProtocolLimits, EveryMessagePackTypeDecodesToItsValue) {
  // One array holding every non-ext type, values chosen so that each decodes
  // to something checkable.
  Frame f = header(3).fixstr("d").u8(0xdc).be(23, 2);  // array 16 of 23 values
  f.u8(0x05);                                           // positive fixint 5
  f.u8(0xe0);                                           // negative fixint -32
  f.u8(0xc0).u8(0xc2).u8(0xc3);                         // nil, false, true
  f.u8(0xcc).u8(0xff);                                  // uint 8: 255
  f.u8(0xcd).be(0xffff, 2);                             // uint 16
  f.u8(0xce).be(0xffffffffu, 4);                        // uint 32
  f.u8(0xcf).be(0xffffffffffffffffull, 8);              // uint 64
  f.u8(0xd0).u8(0x80);                                  // int 8: -128
  f.u8(0xd1).be(0x8000, 2);                             // int 16: -32768
  f.u8(0xd2).be(0x80000000u, 4);                        // int 32: -2^31
  f.u8(0xd3).be(0x8000000000000000ull, 8);              // int 64: -2^63
  f.u8(0xca).be(0x3fc00000u, 4);                        // float 32: 1.5
  f.u8(0xcb).be(0xc004000000000000ull, 8);              // float 64: -2.5
  f.u8(0xd9).u8(3).raw("abc");                          // str 8
  f.u8(0xda).be(2, 2).raw("de");                        // str 16
  f.u8(0xdb).be(1, 4).raw("f");                         // str 32
  f.u8(0xc4).u8(2).u8(0x00).u8(0xff);                   // bin 8
  f.u8(0xc5).be(1, 2).raw("\x7f");                      // bin 16
  f.u8(0xc6).be(0, 4);                                  // bin 32, empty
  f.u8(0xdd).be(2, 4).u8(0x01).u8(0x92).u8(0x02).u8(0x90);  // array 32 [1, [2, []]]
  f.u8(0xde).be(1, 2).fixstr("k").u8(0xdf).be(1, 4).fixstr("").u8(0x80);  // map 16 {"k": map 32 {"": {}}}
  const Message m = proto::decode(f.b);
  const Message& d = m.at("d");
  ASSERT_EQ(d.size(), 23u);
  EXPECT_EQ(d[0].get<int64_t>(), 5);
  EXPECT_EQ(d[1].get<int64_t>(), -32);
  EXPECT_TRUE(d[2].is_null());
  EXPECT_EQ(d[3], false);
  EXPECT_EQ(d[4], true);
  EXPECT_EQ(d[5].get<uint64_t>(), 255u);
  EXPECT_EQ(d[6].get<uint64_t>(), 65535u);
  EXPECT_EQ(d[7].get<uint64_t>(), 4294967295u);
  EXPECT_EQ(d[8].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(d[9].get<int64_t>(), -128);
  EXPECT_EQ(d[10].get<int64_t>(), -32768);
  EXPECT_EQ(d[11].get<int64_t>(), -2147483648LL);
  EXPECT_EQ(d[12].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(d[13].get<double>(), 1.5);
  EXPECT_EQ(d[14].get<double>(), -2.5);
  EXPECT_EQ(d[15], "abc");
  EXPECT_EQ(d[16], "de");
  EXPECT_EQ(d[17], "f");
  EXPECT_EQ(d[18].get_binary(), (std::vector<uint8_t>{0x00, 0xff}));
  EXPECT_EQ(d[19].get_binary(), (std::vector<uint8_t>{0x7f}));
  EXPECT_TRUE(d[20].is_binary());
  EXPECT_TRUE(d[20].get_binary().empty());
  EXPECT_EQ(d[21], Message::parse(R"([1, [2, []]])"));
  EXPECT_EQ(d[22], Message::parse(R"({"k": {"": {}}})"));
}

// Every message type the farm sends, with the fields docs/protocol.md lists.
std::vector<Message> farm_messages() {
  std::vector<Message> out;
  auto with_partition = [](const char* type) {
    Message m = proto::make(type);
    m["job"] = 17;
    m["partition"] = 3;
    m["slot"] = 2;
    m["generation"] = 9;
    return m;
  };
  Message ready = proto::make(proto::kReady);
  ready["worker"] = "synth-0";
  ready["kind"] = "synth";
  ready["version"] = "0.1.0";
  ready["pid"] = int64_t{4242};
  ready["backend"] = "cpu";
  out.push_back(ready);
  Message hb = proto::make(proto::kHeartbeat);
  hb["worker"] = "gpu-0";
  out.push_back(hb);
  Message synth = with_partition(proto::kSynth);
  synth["offset"] = uint64_t{1} << 33;
  synth["size"] = uint64_t{3} << 20;
  synth["zkey"] = "/data/keys/chain.zkey";
  synth["wtns"] = "/data/w/0.wtns";
  out.push_back(synth);
  Message prove = with_partition(proto::kProve);
  prove["offset"] = 0;
  prove["size"] = 4096;
  prove["zkey"] = "/data/keys/chain.zkey";
  out.push_back(prove);
  Message sdone = with_partition(proto::kSynthDone);
  sdone["ok"] = false;
  sdone["error"] = "/data/w/0.wtns: section 2: value 0 (the constant signal) is not 1";
  out.push_back(sdone);
  Message pdone = with_partition(proto::kProveDone);
  pdone["ok"] = true;
  std::string proof(256, '\0');
  for (size_t i = 0; i < proof.size(); ++i) proof[i] = static_cast<char>(i * 7);
  pdone["proof"] = proto::bin(proof);
  out.push_back(pdone);
  out.push_back(proto::make(proto::kShutdown));
  out.push_back(with_partition(proto::kAbort));
  Message submit = proto::make("submit");
  submit["zkey"] = "/k/chain.zkey";
  submit["wtns"] = Message::array({"/w/0.wtns", "/w/1.wtns", "/w/2.wtns"});
  submit["priority"] = "high";
  submit["out"] = "/proofs";
  out.push_back(submit);
  Message stop = proto::make("stop");
  stop["timeout_s"] = 30;
  out.push_back(stop);
  // A status reply: the deepest message (3 levels: map, "jobs" list, job map).
  Message reply = proto::make("REPLY");
  reply["ok"] = true;
  reply["status"] = {{"queue", {{"synth", 4}, {"prove", 1}}}, {"state", "running"}};
  reply["jobs"] = Message::array({{{"id", 1}, {"state", "done"}, {"partitions", 10}, {"error", nullptr}}});
  out.push_back(reply);
  return out;
}

TEST(ProtocolLimits, EveryFarmMessageStillDecodes) {
  for (const Message& m : farm_messages()) {
    const std::string frame = proto::encode(m);
    EXPECT_NO_THROW(proto::check_msgpack(frame)) << m.dump();
    EXPECT_EQ(proto::decode(frame), m) << m.dump();
  }
  // And the typed getters read back what was put in.
  const std::vector<Message> ms = farm_messages();
  const Message synth = proto::decode(proto::encode(ms[2]));
  EXPECT_EQ(proto::type_of(synth), "SYNTH");
  EXPECT_EQ(proto::get_u64(synth, "offset"), uint64_t{1} << 33);
  EXPECT_EQ(proto::get_u32(synth, "generation"), 9u);
  EXPECT_EQ(proto::get_str(synth, "wtns"), "/data/w/0.wtns");
  const Message pdone = proto::decode(proto::encode(ms[5]));
  EXPECT_TRUE(proto::get_bool(pdone, "ok"));
  const std::string proof = proto::get_bin(pdone, "proof");
  ASSERT_EQ(proof.size(), 256u);
  EXPECT_EQ(static_cast<uint8_t>(proof[255]), static_cast<uint8_t>(255 * 7));
}

TEST(ProtocolLimits, SizeLimitStays) {
  // A valid bin of kMaxFrameBytes bytes inside a map is one frame too large.
  Message m = proto::make("X");
  m["d"] = proto::bin(std::string(proto::kMaxFrameBytes, 'x'));
  EXPECT_REFUSED(proto::encode(m), "exceeds the limit of 1048576");
}

// Random mutations of the farm's messages: whatever comes out of decode and
// the getters is a value or a ProtocolError, never another exception (nor a
// crash: the ASan build runs this too). The seed is fixed, so a failure
// reproduces.
TEST(ProtocolLimits, MutatedMessagesOnlyEverThrowProtocolError) {
  const std::vector<Message> seeds = farm_messages();
  std::vector<std::string> frames;
  for (const Message& m : seeds) frames.push_back(proto::encode(m));
  // Markers that change the structure most: containers, lengths, ext, 0xc1.
  const uint8_t interesting[] = {0x91, 0x81, 0xdc, 0xdd, 0xde, 0xdf, 0xc4, 0xc6, 0xd9, 0xdb,
                                 0xc7, 0xd4, 0xc1, 0xca, 0xcf, 0xff, 0x00, 0x7f, 0x80, 0xa0};
  const char* fields[] = {"v", "t", "job", "partition", "slot", "generation", "offset", "size", "zkey",
                          "wtns", "ok", "error", "proof", "worker", "pid", "d"};
  std::mt19937_64 rng(20240611);
  size_t accepted = 0, refused = 0;
  for (int iter = 0; iter < 30000; ++iter) {
    std::string f = frames[rng() % frames.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !f.empty(); ++e) {
      const size_t at = rng() % f.size();
      switch (rng() % 6) {
        case 0: f[at] = static_cast<char>(f[at] ^ (1u << (rng() % 8))); break;
        case 1: f[at] = static_cast<char>(interesting[rng() % sizeof(interesting)]); break;
        case 2: f.insert(f.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(rng())); break;
        case 3: f.erase(at, 1 + rng() % 4); break;
        case 4: f.insert(at, f.substr(at, 1 + rng() % 16)); break;
        default: f.resize(at); break;
      }
    }
    try {
      const Message m = proto::decode(f);
      ++accepted;
      (void)proto::type_of(m);
      (void)m.dump();  // well-formed UTF-8, so JSON output cannot throw
      for (const char* name : fields) {
        for (auto get : {+[](const Message& x, const char* n) { (void)proto::get_u64(x, n); },
                         +[](const Message& x, const char* n) { (void)proto::get_u32(x, n); },
                         +[](const Message& x, const char* n) { (void)proto::get_str(x, n); },
                         +[](const Message& x, const char* n) { (void)proto::get_bool(x, n); },
                         +[](const Message& x, const char* n) { (void)proto::get_bin(x, n); },
                         +[](const Message& x, const char* n) { (void)proto::find_str(x, n); }}) {
          try {
            get(m, name);
          } catch (const ProtocolError&) {
          }
        }
      }
      // What decodes encodes and decodes to the same bytes.
      EXPECT_EQ(proto::encode(proto::decode(proto::encode(m))), proto::encode(m));
    } catch (const ProtocolError&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << ": " << typeid(e).name() << ": " << e.what();
    }
  }
  // Both outcomes happen, or the loop tested little.
  EXPECT_GT(accepted, 1000u);
  EXPECT_GT(refused, 1000u);
}

}  // namespace
}  // namespace zkfarm
