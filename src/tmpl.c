/* tmpl: spec.nodeTemplate, its model and validation (the CRD's schema says the same). */
#include "tmpl.h"

#include "buf.h"
#include "pool.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? of at most TMPL_NAME_MAX, n characters of s. */
static bool name_valid(const char *s, size_t n)
{
	if (n == 0 || n > TMPL_NAME_MAX || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
			return false;
	return true;
}

/* A DNS-1123 subdomain: dot-separated labels of [a-z0-9-], each beginning and ending with
 * a letter or digit, at most TMPL_PREFIX_MAX in all. */
static bool subdomain_valid(const char *s, size_t n)
{
	if (n == 0 || n > TMPL_PREFIX_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool edge = i == 0 || i == n - 1 || s[i - 1] == '.' || s[i + 1] == '.';
		bool alnum = islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]);
		if (!alnum && (edge || (s[i] != '-' && s[i] != '.')))
			return false;
	}
	return true;
}

bool tmpl_key_valid(const char *s)
{
	const char *slash = strchr(s, '/');
	if (!slash)
		return name_valid(s, strlen(s));
	return subdomain_valid(s, (size_t)(slash - s)) && name_valid(slash + 1, strlen(slash + 1));
}

bool tmpl_label_value_valid(const char *s)
{
	return !*s || name_valid(s, strlen(s));
}

static const char *const effect_names[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};

const char *tmpl_effect_name(enum tmpl_effect e)
{
	return effect_names[e];
}

int tmpl_effect_parse(const char *s, enum tmpl_effect *ret)
{
	for (size_t k = 0; k < sizeof(effect_names) / sizeof(effect_names[0]); k++)
		if (strcmp(s, effect_names[k]) == 0) {
			*ret = (enum tmpl_effect)k;
			return 0;
		}
	return SP_EINVAL;
}

#define KEY_RULE "an optional DNS subdomain prefix of at most 253 characters and '/', then 1-63 " \
	"letters, digits, '-', '_' or '.', beginning and ending with a letter or digit"
#define VALUE_RULE "at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit"

/* The size of spec.nodeTemplate.<field> (a map of labels or a list of taints) of at most
 * max entries: 0 when absent. */
static int collection_size(const cJSON *v, bool map, const char *field, int max, struct sp_error *err)
{
	if (!v || cJSON_IsNull(v))
		return 0;
	if (map ? !cJSON_IsObject(v) : !cJSON_IsArray(v))
		return sp_fail(err, SP_EINVAL, "spec.nodeTemplate.%s: must be %s, got %s", field,
			       map ? "a map of label key to value" : "a list of taints", pool_json_type(v));
	int n = cJSON_GetArraySize(v);
	if (n > max)
		return sp_fail(err, SP_EINVAL, "spec.nodeTemplate.%s: %d %s, more than the maximum %d", field, n, field,
			       max);
	return n;
}

static int parse_labels(const cJSON *labels, struct tmpl_node *t, struct sp_error *err)
{
	int n = collection_size(labels, true, "labels", TMPL_LABELS_MAX, err);
	if (n <= 0)
		return n;
	t->labels = xcalloc((size_t)n, sizeof(*t->labels));
	const cJSON *l;
	cJSON_ArrayForEach(l, labels) {
		if (!tmpl_key_valid(l->string))
			return sp_fail(err, SP_EINVAL, "spec.nodeTemplate.labels.%.64s: not a valid label key (" KEY_RULE ")",
				       l->string);
		if (!cJSON_IsString(l))
			return sp_fail(err, SP_EINVAL, "spec.nodeTemplate.labels.%s: must be a string, got %s", l->string,
				       pool_json_type(l));
		if (!tmpl_label_value_valid(l->valuestring))
			return sp_fail(err, SP_EINVAL, "spec.nodeTemplate.labels.%s: \"%.64s\" is not a valid label value "
				       "(" VALUE_RULE ")", l->string, l->valuestring);
		t->labels[t->n_labels].key = xstrdup(l->string);
		t->labels[t->n_labels++].value = xstrdup(l->valuestring);
	}
	return 0;
}

/* A taint's string field (key or value) at path. */
static int taint_string(const cJSON *taint, const char *path, const char *field, bool required, char **ret,
			struct sp_error *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(taint, field);
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return sp_fail(err, SP_EINVAL, "%s.%s: required field is missing", path, field);
		*ret = xstrdup("");
		return 0;
	}
	if (!cJSON_IsString(v))
		return sp_fail(err, SP_EINVAL, "%s.%s: must be a string, got %s", path, field, pool_json_type(v));
	bool ok = required ? tmpl_key_valid(v->valuestring) : tmpl_label_value_valid(v->valuestring);
	if (!ok)
		return sp_fail(err, SP_EINVAL, "%s.%s: \"%.64s\" is not a valid taint %s (%s)", path, field,
			       v->valuestring, field, required ? KEY_RULE : VALUE_RULE);
	*ret = xstrdup(v->valuestring);
	return 0;
}

static int parse_taint(const cJSON *taint, size_t i, struct tmpl_taint *ret, struct sp_error *err)
{
	char path[48];
	snprintf(path, sizeof(path), "spec.nodeTemplate.taints[%zu]", i);
	if (!cJSON_IsObject(taint))
		return sp_fail(err, SP_EINVAL, "%s: must be an object with key, value and effect, got %s", path,
			       pool_json_type(taint));
	static const char *const known[] = {"key", "value", "effect", NULL};
	const cJSON *f;
	cJSON_ArrayForEach(f, taint)
		if (strcmp(f->string, "key") && strcmp(f->string, "value") && strcmp(f->string, "effect"))
			return pool_unknown_field(err, path, f->string, known);
	int r;
	if ((r = taint_string(taint, path, "key", true, &ret->key, err)) < 0 ||
	    (r = taint_string(taint, path, "value", false, &ret->value, err)) < 0)
		return r;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(taint, "effect");
	if (!e || cJSON_IsNull(e))
		return sp_fail(err, SP_EINVAL, "%s.effect: required field is missing", path);
	if (!cJSON_IsString(e))
		return sp_fail(err, SP_EINVAL, "%s.effect: must be a string, got %s", path, pool_json_type(e));
	if (tmpl_effect_parse(e->valuestring, &ret->effect) == 0)
		return 0;
	return sp_fail(err, SP_EINVAL, "%s.effect: must be NoSchedule, PreferNoSchedule or NoExecute, got \"%.32s\"",
		       path, e->valuestring);
}

static int parse_taints(const cJSON *taints, struct tmpl_node *t, struct sp_error *err)
{
	int n = collection_size(taints, false, "taints", TMPL_TAINTS_MAX, err);
	if (n <= 0)
		return n;
	t->taints = xcalloc((size_t)n, sizeof(*t->taints));
	const cJSON *taint;
	cJSON_ArrayForEach(taint, taints) {
		size_t i = t->n_taints;
		/* Counted before it is read, so that tmpl_clear frees what a failure left. */
		t->n_taints++;
		int r = parse_taint(taint, i, &t->taints[i], err);
		if (r < 0)
			return r;
		/* As the apiserver has it for a Node: unique by key and effect. */
		for (size_t j = 0; j < i; j++)
			if (t->taints[j].effect == t->taints[i].effect && strcmp(t->taints[j].key, t->taints[i].key) == 0)
				return sp_fail(err, SP_EINVAL, "spec.nodeTemplate.taints[%zu]: repeats taints[%zu] (key %s, "
					       "effect %s): taints must be unique by key and effect", i, j,
					       t->taints[i].key, tmpl_effect_name(t->taints[i].effect));
	}
	return 0;
}

int tmpl_parse(const cJSON *v, struct tmpl_node *ret, struct sp_error *err)
{
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return sp_fail(err, SP_EINVAL, "spec.nodeTemplate: must be an object with labels and taints, got %s",
			       pool_json_type(v));
	static const char *const known[] = {"labels", "taints", NULL};
	const cJSON *f;
	cJSON_ArrayForEach(f, v)
		if (strcmp(f->string, "labels") != 0 && strcmp(f->string, "taints") != 0)
			return pool_unknown_field(err, "spec.nodeTemplate", f->string, known);
	struct tmpl_node t = {0};
	int r = parse_labels(cJSON_GetObjectItemCaseSensitive(v, "labels"), &t, err);
	if (r == 0)
		r = parse_taints(cJSON_GetObjectItemCaseSensitive(v, "taints"), &t, err);
	if (r < 0) {
		tmpl_clear(&t);
		return r;
	}
	*ret = t;
	return 0;
}

void tmpl_clear(struct tmpl_node *t)
{
	for (size_t i = 0; i < t->n_labels; i++) {
		free(t->labels[i].key);
		free(t->labels[i].value);
	}
	for (size_t i = 0; i < t->n_taints; i++) {
		free(t->taints[i].key);
		free(t->taints[i].value);
	}
	free(t->labels);
	free(t->taints);
	*t = (struct tmpl_node){0};
}

/* Enough for the most labels or taints of the longest keys and values. */
#define TMPL_KUBELET_MAX ((TMPL_LABELS_MAX + TMPL_TAINTS_MAX) * (TMPL_KEY_MAX + TMPL_NAME_MAX + 20))

char *tmpl_kubelet_labels(const struct tmpl_node *t)
{
	struct buf b;
	buf_init(&b, TMPL_KUBELET_MAX);
	for (size_t i = 0; i < t->n_labels; i++)
		buf_printf(&b, "%s%s=%s", i ? "," : "", t->labels[i].key, t->labels[i].value);
	return buf_steal(&b);
}

char *tmpl_kubelet_taints(const struct tmpl_node *t)
{
	struct buf b;
	buf_init(&b, TMPL_KUBELET_MAX);
	for (size_t i = 0; i < t->n_taints; i++)
		buf_printf(&b, "%s%s%s%s:%s", i ? "," : "", t->taints[i].key, *t->taints[i].value ? "=" : "",
			   t->taints[i].value, tmpl_effect_name(t->taints[i].effect));
	return buf_steal(&b);
}
