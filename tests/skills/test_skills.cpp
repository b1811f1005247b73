// Skill documents (skills/*.md) against the tool schemas (tools_schema/*.json):
// front matter complete, every tool a skill names has a schema and is used in
// its text, every schema is used by some skill, cross-references resolve.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {
// This file's own names (a unity build compiles several test files as one unit).
namespace JARVIS_TEST_FILE {

namespace fs = std::filesystem;

namespace {

const fs::path kSkillsDir = fs::path(JARVIS_SOURCE_DIR) / "skills";
const fs::path kSchemaDir = fs::path(JARVIS_SOURCE_DIR) / "tools_schema";

struct Skill {
  fs::path path;
  std::map<std::string, std::string> scalars;             // key: value
  std::map<std::string, std::vector<std::string>> lists;  // key: then "  - item" lines
  std::string body;                                       // markdown after the front matter
  std::vector<std::string> errors;                        // front-matter syntax problems
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The YAML subset skills use: `key: scalar` and `key:` followed by `  - item`
// lines. Anything else in the block is reported, so a consumer with a simple
// parser (the MCP prompt server) reads the same values.
Skill parse_skill(const fs::path& path) {
  Skill skill;
  skill.path = path;
  std::istringstream in(read_file(path));
  std::string line;
  if (!std::getline(in, line) || trim(line) != "---") {
    skill.errors.push_back("does not start with a '---' front-matter line");
    return skill;
  }
  std::string list_key;
  bool closed = false;
  while (std::getline(in, line)) {
    if (trim(line) == "---") {
      closed = true;
      break;
    }
    if (trim(line).empty()) continue;
    if (line[0] == ' ' || line[0] == '\t') {
      std::string item = trim(line);
      if (list_key.empty() || item.rfind("- ", 0) != 0) {
        skill.errors.push_back("unexpected indented line: " + line);
        continue;
      }
      skill.lists[list_key].push_back(trim(item.substr(2)));
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string::npos) {
      skill.errors.push_back("not a 'key: value' line: " + line);
      continue;
    }
    std::string key = trim(line.substr(0, colon));
    std::string value = trim(line.substr(colon + 1));
    if (skill.scalars.count(key) || skill.lists.count(key))
      skill.errors.push_back("duplicate key: " + key);
    if (value.empty()) {
      list_key = key;
      skill.lists[key];
    } else {
      list_key.clear();
      skill.scalars[key] = value;
    }
  }
  if (!closed) skill.errors.push_back("front matter is not closed by '---'");
  std::ostringstream rest;
  rest << in.rdbuf();
  skill.body = rest.str();
  return skill;
}

std::vector<Skill> load_skills() {
  std::vector<Skill> skills;
  if (!fs::is_directory(kSkillsDir)) return skills;
  for (const auto& entry : fs::recursive_directory_iterator(kSkillsDir))
    if (entry.is_regular_file() && entry.path().extension() == ".md")
      skills.push_back(parse_skill(entry.path()));
  std::sort(skills.begin(), skills.end(),
            [](const Skill& a, const Skill& b) { return a.path < b.path; });
  return skills;
}

std::set<std::string> schema_tools() {
  std::set<std::string> tools;
  if (!fs::is_directory(kSchemaDir)) return tools;
  for (const auto& entry : fs::directory_iterator(kSchemaDir))
    if (entry.is_regular_file() && entry.path().extension() == ".json")
      tools.insert(entry.path().stem().string());
  return tools;
}

std::set<std::string> tools_used_by_skills(const std::vector<Skill>& skills) {
  std::set<std::string> used;
  for (const Skill& s : skills) {
    auto it = s.lists.find("tools");
    if (it != s.lists.end()) used.insert(it->second.begin(), it->second.end());
  }
  return used;
}

// True when `text` contains `name(` not preceded by an identifier character:
// the skills write tool calls as `tool(arg=...)`.
bool mentions_call(const std::string& text, const std::string& name) {
  std::string needle = name + "(";
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    if (pos == 0) return true;
    char before = text[pos - 1];
    if (!(std::isalnum(static_cast<unsigned char>(before)) || before == '_')) return true;
  }
  return false;
}

bool mentions_name(const std::string& text, const std::string& name) {
  return mentions_call(text, name) || text.find("`" + name + "`") != std::string::npos;
}

}  // namespace

TEST_SUITE("skills") {
  TEST_CASE("skills: the skill set covers the workflow and every analysis category") {
    std::set<std::string> names;
    for (const Skill& s : load_skills())
      if (s.scalars.count("name")) names.insert(s.scalars.at("name"));
    for (const char* required :
         {"performance-analysis", "writing-findings", "gemm-analysis", "elementwise-analysis",
          "sdpa-analysis", "norm-analysis", "reduce-analysis", "convolution-analysis",
          "triton-analysis", "moe-analysis", "other-analysis", "cpu-idle-analysis",
          "multi-kernel-analysis", "kernel-fusion-analysis"}) {
      CAPTURE(required);
      CHECK(names.count(required) == 1);
    }
  }

  TEST_CASE("skills: front matter has name, description, triggers and tools") {
    std::vector<Skill> skills = load_skills();
    REQUIRE(!skills.empty());
    std::set<std::string> seen;
    const std::regex tool_name("^[a-z][a-z0-9_]*$");
    for (const Skill& s : skills) {
      CAPTURE(s.path.string());
      for (const std::string& e : s.errors) FAIL_CHECK(e);
      REQUIRE(s.scalars.count("name") == 1);
      const std::string& name = s.scalars.at("name");
      // Layout: skills/<name>.md; the prompt name is the file name.
      CHECK(name == s.path.stem().string());
      CHECK(seen.insert(name).second);
      REQUIRE(s.scalars.count("description") == 1);
      const std::string& desc = s.scalars.at("description");
      CHECK(desc.size() >= 40);
      // A plain YAML scalar may not contain ": " or start with a quote/indicator.
      CHECK(desc.find(": ") == std::string::npos);
      CHECK(std::string("\"'>|[{&*!%@`").find(desc[0]) == std::string::npos);
      REQUIRE(s.lists.count("triggers") == 1);
      CHECK(!s.lists.at("triggers").empty());
      for (const std::string& t : s.lists.at("triggers")) CHECK(t.find(':') == std::string::npos);
      REQUIRE(s.lists.count("tools") == 1);
      CHECK(!s.lists.at("tools").empty());
      for (const std::string& t : s.lists.at("tools")) {
        CAPTURE(t);
        CHECK(std::regex_match(t, tool_name));
      }
      CHECK(s.body.find("\n# ") != std::string::npos);  // has a top-level heading
    }
  }

  TEST_CASE("skills: the tools a skill lists are the tools its text uses") {
    std::vector<Skill> skills = load_skills();
    std::set<std::string> known = schema_tools();
    std::set<std::string> used = tools_used_by_skills(skills);
    known.insert(used.begin(), used.end());
    for (const Skill& s : skills) {
      CAPTURE(s.path.string());
      std::set<std::string> listed;
      if (s.lists.count("tools"))
        listed.insert(s.lists.at("tools").begin(), s.lists.at("tools").end());
      for (const std::string& tool : listed) {
        CAPTURE(tool);
        CHECK_MESSAGE(mentions_name(s.body, tool), "listed in tools: but never used in the text");
      }
      for (const std::string& tool : known) {
        if (listed.count(tool)) continue;
        CAPTURE(tool);
        CHECK_MESSAGE(!mentions_call(s.body, tool), "called in the text but missing from tools:");
      }
    }
  }

  TEST_CASE("skills: every tool named by a skill has a schema file") {
    std::set<std::string> schemas = schema_tools();
    for (const std::string& tool : tools_used_by_skills(load_skills())) {
      CAPTURE(tool);
      fs::path file = kSchemaDir / (tool + ".json");
      CHECK_MESSAGE(schemas.count(tool) == 1, "missing tools_schema/" << tool << ".json");
      if (!fs::exists(file)) continue;
      auto schema = nlohmann::json::parse(read_file(file), nullptr, /*allow_exceptions=*/false);
      REQUIRE_MESSAGE(!schema.is_discarded(), file.string() << " is not valid JSON");
      REQUIRE(schema.is_object());
      CHECK(schema.value("name", std::string()) == tool);
    }
  }

  TEST_CASE("skills: every tool schema is used by some skill") {
    std::set<std::string> used = tools_used_by_skills(load_skills());
    std::set<std::string> schemas = schema_tools();
    REQUIRE(!schemas.empty());
    for (const std::string& tool : schemas) {
      CAPTURE(tool);
      CHECK_MESSAGE(used.count(tool) == 1, "no skill lists tool " << tool << " in its tools:");
    }
  }

  TEST_CASE("skills: references to other skills resolve") {
    std::vector<Skill> skills = load_skills();
    std::set<std::string> names;
    for (const Skill& s : skills)
      if (s.scalars.count("name")) names.insert(s.scalars.at("name"));
    // Skills refer to each other as `kebab-case-name`; the only other
    // backticked kebab-case words they use are findings-file markers.
    const std::set<std::string> not_skills = {"reasoning-candidate", "impact-begin", "impact-end"};
    const std::regex ref("`([a-z0-9]+(?:-[a-z0-9]+)+)`");
    for (const Skill& s : skills) {
      CAPTURE(s.path.string());
      for (std::sregex_iterator it(s.body.begin(), s.body.end(), ref), end; it != end; ++it) {
        std::string target = (*it)[1];
        if (not_skills.count(target)) continue;
        CAPTURE(target);
        CHECK_MESSAGE(names.count(target) == 1, "no skill named " << target);
      }
    }
  }
}

}  // namespace JARVIS_TEST_FILE
}  // namespace
