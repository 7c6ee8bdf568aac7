// session.hpp's connection for HTTPS, over the server's TLS context
// (server_impl.hpp says why apart).
#include "http/session.hpp"

namespace zkfarm::http::core {

std::shared_ptr<Server::Impl::Conn> tls_session(Server::Impl& srv, boost::asio::ip::tcp::socket sock) {
  using Stream = boost::asio::ssl::stream<beast::tcp_stream>;
  return std::make_shared<Session<Stream>>(srv, Stream(beast::tcp_stream(std::move(sock)), *srv.tls));
}

}  // namespace zkfarm::http::core
