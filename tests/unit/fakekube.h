/* The apiserver as a port (struct kube_api) of canned replies, for the unit tests of
 * list + watch loops (informer, nodes). */
#ifndef SPOTPOOL_FAKEKUBE_H
#define SPOTPOOL_FAKEKUBE_H

#include "testutil.h"
#include "kube.h"

/* The apiserver as a port of canned replies, answered in order. Each says what the
 * informer must ask (a GET, a DELETE or a WATCH, its path ending in want), what comes back
 * (a list, or the events a watch streams before it ends with rc) and how long the call
 * takes on the fake clock. */
struct reply {
	const char *kind;    /* "GET", "DELETE" or "WATCH" */
	const char *want;    /* the end of the path */
	const char *body;    /* GET: the list; WATCH: a JSON array of events */
	int rc;
	int64_t takes_ms;
};

struct fake_api {
	const struct reply *replies;
	size_t n, next;
	struct test_clock *clock;
	char last_body[512];  /* the last request's body, as JSON ("" without one) */
};

static inline const struct reply *fake_next(struct fake_api *f, const char *kind, const char *path)
{
	if (f->next >= f->n)
		fail_msg("unexpected %s %s", kind, path);
	const struct reply *r = &f->replies[f->next++];
	size_t n = strlen(path), w = strlen(r->want);
	if (strcmp(r->kind, kind) != 0 || n < w || strcmp(path + n - w, r->want) != 0)
		fail_msg("reply %zu: asked %s %s, expected %s with %s", f->next - 1, kind, path, r->kind, r->want);
	test_clock_advance_ms(f->clock, r->takes_ms);
	return r;
}

static inline int fake_request(void *ctx, const char *method, const char *path, const char *content_type,
			const cJSON *body, cJSON **ret, struct sp_error *err)
{
	(void)content_type;
	struct fake_api *f = ctx;
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	snprintf(f->last_body, sizeof(f->last_body), "%s", text ? text : "");
	free(text);
	const struct reply *r = fake_next(ctx, method, path);
	if (r->rc < 0)
		return sp_fail(err, r->rc, "injected %s", sp_strerror(r->rc));
	if (ret) {
		*ret = cJSON_Parse(r->body);
		assert_non_null(*ret);
	}
	return 0;
}

/* As kube_watch: events until one the callback stops at (then 0), else rc. */
static inline int fake_watch(void *ctx, const char *path, long timeout_ms, kube_event_fn fn, void *userdata,
		      const struct stop *cancel, struct sp_error *err)
{
	(void)timeout_ms, (void)cancel;
	const struct reply *r = fake_next(ctx, "WATCH", path);
	cJSON *events = cJSON_Parse(r->body ? r->body : "[]");
	assert_non_null(events);
	const cJSON *ev;
	int stopped = 0;
	cJSON_ArrayForEach(ev, events) {
		if (stopped)
			break;
		stopped = fn(userdata, cJSON_GetObjectItemCaseSensitive(ev, "type")->valuestring,
			     cJSON_GetObjectItemCaseSensitive(ev, "object"));
	}
	cJSON_Delete(events);
	if (stopped || r->rc == 0)
		return 0;
	return sp_fail(err, r->rc, "injected %s", sp_strerror(r->rc));
}

/* Binds f to replies (answered in order, on clock) and returns the port. */
static inline struct kube_api fake_api_bind(struct fake_api *f, const struct reply *replies, size_t n,
					    struct test_clock *clock)
{
	*f = (struct fake_api){.replies = replies, .n = n, .clock = clock};
	return (struct kube_api){.request = fake_request, .watch = fake_watch, .ctx = f};
}

#endif
