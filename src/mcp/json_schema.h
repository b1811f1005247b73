// A JSON Schema validator for the subset the tool schemas use: type, enum,
// const, properties, required, additionalProperties, items, minItems/maxItems,
// uniqueItems, minimum/maximum (and exclusive forms), minLength/maxLength,
// pattern, oneOf/anyOf/allOf/not, $ref into "#/$defs/..." or
// "#/definitions/...", and `default` (filled in by apply_defaults).
// Unknown keywords (title, description, $schema, examples, ...) are ignored.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace jarvis::mcp {

// Returns "" when `instance` conforms to `schema`, else the first problem,
// phrased for an agent: "at /top_n: must be >= 1 (got 0)".
std::string validate_json(const nlohmann::json& schema, const nlohmann::json& instance);

// Fills in `default` values of absent object properties, recursively through
// properties and items (not through oneOf/anyOf branches).
void apply_defaults(const nlohmann::json& schema, nlohmann::json& instance);

}  // namespace jarvis::mcp
