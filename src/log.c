/* log: leveled logging with secret redaction. */
#include "log.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <time.h>

#define LOG_LINE_MAX 4096
#define REDACTED "[redacted]"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static enum log_format log_fmt = LOG_FMT_PLAIN;
static enum log_level log_lvl = LOG_LVL_INFO;
static struct strv log_secrets;

static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long dev, ino;
	struct stat st;
	if (!js || sscanf(js, "%lu:%lu", &dev, &ino) != 2 || fstat(2, &st) < 0)
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

void log_setup(enum log_format fmt, enum log_level level)
{
	pthread_mutex_lock(&log_lock);
	if (fmt == LOG_FMT_AUTO)
		fmt = stderr_is_journal() ? LOG_FMT_JOURNAL : LOG_FMT_PLAIN;
	log_fmt = fmt;
	log_lvl = level;
	pthread_mutex_unlock(&log_lock);
}

int log_parse_level(const char *s, enum log_level *ret_level)
{
	static const struct { const char *name; enum log_level level; } levels[] = {
		{"error", LOG_LVL_ERROR}, {"warn", LOG_LVL_WARN}, {"warning", LOG_LVL_WARN},
		{"info", LOG_LVL_INFO}, {"debug", LOG_LVL_DEBUG},
	};
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (strcmp(s, levels[i].name) == 0) {
			*ret_level = levels[i].level;
			return 0;
		}
	return SP_EINVAL;
}

int log_parse_format(const char *s, enum log_format *ret_format)
{
	static const char *const names[] = {"auto", "plain", "json", "journal"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(s, names[i]) == 0) {
			*ret_format = (enum log_format)i;
			return 0;
		}
	return SP_EINVAL;
}

const char *log_level_name(enum log_level level)
{
	switch (level) {
	case LOG_LVL_ERROR: return "error";
	case LOG_LVL_WARN: return "warn";
	case LOG_LVL_INFO: return "info";
	default: return "debug";
	}
}

const char *log_format_name(enum log_format fmt)
{
	static const char *const names[] = {"auto", "plain", "json", "journal"};
	return names[fmt];
}

bool log_enabled(enum log_level level)
{
	return level <= log_lvl;
}

void log_add_secret(const char *secret)
{
	/* Very short strings would redact ordinary words; real keys and tokens are far longer. */
	if (!secret || strlen(secret) < 4)
		return;
	pthread_mutex_lock(&log_lock);
	if (!strv_contains(&log_secrets, secret))
		strv_push(&log_secrets, secret);
	pthread_mutex_unlock(&log_lock);
}

void log_remove_secret(const char *secret)
{
	if (!secret)
		return;
	pthread_mutex_lock(&log_lock);
	for (size_t i = 0; i < log_secrets.n; i++) {
		if (strcmp(log_secrets.v[i], secret) != 0)
			continue;
		sp_secure_free(log_secrets.v[i]);
		log_secrets.v[i] = log_secrets.v[--log_secrets.n];
		log_secrets.v[log_secrets.n] = NULL;
		break;
	}
	pthread_mutex_unlock(&log_lock);
}

static char *redact_locked(char *s, size_t n)
{
	for (size_t i = 0; i < log_secrets.n; i++) {
		const char *secret = log_secrets.v[i];
		size_t sl = strlen(secret), rl = strlen(REDACTED);
		char *hit;
		while ((hit = strstr(s, secret))) {
			size_t tail = strlen(hit + sl);
			size_t used = (size_t)(hit - s);
			if (used + rl + tail + 1 > n) {
				/* No room for the marker: blank the secret instead. */
				memset(hit, '*', sl);
				continue;
			}
			memmove(hit + rl, hit + sl, tail + 1);
			memcpy(hit, REDACTED, rl);
		}
	}
	return s;
}

char *log_redact(char *s, size_t n)
{
	pthread_mutex_lock(&log_lock);
	redact_locked(s, n);
	pthread_mutex_unlock(&log_lock);
	return s;
}

void log_shutdown(void)
{
	pthread_mutex_lock(&log_lock);
	for (size_t i = 0; i < log_secrets.n; i++)
		explicit_bzero(log_secrets.v[i], strlen(log_secrets.v[i]));
	strv_clear(&log_secrets);
	pthread_mutex_unlock(&log_lock);
}

static void write_line(enum log_level level, char *msg)
{
	char ts[32];
	struct timespec now;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	size_t k = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + k, sizeof(ts) - k, ".%03ldZ", now.tv_nsec / 1000000);

	switch (log_fmt) {
	case LOG_FMT_JOURNAL:
		sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%d", (int)level,
				"SYSLOG_IDENTIFIER=spotpool", NULL);
		break;
	case LOG_FMT_JSON: {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "time", ts);
		cJSON_AddStringToObject(o, "level", log_level_name(level));
		cJSON_AddStringToObject(o, "msg", msg);
		char *line = cJSON_PrintUnformatted(o);
		fprintf(stderr, "%s\n", line);
		cJSON_free(line);
		cJSON_Delete(o);
		break;
	}
	default:
		fprintf(stderr, "%s %-5s %s\n", ts, log_level_name(level), msg);
	}
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	if (!log_enabled(level))
		return;
	char msg[LOG_LINE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One line per record: a newline inside a message would forge a second record. */
	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	pthread_mutex_lock(&log_lock);
	redact_locked(msg, sizeof(msg));
	write_line(level, msg);
	pthread_mutex_unlock(&log_lock);
}
