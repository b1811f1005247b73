# jarvis calibrate + jarvis ab on CPU PyTorch (tests/ab/test_ab_cpu.py, 65-95 s
# on the shared 2 cores: 21 Python processes that import torch, eight of them in
# pairs; up to ~150 s when the un-profiled estimate's check recalibrates once,
# docs/ab.md). Label "torch": it needs
# an interpreter that imports torch (Debian's python3-torch); without one it
# is reported skipped (exit 77) with the reason. It times processes side by
# side (a clean run beside each profiled one): PROCESSORS 2 keeps ctest -j2
# from running another test beside it, whose load made the clean runs slower
# than the profiled ones (a failed pair, 2026-11-29, beside the real-trace
# matrix, whose insights now use both cores).
add_test(NAME ab_cpu
  COMMAND bash -c "for py in python3 /usr/bin/python3; do if \"$py\" -c 'import torch' 2>/dev/null; then exec \"$py\" \"$0\"; fi; done; echo 'skipped: no python3 that imports torch (apt-get install python3-torch)'; exit 77"
          ${CMAKE_SOURCE_DIR}/tests/ab/test_ab_cpu.py)
set_tests_properties(ab_cpu PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "torch" PROCESSORS 2
  ENVIRONMENT "JARVIS_BINARY=$<TARGET_FILE:jarvis>")
