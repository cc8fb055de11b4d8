#define _GNU_SOURCE
#include "load_socket.h"

#include <dlfcn.h>
#include <libwebsockets.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <uv.h>

typedef struct ls_message {
    struct ls_message *next;
    size_t length;
    int binary;
    uint8_t bytes[]; /* LWS_PRE bytes of room, then the payload */
} ls_message;

enum ls_state { LS_IDLE, LS_CONNECTING, LS_OPEN, LS_CLOSING };

typedef struct ls_connection {
    struct lws *wsi;
    enum ls_state state;
    int index;
    int peer_close_code;
    ls_message *head, *tail;
    size_t queued_bytes;
    uint8_t *assembly;
    size_t assembled, assembly_capacity;
    int assembly_binary;
    const char *fail_cause;
} ls_connection;

struct ls_pool {
    /* libwebsockets runs on this libuv loop (epoll), so an idle connection costs nothing per wake-up. */
    uv_loop_t loop;
    /* Wakes the loop from another thread to stop it. */
    uv_async_t wake;
    struct lws_context *context;
    ls_limits limits;
    ls_handlers handlers;
    ls_connection *connections;
    lws_sorted_usec_list_t tick;
    atomic_int stopping;
};

/* Set on the loop thread while ls_connect opens a connection from a source address. */
static __thread int binding_source_address;

/* libwebsockets binds a client socket to its source address with port 0 before connecting,
   and Linux then picks the port at bind time, searching past every port bound so far: with
   thousands of connections each bind costs milliseconds of the kernel's time. The option
   IP_BIND_ADDRESS_NO_PORT leaves the choice to connect(), which only needs the whole address
   pair to be unique. The dynamic linker takes this bind over libc's for libwebsockets too; it
   adds the option only to the binds ls_connect causes, and otherwise is libc's bind. */
int bind(int fd, const struct sockaddr *address, socklen_t length) {
    static int (*libc_bind)(int, const struct sockaddr *, socklen_t);
    if (!libc_bind) libc_bind = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
    if (binding_source_address && address && address->sa_family == AF_INET && ((const struct sockaddr_in *)address)->sin_port == 0) {
        int on = 1;
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);
    }
    return libc_bind(fd, address, length);
}

static void free_queue(ls_connection *connection) {
    ls_message *message = connection->head;
    while (message) {
        ls_message *next = message->next;
        free(message);
        message = next;
    }
    connection->head = connection->tail = NULL;
    connection->queued_bytes = 0;
    free(connection->assembly);
    connection->assembly = NULL;
    connection->assembled = connection->assembly_capacity = 0;
}

static void finish(ls_pool *pool, ls_connection *connection, const char *cause) {
    if (connection->state == LS_IDLE) return;
    int code = connection->peer_close_code;
    connection->state = LS_IDLE;
    connection->wsi = NULL;
    connection->peer_close_code = 0;
    connection->fail_cause = NULL;
    free_queue(connection);
    pool->handlers.closed(pool->handlers.context, connection->index, code, cause);
}

/* Appends a fragment; answers 0, or -1 when the message would pass the limit. */
static int assemble(ls_pool *pool, ls_connection *connection, const uint8_t *data, size_t length) {
    size_t needed = connection->assembled + length;
    if (needed > pool->limits.max_message_bytes) return -1;
    if (needed > connection->assembly_capacity) {
        size_t capacity = connection->assembly_capacity ? connection->assembly_capacity : 4096;
        while (capacity < needed) capacity *= 2;
        if (capacity > pool->limits.max_message_bytes) capacity = pool->limits.max_message_bytes;
        uint8_t *grown = realloc(connection->assembly, capacity);
        if (!grown) return -1;
        connection->assembly = grown;
        connection->assembly_capacity = capacity;
    }
    memcpy(connection->assembly + connection->assembled, data, length);
    connection->assembled = needed;
    return 0;
}

static int receive(ls_pool *pool, ls_connection *connection, struct lws *wsi, const uint8_t *data, size_t length) {
    int first = lws_is_first_fragment(wsi), final = lws_is_final_fragment(wsi);
    if (first && final && connection->assembled == 0) {
        pool->handlers.received(pool->handlers.context, connection->index, data, length, lws_frame_is_binary(wsi));
        return 0;
    }
    if (first) {
        connection->assembled = 0;
        connection->assembly_binary = lws_frame_is_binary(wsi);
    }
    if (assemble(pool, connection, data, length) != 0) {
        connection->fail_cause = "message too large";
        return -1;
    }
    if (final) {
        pool->handlers.received(pool->handlers.context, connection->index, connection->assembly, connection->assembled,
                                connection->assembly_binary);
        connection->assembled = 0;
    }
    return 0;
}

static int write_queued(ls_connection *connection, struct lws *wsi) {
    while (connection->head) {
        ls_message *message = connection->head;
        enum lws_write_protocol kind = message->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT;
        int written = lws_write(wsi, message->bytes + LWS_PRE, message->length, kind);
        if (written < (int)message->length) {
            connection->fail_cause = "write failed";
            return -1;
        }
        connection->head = message->next;
        if (!connection->head) connection->tail = NULL;
        connection->queued_bytes -= message->length;
        free(message);
        if (connection->head && lws_send_pipe_choked(wsi)) {
            lws_callback_on_writable(wsi);
            break;
        }
    }
    if (!connection->head && connection->state == LS_CLOSING) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
        connection->fail_cause = "closed by client";
        return -1;
    }
    return 0;
}

/* The slot `wsi` serves, or NULL: a slot is reused once its connection finishes, and a
   connection libwebsockets has not yet freed may still name it. */
static ls_connection *slot_of(struct lws *wsi) {
    ls_connection *connection = lws_get_opaque_user_data(wsi);
    return connection && connection->wsi == wsi ? connection : NULL;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t length) {
    struct lws_context *context = lws_get_context(wsi);
    ls_pool *pool = context ? lws_context_user(context) : NULL;
    ls_connection *connection = slot_of(wsi);
    (void)user;
    if (!pool) return 0;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        if (!connection) return -1;
        connection->state = LS_OPEN;
        pool->handlers.opened(pool->handlers.context, connection->index);
        if (connection->head) lws_callback_on_writable(wsi);
        break;
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
        if (connection) {
            char cause[128];
            snprintf(cause, sizeof cause, "connect failed: %s", in ? (const char *)in : "unknown");
            finish(pool, connection, cause);
        }
        break;
    case LWS_CALLBACK_CLIENT_RECEIVE:
        if (connection && connection->state != LS_IDLE) return receive(pool, connection, wsi, in, length);
        break;
    case LWS_CALLBACK_CLIENT_WRITEABLE:
        if (connection && connection->state != LS_IDLE) return write_queued(connection, wsi);
        break;
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
        if (connection && length >= 2) {
            const uint8_t *bytes = in;
            connection->peer_close_code = (bytes[0] << 8) | bytes[1];
        }
        if (connection) connection->fail_cause = "closed by server";
        break;
    case LWS_CALLBACK_CLIENT_CLOSED:
        if (connection) finish(pool, connection, connection->fail_cause ? connection->fail_cause : "connection lost");
        break;
    case LWS_CALLBACK_WSI_DESTROY:
        /* The last word on every connection. One lost while the upgrade's answer was awaited is
           still an HTTP connection to libwebsockets: it is reported neither as a connection error
           nor as a WebSocket close, only here, and its slot would otherwise wait for good. */
        if (connection) finish(pool, connection, connection->state == LS_CONNECTING ? "connection lost during handshake" : "connection lost");
        break;
    default:
        break;
    }
    return 0;
}

static const struct lws_protocols protocols[] = {
    {"gondola-load", callback, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* permessage-deflate as libwebsockets offers it (RFC 7692, its zlib extension). Its client
   loops forever on an uncompressed message of a compressed connection (warmcat/libwebsockets
   issue 2794, open in 4.1 to 4.3): the server must compress every message for it. */
static const struct lws_extension deflate_extensions[] = {
    {"permessage-deflate", lws_extension_callback_pm_deflate, "permessage-deflate; client_max_window_bits"},
    {NULL, NULL, NULL},
};

/* No libwebsockets-level idle checks: the protocols spoken have their own pings, and each
   check's timer is rescheduled on every message received, an insertion into one sorted list
   of every connection's timers. */
static const lws_retry_bo_t no_idle_checks = {NULL, 0, 0, 0, 0, 0};

static void on_wake(uv_async_t *handle) {
    ls_pool *pool = handle->data;
    if (atomic_load(&pool->stopping)) uv_stop(&pool->loop);
}

static void on_tick(lws_sorted_usec_list_t *sul) {
    ls_pool *pool = lws_container_of(sul, ls_pool, tick);
    if (atomic_load(&pool->stopping)) return;
    pool->handlers.tick(pool->handlers.context);
    lws_sul_schedule(pool->context, 0, &pool->tick, on_tick, pool->limits.tick_microseconds);
}

ls_pool *ls_pool_create(ls_limits limits, ls_handlers handlers, char *error, size_t error_capacity) {
    if (limits.max_connections < 1 || limits.tick_microseconds < 100 || limits.max_message_bytes < 1024 ||
        limits.max_queued_bytes < 1024) {
        snprintf(error, error_capacity, "limits out of range");
        return NULL;
    }
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY &&
        files.rlim_cur < (rlim_t)limits.max_connections + 64) {
        snprintf(error, error_capacity, "the open-file limit (%llu) is below the %d connections and 64 more descriptors this run needs",
                 (unsigned long long)files.rlim_cur, limits.max_connections);
        return NULL;
    }
    ls_pool *pool = calloc(1, sizeof *pool);
    ls_connection *connections = calloc((size_t)limits.max_connections, sizeof *connections);
    if (!pool || !connections) {
        free(pool);
        free(connections);
        snprintf(error, error_capacity, "out of memory for %d connections", limits.max_connections);
        return NULL;
    }
    for (int index = 0; index < limits.max_connections; index++) connections[index].index = index;
    pool->limits = limits;
    pool->handlers = handlers;
    pool->connections = connections;
    atomic_init(&pool->stopping, 0);

    if (uv_loop_init(&pool->loop) != 0) {
        free(connections);
        free(pool);
        snprintf(error, error_capacity, "libuv could not create its loop");
        return NULL;
    }
    uv_async_init(&pool->loop, &pool->wake, on_wake);
    pool->wake.data = pool;

    lws_set_log_level(LLL_ERR, NULL);
    void *foreign_loops[1] = {&pool->loop};
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.protocols = protocols;
    if (limits.offer_compression) info.extensions = deflate_extensions;
    info.user = pool;
    info.options = LWS_SERVER_OPTION_LIBUV;
    info.foreign_loops = foreign_loops;
    /* No fd_limit_per_thread: below the open-file limit it would make libwebsockets find a
       socket's connection by scanning its whole table instead of indexing it by descriptor. */
    info.count_threads = 1;
    info.retry_and_idle_policy = &no_idle_checks;
    pool->context = lws_create_context(&info);
    if (!pool->context) {
        uv_close((uv_handle_t *)&pool->wake, NULL);
        uv_run(&pool->loop, UV_RUN_DEFAULT);
        uv_loop_close(&pool->loop);
        free(connections);
        free(pool);
        snprintf(error, error_capacity, "libwebsockets could not create its context for %d connections", limits.max_connections);
        return NULL;
    }
    return pool;
}

void ls_pool_run(ls_pool *pool) {
    lws_sul_schedule(pool->context, 0, &pool->tick, on_tick, pool->limits.tick_microseconds);
    if (!atomic_load(&pool->stopping)) uv_run(&pool->loop, UV_RUN_DEFAULT);
    lws_sul_cancel(&pool->tick);
    /* Close every connection, then let libuv finish closing the handles. */
    uv_close((uv_handle_t *)&pool->wake, NULL);
    lws_context_destroy(pool->context);
    pool->context = NULL;
    uv_run(&pool->loop, UV_RUN_DEFAULT);
    uv_loop_close(&pool->loop);
}

void ls_pool_stop(ls_pool *pool) {
    atomic_store(&pool->stopping, 1);
    uv_async_send(&pool->wake);
}

void ls_pool_destroy(ls_pool *pool) {
    if (pool->context) {
        /* The loop never ran: close everything here. */
        uv_close((uv_handle_t *)&pool->wake, NULL);
        lws_context_destroy(pool->context);
        uv_run(&pool->loop, UV_RUN_DEFAULT);
        uv_loop_close(&pool->loop);
    }
    for (int index = 0; index < pool->limits.max_connections; index++) free_queue(&pool->connections[index]);
    free(pool->connections);
    free(pool);
}

int ls_connect(ls_pool *pool, int connection, const char *host, int port, const char *path, const char *subprotocol,
               const char *source_address) {
    if (connection < 0 || connection >= pool->limits.max_connections) return -1;
    ls_connection *slot = &pool->connections[connection];
    if (slot->state != LS_IDLE) return -1;
    struct lws_client_connect_info info;
    memset(&info, 0, sizeof info);
    info.context = pool->context;
    info.address = host;
    info.port = port;
    info.path = path;
    info.host = host;
    /* No Origin header: a phone's SDK sends none, and a browser's would name a page. */
    info.origin = NULL;
    info.protocol = subprotocol;
    /* libwebsockets binds the socket to this address (port 0) before connect(). */
    info.iface = source_address;
    info.retry_and_idle_policy = &no_idle_checks;
    info.local_protocol_name = "gondola-load";
    info.opaque_user_data = slot;
    info.pwsi = &slot->wsi;
    slot->state = LS_CONNECTING;
    binding_source_address = source_address != NULL;
    struct lws *started = lws_client_connect_via_info(&info);
    binding_source_address = 0;
    if (!started) {
        /* The error callback has already run when lws gives up at once. */
        if (slot->state == LS_CONNECTING) finish(pool, slot, "connect failed: could not start");
    }
    return 0;
}

int ls_send(ls_pool *pool, int connection, const uint8_t *data, size_t length, int binary) {
    if (connection < 0 || connection >= pool->limits.max_connections) return -1;
    ls_connection *slot = &pool->connections[connection];
    if (slot->state != LS_OPEN) return -1;
    if (slot->queued_bytes + length > pool->limits.max_queued_bytes) return -2;
    ls_message *message = malloc(sizeof *message + LWS_PRE + length);
    if (!message) return -2;
    message->next = NULL;
    message->length = length;
    message->binary = binary;
    memcpy(message->bytes + LWS_PRE, data, length);
    if (slot->tail) slot->tail->next = message; else slot->head = message;
    slot->tail = message;
    slot->queued_bytes += length;
    lws_callback_on_writable(slot->wsi);
    return 0;
}

/* The kernel's tcp_info goes on past glibc's copy of it (the one libwebsockets' headers
   bring in, which ends at tcpi_total_retrans); the received-bytes counter follows. */
struct tcp_info_with_bytes {
    struct tcp_info glibc;
    uint64_t pacing_rate, max_pacing_rate, bytes_acked, bytes_received;
};

uint64_t ls_received_bytes(ls_pool *pool, int connection) {
    if (connection < 0 || connection >= pool->limits.max_connections) return 0;
    ls_connection *slot = &pool->connections[connection];
    if (slot->state != LS_OPEN && slot->state != LS_CLOSING) return 0;
    struct tcp_info_with_bytes info;
    socklen_t length = sizeof info;
    memset(&info, 0, sizeof info);
    if (getsockopt(lws_get_socket_fd(slot->wsi), IPPROTO_TCP, TCP_INFO, &info, &length) != 0 || length < sizeof info) return 0;
    return info.bytes_received;
}

void ls_abandon_handshake(ls_pool *pool, int connection, const char *cause) {
    if (connection < 0 || connection >= pool->limits.max_connections) return;
    ls_connection *slot = &pool->connections[connection];
    if (slot->state != LS_CONNECTING) return;
    struct lws *wsi = slot->wsi;
    if (wsi) {
        /* Detached first: what libwebsockets reports of it later concerns no slot. */
        lws_set_opaque_user_data(wsi, NULL);
        /* Now: the slot's connection is still libwebsockets' own (WSI_DESTROY ends the slot of
           any it frees), so it can be killed here rather than when a timer of its own fires. */
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
    }
    finish(pool, slot, cause);
}

void ls_close(ls_pool *pool, int connection) {
    if (connection < 0 || connection >= pool->limits.max_connections) return;
    ls_connection *slot = &pool->connections[connection];
    if (slot->state != LS_OPEN) return;
    slot->state = LS_CLOSING;
    lws_callback_on_writable(slot->wsi);
}
