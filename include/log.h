/* log: leveled logging to stderr (plain or JSON lines) or the systemd journal,
 * with redaction of every registered secret as a last line of defence. */
#ifndef SPOTPOOL_LOG_H
#define SPOTPOOL_LOG_H

#include "spotpool.h"

enum log_level { LOG_LVL_ERROR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };
enum log_format { LOG_FMT_AUTO, LOG_FMT_PLAIN, LOG_FMT_JSON, LOG_FMT_JOURNAL };

/* AUTO picks the journal when stderr is connected to it ($JOURNAL_STREAM), plain otherwise. */
void log_setup(enum log_format fmt, enum log_level level);
int log_parse_level(const char *s, enum log_level *ret_level);
int log_parse_format(const char *s, enum log_format *ret_format);
const char *log_level_name(enum log_level level);
const char *log_format_name(enum log_format fmt);
bool log_enabled(enum log_level level);

/* Registers a string that must never appear in output; it is replaced by "[redacted]". */
void log_add_secret(const char *secret);
/* Forgets (and wipes) a registered secret that is no longer in use, e.g. a rotated token. */
void log_remove_secret(const char *secret);
/* Replaces registered secrets in s (in place, output never longer than input + marker growth
 * bounded by n). Returns s. Used for any text that leaves the process (events, status). */
char *log_redact(char *s, size_t n);
void log_shutdown(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_enabled(LOG_LVL_DEBUG)) log_msg(LOG_LVL_DEBUG, __VA_ARGS__); } while (0)

#endif
