/* manifest: YAML documents into cJSON with YAML 1.2 core-schema scalar typing. */
#include "manifest.h"
#include "buf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

struct parser {
	yaml_parser_t yaml;
	const char *source;
	int doc;
	size_t entries;               /* mapping keys and list items read from this text */
	struct sp_error *err;
	struct manifest_line *lines;  /* of the document being read */
	size_t n_lines, cap_lines;
};

static void record_line(struct parser *p, const char *path, size_t line)
{
	if (p->n_lines == p->cap_lines) {
		p->cap_lines = p->cap_lines ? 2 * p->cap_lines : 32;
		p->lines = xrealloc(p->lines, p->cap_lines * sizeof(*p->lines));
	}
	p->lines[p->n_lines++] = (struct manifest_line){.path = xstrdup(path), .line = (int)line + 1};
}

static int yaml_fail(struct parser *p, const yaml_mark_t *mark, const char *what)
{
	return sp_fail(p->err, SP_EINVAL, "%s: line %zu: %s", p->source, mark->line + 1, what);
}

static int next_event(struct parser *p, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&p->yaml, ev))
		return sp_fail(p->err, SP_EINVAL, "%s: line %zu: invalid YAML: %s", p->source,
			       p->yaml.problem_mark.line + 1,
			       p->yaml.problem ? p->yaml.problem : "syntax error");
	return 0;
}

/* The keys of one mapping: an open-addressing hash set of borrowed strings (the keys of
 * the cJSON object being built), so a duplicate is found in constant time. */
struct keyset {
	const char **slot;
	size_t cap, n;
};

static size_t key_hash(const char *s)
{
	size_t h = 1469598103934665603u;  /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

/* The slot holding key, or the empty slot where it belongs (room is made first). */
static const char **keyset_slot(struct keyset *ks, const char *key)
{
	if (2 * (ks->n + 1) > ks->cap) {
		struct keyset grown = {.cap = ks->cap ? 2 * ks->cap : 16};
		grown.slot = xcalloc(grown.cap, sizeof(*grown.slot));
		for (size_t i = 0; i < ks->cap; i++)
			if (ks->slot[i]) {
				*keyset_slot(&grown, ks->slot[i]) = ks->slot[i];
				grown.n++;
			}
		free(ks->slot);
		*ks = grown;
	}
	size_t i = key_hash(key) & (ks->cap - 1);
	while (ks->slot[i] && strcmp(ks->slot[i], key) != 0)
		i = (i + 1) & (ks->cap - 1);
	return &ks->slot[i];
}

/* YAML 1.2 core schema: [-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)? */
static bool is_number(const char *v)
{
	v += *v == '-' || *v == '+';
	size_t whole = strspn(v, "0123456789");
	v += whole;
	if (*v == '.') {
		size_t frac = strspn(v + 1, "0123456789");
		if (whole == 0 && frac == 0)
			return false;
		v += 1 + frac;
	} else if (whole == 0) {
		return false;
	}
	if (*v == 'e' || *v == 'E') {
		v++;
		v += *v == '-' || *v == '+';
		size_t exp = strspn(v, "0123456789");
		if (exp == 0)
			return false;
		v += exp;
	}
	return *v == '\0';
}

/* v is one of the three spellings YAML 1.2 allows for word ("null" -> null, Null, NULL). */
static bool is_word(const char *v, const char *lower, const char *title, const char *upper)
{
	return strcmp(v, lower) == 0 || strcmp(v, title) == 0 || strcmp(v, upper) == 0;
}

/* Plain scalars get YAML 1.2 core-schema types; quoted ones and !!str stay strings. */
static cJSON *scalar_to_json(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	const char *tag = (const char *)ev->data.scalar.tag;
	bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	if (tag && strcmp(tag, YAML_STR_TAG) == 0)
		return cJSON_CreateString(v);
	if (!plain && !(tag && strcmp(tag, YAML_STR_TAG) != 0))
		return cJSON_CreateString(v);
	if (!*v || strcmp(v, "~") == 0 || is_word(v, "null", "Null", "NULL"))
		return cJSON_CreateNull();
	if (is_word(v, "true", "True", "TRUE"))
		return cJSON_CreateTrue();
	if (is_word(v, "false", "False", "FALSE"))
		return cJSON_CreateFalse();
	if (is_number(v)) {
		errno = 0;
		char *end;
		double d = strtod(v, &end);
		if (errno == 0 && *end == '\0' && isfinite(d)) {
			/* The text as written rides along in valuestring (cJSON frees and copies
			 * it, and never prints it for a number), so that an out-of-range value is
			 * echoed as the user wrote it, not as a double prints. */
			cJSON *n = cJSON_CreateNumber(d);
			n->valuestring = xstrdup(v);
			return n;
		}
	}
	return cJSON_CreateString(v);
}

static int parse_node(struct parser *p, yaml_event_t *ev, const char *path, int depth, cJSON **ret);

/* "path.key" or "path[index]" (key NULL), or NULL past MANIFEST_PATH_MAX or below a NULL
 * path: such a node's line is not recorded, so that long keys cannot make the recorded
 * paths grow as (key length) x (keys below it). */
static char *child_path_of(const char *path, const char *key, int index)
{
	if (!path || strlen(path) + (key ? strlen(key) : 12) + 2 > MANIFEST_PATH_MAX)
		return NULL;
	if (!key)
		return xasprintf("%s[%d]", path, index);
	return *path ? xasprintf("%s.%s", path, key) : xstrdup(key);
}

/* Reads one mapping key (ev, consumed) and checks it against the keys seen so far. */
static int read_key(struct parser *p, yaml_event_t *ev, struct keyset *keys, const char *path,
		    char **ret_key, char **ret_path)
{
	if (ev->type != YAML_SCALAR_EVENT)
		return yaml_fail(p, &ev->start_mark, "mapping keys must be plain strings");
	const char *key = (const char *)ev->data.scalar.value;
	char *child_path = child_path_of(path, key, 0);
	if (*keyset_slot(keys, key)) {
		int first = 0;
		for (size_t i = 0; child_path && i < p->n_lines && !first; i++)
			if (strcmp(p->lines[i].path, child_path) == 0)
				first = p->lines[i].line;
		char what[200];
		int n = snprintf(what, sizeof(what), "duplicate key \"%.100s\"", key);
		if (first)
			snprintf(what + n, sizeof(what) - (size_t)n, " (first on line %d)", first);
		free(child_path);
		return yaml_fail(p, &ev->start_mark, what);
	}
	if (child_path)
		record_line(p, child_path, ev->start_mark.line);
	*ret_key = xstrdup(key);
	*ret_path = child_path;
	return 0;
}

static int parse_children(struct parser *p, cJSON *container, bool mapping, const char *path, int depth)
{
	struct keyset keys = {0};
	int r = 0;
	for (int index = 0; r == 0; index++) {
		yaml_event_t ev;
		if ((r = next_event(p, &ev)) < 0)
			break;
		if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (++p->entries > MANIFEST_KEYS_MAX) {
			char what[128];
			snprintf(what, sizeof(what), "more than %d keys and list items (the limit per file)",
				 MANIFEST_KEYS_MAX);
			r = yaml_fail(p, &ev.start_mark, what);
			yaml_event_delete(&ev);
			break;
		}
		char *key = NULL, *child_path = NULL;
		if (mapping) {
			r = read_key(p, &ev, &keys, path, &key, &child_path);
			yaml_event_delete(&ev);
			if (r < 0 || (r = next_event(p, &ev)) < 0) {
				free(key);
				free(child_path);
				break;
			}
		} else {
			child_path = child_path_of(path, NULL, index);
		}
		cJSON *child = NULL;
		r = parse_node(p, &ev, child_path, depth + 1, &child);
		yaml_event_delete(&ev);
		free(child_path);
		if (r == 0 && mapping) {
			cJSON_AddItemToObject(container, key, child);
			*keyset_slot(&keys, key) = child->string;
			keys.n++;
		} else if (r == 0) {
			cJSON_AddItemToArray(container, child);
		}
		free(key);
	}
	free(keys.slot);
	return r;
}

/* Consumes the node that starts with ev (already read). */
static int parse_node(struct parser *p, yaml_event_t *ev, const char *path, int depth, cJSON **ret)
{
	bool container = ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT;
	if (container && depth >= MANIFEST_DEPTH_MAX) {
		char what[64];
		snprintf(what, sizeof(what), "nesting deeper than %d levels", MANIFEST_DEPTH_MAX);
		return yaml_fail(p, &ev->start_mark, what);
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		*ret = scalar_to_json(ev);
		return 0;
	case YAML_ALIAS_EVENT:
		return yaml_fail(p, &ev->start_mark, "YAML aliases (*name) are not supported");
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		bool mapping = ev->type == YAML_MAPPING_START_EVENT;
		cJSON *c = mapping ? cJSON_CreateObject() : cJSON_CreateArray();
		int r = parse_children(p, c, mapping, path, depth);
		if (r < 0) {
			cJSON_Delete(c);
			return r;
		}
		*ret = c;
		return 0;
	}
	default:
		return yaml_fail(p, &ev->start_mark, "unexpected YAML event");
	}
}

static struct manifest_doc *set_push(struct manifest_set *set, const char *source, int index, cJSON *obj)
{
	if (set->n == set->cap) {
		set->cap = set->cap ? 2 * set->cap : 8;
		set->docs = xrealloc(set->docs, set->cap * sizeof(*set->docs));
	}
	set->docs[set->n] = (struct manifest_doc){.source = xstrdup(source), .index = index, .object = obj};
	return &set->docs[set->n++];
}

static void free_lines(struct manifest_line *lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(lines[i].path);
	free(lines);
}

/* Gives each of the n documents a List expanded into its lines under "items[i].", with
 * that prefix taken off (one pass to count, one to copy). */
static void split_list_lines(struct manifest_doc *docs, size_t n, const struct manifest_line *lines,
			     size_t n_lines)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n_lines; i++) {
			char *end;
			if (strncmp(lines[i].path, "items[", 6) != 0)
				continue;
			unsigned long k = strtoul(lines[i].path + 6, &end, 10);
			if (k >= n || strncmp(end, "].", 2) != 0)
				continue;
			struct manifest_doc *d = &docs[k];
			if (pass == 1)
				d->lines[d->n_lines] = (struct manifest_line){xstrdup(end + 2), lines[i].line};
			d->n_lines++;
		}
		for (size_t k = 0; pass == 0 && k < n; k++) {
			docs[k].lines = xcalloc(docs[k].n_lines + 1, sizeof(*docs[k].lines));
			docs[k].n_lines = 0;
		}
	}
}

static int add_document(struct manifest_set *set, struct parser *p, cJSON *root)
{
	const char *source = p->source;
	int index = p->doc;
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(root, "kind");
	cJSON *items = cJSON_GetObjectItemCaseSensitive(root, "items");
	if (cJSON_IsString(kind) && strcmp(kind->valuestring, "List") == 0 && cJSON_IsArray(items)) {
		int i = 0;
		const cJSON *it;
		cJSON_ArrayForEach(it, items)
			if (!cJSON_IsObject(it)) {
				cJSON_Delete(root);
				return sp_fail(p->err, SP_EINVAL, "%s: document %d: items[%d]: expected a mapping",
					       source, index, i);
			} else {
				i++;
			}
		size_t first = set->n;
		cJSON *item;
		while ((item = cJSON_DetachItemFromArray(items, 0)))
			set_push(set, source, index, item);
		if (set->n > first)  /* an empty List adds no document */
			split_list_lines(set->docs + first, set->n - first, p->lines, p->n_lines);
		cJSON_Delete(root);
		return 0;
	}
	struct manifest_doc *d = set_push(set, source, index, root);
	d->lines = p->lines;
	d->n_lines = p->n_lines;
	p->lines = NULL;
	p->n_lines = p->cap_lines = 0;
	return 0;
}

int manifest_parse(const char *text, size_t len, const char *source, struct manifest_set *set,
		   struct sp_error *err)
{
	struct parser p = {.source = source, .err = err};
	if (!yaml_parser_initialize(&p.yaml))
		abort();
	yaml_parser_set_input_string(&p.yaml, (const unsigned char *)text, len);
	int r = 0;
	for (bool done = false; !done && r == 0;) {
		yaml_event_t ev;
		if ((r = next_event(&p, &ev)) < 0)
			break;
		if (ev.type == YAML_STREAM_END_EVENT) {
			done = true;
		} else if (ev.type == YAML_DOCUMENT_START_EVENT) {
			p.doc++;
		} else if (ev.type != YAML_STREAM_START_EVENT && ev.type != YAML_DOCUMENT_END_EVENT) {
			cJSON *root = NULL;
			free_lines(p.lines, p.n_lines);
			p.lines = NULL;
			p.n_lines = p.cap_lines = 0;
			if ((r = parse_node(&p, &ev, "", 0, &root)) == 0) {
				if (cJSON_IsNull(root)) {
					cJSON_Delete(root);
				} else if (!cJSON_IsObject(root)) {
					r = sp_fail(err, SP_EINVAL, "%s: document %d: expected a mapping "
						    "(apiVersion, kind, metadata, spec), got %s", source, p.doc,
						    cJSON_IsArray(root) ? "a list" : cJSON_IsString(root) ? "a string" :
						    cJSON_IsNumber(root) ? "a number" : "true or false");
					cJSON_Delete(root);
				} else {
					r = add_document(set, &p, root);
				}
			}
		}
		yaml_event_delete(&ev);
	}
	free_lines(p.lines, p.n_lines);
	yaml_parser_delete(&p.yaml);
	return r;
}

int manifest_load_file(const char *path, struct manifest_set *set, struct sp_error *err)
{
	struct buf b;
	buf_init(&b, MANIFEST_FILE_MAX);
	int r = buf_read_file(&b, path, err);
	if (r == SP_ETOOBIG)
		r = sp_fail(err, SP_EINVAL, "%s: larger than %d MiB (the limit per file)", path,
			    MANIFEST_FILE_MAX >> 20);
	if (r == 0)
		r = manifest_parse(b.data ? b.data : "", b.len, path, set, err);
	buf_free(&b);
	return r;
}

void manifest_set_free(struct manifest_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		free(set->docs[i].source);
		cJSON_Delete(set->docs[i].object);
		free_lines(set->docs[i].lines, set->docs[i].n_lines);
	}
	free(set->docs);
	*set = (struct manifest_set){0};
}

int manifest_line_of(const struct manifest_doc *doc, const char *path)
{
	for (size_t i = 0; i < doc->n_lines; i++)
		if (strcmp(doc->lines[i].path, path) == 0)
			return doc->lines[i].line;
	return 0;
}

/* Line of the field a message is about ("spec.minimum: ..."), or of the nearest enclosing
 * key written in the file (a missing field is reported at its parent); 0 when unknown. */
static int line_of_message(const struct manifest_doc *doc, const char *msg)
{
	size_t n = strcspn(msg, " :");
	if (msg[n] != ':' || msg[n + 1] != ' ')
		return 0;
	char *path = xstrndup(msg, n);
	int line = 0;
	while (!(line = manifest_line_of(doc, path)) && *path) {
		char *cut = strrchr(path, '.');
		char *bracket = strrchr(path, '[');
		if (bracket > cut)
			cut = bracket;
		*(cut ? cut : path) = '\0';
	}
	free(path);
	return line;
}

static const char *doc_name(const struct manifest_doc *d)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(d->object, "metadata");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(md, "name");
	return cJSON_IsString(name) && *name->valuestring ? name->valuestring : NULL;
}

/* Appends msg (owned) to errs, or counts it once MANIFEST_ERRORS_MAX are kept. */
static void errors_add(struct manifest_errors *errs, char *msg)
{
	if (errs->n < MANIFEST_ERRORS_MAX) {
		strv_push(&errs->list, msg);
		errs->n++;
	} else {
		errs->more++;
	}
	free(msg);
}

void manifest_doc_error(struct manifest_errors *errs, const struct manifest_doc *d, const char *msg)
{
	const char *name = doc_name(d);
	int line = line_of_message(d, msg);
	char where[32] = "";
	if (line)
		snprintf(where, sizeof(where), " (line %d)", line);
	errors_add(errs, name ? xasprintf("%s: document %d (%.64s): %s%s", d->source, d->index, name, msg, where)
			      : xasprintf("%s: document %d: %s%s", d->source, d->index, msg, where));
}

void manifest_error(struct manifest_errors *errs, const char *msg)
{
	errors_add(errs, xstrdup(msg));
}

void manifest_errors_clear(struct manifest_errors *errs)
{
	strv_clear(&errs->list);
	*errs = (struct manifest_errors){0};
}

static bool doc_is(const cJSON *o, const char *api, const char *kind)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "apiVersion");
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kind");
	return cJSON_IsString(a) && cJSON_IsString(k) && strcmp(k->valuestring, kind) == 0 &&
	       (!api || strcmp(a->valuestring, api) == 0);
}

static void free_pools(struct pool_spec **pools, size_t n)
{
	for (size_t i = 0; i < n; i++)
		pool_spec_free(pools[i]);
	free(pools);
}

int manifest_pools_all(const struct manifest_set *set, struct pool_spec ***ret_pools, size_t *ret_n,
		       struct manifest_errors *errs)
{
	struct pool_spec **pools = NULL;
	size_t n = 0, found = 0, errors = errs->n + errs->more;
	struct pool_errors *perrs = xmalloc(sizeof(*perrs));
	for (size_t i = 0; i < set->n; i++) {
		const struct manifest_doc *d = &set->docs[i];
		/* A Spotpool kind with a wrong apiVersion is still ours: report it, don't skip it. */
		if (!doc_is(d->object, NULL, POOL_KIND))
			continue;
		found++;
		struct pool_spec *spec = NULL;
		if (pool_spec_check(d->object, "default", &spec, perrs) == 0) {
			pools = xrealloc(pools, (n + 1) * sizeof(*pools));
			pools[n++] = spec;
			continue;
		}
		for (size_t j = 0; j < perrs->n; j++)
			manifest_doc_error(errs, d, perrs->v[j].msg);
		if (perrs->more) {
			char *more = xasprintf("... and %zu more problem(s)", perrs->more);
			manifest_doc_error(errs, d, more);
			free(more);
		}
	}
	free(perrs);
	if (found == 0)
		manifest_error(errs, "no " POOL_KIND " documents (apiVersion " POOL_API_VERSION ") found");
	if (errs->n + errs->more > errors) {
		free_pools(pools, n);
		return SP_EINVAL;
	}
	*ret_pools = pools;
	*ret_n = n;
	return 0;
}

int manifest_pools(const struct manifest_set *set, struct pool_spec ***ret_pools, size_t *ret_n,
		   struct sp_error *err)
{
	struct manifest_errors errs = {0};
	int r = manifest_pools_all(set, ret_pools, ret_n, &errs);
	if (r < 0)
		sp_fail(err, r, "%s", errs.list.v[0]);
	manifest_errors_clear(&errs);
	return r;
}

/* The Secret document ns/name among the set, or NULL. */
static const struct manifest_doc *find_secret(const struct manifest_set *set, const char *ns, const char *name)
{
	for (size_t i = 0; i < set->n; i++) {
		const cJSON *o = set->docs[i].object;
		if (!doc_is(o, "v1", "Secret"))
			continue;
		const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(md, "name");
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(md, "namespace");
		const char *sns = cJSON_IsString(s) ? s->valuestring : "default";
		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0 && strcmp(sns, ns) == 0)
			return &set->docs[i];
	}
	return NULL;
}

/* "secretId, token" or "none": the keys a Secret has, for a message (names, never values). */
static char *secret_keys(const cJSON *o)
{
	struct buf b;
	buf_init(&b, 256);
	static const char *const fields[] = {"stringData", "data"};
	for (size_t f = 0; f < 2; f++) {
		const cJSON *k;
		cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(o, fields[f]))
			if (k->string && buf_printf(&b, "%s%.64s", b.len ? ", " : "", k->string) < 0)
				break;
	}
	if (!b.len)
		buf_puts(&b, "none");
	return buf_steal(&b);
}

int manifest_secret_lookup(const struct manifest_set *set, const char *ns, const char *name,
			   const char *key, bool optional, char **ret_value, struct sp_error *err)
{
	const struct manifest_doc *d = find_secret(set, ns, name);
	if (!d)
		return sp_fail(err, SP_ENOTFOUND, "Secret %s/%s: not found", ns, name);
	const cJSON *o = d->object;
	/* stringData wins over data, as the apiserver merges it. */
	const char *field = "stringData";
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, field), key);
	if (!v) {
		field = "data";
		v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, field), key);
	}
	char *path = xasprintf("%s.%s", field, key);
	int line = manifest_line_of(d, path);
	free(path);
	char where[64];
	if (line)
		snprintf(where, sizeof(where), "line %d", line);
	else
		snprintf(where, sizeof(where), "document %d", d->index);
	bool present = v && !cJSON_IsNull(v);
	char *value = NULL;
	int r = 0;
	if (!present && !optional) {
		char *keys = secret_keys(o);
		r = sp_fail(err, SP_EINVAL, "Secret %s/%s (%s, %s): key \"%s\" is absent (keys present: %s)",
			    ns, name, d->source, where, key, keys);
		free(keys);
	} else if (present && !cJSON_IsString(v)) {
		r = sp_fail(err, SP_EINVAL, "Secret %s/%s (%s, %s): %s.%s: must be a string", ns, name,
			    d->source, where, field, key);
	} else if (present && *field == 'd' && !(value = sp_base64_decode(v->valuestring, NULL))) {
		r = sp_fail(err, SP_EINVAL, "Secret %s/%s (%s, %s): data.%s: not valid base64 (put plain "
			    "text under stringData)", ns, name, d->source, where, key);
	} else if (present && !value) {
		value = xstrdup(v->valuestring);
	}
	if (r == 0 && present && !*value && !optional)
		r = sp_fail(err, SP_EINVAL, "Secret %s/%s (%s, %s): key \"%s\" is empty", ns, name,
			    d->source, where, key);
	if (r < 0 || (value && !*value)) {
		sp_secure_free(value);
		value = NULL;
	}
	if (r == 0)
		*ret_value = value;
	return r;
}

char *manifest_secret_value(const struct manifest_set *set, const char *ns, const char *name,
			    const char *key)
{
	char *value = NULL;
	return manifest_secret_lookup(set, ns, name, key, true, &value, NULL) == 0 ? value : NULL;
}
