// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Whether the HTTP client of a request has gone. cpp-httplib (0.11) gives a handler the peer's
// address but not its socket, and a closed peer is noticed only when a write fails: a client that
// hangs up while its request waits or generates would keep its sequence to the end. The socket
// is found among the process's descriptors by its peer address, and polled for the peer's FIN.

#ifndef OPENCV_DNN_LLM_SERVER_CLIENT_CONNECTION_HPP
#define OPENCV_DNN_LLM_SERVER_CLIENT_CONNECTION_HPP

#include <string>

namespace llm_server {

class ClientConnection
{
public:
    //! The connection from remoteAddress:remotePort (as httplib's Request gives them).
    ClientConnection(const std::string& remoteAddress, int remotePort);

    //! True once the client closed (or reset) its side. False when its socket was not found.
    bool isClosed() const;

private:
    bool isOurPeer(int fd) const;

    std::string address_;
    int port_;
    int fd_ = -1;
};

} // namespace llm_server

#endif
