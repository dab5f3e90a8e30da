// the ZeroMQ v1 publisher (see zmq-publisher.h)
#include "tools/serve/zmq-publisher.h"

#include <zmq.h>

#include <cerrno>
#include <stdexcept>

namespace mb::serve {

bool zmq_endpoint_is_local(const std::string & e) {
    if (e.rfind("ipc://", 0) == 0 || e.rfind("inproc://", 0) == 0) return true;
    if (e.rfind("tcp://", 0) != 0) return false;
    const std::string rest  = e.substr(6);
    const size_t      colon = rest.rfind(':');
    if (colon == std::string::npos) return false;
    const std::string host = rest.substr(0, colon);
    if (host == "localhost" || host == "[::1]") return true;
    // 127.a.b.c, digits and dots only
    if (host.rfind("127.", 0) != 0) return false;
    int dots = 0;
    for (char c : host) {
        if (c == '.') {
            ++dots;
        } else if (c < '0' || c > '9') {
            return false;
        }
    }
    return dots == 3;
}

zmq_publisher::zmq_publisher(const zmq_publisher_options & opt) {
    if (!opt.allow_remote && !zmq_endpoint_is_local(opt.endpoint)) {
        throw std::runtime_error("'" + opt.endpoint + "' is not a loopback endpoint (tcp://127.0.0.1:PORT); "
                                 "pass --zmq-allow-remote to publish to the network");
    }
    if (opt.hwm < 1 || opt.hwm > 100000) throw std::runtime_error("the ZMQ high-water mark must be 1..100000");
    ctx_  = zmq_ctx_new();
    sock_ = ctx_ ? zmq_socket(ctx_, ZMQ_XPUB) : nullptr;
    if (!sock_) {
        if (ctx_) zmq_ctx_term(ctx_);
        throw std::runtime_error(std::string("cannot create a ZMQ socket: ") + zmq_strerror(zmq_errno()));
    }
    const int hwm = opt.hwm, linger = opt.linger_ms, rcvhwm = 1000;
    zmq_setsockopt(sock_, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sock_, ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm);
    zmq_setsockopt(sock_, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(sock_, opt.endpoint.c_str()) != 0) {
        const std::string why = zmq_strerror(zmq_errno());
        zmq_close(sock_);
        zmq_ctx_term(ctx_);
        throw std::runtime_error("cannot bind '" + opt.endpoint + "': " + why);
    }
}

zmq_publisher::~zmq_publisher() {
    zmq_close(sock_);
    zmq_ctx_term(ctx_);
}

void zmq_publisher::drain(int timeout_ms) {
    // subscription messages: 1 (subscribe) or 0 (unsubscribe), then the topic
    zmq_pollitem_t item = {sock_, 0, ZMQ_POLLIN, 0};
    while (zmq_poll(&item, 1, timeout_ms) > 0 && (item.revents & ZMQ_POLLIN)) {
        unsigned char buf[256];
        const int     n = zmq_recv(sock_, buf, sizeof buf, ZMQ_DONTWAIT);
        if (n < 1) break;
        subscriptions_ += buf[0] == 1 ? 1 : buf[0] == 0 ? -1 : 0;
        if (subscriptions_ < 0) subscriptions_ = 0;
        timeout_ms = 0;
    }
}

bool zmq_publisher::send(const void * data, size_t size) {
    drain(0);
    if (zmq_send(sock_, data, size, ZMQ_DONTWAIT) == int(size)) {
        ++sent_;
        return true;
    }
    ++failed_;
    return false;
}

bool zmq_publisher::wait_subscriber(int timeout_ms) {
    // polls in steps so that the wait ends as soon as one arrives
    for (int waited = 0; subscriptions_ == 0 && waited < timeout_ms; waited += 10) drain(10);
    return subscriptions_ > 0;
}

std::string zmq_publisher::endpoint() const {
    char   buf[256];
    size_t len = sizeof buf;
    if (zmq_getsockopt(sock_, ZMQ_LAST_ENDPOINT, buf, &len) != 0) return "";
    return std::string(buf);
}

} // namespace mb::serve
