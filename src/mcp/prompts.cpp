// The skill documents (skills/**/*.md, compiled in) served as MCP prompts.
#include <sstream>

#include "engine/engine.h"
#include "mcp/embedded.h"
#include "mcp/server.h"

namespace jarvis::mcp {

namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string unquote(std::string s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    return s.substr(1, s.size() - 2);
  return s;
}

struct SkillDoc {
  std::map<std::string, std::string> front;  // front-matter scalars
  std::string body;                          // markdown after the front matter
};

// Front matter is the YAML block between the first two `---` lines. Only
// `key: value` scalars and `key: >` / `key: |` blocks of indented lines are
// understood, which is all skill files use.
SkillDoc parse_skill(std::string_view content) {
  SkillDoc doc;
  std::istringstream in{std::string(content)};
  std::string line;
  std::getline(in, line);
  if (trim(line) != "---") {
    doc.body = std::string(content);
    return doc;
  }
  std::string block_key;
  bool folded = false;
  while (std::getline(in, line)) {
    if (trim(line) == "---") break;
    bool indented = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    if (!block_key.empty() && indented) {
      std::string& v = doc.front[block_key];
      if (!v.empty()) v += folded ? " " : "\n";
      v += trim(line);
      continue;
    }
    block_key.clear();
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = trim(line.substr(0, colon));
    std::string value = trim(line.substr(colon + 1));
    if (value == ">" || value == "|" || value == ">-" || value == "|-") {
      block_key = key;
      folded = value[0] == '>';
      doc.front[key] = "";
      continue;
    }
    doc.front[key] = unquote(value);
  }
  std::ostringstream rest;
  rest << in.rdbuf();
  doc.body = rest.str();
  size_t start = doc.body.find_first_not_of("\r\n");
  doc.body = start == std::string::npos ? "" : doc.body.substr(start);
  return doc;
}

}  // namespace

std::vector<Prompt> skill_prompts() {
  std::vector<Prompt> prompts;
  for (const EmbeddedFile& file : embedded_skills()) {
    SkillDoc doc = parse_skill(file.content);
    auto name = doc.front.find("name");
    if (name == doc.front.end() || name->second.empty()) continue;
    json definition = {{"name", name->second}};
    if (doc.front.count("title")) definition["title"] = doc.front["title"];
    if (doc.front.count("description")) definition["description"] = doc.front["description"];
    std::string body = doc.body;
    std::string description = doc.front.count("description") ? doc.front["description"] : "";
    // TraceLens's manifest names this skill differently ("gemm-analyzer"):
    // prompts/get accepts that name too, and the listing says so.
    std::vector<std::string> aliases;
    for (const auto& [tracelens, served] : engine::skill_prompt_names())
      if (served == name->second) aliases.emplace_back(tracelens);
    if (!aliases.empty()) definition["_meta"]["jarvis/tracelens_skill_names"] = aliases;
    prompts.push_back(
        {definition,
         [body, description](const json&) {
           json result = {
               {"messages", json::array({json{{"role", "user"},
                                              {"content", {{"type", "text"}, {"text", body}}}}})}};
           if (!description.empty()) result["description"] = description;
           return result;
         },
         aliases});
  }
  return prompts;
}

}  // namespace jarvis::mcp
