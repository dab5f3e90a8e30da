// a ZeroMQ publisher for the protocol v1 stream (libzmq's C API). It binds an XPUB socket (a PUB
// that also sees subscriptions), loopback only unless allowed, sends single-part messages with
// ZMQ_DONTWAIT under a bounded send high-water mark: a slow, stalled or absent subscriber costs
// dropped messages, never a blocked caller
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mb::serve {

struct zmq_publisher_options {
    std::string endpoint     = "tcp://127.0.0.1:5556";   // tcp://HOST:PORT (PORT 0: any free), ipc://PATH, inproc://NAME
    int         hwm          = 100;                      // messages queued per subscriber (2 s at 50 Hz)
    bool        allow_remote = false;                    // bind a tcp host other than loopback
    int         linger_ms    = 0;                        // on close, time to deliver what is queued
};

// tcp://127.x.y.z:P, tcp://localhost:P, tcp://[::1]:P, ipc:// and inproc:// (the machine only)
bool zmq_endpoint_is_local(const std::string & endpoint);

class zmq_publisher {
public:
    // binds; throws std::runtime_error (not a local endpoint without allow_remote, bad endpoint,
    // address in use)
    explicit zmq_publisher(const zmq_publisher_options & opt);
    ~zmq_publisher();
    zmq_publisher(const zmq_publisher &) = delete;
    zmq_publisher & operator=(const zmq_publisher &) = delete;

    // one single-part message; false when it was dropped (a queue full or the socket busy)
    bool send(const void * data, size_t size);
    // waits up to timeout_ms for a first subscription; true when some subscriber is there
    bool wait_subscriber(int timeout_ms);
    // the bound endpoint (the port chosen when 0 was asked)
    std::string endpoint() const;

    uint64_t sent() const { return sent_; }
    uint64_t failed() const { return failed_; }

private:
    void *   ctx_  = nullptr;
    void *   sock_ = nullptr;
    int      subscriptions_ = 0;   // distinct subscriptions the XPUB reported
    uint64_t sent_ = 0, failed_ = 0;
    void     drain(int timeout_ms);
};

} // namespace mb::serve
