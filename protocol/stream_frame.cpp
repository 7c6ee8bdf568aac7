#include "protocol/stream_frame.hpp"

#include <algorithm>

namespace zkfarm::protocol {

std::string frame_of(std::string_view body, size_t max_body) {
  if (body.size() > max_body)
    throw ProtocolError("a frame of " + std::to_string(body.size()) + " bytes passes the limit of " +
                        std::to_string(max_body));
  const auto n = static_cast<uint32_t>(body.size());
  std::string out;
  out.reserve(kFrameHeaderBytes + body.size());
  out.push_back(char(n >> 24));
  out.push_back(char(n >> 16));
  out.push_back(char(n >> 8));
  out.push_back(char(n));
  out.append(body);
  return out;
}

size_t FrameReader::room() const {
  if (too_large_) return 0;
  if (!header_done_) return kFrameHeaderBytes - buf_.size();
  return kFrameHeaderBytes + announced_ - buf_.size();
}

size_t FrameReader::feed(const char* data, size_t n) {
  size_t taken = 0;
  while (taken < n) {
    const size_t r = room();
    if (r == 0) break;
    const size_t k = std::min(r, n - taken);
    buf_.append(data + taken, k);
    taken += k;
    if (!header_done_ && buf_.size() == kFrameHeaderBytes) {
      const auto* b = reinterpret_cast<const unsigned char*>(buf_.data());
      announced_ = (uint64_t(b[0]) << 24) | (uint64_t(b[1]) << 16) | (uint64_t(b[2]) << 8) | uint64_t(b[3]);
      header_done_ = true;
      if (announced_ > max_body_) {
        too_large_ = true;  // refused from the header: nothing is allocated for the body
        break;
      }
    }
  }
  return taken;
}

bool FrameReader::has_frame() const {
  return header_done_ && !too_large_ && buf_.size() == kFrameHeaderBytes + announced_;
}

std::optional<std::string> FrameReader::take() {
  if (!has_frame()) return std::nullopt;
  std::string body = buf_.substr(kFrameHeaderBytes);
  buf_.clear();
  buf_.shrink_to_fit();  // an idle connection holds nothing
  announced_ = 0;
  header_done_ = false;
  return body;
}

}  // namespace zkfarm::protocol
