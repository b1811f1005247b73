// The tables of a hand-made Nsight Systems export (the columns jarvis reads,
// as `nsys export --type sqlite` declares them), for tests that build one.
#pragma once

#include <string>

namespace jarvis::testing::nsys_tables {

inline const std::string kStringIds =
    "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);";
inline const std::string kKernels =
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, \"end\" INTEGER NOT "
    "NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT "
    "NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, "
    "shortName INTEGER NOT NULL, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX "
    "INTEGER, blockY INTEGER, blockZ INTEGER);";
inline const std::string kRuntime =
    "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, \"end\" INTEGER NOT "
    "NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId "
    "INTEGER NOT NULL, returnValue INTEGER NOT NULL);";
inline const std::string kNvtx =
    "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, \"end\" INTEGER, eventType INTEGER "
    "NOT NULL, text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER);";

}  // namespace jarvis::testing::nsys_tables
