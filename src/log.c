/* log: leveled logging with secret redaction. */
#include "log.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <time.h>

#define REDACTED "[redacted]"
#define REDACTED_LEN (sizeof(REDACTED) - 1)

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static enum log_format log_fmt = LOG_FMT_PLAIN;
static enum log_level log_lvl = LOG_LVL_INFO;
/* The registered secrets, longest first: a secret that contains another is replaced
 * whole, not around the shorter. Bounded (every line is scanned once per secret, and
 * rotated keys and tokens would otherwise pile up): when full, the least recently
 * registered of the tenants' values goes, never the process's own. Secrets in use are
 * registered again by every pass that uses them, so only values nobody used lately are
 * evicted. An owner (a pool's credentials field) holds one value, and a value may have
 * several owners (pools sharing a Secret, one key copied into two): it is forgotten when
 * the last lets go. */
struct secret {
	char *value;
	struct strv owners; /* the objects' fields (ns/name/field) holding it now */
	bool pinned;        /* the process's own (environment, files, kubeconfig): never evicted */
	uint64_t used;      /* registration tick, for eviction */
};
static struct secret log_secrets[LOG_SECRETS_MAX];
static size_t log_n_secrets;
static uint64_t log_tick;
static FILE *log_out;  /* NULL: stderr */
static int (*journal_sendv)(const struct iovec *iov, int n) = sd_journal_sendv;

void log_set_output(FILE *out)
{
	pthread_mutex_lock(&log_lock);
	log_out = out;
	pthread_mutex_unlock(&log_lock);
}

void log_set_journal_sender(int (*sendv)(const struct iovec *iov, int n))
{
	pthread_mutex_lock(&log_lock);
	journal_sendv = sendv ? sendv : sd_journal_sendv;
	pthread_mutex_unlock(&log_lock);
}

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

/* Under the lock. */
static void remove_at(size_t i)
{
	sp_secure_free(log_secrets[i].value);
	strv_clear(&log_secrets[i].owners);
	/* Shifting (not swapping in the last) keeps the longest-first order. */
	memmove(&log_secrets[i], &log_secrets[i + 1], (log_n_secrets - i - 1) * sizeof(log_secrets[0]));
	log_n_secrets--;
}

/* Registers (or refreshes) secret; under the lock. Returns its entry. */
static struct secret *add_locked(const char *secret)
{
	for (size_t i = 0; i < log_n_secrets; i++)
		if (strcmp(log_secrets[i].value, secret) == 0) {
			log_secrets[i].used = ++log_tick;
			return &log_secrets[i];
		}
	if (log_n_secrets == LOG_SECRETS_MAX) {
		/* Tenants' values go before the process's own; the least recently used first. */
		size_t oldest = 0;
		for (size_t i = 1; i < log_n_secrets; i++) {
			const struct secret *a = &log_secrets[i], *b = &log_secrets[oldest];
			if (a->pinned != b->pinned ? !a->pinned : a->used < b->used)
				oldest = i;
		}
		remove_at(oldest);
	}
	size_t i = log_n_secrets++, len = strlen(secret);
	for (; i > 0 && strlen(log_secrets[i - 1].value) < len; i--)
		log_secrets[i] = log_secrets[i - 1];
	log_secrets[i] = (struct secret){.value = xstrdup(secret), .used = ++log_tick};
	return &log_secrets[i];
}

/* Real secrets are long (a Tencent SecretKey is 32 characters, session and
 * service-account tokens hundreds); anything shorter could be an ordinary word or
 * ID prefix that a tenant registers to hide it from everyone's output. */
static bool worth_redacting(const char *secret)
{
	return secret && strlen(secret) >= LOG_SECRET_MIN;
}

void log_add_secret(const char *secret)
{
	if (!worth_redacting(secret))
		return;
	pthread_mutex_lock(&log_lock);
	add_locked(secret)->pinned = true;
	pthread_mutex_unlock(&log_lock);
}

/* Drops the owners whose first n characters are owner's (n = strlen(owner) + 1: owner
 * itself) from every value but keep; a value no one holds any more goes unless pinned.
 * Under the lock. */
static void disown_locked(const char *owner, size_t n, const char *keep)
{
	for (size_t i = 0; i < log_n_secrets;) {
		struct secret *e = &log_secrets[i];
		struct strv *o = &e->owners;
		for (size_t j = 0; j < o->n && (!keep || strcmp(e->value, keep) != 0);)
			if (strncmp(o->v[j], owner, n) == 0) {
				free(o->v[j]);
				o->v[j] = o->v[--o->n];
				o->v[o->n] = NULL;
			} else {
				j++;
			}
		if (!o->n && !e->pinned) {
			remove_at(i);
			continue;
		}
		if (!o->n)  /* a pinned value many pools held: their room goes with them */
			strv_clear(o);
		i++;
	}
}

void log_replace_secret(const char *ns, const char *name, const char *field, const char *secret)
{
	char *owner = xasprintf("%s/%s/%s", ns ? ns : "", name ? name : "", field ? field : "");
	pthread_mutex_lock(&log_lock);
	disown_locked(owner, strlen(owner) + 1, worth_redacting(secret) ? secret : NULL);
	if (worth_redacting(secret)) {
		struct secret *e = add_locked(secret);
		if (!strv_contains(&e->owners, owner))
			strv_push(&e->owners, owner);
	}
	pthread_mutex_unlock(&log_lock);
	free(owner);
}

void log_forget_owner(const char *ns, const char *name)
{
	/* Names have no '/': "ns/name/" starts the owners of that object's fields only. */
	char *prefix = xasprintf("%s/%s/", ns ? ns : "", name ? name : "");
	pthread_mutex_lock(&log_lock);
	disown_locked(prefix, strlen(prefix), NULL);
	pthread_mutex_unlock(&log_lock);
	free(prefix);
}

void log_remove_secret(const char *secret)
{
	if (!secret)
		return;
	pthread_mutex_lock(&log_lock);
	for (size_t i = 0; i < log_n_secrets; i++)
		if (strcmp(log_secrets[i].value, secret) == 0) {
			remove_at(i);
			break;
		}
	pthread_mutex_unlock(&log_lock);
}

size_t log_secret_count(void)
{
	pthread_mutex_lock(&log_lock);
	size_t n = log_n_secrets;
	pthread_mutex_unlock(&log_lock);
	return n;
}

static char *redact_locked(char *s, size_t n)
{
	for (size_t i = 0; i < log_n_secrets; i++) {
		const char *secret = log_secrets[i].value;
		size_t sl = strlen(secret);
		char *hit;
		while ((hit = strstr(s, secret))) {
			size_t tail = strlen(hit + sl);
			size_t used = (size_t)(hit - s);
			if (used + REDACTED_LEN + tail + 1 > n) {
				/* No room for the marker: blank the secret instead. */
				memset(hit, '*', sl);
				continue;
			}
			memmove(hit + REDACTED_LEN, hit + sl, tail + 1);
			memcpy(hit, REDACTED, REDACTED_LEN);
		}
	}
	return s;
}

/* A copy of s with every registered secret replaced by the marker, never cut: cutting
 * comes after, so the head of a secret can never survive without matching. */
static char *redact_dup_locked(const char *s)
{
	char *out = xstrdup(s);
	for (size_t i = 0; i < log_n_secrets; i++) {
		const char *secret = log_secrets[i].value, *p, *hit;
		size_t sl = strlen(secret), hits = 0;
		for (p = out; (hit = strstr(p, secret)); p = hit + sl)
			hits++;
		if (!hits)
			continue;
		char *next = xmalloc(strlen(out) - hits * sl + hits * REDACTED_LEN + 1), *w = next;
		for (p = out; (hit = strstr(p, secret)); p = hit + sl) {
			memcpy(w, p, (size_t)(hit - p));
			w += hit - p;
			memcpy(w, REDACTED, REDACTED_LEN);
			w += REDACTED_LEN;
		}
		strcpy(w, p);
		sp_secure_free(out);
		out = next;
	}
	return out;
}

/* Cuts s to fewer than n bytes without splitting a UTF-8 sequence. */
static void cut_utf8(char *s, size_t n)
{
	size_t len = strlen(s);
	if (len < n)
		return;
	len = n - 1;
	while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
		len--;
	s[len] = '\0';
}

/* One line per record: a newline inside a message or field would forge a second record. */
static void one_line(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

char *log_redact(char *s, size_t n)
{
	pthread_mutex_lock(&log_lock);
	redact_locked(s, n);
	pthread_mutex_unlock(&log_lock);
	return s;
}

char *log_redact_copy(char *dst, size_t n, const char *src)
{
	if (n == 0)
		return dst;
	pthread_mutex_lock(&log_lock);
	char *r = redact_dup_locked(src);
	pthread_mutex_unlock(&log_lock);
	cut_utf8(r, n);
	memcpy(dst, r, strlen(r) + 1);
	sp_secure_free(r);
	return dst;
}

void log_shutdown(void)
{
	pthread_mutex_lock(&log_lock);
	while (log_n_secrets)
		remove_at(log_n_secrets - 1);
	pthread_mutex_unlock(&log_lock);
}

/* The fields of a record, by output name; value NULL when absent. */
enum { F_NS, F_POOL, F_ACTION, F_REQUEST_ID, F_ERROR_CODE, F_DURATION, F_COUNT };
static const struct {
	const char *key, *journal;
} field_names[F_COUNT] = {
	[F_NS] = {"namespace", "SPOTPOOL_NAMESPACE"},
	[F_POOL] = {"pool", "SPOTPOOL_POOL"},
	[F_ACTION] = {"action", "SPOTPOOL_ACTION"},
	[F_REQUEST_ID] = {"request_id", "SPOTPOOL_REQUEST_ID"},
	[F_ERROR_CODE] = {"error_code", "SPOTPOOL_ERROR_CODE"},
	[F_DURATION] = {"duration_ms", "SPOTPOOL_DURATION_MS"},
};

struct record {
	enum log_level level;
	char *msg;
	char *field[F_COUNT];
	long duration_ms;
};

static char *clean_locked(const char *s, size_t max)
{
	char *r = redact_dup_locked(s);
	one_line(r);
	cut_utf8(r, max);
	return r;
}

static void record_init_locked(struct record *rec, enum log_level level, const struct log_fields *f,
			       const char *msg)
{
	*rec = (struct record){.level = level, .msg = clean_locked(msg, LOG_LINE_MAX)};
	if (!f)
		return;
	const char *in[F_COUNT] = {f->ns, f->pool, f->action, f->request_id, f->error_code};
	for (size_t i = 0; i < F_DURATION; i++)
		if (in[i] && *in[i])
			rec->field[i] = clean_locked(in[i], LOG_FIELD_MAX);
	if (f->has_duration) {
		rec->duration_ms = f->duration_ms;
		rec->field[F_DURATION] = xasprintf("%ld", f->duration_ms);
	}
}

static void record_free(struct record *rec)
{
	sp_secure_free(rec->msg);
	for (size_t i = 0; i < F_COUNT; i++)
		sp_secure_free(rec->field[i]);
}

/* logfmt-style: quoted when empty or holding a space, '"', '=' or '\\'. */
static void write_plain_value(FILE *out, const char *v)
{
	if (*v && !strpbrk(v, " \t\"=\\")) {
		fputs(v, out);
		return;
	}
	fputc('"', out);
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			fputc('\\', out);
		fputc(*v, out);
	}
	fputc('"', out);
}

static void write_plain(FILE *out, const char *ts, const struct record *rec)
{
	fprintf(out, "%s %-5s %s", ts, log_level_name(rec->level), rec->msg);
	for (size_t i = 0; i < F_COUNT; i++) {
		if (!rec->field[i])
			continue;
		fprintf(out, " %s=", field_names[i].key);
		write_plain_value(out, rec->field[i]);
	}
	fputc('\n', out);
	fflush(out);
}

static void write_json(FILE *out, const char *ts, const struct record *rec)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "time", ts);
	cJSON_AddStringToObject(o, "level", log_level_name(rec->level));
	cJSON_AddStringToObject(o, "msg", rec->msg);
	for (size_t i = 0; i < F_COUNT; i++) {
		if (!rec->field[i])
			continue;
		if (i == F_DURATION)
			cJSON_AddNumberToObject(o, field_names[i].key, (double)rec->duration_ms);
		else
			cJSON_AddStringToObject(o, field_names[i].key, rec->field[i]);
	}
	char *line = cJSON_PrintUnformatted(o);
	fprintf(out, "%s\n", line);
	fflush(out);
	cJSON_free(line);
	cJSON_Delete(o);
}

static int write_journal(const struct record *rec)
{
	char *items[3 + F_COUNT];
	struct iovec iov[3 + F_COUNT];
	int n = 0;
	items[n++] = xasprintf("MESSAGE=%s", rec->msg);
	items[n++] = xasprintf("PRIORITY=%d", (int)rec->level);
	items[n++] = xstrdup("SYSLOG_IDENTIFIER=spotpool");
	for (size_t i = 0; i < F_COUNT; i++)
		if (rec->field[i])
			items[n++] = xasprintf("%s=%s", field_names[i].journal, rec->field[i]);
	for (int i = 0; i < n; i++)
		iov[i] = (struct iovec){.iov_base = items[i], .iov_len = strlen(items[i])};
	int r = journal_sendv(iov, n);
	for (int i = 0; i < n; i++)
		sp_secure_free(items[i]);
	return r;
}

static void write_record_locked(const struct record *rec)
{
	char ts[32];
	struct timespec now;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	size_t k = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + k, sizeof(ts) - k, ".%03ldZ", now.tv_nsec / 1000000);

	FILE *out = log_out ? log_out : stderr;
	if (log_fmt == LOG_FMT_JSON)
		write_json(out, ts, rec);
	else if (log_fmt != LOG_FMT_JOURNAL || write_journal(rec) < 0)
		write_plain(out, ts, rec);  /* plain, or the journal is not there */
}

void log_vmsg(enum log_level level, const struct log_fields *fields, const char *fmt, va_list ap)
{
	if (!log_enabled(level))
		return;
	/* The whole message first: redaction must see every secret whole before any cut. */
	char *raw;
	if (vasprintf(&raw, fmt, ap) < 0)
		abort();
	struct record rec;
	pthread_mutex_lock(&log_lock);
	record_init_locked(&rec, level, fields, raw);
	write_record_locked(&rec);
	pthread_mutex_unlock(&log_lock);
	sp_secure_free(raw);
	record_free(&rec);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, NULL, fmt, ap);
	va_end(ap);
}

void log_fields_msg(enum log_level level, const struct log_fields *fields, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, fields, fmt, ap);
	va_end(ap);
}

void log_pool(enum log_level level, const char *ns, const char *name, const char *action, const char *code,
	      const char *fmt, ...)
{
	struct log_fields f = {.ns = ns, .pool = name, .action = action, .error_code = code};
	char *msg;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	log_fields_msg(level, &f, "%s/%s: %s", ns, name, msg);
	free(msg);
}
