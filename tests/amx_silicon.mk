# tests/amx_silicon.mk - AMX silicon vs the AMX tile emulator (tests/amx_silicon.c, issue 28 item 3).
# Included from the Makefile (`include tests/amx_silicon.mk`); uses its CC, ALL_CFLAGS, BUILD, HEADERS,
# LDLIBS and EXTRA_LDFLAGS and its rule for $(BUILD)/amxk_impl.o.
#
#   $(BUILD)/amx_silicon     tests/amx_silicon.c + $(BUILD)/amxk_impl.o + two private (AMXK_STATIC) copies of
#                            amxk from tests/amx_side.c: amx_side_nat.o (native AMX) and amx_side_emu.o
#                            (AMXK_AMX_EMULATE). On a CPU with AMX it compares every AMX path of both bit for
#                            bit (`amx silicon vs emulator: N outputs compared, D differ`, fails unless D = 0);
#                            elsewhere it prints `amx silicon vs emulator: skipped (no AMX on this CPU)` and
#                            `0 passed, 0 failed`. `make test` runs it through tests/run_tests.sh.
#   amx-silicon-selftest     local check of the comparison itself, on any CPU (not part of `make test`):
#                            $(BUILD)/amx_silicon_selftest links the emulator as the native side too
#                            (amx_side_natemu.o: tests/amx_side.c with -DSIDE=nat -DAMXK_AMX_EMULATE), so the
#                            whole program runs emulator vs emulator and must report D = 0 and pass; then the
#                            same binary with AMX_SILICON_MUTATE=1 (one bit of one output per section flipped)
#                            must report D > 0 and fail.

.PHONY: amx-silicon-selftest

AMX_SIDE_DEPS := tests/amx_side.c tests/amx_side.h $(HEADERS)
AMX_SIDE_FLAGS := -DAMXK_STATIC

$(BUILD)/amx_side_nat.o: $(AMX_SIDE_DEPS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(AMX_SIDE_FLAGS) -DSIDE=nat -c $< -o $@
$(BUILD)/amx_side_emu.o: $(AMX_SIDE_DEPS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(AMX_SIDE_FLAGS) -DSIDE=emu -DAMXK_AMX_EMULATE -c $< -o $@
$(BUILD)/amx_silicon: tests/amx_silicon.c tests/amx_side.h $(BUILD)/amxk_impl.o $(BUILD)/amx_side_nat.o $(BUILD)/amx_side_emu.o $(HEADERS)
	$(CC) $(ALL_CFLAGS) $< $(BUILD)/amxk_impl.o $(BUILD)/amx_side_nat.o $(BUILD)/amx_side_emu.o -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

# ---- the local self-test (emulator vs emulator) ----
$(BUILD)/amx_side_natemu.o: $(AMX_SIDE_DEPS)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(AMX_SIDE_FLAGS) -DSIDE=nat -DAMXK_AMX_EMULATE -c $< -o $@
$(BUILD)/amx_silicon_selftest: tests/amx_silicon.c tests/amx_side.h $(BUILD)/amxk_impl.o $(BUILD)/amx_side_natemu.o $(BUILD)/amx_side_emu.o $(HEADERS)
	$(CC) $(ALL_CFLAGS) $< $(BUILD)/amxk_impl.o $(BUILD)/amx_side_natemu.o $(BUILD)/amx_side_emu.o -o $@ $(EXTRA_LDFLAGS) $(LDLIBS)

amx-silicon-selftest: $(BUILD)/amx_silicon_selftest
	@echo "== emulator vs emulator: must pass with 0 differences"
	@$(BUILD)/amx_silicon_selftest >$(BUILD)/amx_silicon_selftest.log 2>&1; rc=$$?; \
	    grep -E '^(amx silicon vs emulator|   .*outputs compared|levels native|[0-9]+ passed)' $(BUILD)/amx_silicon_selftest.log; \
	    grep -qE '^amx silicon vs emulator: [1-9][0-9]* outputs compared, 0 differ$$' $(BUILD)/amx_silicon_selftest.log && [ $$rc -eq 0 ] \
	    || { echo "amx-silicon-selftest: emulator vs emulator did not pass (exit $$rc; $(BUILD)/amx_silicon_selftest.log)"; exit 1; }
	@echo "== AMX_SILICON_MUTATE=1 (one flipped bit per section): must report differences and fail"
	@AMX_SILICON_MUTATE=1 AMX_SILICON_QUICK=1 $(BUILD)/amx_silicon_selftest >$(BUILD)/amx_silicon_mutate.log 2>&1; rc=$$?; \
	    grep -E '^(amx silicon vs emulator|  DIFF|[0-9]+ passed)' $(BUILD)/amx_silicon_mutate.log; \
	    grep -qE '^amx silicon vs emulator: [1-9][0-9]* outputs compared, [1-9][0-9]* differ$$' $(BUILD)/amx_silicon_mutate.log && [ $$rc -ne 0 ] \
	    || { echo "amx-silicon-selftest: the mutated run was not caught (exit $$rc; $(BUILD)/amx_silicon_mutate.log)"; exit 1; }
	@echo "amx-silicon-selftest: ok"
