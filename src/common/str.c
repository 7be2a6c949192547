/*
 * Strings (str.h): UTF-8 decoded and checked, text escaped for a terminal
 * or for a value quoted in a message (the tree's one escaper), "did you mean" distances, strdup.  Nothing here logs: the
 * log escapes its messages with svp_str_escape.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/str.h"
#include "common/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The character at u[0..len): its length in bytes with its code point in
 * *cp_p, or 0 when u does not start with well-formed UTF-8 (a stray or
 * missing continuation byte, an overlong form, a surrogate, a code point
 * past U+10FFFF, or a sequence cut short by len).
 */
static size_t svp_utf8_decode(const unsigned char *u, size_t len, uint32_t *cp_p)
{
    size_t   n, k;
    uint32_t cp, min;

    if (u[0] < 0x80) {
        *cp_p = u[0];
        return 1;
    }
    if ((u[0] & 0xe0) == 0xc0) {
        n = 1, cp = u[0] & 0x1f, min = 0x80;
    } else if ((u[0] & 0xf0) == 0xe0) {
        n = 2, cp = u[0] & 0x0f, min = 0x800;
    } else if ((u[0] & 0xf8) == 0xf0) {
        n = 3, cp = u[0] & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n >= len) {
        return 0; /* cut short */
    }
    for (k = 1; k <= n; ++k) {
        if ((u[k] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (u[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    *cp_p = cp;
    return n + 1;
}

int svp_utf8_valid(const char *s, size_t len, size_t *bad_p)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t               i = 0, n;
    uint32_t             cp;

    while (i < len) {
        n = svp_utf8_decode(u + i, len - i, &cp);
        if (n == 0) {
            if (bad_p != NULL) {
                *bad_p = i;
            }
            return 0;
        }
        i += n;
    }
    return 1;
}

/*
 * Characters a terminal does not show as themselves: C0 and C1 controls
 * and DEL act (ESC starts the sequences that recolour, retitle or clear a
 * terminal; U+009B is CSI on a terminal that honours C1), and the
 * invisible format characters hide or reorder the text around them (the
 * bidirectional embeddings, overrides and isolates, the marks, the
 * separators, U+FEFF, which a UTF-8 BOM decodes to).
 */
static int svp_str_hidden(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e ||
           cp == 0x200f || (cp >= 0x2028 && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

/*
 * The escape of the character at u[0..len) for a terminal, into esc: its
 * length, 0 when the character is copied as it is; *n_p is the
 * character's length in bytes.
 */
static size_t svp_str_escape_terminal(const unsigned char *u, size_t len, char *esc,
                                      size_t esclen, size_t *n_p)
{
    uint32_t cp;
    size_t   n;

    n    = svp_utf8_decode(u, len, &cp);
    *n_p = (n == 0) ? 1 : n;
    if (n == 0) {
        return (size_t)snprintf(esc, esclen, "\\x%02x", u[0]);
    }
    if (cp == '\n' || cp == '\t' || cp == '\r') {
        return (size_t)snprintf(esc, esclen, "\\%c",
                                cp == '\n'   ? 'n'
                                : cp == '\t' ? 't'
                                             : 'r');
    }
    if (cp < 0x80 && svp_str_hidden(cp)) {
        return (size_t)snprintf(esc, esclen, "\\x%02x", (unsigned)cp);
    }
    if (svp_str_hidden(cp)) {
        return (size_t)snprintf(esc, esclen, "\\u%04x", (unsigned)cp);
    }
    return 0;
}

/* The escape of byte c inside a quoted value, into esc: its length, 0 when
 * the byte is copied as it is. */
static size_t svp_str_escape_quoted(unsigned char c, char *esc, size_t esclen)
{
    if (c == '\n') {
        return (size_t)snprintf(esc, esclen, "\\n");
    }
    if (c == '"' || c == '\\') {
        return (size_t)snprintf(esc, esclen, "\\%c", c);
    }
    if (c < 0x20 || c == 0x7f) {
        return (size_t)snprintf(esc, esclen, "\\x%02x", c);
    }
    return 0;
}

size_t svp_str_escape(const char *s, size_t len, char *out, size_t outlen,
                      svp_str_escape_t mode)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t               i = 0, o = 0, n, w, room;
    char                 esc[8];

    if (outlen == 0) {
        return 0;
    }
    while (i < len) {
        if (mode == SVP_STR_ESCAPE_QUOTED) {
            n    = 1;
            w    = svp_str_escape_quoted(u[i], esc, sizeof(esc));
            room = 5; /* the widest escape, \xHH, and one byte more */
        } else {
            w    = svp_str_escape_terminal(u + i, len - i, esc, sizeof(esc), &n);
            room = w ? w : n; /* whole characters and whole escapes only */
        }
        if (o + room >= outlen) {
            break;
        }
        if (w > 0) {
            memcpy(out + o, esc, w);
            o += w;
        } else {
            memcpy(out + o, u + i, n);
            o += n;
        }
        i += n;
    }
    out[o] = '\0';
    return o;
}

int svp_str_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), i, j;
    int    row[128], prev, tmp, best;

    if (lb >= SVP_ARRAY_SIZE(row)) {
        return 1000;
    }
    for (j = 0; j <= lb; ++j) {
        row[j] = (int)j;
    }
    for (i = 1; i <= la; ++i) {
        prev   = row[0];
        row[0] = (int)i;
        for (j = 1; j <= lb; ++j) {
            tmp    = row[j];
            best   = prev + (a[i - 1] != b[j - 1]);
            best   = SVP_MIN(best, row[j] + 1);
            best   = SVP_MIN(best, row[j - 1] + 1);
            row[j] = best;
            prev   = tmp;
        }
    }
    return row[lb];
}

char *svp_strdup(const char *s)
{
    return (s == NULL) ? NULL : strdup(s);
}
