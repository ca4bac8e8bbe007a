/* Fuzzes the Kubernetes watch stream decoder (kube_watch_feed): the input is a watch
 * body, one JSON event per line. It is decoded twice: in one piece with the production
 * line limit, and in small pieces of input-derived sizes (1..FUZZ_CHUNK_MAX bytes, as
 * libcurl hands them over) with a small limit, so the partial-line and too-big paths
 * run. The events must not depend on how the body was cut. The callback does what the
 * controller's does with an event (ERROR stops the watch; a 410 means relist). */
#include "fuzz.h"
#include "kube.h"

#include <string.h>

#define FUZZ_SMALL_MAX 2048
#define FUZZ_CHUNK_MAX 64
#define FUZZ_EVENTS_MAX 256

struct events {
	uint64_t hash[FUZZ_EVENTS_MAX];
	size_t n;
	bool gone;
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_setup();
	return 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ULL;
	return h;
}

static int on_event(void *ud, const char *type, cJSON *object)
{
	struct events *e = ud;
	if (!type || !object)
		abort();
	char *text = cJSON_PrintUnformatted(object);
	if (!text)
		abort();
	uint64_t h = fnv(fnv(0xcbf29ce484222325ULL, type, strlen(type) + 1), text, strlen(text));
	cJSON_free(text);
	if (e->n < FUZZ_EVENTS_MAX)
		e->hash[e->n] = h;
	e->n++;
	if (strcmp(type, "ERROR") == 0) {
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(object, "code");
		e->gone = cJSON_IsNumber(code) && code->valueint == 410;
		return 1;
	}
	/* Objects are apiserver JSON; Secrets (credentialsSecretRef) are decoded like this. */
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(object, "kind");
	if (cJSON_IsString(kind) && strcmp(kind->valuestring, "Secret") == 0)
		sp_secure_free(kube_secret_value(object, "secretKey"));
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(object, "metadata");
	const cJSON *rv = cJSON_GetObjectItemCaseSensitive(md, "resourceVersion");
	const cJSON *ns = cJSON_GetObjectItemCaseSensitive(md, "namespace");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
	if (cJSON_IsString(rv) && cJSON_IsString(ns) && cJSON_IsString(name) &&
	    strcmp(type, "BOOKMARK") != 0) {
		char *key = xasprintf("%s/%s", ns->valuestring, name->valuestring);
		free(key);
	}
	return 0;
}

/* A Status the decoder kept must be JSON again. */
static void check_failure(const struct kube_watch_decoder *d)
{
	if (!d->failure)
		return;
	cJSON *st = cJSON_Parse(d->failure);
	if (!st)
		abort();
	cJSON_Delete(st);
}

/* Longest line (bytes up to, not counting, a newline or the end). */
static size_t longest_line(const uint8_t *data, size_t size)
{
	size_t best = 0, cur = 0;
	for (size_t i = 0; i < size; i++) {
		cur = data[i] == '\n' ? 0 : cur + 1;
		if (cur > best)
			best = cur;
	}
	return best;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct events whole = {0}, cut = {0};
	struct kube_watch_decoder a, b;

	kube_watch_decoder_init(&a, KUBE_WATCH_EVENT_MAX, on_event, &whole);
	int stop_a = kube_watch_feed(&a, (const char *)data, size);
	if ((stop_a != 0) != (a.stopped || a.too_big) || a.too_big)
		abort();
	check_failure(&a);

	kube_watch_decoder_init(&b, FUZZ_SMALL_MAX, on_event, &cut);
	uint64_t rng = fnv(0xcbf29ce484222325ULL, data, size) | 1;
	for (size_t off = 0; off < size;) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		size_t n = 1 + (size_t)(rng % FUZZ_CHUNK_MAX);
		if (n > size - off)
			n = size - off;
		int stop = kube_watch_feed(&b, (const char *)data + off, n);
		off += n;
		if ((stop != 0) != (b.stopped || b.too_big))
			abort();
		if (stop)
			break;
	}
	check_failure(&b);
	/* What is left is at most the limit, and unless stopped early, one partial line. */
	if (b.line.len > FUZZ_SMALL_MAX ||
	    (!b.stopped && memchr(b.line.data ? b.line.data : "", '\n', b.line.len)))
		abort();

	/* Cut or whole, the same events in the same order; the small limit may only end
	 * the stream early, and only for a line near that limit. */
	size_t common = cut.n < whole.n ? cut.n : whole.n;
	if (common > FUZZ_EVENTS_MAX)
		common = FUZZ_EVENTS_MAX;
	if (memcmp(cut.hash, whole.hash, common * sizeof(uint64_t)) != 0)
		abort();
	if (b.too_big) {
		if (cut.n > whole.n || longest_line(data, size) + FUZZ_CHUNK_MAX < FUZZ_SMALL_MAX)
			abort();
	} else if (cut.n != whole.n || cut.gone != whole.gone || b.stopped != a.stopped ||
		   (a.failure == NULL) != (b.failure == NULL) ||
		   (a.failure && strcmp(a.failure, b.failure) != 0)) {
		abort();
	}
	kube_watch_decoder_free(&a);
	kube_watch_decoder_free(&b);
	fuzz_forget_secrets();
	return 0;
}
