/* manifest: YAML documents into cJSON with YAML 1.2 core-schema scalar typing. */
#include "manifest.h"
#include "buf.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

struct parser {
	yaml_parser_t yaml;
	const char *source;
	int doc;
	struct sp_error *err;
	struct manifest_line *lines;  /* of the document being read */
	size_t n_lines;
};

static void record_line(struct parser *p, const char *path, size_t line)
{
	p->lines = xrealloc(p->lines, (p->n_lines + 1) * sizeof(*p->lines));
	p->lines[p->n_lines++] = (struct manifest_line){.path = xstrdup(path), .line = (int)line + 1};
}

static int yaml_fail(struct parser *p, const yaml_mark_t *mark, const char *what)
{
	return sp_fail(p->err, SP_EINVAL, "%s: document %d, line %zu: %s", p->source, p->doc,
		       mark->line + 1, what);
}

static int next_event(struct parser *p, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&p->yaml, ev))
		return sp_fail(p->err, SP_EINVAL, "%s: line %zu: invalid YAML: %s", p->source,
			       p->yaml.problem_mark.line + 1,
			       p->yaml.problem ? p->yaml.problem : "syntax error");
	return 0;
}

static bool scalar_is(const char *v, const char *pattern)
{
	regex_t re;
	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
		abort();
	bool m = regexec(&re, v, 0, NULL, 0) == 0;
	regfree(&re);
	return m;
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
	if (!*v || strcmp(v, "~") == 0 || scalar_is(v, "^(null|Null|NULL)$"))
		return cJSON_CreateNull();
	if (scalar_is(v, "^(true|True|TRUE)$"))
		return cJSON_CreateTrue();
	if (scalar_is(v, "^(false|False|FALSE)$"))
		return cJSON_CreateFalse();
	if (scalar_is(v, "^[-+]?[0-9]+$") || scalar_is(v, "^[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?$")) {
		errno = 0;
		char *end;
		double d = strtod(v, &end);
		if (errno == 0 && *end == '\0' && isfinite(d))
			return cJSON_CreateNumber(d);
	}
	return cJSON_CreateString(v);
}

static int parse_node(struct parser *p, yaml_event_t *ev, const char *path, int depth, cJSON **ret);

static int parse_children(struct parser *p, cJSON *container, bool mapping, const char *path, int depth)
{
	for (int index = 0;; index++) {
		yaml_event_t ev;
		int r = next_event(p, &ev);
		if (r < 0)
			return r;
		if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		char *key = NULL;
		if (mapping) {
			if (ev.type != YAML_SCALAR_EVENT) {
				r = yaml_fail(p, &ev.start_mark, "mapping keys must be plain strings");
				yaml_event_delete(&ev);
				return r;
			}
			key = xstrdup((const char *)ev.data.scalar.value);
			size_t line = ev.start_mark.line;
			yaml_event_delete(&ev);
			if (cJSON_GetObjectItemCaseSensitive(container, key)) {
				char what[160];
				snprintf(what, sizeof(what), "duplicate key \"%.100s\"", key);
				r = yaml_fail(p, &p->yaml.mark, what);
				free(key);
				return r;
			}
			char *child_path = *path ? xasprintf("%s.%s", path, key) : xstrdup(key);
			record_line(p, child_path, line);
			free(child_path);
			if ((r = next_event(p, &ev)) < 0) {
				free(key);
				return r;
			}
		}
		char *child_path = mapping ? (*path ? xasprintf("%s.%s", path, key) : xstrdup(key))
					   : xasprintf("%s[%d]", path, index);
		cJSON *child = NULL;
		r = parse_node(p, &ev, child_path, depth + 1, &child);
		free(child_path);
		yaml_event_delete(&ev);
		if (r < 0) {
			free(key);
			return r;
		}
		if (mapping)
			cJSON_AddItemToObject(container, key, child);
		else
			cJSON_AddItemToArray(container, child);
		free(key);
	}
}

/* Consumes the node that starts with ev (already read). */
static int parse_node(struct parser *p, yaml_event_t *ev, const char *path, int depth, cJSON **ret)
{
	if (depth > MANIFEST_DEPTH_MAX)
		return yaml_fail(p, &ev->start_mark, "nesting too deep");
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
	set->docs = xrealloc(set->docs, (set->n + 1) * sizeof(*set->docs));
	set->docs[set->n] = (struct manifest_doc){.source = xstrdup(source), .index = index, .object = obj};
	return &set->docs[set->n++];
}

static void free_lines(struct manifest_line *lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(lines[i].path);
	free(lines);
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
		cJSON *item;
		while ((item = cJSON_DetachItemFromArray(items, 0)))
			set_push(set, source, index, item);
		cJSON_Delete(root);
		return 0;
	}
	struct manifest_doc *d = set_push(set, source, index, root);
	d->lines = p->lines;
	d->n_lines = p->n_lines;
	p->lines = NULL;
	p->n_lines = 0;
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
			p.n_lines = 0;
			if ((r = parse_node(&p, &ev, "", 0, &root)) == 0) {
				if (cJSON_IsNull(root)) {
					cJSON_Delete(root);
				} else if (!cJSON_IsObject(root)) {
					cJSON_Delete(root);
					r = sp_fail(err, SP_EINVAL, "%s: document %d: expected a mapping "
						    "(apiVersion, kind, metadata, spec)", source, p.doc);
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

static bool doc_is(const cJSON *o, const char *api, const char *kind)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "apiVersion");
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kind");
	return cJSON_IsString(a) && cJSON_IsString(k) && strcmp(k->valuestring, kind) == 0 &&
	       (!api || strcmp(a->valuestring, api) == 0);
}

int manifest_pools(const struct manifest_set *set, struct pool_spec ***ret_pools, size_t *ret_n,
		   struct sp_error *err)
{
	struct pool_spec **pools = NULL;
	size_t n = 0;
	for (size_t i = 0; i < set->n; i++) {
		const struct manifest_doc *d = &set->docs[i];
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(d->object, "kind");
		/* A Spotpool kind with a wrong apiVersion is still ours: report it, don't skip it. */
		if (!cJSON_IsString(kind) || strcmp(kind->valuestring, POOL_KIND) != 0)
			continue;
		struct pool_spec *spec = NULL;
		int r = pool_spec_from_object(d->object, "default", &spec, err);
		if (r < 0) {
			sp_error_prefix(err, "%s: document %d: ", d->source, d->index);
			for (size_t j = 0; j < n; j++)
				pool_spec_free(pools[j]);
			free(pools);
			return r;
		}
		pools = xrealloc(pools, (n + 1) * sizeof(*pools));
		pools[n++] = spec;
	}
	if (n == 0) {
		free(pools);
		return sp_fail(err, SP_EINVAL, "no %s documents (apiVersion %s) found", POOL_KIND,
			       POOL_API_VERSION);
	}
	*ret_pools = pools;
	*ret_n = n;
	return 0;
}

char *manifest_secret_value(const struct manifest_set *set, const char *ns, const char *name,
			    const char *key)
{
	for (size_t i = 0; i < set->n; i++) {
		const cJSON *o = set->docs[i].object;
		if (!doc_is(o, "v1", "Secret"))
			continue;
		const cJSON *md = cJSON_GetObjectItemCaseSensitive(o, "metadata");
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(md, "name");
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(md, "namespace");
		const char *sns = cJSON_IsString(s) ? s->valuestring : "default";
		if (!cJSON_IsString(n) || strcmp(n->valuestring, name) != 0 || strcmp(sns, ns) != 0)
			continue;
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(o, "stringData"), key);
		if (cJSON_IsString(v))
			return xstrdup(v->valuestring);
		v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "data"), key);
		return cJSON_IsString(v) ? sp_base64_decode(v->valuestring, NULL) : NULL;
	}
	return NULL;
}
