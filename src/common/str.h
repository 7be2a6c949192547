/*
 * Strings: UTF-8 checked, text escaped for a terminal or a message (the
 * one escaper of the tree: the log, svp_errf and the launcher's quoted
 * values),
 * "did you mean" distances, strdup.  Nothing here logs, so the log itself
 * (common/log.c) escapes its messages with svp_str_escape.
 */
#ifndef SVP_COMMON_STR_H
#define SVP_COMMON_STR_H

#include <stddef.h>

/* Levenshtein distance, for "unknown key 'stpes', did you mean 'steps'?". */
int svp_str_distance(const char *a, const char *b);

/* 1 when s[0..len) is well-formed UTF-8 (no overlong forms, surrogates or
 * code points past U+10FFFF); else 0 with the first bad byte's offset in
 * *bad_p (may be NULL). */
int svp_utf8_valid(const char *s, size_t len, size_t *bad_p);

/* What svp_str_escape's text is for. */
typedef enum {
    /*
     * A terminal or one log line: a byte that is not UTF-8 becomes \xHH, a
     * control character \n, \t, \r or \xHH (C0, DEL) or \uHHHH (C1), and
     * so do the invisible characters that hide or reorder text
     * (bidirectional controls, U+2028/9, U+FEFF: a BOM).  Everything else,
     * backslashes included, is copied as it is, so escaping twice changes
     * nothing.  Stops before a character or escape that would not fit.
     * svp_errf() and the log escape every message this way: the user's
     * text they carry cannot reach a terminal raw.
     */
    SVP_STR_ESCAPE_TERMINAL,
    /*
     * A value quoted ("...") inside a message, as the launcher's checks
     * quote what they found: a quote and a backslash get a backslash, a
     * newline becomes \n and every other C0 control and DEL \xHH.  Bytes
     * from 0x80 up are copied as they are: the message as a whole is then
     * escaped for the terminal (svp_errf).  Stops once fewer than 6 bytes
     * of out are left, whatever the next character needs.
     */
    SVP_STR_ESCAPE_QUOTED,
} svp_str_escape_t;

/*
 * Copies the len bytes of s into out (outlen bytes, always terminated)
 * escaped for what mode says (svp_str_escape_t).  Returns the length
 * written.
 */
size_t svp_str_escape(const char *s, size_t len, char *out, size_t outlen,
                      svp_str_escape_t mode);

/* strdup that returns NULL only when s is NULL or memory is exhausted. */
char *svp_strdup(const char *s);

#endif
