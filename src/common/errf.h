/*
 * The one shape of the "errbuf, errlen" out-parameters: an error message
 * formatted into the caller's buffer, escaped.
 */
#ifndef SVP_COMMON_ERRF_H
#define SVP_COMMON_ERRF_H

/*
 * Formats an error message into errbuf (errlen bytes, always terminated);
 * nothing when errbuf is NULL or errlen is not positive.  The one shape of
 * the "errbuf, errlen" out-parameters the spec, sample-list and launcher
 * checks fill.  The message is escaped (svp_str_escape): what it quotes
 * from a spec, a manifest or a command line is printed safely.
 */
void svp_errf(char *errbuf, int errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
