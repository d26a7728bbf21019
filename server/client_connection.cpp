// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "client_connection.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace llm_server {

ClientConnection::ClientConnection(const std::string& remoteAddress, int remotePort)
    : address_(remoteAddress), port_(remotePort)
{
    DIR* dir = opendir("/proc/self/fd");
    if (!dir)
        return;
    while (dirent* entry = readdir(dir))
    {
        char* end = nullptr;
        const long fd = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0')
            continue;
        struct stat st;
        if (fstat((int)fd, &st) == 0 && S_ISSOCK(st.st_mode) && isOurPeer((int)fd))
        {
            fd_ = (int)fd;
            break;
        }
    }
    closedir(dir);
}

bool ClientConnection::isOurPeer(int fd) const
{
    sockaddr_storage peer;
    socklen_t length = sizeof(peer);
    if (getpeername(fd, (sockaddr*)&peer, &length) != 0)
        return false;
    char text[INET6_ADDRSTRLEN] = {0};
    int port = -1;
    if (peer.ss_family == AF_INET)
    {
        const sockaddr_in* a = (const sockaddr_in*)&peer;
        inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
        port = ntohs(a->sin_port);
    }
    else if (peer.ss_family == AF_INET6)
    {
        const sockaddr_in6* a = (const sockaddr_in6*)&peer;
        inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
        port = ntohs(a->sin6_port);
    }
    return port == port_ && address_ == text;
}

bool ClientConnection::isClosed() const
{
    if (fd_ < 0)
        return false;
    // The descriptor may have been closed and reused for another connection: check the peer again.
    if (!isOurPeer(fd_))
        return true;
    pollfd p = {fd_, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

} // namespace llm_server
