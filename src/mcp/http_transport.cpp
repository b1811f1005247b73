// Streamable HTTP transport (MCP 2025-03-26 ... 2025-11-25, plus stateless
// 2026-07-28 requests) on cpp-httplib: one endpoint /mcp taking POST, GET
// and DELETE. See docs/mcp.md for the status codes.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <regex>
#include <thread>

#include <fmt/format.h>

#include "mcp/transport.h"

namespace jarvis::mcp {

namespace {

constexpr const char* kEndpoint = "/mcp";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string random_session_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::random_device dev;
  return fmt::format("{:016x}{:016x}", rng() ^ (static_cast<uint64_t>(dev()) << 32), rng() ^ dev());
}

// host[:port] -> host (IPv6 in brackets kept).
std::string strip_port(const std::string& host) {
  if (!host.empty() && host[0] == '[') {
    size_t close = host.find(']');
    return close == std::string::npos ? host : host.substr(0, close + 1);
  }
  size_t colon = host.rfind(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

bool is_local_name(const std::string& host) {
  std::string h = lower(strip_port(host));
  return h == "localhost" || h == "127.0.0.1" || h == "[::1]";
}

bool local_origin(const std::string& origin) {
  static const std::regex pattern(R"(^https?://(localhost|127\.0\.0\.1|\[::1\])(:\d+)?/?$)",
                                  std::regex::icase);
  return std::regex_match(origin, pattern);
}

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, int code, const std::string& message,
                const json& id = nullptr, const json& data = nullptr) {
  send_json(res, status, make_error(id, code, message, data));
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
  if (code == rpc::kInvalidParams && !reply.contains("id")) return 400;
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

struct HttpServer::Impl {
  struct SessionSlot {
    std::shared_ptr<Session> session;
    std::atomic<bool> closed{false};
    std::atomic<bool> get_open{false};
  };

  Server& server;
  HttpOptions options;
  httplib::Server http;
  int bound_port = 0;
  std::atomic<bool> stopping{false};
  std::atomic<size_t> get_streams{0};
  mutable std::mutex mutex;
  std::map<std::string, std::shared_ptr<SessionSlot>> sessions;

  Impl(Server& s, HttpOptions o) : server(s), options(std::move(o)) {
    if (!is_loopback_host(options.host) && options.token.empty())
      throw std::runtime_error(
          "refusing to listen on a non-loopback address without a bearer token "
          "(--token or JARVIS_TOKEN)");
    size_t threads = std::max<size_t>(4, options.threads);
    http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http.set_payload_max_length(server.options().max_message_bytes);
    http.set_keep_alive_timeout(2);
    http.set_read_timeout(30);
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return guard(req, res) ? httplib::Server::HandlerResponse::Unhandled
                             : httplib::Server::HandlerResponse::Handled;
    });
    http.Post(kEndpoint,
              [this](const httplib::Request& req, httplib::Response& res) { post(req, res); });
    http.Get(kEndpoint,
             [this](const httplib::Request& req, httplib::Response& res) { get(req, res); });
    http.Delete(kEndpoint,
                [this](const httplib::Request& req, httplib::Response& res) { del(req, res); });
  }

  // Origin / Host / token checks for every request. False = answered.
  bool guard(const httplib::Request& req, httplib::Response& res) {
    if (req.has_header("Origin")) {
      std::string origin = req.get_header_value("Origin");
      bool allowed = local_origin(origin) ||
                     std::find(options.allowed_origins.begin(), options.allowed_origins.end(),
                               origin) != options.allowed_origins.end();
      if (!allowed) {
        send_error(res, 403, rpc::kInvalidRequest,
                   "Forbidden: Origin " + origin + " is not allowed");
        return false;
      }
    }
    if (is_loopback_host(options.host) && !is_local_name(req.get_header_value("Host"))) {
      send_error(res, 403, rpc::kInvalidRequest,
                 "Forbidden: Host header must name localhost, 127.0.0.1 or [::1]");
      return false;
    }
    if (!options.token.empty() &&
        req.get_header_value("Authorization") != "Bearer " + options.token) {
      res.set_header("WWW-Authenticate", "Bearer");
      send_error(res, 401, rpc::kInvalidRequest, "Unauthorized: a valid bearer token is required");
      return false;
    }
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
    const json& params = m.contains("params") ? m["params"] : json::object();
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

  void post(const httplib::Request& req, httplib::Response& res) {
    std::string content_type = lower(req.get_header_value("Content-Type"));
    if (content_type.find("application/json") == std::string::npos)
      return send_error(res, 415, rpc::kInvalidRequest,
                        "Unsupported Media Type: Content-Type must be application/json");
    std::string accept = lower(req.get_header_value("Accept"));
    bool any = accept.empty() || accept.find("*/*") != std::string::npos;
    bool accepts_json = any || accept.find("application/json") != std::string::npos;
    bool accepts_sse = any || accept.find("text/event-stream") != std::string::npos;
    if (!accepts_json && !accepts_sse)
      return send_error(
          res, 406, rpc::kInvalidRequest,
          "Not Acceptable: Accept must include application/json or text/event-stream");
    json message = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded())
      return send_error(res, 400, rpc::kParseError, "Parse error: invalid JSON");

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
    bool stream = accepts_sse && message.is_object() && message["method"] == "tools/call";
    if (stream) return stream_reply(res, slot->session, message);
    auto reply = slot->session->handle(message, [](const json&) {});
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
      if (sessions.size() >= options.max_sessions)
        return send_error(res, 503, rpc::kInternalError, "Too many sessions; DELETE unused ones");
      sessions[id] = slot;
    }
    res.set_header("Mcp-Session-Id", id);
    send_json(res, 200, *reply);
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

  // Answers a request as an SSE stream: its notifications and requests to
  // the client first, then the response, then the stream ends.
  void stream_reply(httplib::Response& res, std::shared_ptr<Session> session, json message) {
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider("text/event-stream", [session, message = std::move(message)](
                                                              size_t, httplib::DataSink& sink) {
      std::mutex write_mutex;
      bool open = true;
      auto write = [&](const json& m) {
        std::lock_guard<std::mutex> lock(write_mutex);
        if (!open) return;
        std::string event = sse_event(m);
        open = sink.write(event.data(), event.size());
      };
      auto reply = session->handle(message, write);
      if (reply) write(*reply);
      sink.done();
      return true;
    });
  }

  void get(const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("MCP-Protocol-Version") == kModernVersion)
      return send_error(res, 405, rpc::kMethodNotFound,
                        "Method Not Allowed in protocol 2026-07-28");
    std::string accept = lower(req.get_header_value("Accept"));
    if (accept.find("text/event-stream") == std::string::npos)
      return send_error(res, 406, rpc::kInvalidRequest,
                        "Not Acceptable: Accept must include text/event-stream");
    auto slot = require_session(req, res);
    if (!slot) return;
    if (slot->get_open.exchange(true))
      return send_error(res, 409, rpc::kInvalidRequest,
                        "Conflict: this session already has a GET stream");
    if (get_streams.fetch_add(1) >= options.max_get_streams) {
      get_streams.fetch_sub(1);
      slot->get_open = false;
      return send_error(res, 503, rpc::kInternalError, "Too many open GET streams");
    }
    res.status = 200;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_header("Mcp-Session-Id", req.get_header_value("Mcp-Session-Id"));
    int keepalive_ms = options.keepalive_ms;
    // We send no unsolicited notifications (tools never change), so the stream
    // carries only keep-alive comments; they also reveal a vanished client.
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, slot, keepalive_ms](size_t, httplib::DataSink& sink) {
          const char* comment = ": keep-alive\n\n";
          if (!sink.write(comment, strlen(comment))) return false;
          auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(keepalive_ms);
          while (!stopping && !slot->closed && sink.is_writable()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            if (std::chrono::steady_clock::now() < next) continue;
            if (!sink.write(comment, strlen(comment))) return false;
            next += std::chrono::milliseconds(keepalive_ms);
          }
          sink.done();
          return true;
        },
        [this, slot](bool) {
          slot->get_open = false;
          get_streams.fetch_sub(1);
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
    slot->closed = true;
    slot->session->cancel_all();
    res.status = 200;
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
}

int HttpServer::port() const {
  return impl_->bound_port;
}

void HttpServer::run() {
  impl_->http.listen_after_bind();
}

void HttpServer::stop() {
  impl_->stopping = true;
  impl_->http.stop();
}

size_t HttpServer::session_count() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->sessions.size();
}

}  // namespace jarvis::mcp
