/*
 * conn.h - connection deadlines, so that slow clients cannot hold the
 * server's connections: a request's headers must be complete within the
 * header timeout of the connection's start or of its previous response,
 * its body within the body timeout of its headers. Past them a watchdog
 * thread shuts the socket down (libmicrohttpd then closes the connection).
 * libmicrohttpd's own idle timeout and its total and per-address caps
 * apply as well. The registry is keyed by the connection; an entry lives
 * from libmicrohttpd's "started" to its "closed" notification, which comes
 * before the socket is closed, so a shutdown never hits another
 * connection's reused descriptor. Thread-safe.
 */
#ifndef LECTOR_SERVE_CONN_H
#define LECTOR_SERVE_CONN_H

#include <stdint.h>

typedef struct serve_conns serve_conns;

/* Starts the watchdog; NULL when out of memory or a thread cannot start. */
serve_conns *serve_conns_start(int header_timeout_s, int body_timeout_s);
void serve_conns_stop(serve_conns *c);

void serve_conns_opened(serve_conns *c, const void *conn, int fd);
void serve_conns_closed(serve_conns *c, const void *conn);
/* The request's headers are in: its body's deadline starts. */
void serve_conns_headers_done(serve_conns *c, const void *conn);
/* The body is in: no deadline of ours until its response is sent. */
void serve_conns_body_done(serve_conns *c, const void *conn);
/* Its response is sent: the next request's headers' deadline starts. */
void serve_conns_request_done(serve_conns *c, const void *conn);

/* Connections open, and those closed for a timeout so far. */
void serve_conns_counts(serve_conns *c, int *open, uint64_t *header_timeouts, uint64_t *body_timeouts);

#endif
