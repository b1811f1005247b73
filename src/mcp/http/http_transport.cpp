// Streamable HTTP transport (MCP 2025-03-26 ... 2025-11-25, plus stateless
// 2026-07-28 requests) on cpp-httplib: one endpoint /mcp taking POST, GET
// and DELETE. See docs/mcp.md for the status codes.
#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <thread>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "base/random_id.h"
#include "mcp/transport.h"
#include "pycompat/text.h"

namespace jarvis::mcp {

namespace {

constexpr const char* kEndpoint = "/mcp";

std::string random_session_id() {
  return random_hex(16);
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 5 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Nanoseconds on the steady clock: orders session uses (LRU) without ties.
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Milliseconds on the steady clock (stored in atomics).
int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The whole value of a header the request must carry at most once; nullopt
// when it is repeated. cpp-httplib 0.11 percent-decodes header values as it
// reads them and keeps no raw copy, and get_header_value() hands them out
// through c_str(), which stops at a decoded NUL: "localhost%00.evil.com"
// would read as "localhost". The stored std::string keeps every byte.
std::optional<std::string> single_header(const httplib::Request& req, const char* name) {
  auto [first, last] = req.headers.equal_range(name);
  if (first == last) return std::string();
  if (std::next(first) != last) return std::nullopt;
  return first->second;
}

bool local_origin(const std::string& origin) {
  static const std::regex pattern(R"(^https?://(localhost|127\.0\.0\.1|\[::1\])(:\d+)?/?$)",
                                  std::regex::icase);
  return origin.size() < 256 && std::regex_match(origin, pattern);
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, int code, const std::string& message,
                const json& id = nullptr, const json& data = nullptr) {
  send_json(res, status, make_error(id, code, message, data));
}

// A message as one JSON document (a plain-JSON reply's body).
std::string json_text(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_event(const json& message) {
  return "event: message\ndata: " + message.dump(-1, ' ', false, json::error_handler_t::replace) +
         "\n\n";
}

// The HTTP status that goes with a JSON-RPC error of a stateless request.
int modern_status(const json& reply) {
  if (!reply.contains("error")) return 200;
  int code = reply["error"].value("code", 0);
  if (code == rpc::kMethodNotFound) return 404;
  if (code == rpc::kInvalidParams && reply.value("id", json()).is_null()) return 400;
  if (code == rpc::kUnsupportedProtocolVersion || code == rpc::kHeaderMismatch) return 400;
  if (code == rpc::kInvalidParams &&
      reply["error"].value("message", std::string()).find("_meta") != std::string::npos)
    return 400;
  return 200;
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]";
}

bool is_local_host_header(const std::string& header) {
  // Only the bytes a loopback host and port are spelled with: a NUL, a
  // control character or a '%' (an escape that was, or would be, decoded)
  // never reaches the name comparison below.
  std::string host = pycompat::ascii_lower(trim(header));
  if (!std::all_of(host.begin(), host.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == ':' ||
               c == '[' || c == ']';
      }))
    return false;
  std::string name = host, port;
  if (!host.empty() && host[0] == '[') {
    size_t close = host.find(']');
    if (close == std::string::npos) return false;
    name = host.substr(0, close + 1);
    std::string rest = host.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':' || !all_digits(std::string_view(rest).substr(1))) return false;
    }
  } else if (size_t colon = host.find(':'); colon != std::string::npos) {
    name = host.substr(0, colon);
    if (!all_digits(std::string_view(host).substr(colon + 1))) return false;
  }
  return name == "localhost" || name == "127.0.0.1" || name == "[::1]";
}

std::string connection_cap_address(const std::string& numeric_host) {
  constexpr const char* kLoopback = "loopback";
  in_addr v4{};
  if (::inet_pton(AF_INET, numeric_host.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127 ? kLoopback : numeric_host;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, numeric_host.c_str(), &v6) != 1) return numeric_host;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return kLoopback;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {  // ::ffff:a.b.c.d is the IPv4 client a.b.c.d
    const uint8_t* bytes = v6.s6_addr + 12;
    if (bytes[0] == 127) return kLoopback;
    return fmt::format("{}.{}.{}.{}", bytes[0], bytes[1], bytes[2], bytes[3]);
  }
  return numeric_host;
}

bool is_json_media_type(const std::string& content_type) {
  return pycompat::ascii_lower(trim(content_type.substr(0, content_type.find(';')))) ==
         "application/json";
}

bool bearer_token_matches(const std::string& authorization, const std::string& token) {
  std::string value = trim(authorization);
  size_t space = value.find_first_of(" \t");
  if (space == std::string::npos || pycompat::ascii_lower(value.substr(0, space)) != "bearer")
    return false;
  std::string given = trim(value.substr(space + 1));
  // Constant time in the token's content: every byte is compared whatever
  // the first mismatch, so response timing reveals no prefix.
  unsigned char diff = given.size() == token.size() ? 0 : 1;
  for (size_t k = 0; k < token.size(); ++k)
    diff |= static_cast<unsigned char>(token[k] ^ (k < given.size() ? given[k] : 0));
  return diff == 0 && !token.empty();
}

namespace {

// Watches the accepted connections of the listening port (cpp-httplib does
// not expose them): from /proc/self/fd, each socket whose local port is ours.
// A connection that has not delivered a whole request within the deadline
// (slow headers or body, one byte a second) is shut down, which frees its
// worker; when one address holds more connections than its cap, its oldest
// idle ones are shut down. A request being handled (a long tool call, a GET
// stream) is never touched.
class ConnectionWatch {
 public:
  void set_port(int port) { port_ = port; }
  // The request of this peer ("addr:port") is being handled / has been answered.
  void busy(const std::string& peer, bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (on) {
      busy_.insert(peer);
    } else {
      busy_.erase(peer);
      restarted_[peer] = now_ms();  // a keep-alive connection starts its next request
    }
  }
  // One pass: returns how many connections were shut down.
  size_t sweep(int64_t deadline_ms, size_t per_ip_cap) {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t now = now_ms();
    std::map<std::string, std::vector<Conn>> by_ip;
    std::map<std::string, int64_t> present;
    for (Conn c : list_connections()) {
      auto first = first_seen_.find(c.peer);
      present[c.peer] = first == first_seen_.end() ? now : first->second;
      c.since = present[c.peer];
      if (auto r = restarted_.find(c.peer); r != restarted_.end())
        c.since = std::max(c.since, r->second);
      c.busy = busy_.count(c.peer) > 0;
      by_ip[c.ip].push_back(c);
    }
    first_seen_ = std::move(present);
    // Connections that vanished mid-request never reach the logger: forget them here.
    std::erase_if(restarted_, [&](const auto& r) { return !first_seen_.count(r.first); });
    std::erase_if(busy_, [&](const std::string& peer) { return !first_seen_.count(peer); });
    size_t killed = 0;
    for (auto& [ip, conns] : by_ip) {
      std::sort(conns.begin(), conns.end(),
                [](const Conn& a, const Conn& b) { return a.since < b.since; });
      size_t over = conns.size() > per_ip_cap ? conns.size() - per_ip_cap : 0;
      for (const Conn& c : conns) {
        if (c.busy || (now - c.since <= deadline_ms && over == 0)) continue;
        if (over > 0) --over;  // the oldest idle connections make room first
        ::shutdown(c.fd, SHUT_RDWR);
        first_seen_.erase(c.peer);
        ++killed;
      }
    }
    return killed;
  }

 private:
  struct Conn {
    int fd = -1;
    std::string ip;  // the address the cap counts (connection_cap_address)
    std::string peer;
    int64_t since = 0;
    bool busy = false;
  };

  static bool numeric(const sockaddr_storage& addr, socklen_t len, std::string& host,
                      std::string& port) {
    char h[NI_MAXHOST], p[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, h, sizeof h, p, sizeof p,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
      return false;
    host = h;
    port = p;
    return true;
  }

  std::vector<Conn> list_connections() const {
    std::vector<Conn> out;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      int fd = std::atoi(it->path().filename().c_str());
      sockaddr_storage local{}, peer{};
      socklen_t llen = sizeof local, plen = sizeof peer;
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0) continue;
      if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) continue;
      std::string lhost, lport, phost, pport;
      if (!numeric(local, llen, lhost, lport) || !numeric(peer, plen, phost, pport)) continue;
      if (lport != std::to_string(port_)) continue;
      out.push_back({fd, connection_cap_address(phost), phost + ":" + pport});
    }
    return out;
  }

  int port_ = 0;
  std::mutex mutex_;
  std::set<std::string> busy_;
  std::map<std::string, int64_t> first_seen_, restarted_;
};

// cpp-httplib with the listen backlog raised to fit the workers (its own is 5).
class BackloggedServer : public httplib::Server {
 public:
  void raise_backlog(int backlog) {
    socket_t sock = svr_sock_;
    if (sock != INVALID_SOCKET) ::listen(sock, backlog);  // Linux: a second listen() resizes it
  }
};

}  // namespace

struct HttpServer::Impl {
  struct SessionSlot {
    std::shared_ptr<Session> session;
    std::atomic<bool> closed{false};
    std::atomic<bool> get_open{false};
    std::atomic<int64_t> last_used{now_ns()};  // steady clock, ns
    std::mutex wake_mutex;                     // GET stream sleeps on wake until closed or stopping
    std::condition_variable wake;
    void close() {
      std::lock_guard<std::mutex> lock(wake_mutex);
      closed = true;
      wake.notify_all();
    }
  };

  Server& server;
  HttpOptions options;
  BackloggedServer http;
  int bound_port = 0;
  size_t threads = 0;
  size_t max_get_streams = 0;
  size_t per_ip_cap = 0;
  std::atomic<bool> stopping{false};
  std::atomic<size_t> get_streams{0};
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<SessionSlot>> sessions;
  ConnectionWatch watch;
  std::mutex watchdog_mutex;
  std::condition_variable watchdog_wake;
  std::thread watchdog;

  Impl(Server& s, HttpOptions o) : server(s), options(std::move(o)) {
    if (!is_loopback_host(options.host) && options.token.empty())
      throw std::runtime_error(
          "refusing to listen on a non-loopback address without a bearer token "
          "(--token or JARVIS_TOKEN)");
    threads = std::max<size_t>(4, options.threads);
    // GET streams hold a worker each: leave at least half for POSTs.
    max_get_streams = std::max<size_t>(1, std::min(options.max_get_streams, threads / 2));
    per_ip_cap = options.max_connections_per_ip > 0
                     ? std::min(options.max_connections_per_ip, threads - 1)
                     : std::max<size_t>(1, threads * 3 / 4);
    // Long calls (tool calls, GET streams) may hold all but an eighth of the
    // threads (at least one), and fewer than one address's connection cap:
    // every local process is one address, and its connections past the cap
    // are shut down when idle (a new client's, waiting for a thread, among
    // them). The rest stay free for initialize, ping, tools/list and the
    // quick tools, however many sessions one client opens (issue 74 point 4:
    // 4 sessions x 2 queries took all 8 threads).
    server.set_long_call_limit(
        std::max<size_t>(1, std::min(threads - std::max<size_t>(1, threads / 8), per_ip_cap - 1)));
    size_t pool = threads;
    http.new_task_queue = [pool] { return new httplib::ThreadPool(pool); };
    // The raw body cap; the decoded body is capped while it is read (post()).
    http.set_payload_max_length(server.options().max_message_bytes);
    http.set_keep_alive_timeout(options.idle_keepalive_s);
    http.set_read_timeout(options.io_timeout_s);
    http.set_write_timeout(options.io_timeout_s);
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      watch.busy(peer_of(req), true);
      return guard(req, res) ? httplib::Server::HandlerResponse::Unhandled
                             : httplib::Server::HandlerResponse::Handled;
    });
    // Called once the response is written: the connection waits for its next request.
    http.set_logger([this](const httplib::Request& req, const httplib::Response&) {
      watch.busy(peer_of(req), false);
    });
    http.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
          std::string what = "unknown error";
          try {
            std::rethrow_exception(error);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          send_error(res, 500, rpc::kInternalError, "Internal error: " + what);
        });
    http.Post(kEndpoint, [this](const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) { post(req, res, reader); });
    http.Get(kEndpoint,
             [this](const httplib::Request& req, httplib::Response& res) { get(req, res); });
    http.Delete(kEndpoint,
                [this](const httplib::Request& req, httplib::Response& res) { del(req, res); });
  }

  ~Impl() { stop_watchdog(); }

  static std::string peer_of(const httplib::Request& req) {
    return req.remote_addr + ":" + std::to_string(req.remote_port);
  }

  void start_watchdog() {
    watch.set_port(bound_port);
    watchdog = std::thread([this] {
      std::unique_lock<std::mutex> lock(watchdog_mutex);
      while (!stopping) {
        watchdog_wake.wait_for(lock, std::chrono::milliseconds(200));
        if (stopping) break;
        watch.sweep(int64_t{options.request_timeout_s} * 1000, per_ip_cap);
        expire_sessions();
      }
    });
  }

  void stop_watchdog() {
    {
      std::lock_guard<std::mutex> lock(watchdog_mutex);
      stopping = true;
      watchdog_wake.notify_all();
    }
    if (watchdog.joinable()) watchdog.join();
  }

  // Origin / Host / token checks for every request. False = answered.
  // Origin and Host are read whole (single_header), and refused when repeated.
  bool guard(const httplib::Request& req, httplib::Response& res) {
    std::optional<std::string> origin = single_header(req, "Origin");
    if (!origin || !origin->empty()) {
      bool allowed =
          origin && (local_origin(*origin) ||
                     std::find(options.allowed_origins.begin(), options.allowed_origins.end(),
                               *origin) != options.allowed_origins.end());
      if (!allowed) {
        send_error(res, 403, rpc::kInvalidRequest, "Forbidden: Origin is not allowed");
        return false;
      }
    }
    std::optional<std::string> host = single_header(req, "Host");
    if (is_loopback_host(options.host) && !(host && is_local_host_header(*host))) {
      send_error(res, 403, rpc::kInvalidRequest,
                 "Forbidden: Host header must name localhost, 127.0.0.1 or [::1]");
      return false;
    }
    if (!options.token.empty() &&
        !bearer_token_matches(req.get_header_value("Authorization"), options.token)) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401, rpc::kInvalidRequest, "Unauthorized: a valid bearer token is required");
      return false;
    }
    return true;
  }

  bool idle(const SessionSlot& slot) const {
    return !slot.get_open && slot.session->in_flight() == 0;
  }

  // Forgets sessions idle for longer than the TTL (their clients are gone).
  void expire_sessions() {
    int64_t ttl_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(server.options().session_idle_ttl)
            .count();
    std::vector<std::shared_ptr<SessionSlot>> gone;
    {
      std::lock_guard<std::mutex> lock(mutex);
      int64_t now = now_ns();
      for (auto it = sessions.begin(); it != sessions.end();) {
        if (ttl_ns > 0 && now - it->second->last_used > ttl_ns && idle(*it->second)) {
          gone.push_back(it->second);
          it = sessions.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& slot : gone) {
      slot->close();
      slot->session->cancel_all();
    }
  }

  // At the cap: the least recently used idle session makes room. False when
  // every session is busy.
  bool make_room_locked() {
    if (sessions.size() < options.max_sessions) return true;
    auto victim = sessions.end();
    for (auto it = sessions.begin(); it != sessions.end(); ++it)
      if (idle(*it->second) &&
          (victim == sessions.end() || it->second->last_used < victim->second->last_used))
        victim = it;
    if (victim == sessions.end()) return false;
    victim->second->close();
    sessions.erase(victim);
    return true;
  }

  std::shared_ptr<SessionSlot> find_session(const std::string& id) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = sessions.find(id);
    return it == sessions.end() ? nullptr : it->second;
  }

  // The session named by Mcp-Session-Id, or nullptr after answering 400/404.
  std::shared_ptr<SessionSlot> require_session(const httplib::Request& req,
                                               httplib::Response& res) {
    if (!req.has_header("Mcp-Session-Id")) {
      send_error(res, 400, rpc::kInvalidRequest,
                 "Bad Request: Mcp-Session-Id header is required (send initialize first)");
      return nullptr;
    }
    auto slot = find_session(req.get_header_value("Mcp-Session-Id"));
    if (!slot)
      send_error(res, 404, rpc::kInvalidRequest, "Session not found: initialize a new session");
    else
      slot->last_used = now_ns();
    return slot;
  }

  static bool is_modern_message(const json& m) {
    if (!m.is_object() || !m.contains("method") || !m["method"].is_string()) return false;
    if (m["method"] == "server/discover") return true;
    if (m["method"] == "initialize") return false;
    return m.contains("params") && m["params"].is_object() && m["params"].contains("_meta") &&
           m["params"]["_meta"].is_object() && m["params"]["_meta"].contains(kMetaProtocolVersion);
  }

  // Mcp-Method / Mcp-Name / MCP-Protocol-Version must agree with the body
  // of a stateless request. Returns "" or the mismatch.
  static std::string header_mismatch(const httplib::Request& req, const json& m) {
    static const json kNoParams = json::object();
    // Both branches references: a temporary in one would copy params (MBs).
    const json& params = m.contains("params") ? m["params"] : kNoParams;
    if (req.has_header("Mcp-Method") && req.get_header_value("Mcp-Method") != m["method"])
      return "Mcp-Method header does not match the request's method";
    if (req.has_header("Mcp-Name") && params.is_object()) {
      std::string name = params.value("name", params.value("uri", std::string()));
      std::string header = req.get_header_value("Mcp-Name");
      if (header.rfind("=?base64?", 0) != 0 && header != name)
        return "Mcp-Name header does not match the request's name";
    }
    if (req.has_header("MCP-Protocol-Version") && params.is_object() && params.contains("_meta") &&
        params["_meta"].contains(kMetaProtocolVersion) &&
        req.get_header_value("MCP-Protocol-Version") != params["_meta"][kMetaProtocolVersion])
      return "MCP-Protocol-Version header does not match params._meta";
    return "";
  }

  void post_stateless(const httplib::Request& req, httplib::Response& res, const json& message,
                      bool accepts_sse) {
    auto session = server.new_stateless_session();
    bool is_request = message.contains("id");
    if (is_request) {
      if (std::string problem = header_mismatch(req, message); !problem.empty())
        return send_error(res, 400, rpc::kHeaderMismatch, "Header mismatch: " + problem,
                          message["id"]);
    }
    if (!is_request) {
      session->handle(message, [](const json&) {});
      res.status = 202;
      return;
    }
    if (accepts_sse && message["method"] == "tools/call")
      return stream_reply(res, session, message);
    auto reply = session->handle(message, [](const json&) {});
    if (!reply) {
      res.status = 202;
      return;
    }
    send_json(res, modern_status(*reply), *reply);
  }

  // Reads the body through httplib's decoder (chunked, gzip) and stops as
  // soon as the *decoded* bytes pass the message cap, or a compressed body
  // inflates more than kMaxInflation times its raw length. False = answered.
  bool read_body(const httplib::Request& req, httplib::Response& res,
                 const httplib::ContentReader& reader, std::string& body) {
    constexpr size_t kMaxInflation = 100;
    size_t cap = server.options().max_message_bytes;
    bool encoded =
        req.has_header("Content-Encoding") &&
        pycompat::ascii_lower(trim(req.get_header_value("Content-Encoding"))) != "identity";
    size_t raw = req.has_header("Content-Length")
                     ? std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10)
                     : 0;
    if (encoded && raw > 0) cap = std::min(cap, raw * kMaxInflation + 4096);
    bool over = raw > server.options().max_message_bytes;  // refused before reading
    bool ok = !over && reader([&](const char* data, size_t length) {
      if (body.size() + length > cap) {
        over = true;
        return false;
      }
      body.append(data, length);
      return true;
    });
    if (over || !ok) {
      res.set_header("Connection", "close");  // the rest of the body is not read
      send_error(res, over ? 413 : 400, rpc::kInvalidRequest,
                 over ? fmt::format("Payload Too Large: the decoded body exceeds {} bytes{}", cap,
                                    encoded ? " (or inflates too much)" : "")
                      : "Bad Request: the body could not be read");
      return false;
    }
    return true;
  }

  void post(const httplib::Request& req, httplib::Response& res,
            const httplib::ContentReader& reader) {
    if (!is_json_media_type(req.get_header_value("Content-Type")))
      return send_error(res, 415, rpc::kInvalidRequest,
                        "Unsupported Media Type: Content-Type must be application/json");
    std::string accept = pycompat::ascii_lower(req.get_header_value("Accept"));
    bool any = accept.empty() || accept.find("*/*") != std::string::npos;
    bool accepts_json = any || accept.find("application/json") != std::string::npos;
    bool accepts_sse = any || accept.find("text/event-stream") != std::string::npos;
    if (!accepts_json && !accepts_sse)
      return send_error(
          res, 406, rpc::kInvalidRequest,
          "Not Acceptable: Accept must include application/json or text/event-stream");
    std::string body;
    if (!read_body(req, res, reader, body)) return;
    ParsedMessage parsed = server.parse_message(body);
    body = std::string();
    if (parsed.error) return send_json(res, 400, *parsed.error);
    const json& message = parsed.message;

    if (is_modern_message(message)) return post_stateless(req, res, message, accepts_sse);

    std::shared_ptr<SessionSlot> slot;
    bool is_initialize = message.is_object() && message.value("method", json()) == "initialize";
    if (is_initialize && !req.has_header("Mcp-Session-Id")) {
      slot = std::make_shared<SessionSlot>();
      slot->session = server.new_session();
    } else {
      slot = require_session(req, res);
      if (!slot) return;
      if (req.has_header("MCP-Protocol-Version") &&
          !is_supported_version(req.get_header_value("MCP-Protocol-Version")))
        return send_error(res, 400, rpc::kInvalidRequest,
                          "Bad Request: unsupported MCP-Protocol-Version " +
                              req.get_header_value("MCP-Protocol-Version"));
    }
    bool is_request = message.is_object() && message.contains("method") && message.contains("id");
    if (is_initialize) return post_initialize(res, slot, message);
    if (!is_request && !message.is_array()) {  // notification or response
      auto reply = slot->session->handle(message, [](const json&) {});
      if (reply) return send_json(res, 400, *reply);
      res.status = 202;
      return;
    }
    res.set_header("Mcp-Session-Id", req.get_header_value("Mcp-Session-Id"));
    const bool tool_call = message.is_object() && message["method"] == "tools/call";
    if (tool_call && accepts_sse) return stream_reply(res, slot->session, message);
    // A batch the session runs is watched like a call: when its client
    // leaves, its running call is cancelled and the rest are not started.
    const bool batch_of_calls =
        message.is_array() && std::any_of(message.begin(), message.end(), [](const json& m) {
          return m.is_object() && m.contains("id") && m.value("method", json()) == "tools/call";
        });
    if (tool_call || (batch_of_calls && !slot->session->batch_refusal(message)))
      return watched_json_reply(res, slot, message);
    auto reply = slot->session->handle(message, [](const json&) {});
    slot->last_used = now_ns();
    if (!reply) {
      res.status = 202;
      return;
    }
    bool rejected = message.is_array() && reply->is_object();  // a batch we do not accept
    send_json(res, rejected ? 400 : 200, *reply);
  }

  void post_initialize(httplib::Response& res, const std::shared_ptr<SessionSlot>& slot,
                       const json& message) {
    auto reply = slot->session->handle(message, [](const json&) {});
    if (!reply)
      return send_error(res, 400, rpc::kInvalidRequest, "Bad Request: initialize needs an id");
    if (reply->contains("error")) return send_json(res, 400, *reply);
    std::string id = random_session_id();
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!make_room_locked())
        return send_error(res, 503, rpc::kInternalError,
                          "Too many busy sessions; DELETE unused ones or retry later");
      sessions[id] = slot;
    }
    res.set_header("Mcp-Session-Id", id);
    send_json(res, 200, *reply);
  }

  // Answers a request as an SSE stream: its notifications and requests to
  // the client first, then the response, then the stream ends. While the
  // call runs, a comment line goes out every keepalive_ms (watched_reply).
  void stream_reply(httplib::Response& res, std::shared_ptr<Session> session, json message) {
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    watched_reply(res, std::move(session), std::move(message), "text/event-stream",
                  ": call running\n\n", sse_event, true);
  }

  // A tools/call answered as plain JSON: the body is sent chunked, and while
  // the call runs a space goes out every keepalive_ms (JSON allows
  // whitespace before a value, so the client reads the same document).
  void watched_json_reply(httplib::Response& res, const std::shared_ptr<SessionSlot>& slot,
                          json message) {
    watched_reply(res, slot->session, std::move(message), "application/json", " ", json_text, false,
                  [slot] { slot->last_used = now_ns(); });
  }

  // The reply of a call sent chunked as `content_type`: `keepalive` goes out
  // every keepalive_ms while the call runs; when it cannot be written the
  // client has left, and its call is cancelled (a worker process is killed)
  // instead of holding a worker thread for a reader that is gone (issue 63
  // point 3: abandoned queries locked a client out; cpp-httplib gives no
  // other way to see a peer leave). `frame` renders each message (the
  // call's notifications too when `notifications`), the response last.
  void watched_reply(httplib::Response& res, std::shared_ptr<Session> session, json message,
                     const char* content_type, std::string keepalive,
                     std::string (*frame)(const json&), bool notifications,
                     std::function<void()> finished = {}) {
    res.status = 200;
    auto interval = std::chrono::milliseconds(std::max(options.keepalive_ms, 10));
    res.set_chunked_content_provider(
        content_type, [session = std::move(session), interval, message = std::move(message),
                       keepalive = std::move(keepalive), frame, notifications,
                       finished = std::move(finished)](size_t, httplib::DataSink& sink) {
          std::mutex write_mutex;
          bool open = true;
          auto write_text = [&](const std::string& text) {  // false once the client is gone
            std::lock_guard<std::mutex> lock(write_mutex);
            if (open) open = sink.write(text.data(), text.size());
            return open;
          };
          auto write = [&](const json& m) { write_text(frame(m)); };
          json id = message.is_object() && message.contains("id") ? message["id"] : json();
          // The requests to cancel when the client leaves: the call, or each of a batch's.
          std::vector<json> ids;
          if (!id.is_null()) ids.push_back(id);
          if (message.is_array())
            for (const auto& m : message)
              if (m.is_object() && m.contains("id") && m.contains("method")) ids.push_back(m["id"]);
          std::atomic<bool> abandoned{false};
          std::mutex done_mutex;
          std::condition_variable done_changed;
          bool done = false;
          std::thread heartbeat([&] {
            std::unique_lock<std::mutex> lock(done_mutex);
            while (!done_changed.wait_for(lock, interval, [&] { return done; })) {
              if (!abandoned && write_text(keepalive)) continue;
              // Gone: no later message of a batch starts, and the running one is
              // cancelled (again each tick, for one that started meanwhile).
              abandoned = true;
              for (const json& request : ids)
                session->handle(
                    {{"jsonrpc", "2.0"},
                     {"method", "notifications/cancelled"},
                     {"params", {{"requestId", request}, {"reason", "the client disconnected"}}}},
                    [](const json&) {});
            }
          });
          std::optional<json> reply;
          try {
            reply = session->handle(message, notifications ? Emit(write) : Emit([](const json&) {}),
                                    &abandoned);
          } catch (const std::exception& e) {  // never let a worker die with the reply
            reply =
                make_error(id, rpc::kInternalError, fmt::format("Internal error: {}", e.what()));
          }
          {
            std::lock_guard<std::mutex> lock(done_mutex);
            done = true;
          }
          done_changed.notify_all();
          heartbeat.join();
          if (finished) finished();
          if (reply) write(*reply);
          sink.done();
          return true;
        });
  }

  void get(const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("MCP-Protocol-Version") == kModernVersion)
      return send_error(res, 405, rpc::kMethodNotFound,
                        "Method Not Allowed in protocol 2026-07-28");
    std::string accept = pycompat::ascii_lower(req.get_header_value("Accept"));
    if (accept.find("text/event-stream") == std::string::npos)
      return send_error(res, 406, rpc::kInvalidRequest,
                        "Not Acceptable: Accept must include text/event-stream");
    auto slot = require_session(req, res);
    if (!slot) return;
    if (slot->get_open.exchange(true))
      return send_error(res, 409, rpc::kInvalidRequest,
                        "Conflict: this session already has a GET stream");
    if (get_streams.fetch_add(1) >= max_get_streams) {
      get_streams.fetch_sub(1);
      slot->get_open = false;
      return send_error(res, 503, rpc::kInternalError, "Too many open GET streams");
    }
    // A stream holds its thread as a long call does, under the same cap.
    if (!server.try_begin_long_call()) {
      get_streams.fetch_sub(1);
      slot->get_open = false;
      return send_error(res, 503, rpc::kInternalError,
                        "Too many long calls and GET streams running; retry later");
    }
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_header("Mcp-Session-Id", req.get_header_value("Mcp-Session-Id"));
    auto interval = std::chrono::milliseconds(options.keepalive_ms);
    // We send no unsolicited notifications (tools never change), so the stream
    // carries only keep-alive comments; they also reveal a vanished client.
    // Between them the worker sleeps on the session's condition variable,
    // woken at once by DELETE, expiry or shutdown.
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, slot, interval](size_t, httplib::DataSink& sink) {
          const std::string comment = ": keep-alive\n\n";
          std::unique_lock<std::mutex> lock(slot->wake_mutex);
          while (!stopping && !slot->closed) {
            lock.unlock();
            bool ok = sink.is_writable() && sink.write(comment.data(), comment.size());
            lock.lock();
            if (!ok) return false;
            slot->last_used = now_ns();
            slot->wake.wait_for(lock, interval, [&] { return stopping || slot->closed; });
          }
          lock.unlock();
          sink.done();
          return true;
        },
        [this, slot](bool) {
          slot->get_open = false;
          get_streams.fetch_sub(1);
          server.end_long_call();
        });
  }

  void del(const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("MCP-Protocol-Version") == kModernVersion)
      return send_error(res, 405, rpc::kMethodNotFound,
                        "Method Not Allowed in protocol 2026-07-28");
    auto slot = require_session(req, res);
    if (!slot) return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      sessions.erase(req.get_header_value("Mcp-Session-Id"));
    }
    slot->close();
    slot->session->cancel_all();
    res.status = 200;
  }

  // Wakes every GET stream and cancels every call in flight, so the workers
  // return before the pool joins instead of after their calls' time limits.
  void wake_streams_and_cancel_calls() {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& [_, slot] : sessions) {
      slot->session->cancel_all();
      std::lock_guard<std::mutex> wake_lock(slot->wake_mutex);
      slot->wake.notify_all();
    }
  }
};

HttpServer::HttpServer(Server& server, HttpOptions options)
    : impl_(std::make_unique<Impl>(server, std::move(options))) {}

HttpServer::~HttpServer() {
  stop();
}

void HttpServer::bind() {
  std::string host = impl_->options.host == "[::1]" ? "::1" : impl_->options.host;
  if (impl_->options.port == 0) {
    impl_->bound_port = impl_->http.bind_to_any_port(host);
    if (impl_->bound_port <= 0) throw std::runtime_error("cannot bind to " + host);
  } else {
    if (!impl_->http.bind_to_port(host, impl_->options.port))
      throw std::runtime_error(fmt::format("cannot bind to {}:{}", host, impl_->options.port));
    impl_->bound_port = impl_->options.port;
  }
  impl_->http.raise_backlog(static_cast<int>(std::max<size_t>(64, impl_->threads * 4)));
  impl_->start_watchdog();
}

int HttpServer::port() const {
  return impl_->bound_port;
}

void HttpServer::run() {
  impl_->http.listen_after_bind();
}

void HttpServer::stop() {
  impl_->stop_watchdog();
  impl_->wake_streams_and_cancel_calls();
  impl_->http.stop();
}

size_t HttpServer::session_count() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->sessions.size();
}

}  // namespace jarvis::mcp

// The module's entry point: make_http_endpoint (src/mcp/http_module.cpp)
// finds it with dlsym. The caller owns the result.
extern "C" jarvis::mcp::HttpEndpoint* jarvis_http_endpoint(
    jarvis::mcp::Server& server, const jarvis::mcp::HttpOptions& options) {
  return new jarvis::mcp::HttpServer(server, options);
}
static_assert(std::is_same_v<decltype(&jarvis_http_endpoint), jarvis::mcp::HttpModuleEntry>);
