/*
 * Error messages into the caller's buffer (errf.h), escaped as the log
 * escapes its own.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "common/errf.h"
#include "common/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void svp_errf(char *errbuf, int errlen, const char *fmt, ...)
{
    char    raw[8192];
    va_list ap;

    if (errbuf == NULL || errlen <= 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    /* the values in a message are the user's text: safe to print */
    svp_str_escape(raw, strlen(raw), errbuf, (size_t)errlen,
                   SVP_STR_ESCAPE_TERMINAL);
}
