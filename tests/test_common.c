/* Tests for src/common: status table, atomic files, string distance. */
#include "common/sha256.h"
#include "common/status.h"
#include "common/util.h"

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
    char          dir[] = "/tmp/svp_test_XXXXXX", path[256], *data = NULL;
    size_t        len;
    DIR          *d;
    struct dirent *de;
    int           entries = 0;

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
    size_t len   = 0;
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

/* ---- SHA-256: FIPS 180-4's examples and a file ------------------------- */

Test(sha256, known_digests)
{
    static const struct {
        const char *in, *out;
    } v[] = {
        { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
        { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
        { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
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
    cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    cr_assert_eq(svp_sha256_file(path, hex), SVP_OK);
    cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    unlink(path);
    cr_assert_eq(svp_sha256_file("/", hex), SVP_ERR_IO, "a directory is no file");
}
