// session.hpp's connection for plain HTTP (server_impl.hpp says why apart).
#include "http/session.hpp"

namespace zkfarm::http::core {

std::shared_ptr<Server::Impl::Conn> plain_session(Server::Impl& srv, boost::asio::ip::tcp::socket sock) {
  return std::make_shared<Session<beast::tcp_stream>>(srv, beast::tcp_stream(std::move(sock)));
}

}  // namespace zkfarm::http::core
