/*
 * The neighbour watch's sockets (watch_int.h): the address it publishes,
 * listening on every interface, connecting by host name or address within
 * a deadline, and closing so that the last message still arrives.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "rt/watch_int.h"

#include "common/clock.h"
#include "common/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * The address peers connect to: "host port probe-port ip ip ...".  The host
 * name comes
 * first (what a cluster's nodes know each other by); the interface addresses
 * follow for machines whose name does not resolve (containers, CI runners),
 * where a job would otherwise fail at start.
 */
void svp_rt_watch_format_addr(char *buf, size_t len, const char *host, unsigned port,
                              unsigned probe_port)
{
    struct ifaddrs *ifs, *ifa;
    char            ip[INET_ADDRSTRLEN];
    size_t          n;

    n = snprintf(buf, len, "%s %u %u", host, port, probe_port);
    if (getifaddrs(&ifs) != 0) {
        return;
    }
    for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == NULL) || (ifa->ifa_addr->sa_family != AF_INET) ||
            (inet_ntop(AF_INET, &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr, ip,
                       sizeof(ip)) == NULL) ||
            (n + strlen(ip) + 2 > len)) {
            continue;
        }
        n += snprintf(buf + n, len - n, " %s", ip);
    }
    freeifaddrs(ifs);
}

/* A listening socket on every interface; its port in *port_p; -1 if not. */
int svp_rt_watch_listen_any(unsigned *port_p)
{
    struct sockaddr_in6 sa;
    socklen_t           len = sizeof(sa);
    int                 fd, off = 0;

    /* one IPv6 socket accepting IPv4 too, on every interface: the peers know
     * this node by its host name, whatever address that resolves to */
    fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    memset(&sa, 0, sizeof(sa));
    sa.sin6_family = AF_INET6;
    sa.sin6_addr   = in6addr_any;
    if ((bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) ||
        (listen(fd, 64) != 0) ||
        (getsockname(fd, (struct sockaddr *)&sa, &len) != 0)) {
        close(fd);
        return -1;
    }
    *port_p = ntohs(sa.sin6_port);
    return fd;
}

/* Waits for fd to become ready for events, until `until`; 0 when ready. */
int svp_rt_watch_poll(int fd, short events, double until)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    double        left;
    int           rc;

    for (;;) {
        left = until - svp_clock_now();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        rc = poll(&pfd, 1, (int)(left * 1e3) + 1);
        if (rc > 0) {
            return 0;
        }
        if ((rc < 0) && (errno != EINTR)) {
            return -1;
        }
    }
}

/* Connects to host:port (name or numeric address); -1 if it cannot. */
static int svp_rt_watch_connect_one(const char *host, const char *port, double until)
{
    struct addrinfo hints, *res, *ai;
    int             fd  = -1, err;
    socklen_t       len = sizeof(err);

    memset(&hints, 0, sizeof(hints));
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        svp_debug("neighbour watch: cannot resolve '%s'", host);
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                    ai->ai_protocol);
        if (fd < 0) {
            continue;
        }
        if ((connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) ||
            ((errno == EINPROGRESS) &&
             (svp_rt_watch_poll(fd, POLLOUT, until) == 0) &&
             (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0) &&
             (err == 0))) {
            break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* Tries the host name, then each address, of a "host port probe-port ip
 * ..." string, at its port (probe 0) or its presence port (probe 1). */
int svp_rt_watch_connect_to(const char *addr, int probe, double until)
{
    char buf[1024], *save = NULL, *host, *port, *pport, *ip;
    int  fd;

    snprintf(buf, sizeof(buf), "%s", addr);
    host  = strtok_r(buf, " ", &save);
    port  = strtok_r(NULL, " ", &save);
    pport = strtok_r(NULL, " ", &save);
    if (probe) {
        port = pport;
    }
    if ((host == NULL) || (port == NULL) || (pport == NULL)) {
        svp_error("malformed neighbour watch address '%s'", addr);
        return -1;
    }
    fd = svp_rt_watch_connect_one(host, port, until);
    while ((fd < 0) && ((ip = strtok_r(NULL, " ", &save)) != NULL)) {
        fd = svp_rt_watch_connect_one(ip, port, until);
    }
    if ((fd < 0) && !probe) {
        svp_error("cannot connect to the neighbour watch at '%s'", addr);
    }
    return fd;
}

int svp_rt_watch_connect(const char *addr, double until)
{
    return svp_rt_watch_connect_to(addr, 0, until);
}

/*
 * Closes a connection after the last send, so that what was sent arrives:
 * a socket closed with unread bytes (the neighbour's heartbeats) makes the
 * kernel reset the connection and drop what it had not sent yet, and the
 * neighbour then read "connection reset" instead of the goodbye (3 of 30
 * runs of a four-rank ring).  So: end the sending side, read what is
 * there, then close.
 */
void svp_rt_watch_close(int fd)
{
    char    buf[256];
    ssize_t got;

    (void)shutdown(fd, SHUT_WR);
    do {
        got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    } while ((got > 0) || ((got < 0) && (errno == EINTR)));
    close(fd);
}
