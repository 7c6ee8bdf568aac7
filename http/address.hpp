#pragma once
// Listen addresses and the small text helpers both HTTP listeners share
// (zkfarmd's http_address, zkfarm-api's --listen): one parser, so that both
// accept and refuse the same spellings.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/ip/tcp.hpp>

namespace zkfarm::http {

/// "HOST:PORT" or "[V6]:PORT" → (host, port), checked: a port of 1-5 digits
/// up to 65535, brackets around an IPv6 host. Throws std::runtime_error
/// "WHAT must be HOST:PORT, got '…'".
std::pair<std::string, uint16_t> split_address(const std::string& address, const std::string& what = "http_address");

/// An endpoint as people write it: "127.0.0.1:17100", "[::1]:17100".
std::string endpoint_text(const boost::asio::ip::tcp::endpoint& ep);

/// True for 127.0.0.0/8, ::1 and "localhost" (a HOST:PORT or a bare host).
bool is_loopback_host(const std::string& address);

/// Percent-decodes a query component ('+' is a space). nullopt for a bad escape.
std::optional<std::string> percent_decode(std::string_view s);

/// A system message with its first letter in lower case, to follow a colon
/// in one of our lines ("cannot listen on …: address already in use").
std::string lower_first(std::string s);

}  // namespace zkfarm::http
