#include "http/address.hpp"

#include <stdexcept>

namespace zkfarm::http {

std::pair<std::string, uint16_t> split_address(const std::string& address, const std::string& what) {
  auto bad = [&] { return std::runtime_error(what + " must be HOST:PORT, got '" + address + "'"); };
  std::string host, port;
  if (!address.empty() && address[0] == '[') {
    auto close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') throw bad();
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    auto colon = address.rfind(':');
    if (colon == std::string::npos) throw bad();
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string::npos) throw bad();  // IPv6 needs brackets
  }
  if (host.empty() || port.empty() || port.size() > 5) throw bad();
  unsigned long p = 0;
  for (char c : port) {
    if (c < '0' || c > '9') throw bad();
    p = p * 10 + unsigned(c - '0');
  }
  if (p > 65535) throw bad();
  return {host, uint16_t(p)};
}

std::string endpoint_text(const boost::asio::ip::tcp::endpoint& ep) {
  auto a = ep.address();
  return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(ep.port());
}

bool is_loopback_host(const std::string& address) {
  std::string host = address;
  try {
    host = split_address(address, "listen address").first;
  } catch (const std::exception&) {
  }
  if (host == "localhost") return true;
  boost::system::error_code ec;
  auto a = boost::asio::ip::make_address(host, ec);
  return !ec && a.is_loopback();
}

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hexval = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
      if (h < 0 || l < 0) return std::nullopt;
      out += char(h * 16 + l);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string lower_first(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
  return s;
}

}  // namespace zkfarm::http
