/* soldout: a small table scanned linearly (a hash compared first): it holds the offerings
 * that answered sold out lately, a handful per account in practice, and at most
 * SOLDOUT_ENTRIES_MAX. */
#include "soldout.h"

#include <pthread.h>
#include <string.h>

struct entry {
	uint64_t hash;
	char *key;            /* "secret_id\x1fregion\x1fzone\x1ftype" */
	int64_t marked;       /* when it was last marked */
	int64_t until;        /* SOLD_OUT before this; a probe is due from then on */
	int64_t lease_until;  /* a probe is held until then (0: none) */
};

struct soldout {
	pthread_mutex_t lock;
	struct entry *table;  /* SOLDOUT_ENTRIES_MAX slots once allocated */
	size_t n_entries;
	int64_t ttl_ms;
};

struct soldout *soldout_new(int64_t ttl_ms)
{
	struct soldout *s = xcalloc(1, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->ttl_ms = ttl_ms > 0 ? ttl_ms : SOLDOUT_TTL_DEFAULT_MS;
	return s;
}

void soldout_free(struct soldout *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_entries; i++)
		free(s->table[i].key);
	free(s->table);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static const char *str(const char *s)
{
	return s ? s : "";
}

/* The key as one string; fields cannot contain \x1f (names are validated). */
static char *key_string(const struct soldout_key *k)
{
	return xasprintf("%s\x1f%s\x1f%s\x1f%s", str(k->secret_id), str(k->region), str(k->zone),
			 str(k->instance_type));
}

static uint64_t hash_of(const char *s)
{
	uint64_t h = 14695981039346656037ULL;  /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* Under s->lock. */
static struct entry *find(struct soldout *s, const char *key, uint64_t h)
{
	for (size_t i = 0; i < s->n_entries; i++)
		if (s->table[i].hash == h && strcmp(s->table[i].key, key) == 0)
			return &s->table[i];
	return NULL;
}

/* Under s->lock. */
static void remove_entry(struct soldout *s, struct entry *e)
{
	free(e->key);
	*e = s->table[--s->n_entries];
}

int64_t soldout_ttl(struct soldout *s)
{
	return s->ttl_ms;  /* set once, by soldout_new */
}

void soldout_mark(struct soldout *s, const struct soldout_key *k, int64_t now_ms, int64_t ttl)
{
	char *key = key_string(k);
	uint64_t h = hash_of(key);
	pthread_mutex_lock(&s->lock);
	if (ttl <= 0)
		ttl = s->ttl_ms;
	struct entry *e = find(s, key, h);
	if (e) {
		free(key);
	} else {
		if (!s->table)
			s->table = xcalloc(SOLDOUT_ENTRIES_MAX, sizeof(*s->table));
		if (s->n_entries == SOLDOUT_ENTRIES_MAX) {
			struct entry *oldest = &s->table[0];
			for (size_t i = 1; i < s->n_entries; i++)
				if (s->table[i].marked < oldest->marked)
					oldest = &s->table[i];
			remove_entry(s, oldest);
		}
		e = &s->table[s->n_entries++];
		*e = (struct entry){.hash = h, .key = key};
	}
	e->marked = now_ms;
	e->until = now_ms + ttl;
	e->lease_until = 0;
	pthread_mutex_unlock(&s->lock);
}

void soldout_clear(struct soldout *s, const struct soldout_key *k)
{
	char *key = key_string(k);
	uint64_t h = hash_of(key);
	pthread_mutex_lock(&s->lock);
	struct entry *e = find(s, key, h);
	if (e)
		remove_entry(s, e);
	pthread_mutex_unlock(&s->lock);
	free(key);
}

/* Under s->lock. */
static enum offer_state state_of(const struct entry *e, int64_t now_ms, int64_t *ret_probe_at_ms)
{
	if (!e)
		return OFFER_AVAILABLE;
	if (now_ms < e->until) {
		if (ret_probe_at_ms)
			*ret_probe_at_ms = e->until;
		return OFFER_SOLD_OUT;
	}
	if (now_ms < e->lease_until) {
		if (ret_probe_at_ms)
			*ret_probe_at_ms = e->lease_until;
		return OFFER_SOLD_OUT;
	}
	if (ret_probe_at_ms)
		*ret_probe_at_ms = e->lease_until > e->until ? e->lease_until : e->until;
	return OFFER_PROBE_ALLOWED;
}

static enum offer_state lookup(struct soldout *s, const struct soldout_key *k, int64_t now_ms, int64_t *ret_probe_at_ms,
			       bool grant)
{
	char *key = key_string(k);
	uint64_t h = hash_of(key);
	pthread_mutex_lock(&s->lock);
	struct entry *e = find(s, key, h);
	enum offer_state st = state_of(e, now_ms, ret_probe_at_ms);
	if (st == OFFER_PROBE_ALLOWED && grant)
		e->lease_until = now_ms + SOLDOUT_PROBE_LEASE_MS;
	pthread_mutex_unlock(&s->lock);
	free(key);
	return st;
}

enum offer_state soldout_peek(struct soldout *s, const struct soldout_key *k, int64_t now_ms, int64_t *ret_probe_at_ms)
{
	return lookup(s, k, now_ms, ret_probe_at_ms, false);
}

enum offer_state soldout_state(struct soldout *s, const struct soldout_key *k, int64_t now_ms, int64_t *ret_probe_at_ms)
{
	return lookup(s, k, now_ms, ret_probe_at_ms, true);
}

bool soldout_probe(struct soldout *s, const struct soldout_key *k, int64_t now_ms)
{
	return lookup(s, k, now_ms, NULL, true) == OFFER_PROBE_ALLOWED;
}

size_t soldout_unavailable(struct soldout *s, int64_t now_ms)
{
	size_t n = 0;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n_entries; i++)
		n += state_of(&s->table[i], now_ms, NULL) == OFFER_SOLD_OUT;
	pthread_mutex_unlock(&s->lock);
	return n;
}

size_t soldout_size(struct soldout *s)
{
	pthread_mutex_lock(&s->lock);
	size_t n = s->n_entries;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void soldout_return_probe(struct soldout *s, const struct soldout_key *k)
{
	char *key = key_string(k);
	uint64_t h = hash_of(key);
	pthread_mutex_lock(&s->lock);
	struct entry *e = find(s, key, h);
	if (e)
		e->lease_until = 0;
	pthread_mutex_unlock(&s->lock);
	free(key);
}
