/* log: leveled logging to stderr (plain or JSON lines) or the systemd journal,
 * with redaction of every registered secret as a last line of defence.
 *
 * A record is a level, a message and optional structured fields (struct
 * log_fields). The fields are written
 *   plain:   after the message, as key=value (values with spaces or quotes quoted);
 *   json:    as top-level keys next to "time", "level" and "msg";
 *   journal: as SPOTPOOL_NAMESPACE=, SPOTPOOL_POOL=, SPOTPOOL_ACTION=,
 *            SPOTPOOL_REQUEST_ID=, SPOTPOOL_ERROR_CODE=, SPOTPOOL_DURATION_MS=.
 * The message and every field are redacted before they are cut to length, so a
 * secret is never half-printed. */
#ifndef SPOTPOOL_LOG_H
#define SPOTPOOL_LOG_H

#include "spotpool.h"

#include <stdio.h>
#include <sys/uio.h>

enum log_level { LOG_LVL_ERROR = 3, LOG_LVL_WARN = 4, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };
enum log_format { LOG_FMT_AUTO, LOG_FMT_PLAIN, LOG_FMT_JSON, LOG_FMT_JOURNAL };

/* Longest message and longest field value written (longer ones are cut after redaction). */
#define LOG_LINE_MAX 4096
#define LOG_FIELD_MAX 256

/* Structured fields of one record. Every member is optional: a NULL or "" string is
 * absent, and duration_ms only counts when has_duration is set, so a zero-initialised
 * struct (designated initialisers) carries no field by mistake:
 *   log_fields_msg(LOG_LVL_INFO, &(struct log_fields){.ns = ns, .pool = name,
 *                  .action = "launch", .duration_ms = ms, .has_duration = true},
 *                  "launched %d instance(s)", n);
 * Keys: namespace, pool, action, request_id, error_code, duration_ms. */
struct log_fields {
	const char *ns;          /* the pool's namespace */
	const char *pool;        /* the pool's name */
	const char *action;      /* what was being done: "launch", "RunInstances", ... */
	const char *request_id;  /* the peer's request ID (Tencent RequestId) */
	const char *error_code;  /* machine-readable error (Tencent Error.Code, Status reason) */
	long duration_ms;
	bool has_duration;
};

/* AUTO picks the journal when stderr is connected to it ($JOURNAL_STREAM), plain otherwise. */
void log_setup(enum log_format fmt, enum log_level level);
int log_parse_level(const char *s, enum log_level *ret_level);
int log_parse_format(const char *s, enum log_format *ret_format);
const char *log_level_name(enum log_level level);
const char *log_format_name(enum log_format fmt);
bool log_enabled(enum log_level level);

/* Shortest value registered for redaction; see log_add_secret. */
#define LOG_SECRET_MIN 16
/* Most values registered at once; the least recently registered of the tenants' goes
 * first. Every log line is scanned once per value (about 8 us for 256). */
#define LOG_SECRETS_MAX 1024

/* Registers a secret of the process itself (environment, credentials file, kubeconfig,
 * service-account token) that must never appear in output; it is replaced by
 * "[redacted]" and never evicted. Only secret values (keys, tokens) belong here, never
 * IDs: a registered string is hidden from every tenant's logs, events and status.
 * Values shorter than LOG_SECRET_MIN are ignored. A tenant's Secret registers through
 * log_replace_secret. */
void log_add_secret(const char *secret);
/* Registers secret as the one value of field of object ns/name (the controller: the
 * pool whose credentials hold it), forgetting the value it held before (a rotated key)
 * unless another owner still holds it; secret NULL just forgets it. At most
 * LOG_SECRETS_MAX values are kept: past that, the least recently registered tenant value
 * goes. */
void log_replace_secret(const char *ns, const char *name, const char *field, const char *secret);
/* Forgets the values of every field of object ns/name (a pool deleted, or now on the
 * controller's own credentials) unless another owner still holds them: a value nothing
 * in use holds cannot reach the output any more, and kept it would stay in the heap. */
void log_forget_owner(const char *ns, const char *name);
/* How many values are registered. */
size_t log_secret_count(void);
/* Forgets (and wipes) a registered secret that is no longer in use, e.g. a rotated token. */
void log_remove_secret(const char *secret);
/* Replaces registered secrets in s (in place, output never longer than input + marker growth
 * bounded by n; a secret with no room for the marker is blanked with '*'). Returns s. Used
 * for any text that leaves the process (events, status). */
char *log_redact(char *s, size_t n);
/* Redacts all of src, then copies it into dst (size n), cut on a UTF-8 boundary. Use it
 * instead of snprintf + log_redact when src may be longer than dst: cutting first could
 * leave the head of a secret that no longer matches. Returns dst. */
char *log_redact_copy(char *dst, size_t n, const char *src);
void log_shutdown(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A record with structured fields (fields may be NULL). */
void log_fields_msg(enum log_level level, const struct log_fields *fields, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_vmsg(enum log_level level, const struct log_fields *fields, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* A record about the pool ns/name, its message led by "<ns>/<name>: "; code: the
 * cloud's Error.Code, or NULL. */
void log_pool(enum log_level level, const char *ns, const char *name, const char *action, const char *code,
	      const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) do { if (log_enabled(LOG_LVL_DEBUG)) log_msg(LOG_LVL_DEBUG, __VA_ARGS__); } while (0)

/* Test hooks. log_set_output: where plain and JSON records go (NULL: stderr).
 * log_set_journal_sender: what sends journal records (NULL: sd_journal_sendv). When
 * sending to the journal fails, the record is written as plain text instead. */
void log_set_output(FILE *out);
void log_set_journal_sender(int (*sendv)(const struct iovec *iov, int n));

#endif
