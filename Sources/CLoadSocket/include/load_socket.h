// A pool of WebSocket client connections driven by one libwebsockets event loop
// thread. The load generator's Swift code keeps the scenario logic; this file only
// opens connections, queues outgoing messages, assembles incoming ones and reports
// what happened through the handlers, always on the loop thread.
#ifndef LOAD_SOCKET_H
#define LOAD_SOCKET_H

#include <stddef.h>
#include <stdint.h>

typedef struct ls_pool ls_pool;

/// Called on the loop thread. `connection` is the index given to ls_connect.
typedef struct ls_handlers {
    void *context;
    /// The WebSocket handshake completed.
    void (*opened)(void *context, int connection);
    /// One whole message (fragments joined).
    void (*received)(void *context, int connection, const uint8_t *data, size_t length, int binary);
    /// The connection ended or never opened. `code` is the close code the peer
    /// sent (0 when none); `cause` says why in a few words.
    void (*closed)(void *context, int connection, int code, const char *cause);
    /// Every `tick_microseconds` while the loop runs.
    void (*tick)(void *context);
} ls_handlers;

/// Bounds of a pool; every buffer it keeps is limited by one of these.
typedef struct ls_limits {
    /// Connection indexes run from 0 to max_connections - 1.
    int max_connections;
    /// Period of the tick handler.
    int tick_microseconds;
    /// A message larger than this (after joining fragments) closes its connection
    /// with cause "message too large".
    size_t max_message_bytes;
    /// Bytes a connection may have queued for sending; ls_send refuses beyond.
    size_t max_queued_bytes;
    /// Non-zero: every connection offers permessage-deflate (libwebsockets' zlib
    /// extension); the handlers then see inflated messages. The server must then
    /// compress every message: libwebsockets' client spins on an uncompressed one.
    int offer_compression;
} ls_limits;

/// Creates a pool, or answers NULL with the reason written to `error`.
ls_pool *ls_pool_create(ls_limits limits, ls_handlers handlers, char *error, size_t error_capacity);
/// Runs the loop (libwebsockets on a libuv loop) on the calling thread until ls_pool_stop;
/// closes every connection on the way out. Call at most once.
void ls_pool_run(ls_pool *pool);
/// Asks the loop to end. Safe from any thread.
void ls_pool_stop(ls_pool *pool);
/// Frees a pool whose loop has returned.
void ls_pool_destroy(ls_pool *pool);

/// Loop thread only. Opens connection `connection` to ws://host:port/path, asking for
/// `subprotocol` when it is not NULL, from the local IPv4 address `source_address` when it
/// is not NULL (its socket is bound to that address before connecting, so each source
/// address has its own range of ephemeral ports). Answers 0, or -1 when the index is out
/// of range or still in use.
int ls_connect(ls_pool *pool, int connection, const char *host, int port, const char *path, const char *subprotocol,
               const char *source_address);
/// Loop thread only. Queues one message (copied). Answers 0, -1 when the connection
/// is not open, -2 when its queue would pass max_queued_bytes (nothing is queued).
int ls_send(ls_pool *pool, int connection, const uint8_t *data, size_t length, int binary);
/// Loop thread only. Closes an open connection with close code 1000 after what is queued.
void ls_close(ls_pool *pool, int connection);
/// Loop thread only. Gives up a connection whose handshake is still under way: libwebsockets'
/// connection, if it still has one, is detached from the slot and killed, and the slot ends at
/// once (its closed handler runs with `cause`), whether or not libwebsockets calls back.
void ls_abandon_handshake(ls_pool *pool, int connection, const char *cause);
/// Loop thread only. Bytes the kernel has received on the connection's TCP socket
/// (TCP_INFO's tcpi_bytes_received: everything on the wire after the TCP/IP headers,
/// so WebSocket framing and compression count as they travel); 0 when it is not open.
uint64_t ls_received_bytes(ls_pool *pool, int connection);

#endif
