/*
 * Fuzz targets for the parsers that read what a user or a peer hands us:
 * the job spec, safetensors, config.json, PNG/JPEG, the frame header and
 * the manifest of samples.
 *
 * Each target is one LLVMFuzzerTestOneInput().  Built with clang's
 * -fsanitize=fuzzer (make fuzz) it is a libFuzzer program; otherwise
 * driver.c supplies main(): it runs the seed corpus and a bounded number of
 * deterministic mutations of it, which is what make check does.
 */
#ifndef SVP_TESTS_FUZZ_H
#define SVP_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to a private temporary file and returns its path (the
 * parsers under test read files); the same path on every call. */
const char *svp_fuzz_tmpfile(const uint8_t *data, size_t size);

#endif
