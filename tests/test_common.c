/* Tests for src/common: status table, atomic files, string distance. */
#include "common/sha256.h"
#include "common/status.h"
#include "common/file.h"
#include "common/str.h"
#include "common/errf.h"
#include "common/util.h"
#include "common/log.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

Test(status, strings_and_exit_codes)
{
    cr_assert_str_eq(svp_status_string(SVP_OK), "success");
    cr_assert_str_eq(svp_status_name(SVP_ERR_TIMED_OUT), "SVP_ERR_TIMED_OUT");
    cr_assert_eq(svp_status_exit_code(SVP_OK), 0);
    cr_assert_eq(svp_status_exit_code(SVP_ERR_SPEC), SVP_EXIT_BAD_INPUT);
    cr_assert_eq(svp_status_exit_code(SVP_ERR_IO), SVP_EXIT_FAILURE);
    cr_assert_eq(svp_status_exit_code(SVP_ERR_PEER_LOST), SVP_EXIT_JOB_FATAL);
    cr_assert_str_eq(svp_status_string((svp_status_t)-99), "unknown status");
}

Test(util, atomic_write_leaves_no_temporary)
{
    char           dir[] = "/tmp/svp_test_XXXXXX", path[256], *data = NULL;
    size_t         len;
    DIR           *d;
    struct dirent *de;
    int            entries = 0;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/out.bin", dir);
    cr_assert_eq(svp_file_write_atomic(path, "hello", 5), SVP_OK);
    cr_assert_eq(svp_file_write_atomic(path, "world!", 6), SVP_OK);
    cr_assert_eq(svp_file_read_all(path, &data, &len), SVP_OK);
    cr_assert_eq(len, 6);
    cr_assert_str_eq(data, "world!");
    free(data);

    d = opendir(dir);
    while ((de = readdir(d)) != NULL) {
        entries += (de->d_name[0] != '.');
    }
    closedir(d);
    cr_assert_eq(entries, 1, "a temporary file was left behind");

    /* a directory that does not exist: error, nothing created */
    snprintf(path, sizeof(path), "%s/missing/out.bin", dir);
    cr_assert_eq(svp_file_write_atomic(path, "x", 1), SVP_ERR_IO);
    cr_assert_eq(svp_rmtree(dir), SVP_OK);
    cr_assert_neq(access(dir, F_OK), 0);
}

Test(util, string_distance)
{
    cr_assert_eq(svp_str_distance("steps", "steps"), 0);
    cr_assert_eq(svp_str_distance("stpes", "steps"), 2);
    cr_assert_eq(svp_str_distance("sample", "samples"), 1);
    cr_assert_eq(svp_str_distance("", "abc"), 3);
}

/* A model's config.json that is a FIFO with no writer, or a device, is
 * refused at once instead of blocking the open or reading for ever. */
Test(util, read_all_reads_regular_files_only, .timeout = 10)
{
    char   dir[] = "/tmp/svp-readall.XXXXXX", fifo[64], file[64], *data = NULL;
    size_t len = 0;
    FILE  *f;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(fifo, sizeof(fifo), "%s/config.json", dir);
    snprintf(file, sizeof(file), "%s/ok.json", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_expect_eq(svp_file_read_all(fifo, &data, &len), SVP_ERR_IO);
    cr_expect_eq(svp_file_read_all("/dev/zero", &data, &len), SVP_ERR_IO);
    cr_expect_null(data);
    f = fopen(file, "w");
    cr_assert_not_null(f);
    fputs("{\"a\": 1}", f);
    fclose(f);
    cr_assert_eq(svp_file_read_all(file, &data, &len), SVP_OK);
    cr_expect_eq(len, 8);
    cr_expect_str_eq(data, "{\"a\": 1}");
    free(data);
    unlink(fifo);
    unlink(file);
    rmdir(dir);
}

/*
 * Messages are escaped: controls, DEL, C1, bidi controls, a BOM and bytes
 * that are not UTF-8 become escapes; printable text (backslashes too) stays,
 * so escaping twice changes nothing; a short buffer cuts between characters.
 */
Test(util, escape_for_printing)
{
    static const struct {
        const char *in;
        size_t      len;
        const char *out;
    } cases[] = {
        {"plain text, caf\xc3\xa9 \\x1b", 0, "plain text, caf\xc3\xa9 \\x1b"},
        {"\x1b[31mred\x1b]0;t\x07", 0, "\\x1b[31mred\\x1b]0;t\\x07"},
        {"a\nb\tc\rd", 0, "a\\nb\\tc\\rd"},
        {"nul\0x", 5, "nul\\x00x"},
        {"del\x7f c1\xc2\x9b", 0, "del\\x7f c1\\u009b"},
        {"\xe2\x80\xaertl \xef\xbb\xbf", 0, "\\u202ertl \\ufeff"},
        {"bad\xff\xfe", 0, "bad\\xff\\xfe"},
        {"cut\xe2\x82", 0, "cut\\xe2\\x82"},
        {"overlong\xc0\xaf", 0, "overlong\\xc0\\xaf"},
    };
    char out[128], twice[128];

    for (size_t i = 0; i < SVP_ARRAY_SIZE(cases); ++i) {
        size_t len = cases[i].len ? cases[i].len : strlen(cases[i].in);
        size_t n   = svp_str_escape(cases[i].in, len, out, sizeof(out),
                                    SVP_STR_ESCAPE_TERMINAL);

        cr_expect_str_eq(out, cases[i].out, "case %zu", i);
        cr_expect_eq(n, strlen(out));
        svp_str_escape(out, strlen(out), twice, sizeof(twice),
                       SVP_STR_ESCAPE_TERMINAL);
        cr_expect_str_eq(twice, out, "escaping twice changed case %zu", i);
    }
    /* room for "ab" and not the escape after it: cut before the escape */
    svp_str_escape("ab\x1b", 3, out, 5, SVP_STR_ESCAPE_TERMINAL);
    cr_expect_str_eq(out, "ab");
    svp_str_escape("a\xc3\xa9", 3, out, 3, SVP_STR_ESCAPE_TERMINAL);
    cr_expect_str_eq(out, "a");
    svp_errf(out, sizeof(out), "found '%s'", "\x1b[2J");
    cr_expect_str_eq(out, "found '\\x1b[2J'");
}

/*
 * A value quoted in a message: quotes and backslashes get a backslash, a
 * newline is \n and every other control \xHH, bytes from 0x80 up stay (the
 * message is escaped for the terminal as a whole), and the text stops once
 * fewer than 6 bytes are left.
 */
Test(util, escape_quoted_value)
{
    static const struct {
        const char *in;
        const char *out;
    } cases[] = {
        {"say \"hi\" \\", "say \\\"hi\\\" \\\\"},
        {"a\nb\tc\rd\x1b\x7f", "a\\nb\\x09c\\x0dd\\x1b\\x7f"},
        {"caf\xc3\xa9 \xc2\x9b\xff", "caf\xc3\xa9 \xc2\x9b\xff"},
    };
    char out[128];

    for (size_t i = 0; i < SVP_ARRAY_SIZE(cases); ++i) {
        size_t n = svp_str_escape(cases[i].in, strlen(cases[i].in), out, sizeof(out),
                                  SVP_STR_ESCAPE_QUOTED);

        cr_expect_str_eq(out, cases[i].out, "case %zu", i);
        cr_expect_eq(n, strlen(out));
    }
    svp_str_escape("abcdefgh", 8, out, 8, SVP_STR_ESCAPE_QUOTED);
    cr_expect_str_eq(out, "abc");
    svp_str_escape("ab", 2, out, 5, SVP_STR_ESCAPE_QUOTED);
    cr_expect_str_eq(out, "");
}

/* A capped read refuses a larger file before reading it, naming the cap. */
Test(util, read_limit_names_the_cap)
{
    char   dir[] = "/tmp/svp-readlim.XXXXXX", file[64], *data = NULL, log[512] = "";
    size_t len = 0;
    FILE  *f, *logf = tmpfile();

    cr_assert_not_null(logf);
    svp_log_set_stream(logf);
    cr_assert_not_null(mkdtemp(dir));
    snprintf(file, sizeof(file), "%s/config.json", dir);
    f = fopen(file, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 100; ++i) {
        fputs("0123456789", f);
    }
    fclose(f);
    cr_expect_eq(svp_file_read_limit(file, 999, "a JSON config", &data, &len),
                 SVP_ERR_BAD_FILE);
    cr_expect_null(data);
    cr_assert_eq(svp_file_read_limit(file, 1000, "a JSON config", &data, &len),
                 SVP_OK);
    cr_expect_eq(len, 1000);
    free(data);
    rewind(logf);
    cr_expect_eq(fread(log, 1, sizeof(log) - 1, logf) > 0, 1);
    cr_expect_not_null(strstr(log, "a JSON config of 1000 bytes: over the size "
                                   "limit of 999 bytes"),
                       "%s", log);
    svp_log_set_stream(NULL);
    fclose(logf);
    unlink(file);
    rmdir(dir);
}

/* ---- SHA-256: FIPS 180-4's examples and a file ------------------------- */

Test(sha256, known_digests)
{
    static const struct {
        const char *in, *out;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    svp_sha256_t s;
    char         hex[65], path[] = "/tmp/svp-sha.XXXXXX";
    size_t       i;
    int          fd;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); ++i) {
        svp_sha256_init(&s);
        svp_sha256_update(&s, v[i].in, strlen(v[i].in));
        svp_sha256_final(&s, hex);
        cr_assert_str_eq(hex, v[i].out, "'%s'", v[i].in);
    }
    /* a million 'a's, fed in uneven pieces, and through a file */
    svp_sha256_init(&s);
    fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    for (i = 0; i < 1000000;) {
        char   a[977];
        size_t n = (1000000 - i < sizeof(a)) ? 1000000 - i : sizeof(a);

        memset(a, 'a', n);
        svp_sha256_update(&s, a, n);
        cr_assert_eq(write(fd, a, n), (ssize_t)n);
        i += n;
    }
    close(fd);
    svp_sha256_final(&s, hex);
    cr_assert_str_eq(
        hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    cr_assert_eq(svp_sha256_file(path, hex), SVP_OK);
    cr_assert_str_eq(
        hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    unlink(path);
    cr_assert_eq(svp_sha256_file("/", hex), SVP_ERR_IO, "a directory is no file");
}
